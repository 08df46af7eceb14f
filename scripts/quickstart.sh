#!/usr/bin/env bash
# Installs dependencies, builds what the quick start runs (libshoal, shoalrun, shoal-info,
# shoal-bench; no tests) in build/ci, and runs shoal-bench between PEs: on GPUs when present,
# otherwise on host-memory PEs. scripts/test.sh builds the rest in the same folder, reusing this.
# (Benchmark figures: scripts/gpu.sh builds the gpu preset, Release, on a GPU machine.)
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "== quickstart: $*"; }
scripts/install_deps.sh
source scripts/env.sh
say "configuring (cmake --preset ci, Python: $shoal_venv)"
cmake --preset ci -DPython_EXECUTABLE="$shoal_venv/bin/python" -DPython3_EXECUTABLE="$shoal_venv/bin/python"
say "building the library, shoalrun, shoal-info and shoal-bench ($(nproc) jobs; CUDA sources take minutes each)"
cmake --build --preset quickstart -j "$(nproc)"
npes=2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L | wc -l)
  ((ngpu >= 2)) && npes=$ngpu
fi
say "running: build/ci/tools/shoalrun/shoalrun -n $npes -- build/ci/bench/shoal-bench $*"
build/ci/tools/shoalrun/shoalrun -n "$npes" -- build/ci/bench/shoal-bench "$@"
say "how to read it: one row per benchmark, implementation and message size; impl 'shoal' between PE 0 and PE 1,"
say "the other impls are baselines measured in the same run. ratio = shoal's figure / the baseline named in 'vs':"
say "above 1 is faster for GB/s rows, below 1 is faster for latency rows (docs/install.md, 'What the quick start prints')."
say "done. The tools are in build/ci (not on PATH): tools/shoalrun/shoalrun, tools/shoal_info/shoal-info,"
say "bench/shoal-bench. README.md says how to install them and build your own program."
