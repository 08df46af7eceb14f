#!/usr/bin/env bash
# Builds everything (CUDA code compile-only when there is no GPU) and runs the whole test suite:
# unit, multi-PE (2/4/8 PEs), codegen, lint, install; GPU tests skip cleanly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
source scripts/env.sh
cmake --preset ci
cmake --build --preset ci -j "$(nproc)"
ctest --preset ci -j 2 "$@"
