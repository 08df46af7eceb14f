#!/usr/bin/env bash
# Builds everything (CUDA code compile-only when there is no GPU) and runs the whole test suite:
# unit, multi-PE (2/4/8 PEs), codegen, lint, install; GPU tests skip cleanly without a GPU.
# Same build folder as scripts/quickstart.sh (build/ci): after the quick start only the tests are left to build.
# Ends with one line: how many tests passed, failed and were skipped, and why the skipped ones skipped
# (scripts/ctest_summary.py); the exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "== test: $*"; }
scripts/install_deps.sh
source scripts/env.sh
say "configuring (cmake --preset ci, Python: $shoal_venv)"
cmake --preset ci -DPython_EXECUTABLE="$shoal_venv/bin/python" -DPython3_EXECUTABLE="$shoal_venv/bin/python"
say "building everything, tests included ($(nproc) jobs; CUDA sources take minutes each)"
cmake --build --preset ci -j "$(nproc)"
say "running the tests (ctest --preset ci -j 2 $*)"
junit=build/ci/ctest-results.xml
rm -f "$junit"
status=0
ctest --preset ci -j 2 --output-junit "$PWD/$junit" "$@" || status=$?
if [[ -f $junit ]]; then
  "$shoal_venv/bin/python" scripts/ctest_summary.py "$junit" | sed 's/^== /== test: /'
fi
exit "$status"
