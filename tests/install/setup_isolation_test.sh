#!/usr/bin/env bash
# Set-up leaves the user's Python and home alone: runs scripts/install_deps.sh's Python step (--python-only)
# into a fresh virtual environment (SHOAL_VENV, a scratch folder) with HOME pointed at an empty folder,
# then checks that
#   - the venv has nanobind, scikit-build-core, numpy and pytest, and nothing was installed for the Python
#     on PATH (its global and user site-packages list the same entries with the same times as before);
#   - HOME is still empty (no ~/.cache/pip, ~/.local, ~/.config: pip's cache is the checkout's build/pip-cache).
# Skips (77) when pip cannot reach its package index (no network).
# Usage: setup_isolation_test.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: setup_isolation_test.sh SOURCE_DIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/shoal-setup.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The interpreter python3 stands for (not a shim that may read HOME), first on PATH for the script too.
python=$(python3 -c 'import sys; print(sys.executable)') || fail "no python3"
export PATH="$(dirname "$python"):$PATH"
site_dirs() {
  "$python" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))'
}
snapshot() {  # name and modification time of every entry of the interpreter's site-packages folders
  site_dirs | while read -r d; do
    [[ -d $d ]] && find "$d" -maxdepth 1 -mindepth 1 -printf "$d/%f %T@\n"
  done | sort
}
snapshot >"$work/before"

# pip's index reachable? (PyPI, or the index pip is configured with)
if ! "$python" -m pip download -q --no-deps --no-cache-dir -d "$work/probe" pytest >"$work/probe.log" 2>&1; then
  echo "setup_isolation: SKIP (pip cannot download from its index here: $(tail -1 "$work/probe.log"))"
  exit 77
fi

mkdir "$work/home"
echo "== HOME=<tmp>/home SHOAL_VENV=<tmp>/venv scripts/install_deps.sh --python-only"
# pip runs `rustc --version` for its user agent; where rustc is a rustup proxy, rustup writes its settings
# into RUSTUP_HOME (default ~/.rustup) on first use: that write is rustup's, so it goes to a folder of its own.
HOME=$work/home RUSTUP_HOME=$work/rustup SHOAL_VENV=$work/venv "$src/scripts/install_deps.sh" --python-only ||
  fail "install_deps.sh failed"

for m in nanobind scikit_build_core numpy pytest; do
  "$work/venv/bin/python" -c "import $m" 2>/dev/null || fail "the venv lacks $m"
done
echo "== the venv has nanobind, scikit-build-core, numpy and pytest"
left=$(find "$work/home" -mindepth 1 | head -5)
[[ -z $left ]] || fail "set-up wrote into HOME: $left"
echo "== HOME untouched"
snapshot >"$work/after"
if ! diff "$work/before" "$work/after" >"$work/site.diff"; then
  cat "$work/site.diff"
  fail "set-up changed the site-packages of $python"
fi
echo "== the site-packages of $python untouched ($(wc -l <"$work/after") entries)"
echo "setup isolation ok"
