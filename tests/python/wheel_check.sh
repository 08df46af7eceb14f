#!/usr/bin/env bash
# pip install . into a fresh venv, then the pytest suite at 2 PEs through the wheel's own shoalrun
# command, from outside the source tree (the import must come from the wheel). Not in ctest: it
# compiles libshoal a second time (Release, build/pip; minutes). Extra arguments go to pip install,
# e.g. -C cmake.define.SHOAL_CUDA=OFF. Usage: tests/python/wheel_check.sh [pip args...]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
echo "== wheel_check: pip install $src $*"
"$work/venv/bin/pip" install -q "$@" "$src" pytest
cd "$work"
"$work/venv/bin/python" -c "import shoal.core, sys; assert shoal.core.__file__.startswith('$work'), shoal.core.__file__"
echo "== wheel_check: shoalrun -n 2 pytest (installed shoalrun)"
PYTHONDONTWRITEBYTECODE=1 "$work/venv/bin/shoalrun" -n 2 --timeout 120 -- \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider --color=no "$src/tests/python"
echo "== wheel_check: ok"
