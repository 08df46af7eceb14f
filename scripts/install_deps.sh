#!/usr/bin/env bash
# Installs what building and testing shoal needs on a fresh Debian/Ubuntu machine:
#   - system packages with apt-get (root or sudo), those that are missing;
#   - the Python tools (nanobind, scikit-build-core, numpy, pytest, matplotlib for the plots and the study)
#     with pip into a virtual environment of this checkout, build/venv (SHOAL_VENV: another folder), never
#     into the Python on PATH. pip's cache is build/pip-cache, so besides apt nothing is written outside the
#     checkout (tests/install/setup_isolation_test.sh checks it). The scripts configure CMake with the
#     venv's interpreter (scripts/env.sh: $SHOAL_PYTHON), so the tests and bench/plot.py use it too.
# The CUDA toolkit (nvcc) is optional: without it shoal builds its host backend only.
#
#   scripts/install_deps.sh [--python-only]     (--python-only: the venv step alone, no apt)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python_only=0
case ${1:-} in
  --python-only) python_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--python-only]" >&2; exit 2 ;;
esac
say() { echo "== install_deps: $*"; }

if ((!python_only)); then
  pkgs=(cmake ninja-build g++ pkg-config python3 python3-dev python3-venv libgtest-dev libgmock-dev libfmt-dev
        libcli11-dev clang-format libucx-dev ucx-utils libopenmpi-dev openmpi-bin)  # OpenMPI: OSHMEM for tests/shmem
  missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    say "apt-get update (quiet; takes a minute)"
    $sudo apt-get update -qq
    say "apt-get install ${missing[*]} (quiet; takes a few minutes)"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    say "apt packages done"
  else
    say "apt packages already installed: ${pkgs[*]}"
  fi
fi

# The Python package (SHOAL_BUILD_PYTHON, on in the ci preset) builds with nanobind and is tested with pytest
# and numpy; scikit-build-core is what `pip install .` builds the wheel with; bench/plot.py draws with matplotlib.
venv=${SHOAL_VENV:-$root/build/venv}
export PIP_CACHE_DIR=$root/build/pip-cache PIP_DISABLE_PIP_VERSION_CHECK=1
if [[ ! -x $venv/bin/python ]]; then
  say "creating the virtual environment $venv (python3 -m venv)"
  python3 -m venv "$venv" || {
    echo "install_deps: python3 -m venv failed; on Debian/Ubuntu it needs the package python3-venv" >&2
    exit 1
  }
fi
modules=(nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy pytest:pytest matplotlib:matplotlib)
py_missing=()
for m in "${modules[@]}"; do
  "$venv/bin/python" -c "import ${m%%:*}" >/dev/null 2>&1 || py_missing+=("${m#*:}")
done
if ((${#py_missing[@]})); then
  say "pip install ${py_missing[*]} into $venv"
  "$venv/bin/python" -m pip install -q "${py_missing[@]}"
else
  say "$venv already has ${modules[*]%%:*}"
fi
