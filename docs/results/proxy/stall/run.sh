#!/usr/bin/env bash
# Every variant of stall_repro.cu on the first GPU (one to two minutes: a stalled variant takes 2 s).
set -u
cd "$(dirname "$0")" || exit 2
source ../../../../scripts/env.sh  # nvcc on PATH
nvcc -O2 -arch=sm_90 -std=c++17 -o /tmp/shoal_stall_repro stall_repro.cu || exit 1
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
