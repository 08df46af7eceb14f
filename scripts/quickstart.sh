#!/usr/bin/env bash
# Installs dependencies, builds shoal (release) and runs its main job: shoal-bench between PEs —
# on GPUs when present, otherwise on host-memory PEs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
source scripts/env.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
npes=2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L | wc -l)
  ((ngpu >= 2)) && npes=$ngpu
fi
exec build/release/tools/shoalrun/shoalrun -n "$npes" -- build/release/bench/shoal-bench "$@"
