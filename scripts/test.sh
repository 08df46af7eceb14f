#!/usr/bin/env bash
# Builds everything (CUDA code compile-only when there is no GPU) and runs the whole test suite:
# unit, multi-PE (2/4/8 PEs), codegen, lint, install; GPU tests skip cleanly without a GPU.
# Same build folder as scripts/quickstart.sh (build/ci): after the quick start only the tests are left to build.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "== test: $*"; }
scripts/install_deps.sh
source scripts/env.sh
say "configuring (cmake --preset ci)"
cmake --preset ci
say "building everything, tests included ($(nproc) jobs; CUDA sources take minutes each)"
cmake --build --preset ci -j "$(nproc)"
say "running the tests (ctest --preset ci -j 2 $*)"
ctest --preset ci -j 2 "$@"
