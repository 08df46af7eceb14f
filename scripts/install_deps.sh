#!/usr/bin/env bash
# Installs what building and testing shoal needs on a fresh Debian/Ubuntu machine (apt + pip).
# The CUDA toolkit (nvcc) is optional: without it shoal builds its host backend only.
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config python3 libgtest-dev libgmock-dev libfmt-dev libcli11-dev clang-format)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
# Optional: plots from shoal-bench CSVs.
if [[ "${SHOAL_WITH_PLOTS:-0}" == 1 ]]; then python3 -m pip install -q matplotlib; fi
