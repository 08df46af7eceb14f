#!/usr/bin/env bash
# One call on a GPU machine: configure + build (Release), the GPU tests (codegen runs in CPU CI), then the
# benchmarks (shoal-bench and, where NVSHMEM is installed, shoal-bench-nvshmem). Everything lands in
# $OUT (or ./gpu-out): summary.txt plus logs.tgz and bench.tgz.
#   scripts/gpu_run.sh [tests|bench|all] [extra shoal-bench args...]
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out" /tmp/shoal-logs /tmp/shoal-bench
source scripts/env.sh
summary=$out/summary.txt
: >"$summary"
log() { echo "$@" | tee -a "$summary"; }

log "== $(date -u) $(hostname)"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee -a "$summary"
nvidia-smi topo -m >/tmp/shoal-logs/topo.txt 2>&1
nvsh=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null || true)
log "nvshmem: ${nvsh:-not found}"

t0=$(date +%s)
if ! cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release ${nvsh:+-DSHOAL_NVSHMEM_HOME=$nvsh} \
    >/tmp/shoal-logs/configure.log 2>&1; then
  tail -40 /tmp/shoal-logs/configure.log | tee -a "$summary"
  tar czf "$out/logs.tgz" -C /tmp shoal-logs
  exit 1
fi
if ! cmake --build build/gpu -j "$(nproc)" >/tmp/shoal-logs/build.log 2>&1; then
  grep -E "error|FAILED" /tmp/shoal-logs/build.log | head -60 | tee -a "$summary"
  tar czf "$out/logs.tgz" -C /tmp shoal-logs
  exit 1
fi
log "build: $(( $(date +%s) - t0 )) s"

if [[ $what == tests || $what == all ]]; then
  t0=$(date +%s)
  ctest --test-dir build/gpu -L gpu -V --timeout 240 \
    >/tmp/shoal-logs/ctest_gpu.log 2>&1
  grep -E "Test +#|tests passed|FAILED|Skipped|\*\*\*" /tmp/shoal-logs/ctest_gpu.log | tee -a "$summary"
  grep -hE "init_ms=|extra_device_mib=|litmus |footprint|MiB|first chunk" /tmp/shoal-logs/ctest_gpu.log | head -60 | tee -a "$summary"
  log "gpu tests: $(( $(date +%s) - t0 )) s"
fi

if [[ $what == bench || $what == all ]]; then
  t0=$(date +%s)
  bench/run_gpu_bench.sh build/gpu /tmp/shoal-bench "$@" >/tmp/shoal-logs/bench.log 2>&1
  log "bench rc=$? $(( $(date +%s) - t0 )) s"
  [[ -f /tmp/shoal-bench/compare.md ]] && cat /tmp/shoal-bench/compare.md >>"$summary"
  tail -30 /tmp/shoal-logs/bench.log >>"$summary"
fi

if [[ $what == bench || $what == all || $what == variants ]]; then
  # The same latency benchmarks with relaxed polls plus one acquire re-read (SHOAL_WAIT_ACQUIRE_POLL=0)
  # instead of the default acquire polls: both orders are correct; which is faster?
  t0=$(date +%s)
  if cmake -S . -B build/gpu-acqpoll -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF \
      -DCMAKE_CUDA_FLAGS=-DSHOAL_WAIT_ACQUIRE_POLL=0 >/tmp/shoal-logs/configure-acqpoll.log 2>&1 &&
    cmake --build build/gpu-acqpoll -j "$(nproc)" --target shoal-bench shoalrun >/tmp/shoal-logs/build-acqpoll.log 2>&1; then
    SHOAL_WAIT_TIMEOUT=25s build/gpu-acqpoll/tools/shoalrun/shoalrun -n 2 --timeout 200 -- \
      build/gpu-acqpoll/bench/shoal-bench p_ping_pong put_signal_ping_pong barrier_latency -e 4K \
      --csv /tmp/shoal-bench/acqpoll.csv >/tmp/shoal-logs/bench-acqpoll.log 2>&1
    log "relaxed-poll variant rc=$? $(( $(date +%s) - t0 )) s"
    grep -E "p_ping_pong|barrier_latency|put_signal_ping_pong +shoal" /tmp/shoal-logs/bench-acqpoll.log | head -12 >>"$summary"
  else
    log "relaxed-poll variant: build failed"
  fi
fi
[[ -d /tmp/shoal-bench ]] && tar czf "$out/bench.tgz" -C /tmp shoal-bench
tar czf "$out/logs.tgz" -C /tmp shoal-logs
