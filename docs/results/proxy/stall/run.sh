#!/usr/bin/env bash
# Variants of stall_repro.cu on the first GPU (about a minute each set: a stalled variant takes 2 s).
#   run.sh [all|helpers]   all: every pending/op/poller variant (session 15's first run), then the helpers;
#                          helpers: only how the helper issues its work (HELPER argument), against the one
#                          pending case that stalled (a pageable copy on the legacy stream), and a control.
set -u
cd "$(dirname "$0")" || exit 2
source ../../../../scripts/env.sh  # nvcc on PATH
nvcc -O2 -arch=sm_90 -std=c++17 -o /tmp/shoal_stall_repro stall_repro.cu -lcuda || exit 1
if [[ ${1:-all} == all ]]; then
  for pending in none d2h_A h2d_A d2h_legacy kern_A event_A d2h_pageable_A d2h_pageable_legacy; do
    for op in d2h h2d kern; do timeout 20 /tmp/shoal_stall_repro "$pending" "$op" 1 0; done
  done
  for pollers in 32 1024; do for fence in 0 1; do
    for op in d2h h2d kern; do timeout 20 /tmp/shoal_stall_repro none "$op" "$pollers" "$fence"; done
  done; done
  echo "--- CUDA_DEVICE_MAX_CONNECTIONS=32"
  for pending in d2h_A d2h_legacy kern_A; do
    for op in d2h h2d kern; do CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 20 /tmp/shoal_stall_repro "$pending" "$op" 1 0; done
  done
fi
echo "--- helpers"
for how in rt rt_query drv ctx; do
  for pending in none d2h_pageable_legacy; do
    for op in d2h h2d kern; do timeout 20 /tmp/shoal_stall_repro "$pending" "$op" 1 0 "$how"; done
  done
done
