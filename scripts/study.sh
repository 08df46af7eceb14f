#!/usr/bin/env bash
# The study (docs/study.md): where device-initiated issue wins, measured by one command.
#   scripts/study.sh [bench/study/study.py options]     (--help lists them)
# On a GPU machine it runs the device study (a private MPS daemon lets several PEs share a GPU; it is stopped on
# exit) and writes docs/results/study/; without a GPU, the host set on host-memory PEs. Build shoal first
# (cmake --preset gpu-proxy && cmake --build --preset gpu-proxy, then --build build/gpu-proxy; default build/ci).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/mps.sh
python=${shoal_venv}/bin/python
[[ -x $python ]] || python=python3
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [[ " $* " != *" --dry-run "* ]]; then
  mps_start || echo "study: PEs sharing a GPU will be time-sliced" >&2
fi
"$python" bench/study/study.py "$@"
