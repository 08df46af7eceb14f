#!/usr/bin/env bash
# One time-boxed GPU call (the session's last, when device time is short): configure and build with the
# proxy (UCX bundle) and both NVSHMEMs (3.4.5 of the machine, 3.8.0 from a bundle), then a fixed list of
# tests and benchmarks in priority order. Each task is skipped when already done (a marker under
# build/gpu/.final_done, so a second call on the still-warm machine continues where the first stopped) or
# when its estimated cost no longer fits in DEADLINE seconds. Everything lands in $OUT (logs/, bench/,
# proxy/) and, because the device tool returns a limited number of files, also in $OUT/all.tgz.
#
#   scripts/gpu_final.sh [DEADLINE]      (default 560 s)
#   SHOAL_UCX_WHEEL (default .whl/ucx-1.22.0.tar.xz), SHOAL_NVSHMEM_BUNDLE (default .whl/nvshmem-3.8.0.tar.xz):
#   the bundles of scripts/carry_bundle.sh, carried to the machine.
set -uo pipefail
T0=$(date +%s); DL=${1:-560}
el() { echo $(( $(date +%s)-T0 )); }
O=${OUT:-$PWD/gpu-out}; mkdir -p $O/logs $O/bench $O/proxy
B=build/gpu; M=$B/.final_done; mkdir -p $M
source scripts/env.sh
eval "$(scripts/ucx_wheel.sh "${SHOAL_UCX_WHEEL:-.whl/ucx-1.22.0.tar.xz}" /tmp/shoal-ucx 2>/dev/null)"
[[ -d /tmp/nv38/nvshmem ]] || { mkdir -p /tmp/nv38 && tar -xJf "${SHOAL_NVSHMEM_BUNDLE:-.whl/nvshmem-3.8.0.tar.xz}" -C /tmp/nv38; }
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 SHOAL_WAIT_TIMEOUT=25s NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
nvsh=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
if [[ ! -f $M/build ]]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_WITH_UCX=ON $WHEEL_UCX_CMAKE_ARGS -DSHOAL_GPU_TEST_PES=2 \
    -DSHOAL_NVSHMEM_HOME=$nvsh -DSHOAL_NVSHMEM_EXTRA_HOMES=/tmp/nv38/nvshmem -DSHOAL_BUILD_PYTHON=ON > $O/logs/configure.log 2>&1
  grep -E "shoal: (NVSHMEM|UCX|NCCL)" $O/logs/configure.log
  if timeout 300 cmake --build $B -j 16 > $O/logs/build.log 2>&1; then touch $M/build; else grep -E "error|FAILED" $O/logs/build.log | head -30; fi
  echo "build $(el) s"
fi
source scripts/mps.sh; mps_start 2>/dev/null
export SHOAL_GPU_TEST_SHARE_GPUS=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
fits() { (( $(el) + $1 <= DL )); }
t() {  # t NAME COST LIMIT: one ctest
  local n=$1 c=$2 l=$3; [[ -f $M/t_$n ]] && return; fits $c || { echo "skip $n (time)"; return; }
  timeout $((l + 20)) ctest --test-dir $B -R "^${n//./\\.}\$" --timeout $l -V > $O/logs/t_$n.log 2>&1
  echo "$(grep -E "Test +#" $O/logs/t_$n.log | tail -1 | sed 's/^ *[0-9/]* *//') [$(el)s]"; touch $M/t_$n
  grep -q "Passed" <(grep -E "Test +#" $O/logs/t_$n.log | tail -1) || sleep 2
}
R=$B/tools/shoalrun/shoalrun
bn() {  # bn NAME COST BINARY ARGS...: one benchmark run into $O/bench/NAME.csv
  local n=$1 c=$2; shift 2; [[ -f $M/b_$n ]] && return; fits $c || { echo "skip bench $n (time)"; return; }
  timeout $((c + 30)) $R -n 2 --timeout $((c + 10)) -- "$@" --csv $O/bench/$n.csv > $O/bench/$n.log 2>&1
  echo "bench $n rc=$? [$(el)s]"; touch $M/b_$n
}
SB=$B/bench/shoal-bench; NV=$B/bench/nvshmem/shoal-bench-nvshmem; NV38=$B/bench/nvshmem/shoal-bench-nvshmem-3.8.0
for x in rma amo sync litmus nvapi coll coll_facade; do t ${x}_gpu_test_proxy.np2 25 110; done
t rma_gpu_test.np2 10 90; t coll_gpu_test.np2 10 90; t litmus_gpu_test.np2 20 90
t python_ep_normal_test_proxy.np2 60 150
t coll_stream_gpu_test.np2 10 90; t coll_facade_gpu_test.np2 8 90; t nvapi_gpu_test.np2 4 60; t team_gpu_test.np2 4 60
bn shoal_bw 40 $SB put_bw -s block -c 32 -b 64K -e 4M
bn nvshmem_bw 40 $NV put_bw -s block -c 32 -b 64K -e 4M
bn nvshmem38_bw 40 $NV38 put_bw -s block -c 32 -b 64K -e 4M
SHOAL_BENCH_COLL_SCOPES=block SHOAL_BENCH_NCCL=0 bn shoal_a2a 30 $SB alltoall -b 1M -e 1M
bn nvshmem_a2a 30 $NV alltoall -b 1M -e 1M
bn nvshmem38_a2a 30 $NV38 alltoall -b 1M -e 1M
bn shoal_lat 50 $SB p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency -e 4K
bn nvshmem_lat 50 $NV p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency -e 4K
bn nvshmem38_lat 50 $NV38 p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency -e 4K
if [[ ! -f $M/proxybench ]] && fits 100; then
  SHOAL_BACKEND=cuda SHOAL_DISABLE_P2P=1 UCX_TLS=tcp,cuda_copy UCX_NET_DEVICES=lo timeout 100 $R -n 2 --timeout 90 -- $SB put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency -b 16 -e 16M -f 4 --csv $O/proxy/shoal_device.csv > $O/proxy/device.log 2>&1
  echo "proxy device bench rc=$? [$(el)s]"; touch $M/proxybench
  SHOAL_BACKEND=host SHOAL_DISABLE_P2P=1 UCX_TLS=tcp UCX_NET_DEVICES=lo timeout 60 $R -n 2 --timeout 50 -- $SB put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency -b 16 -e 16M -f 4 --csv $O/proxy/shoal_host.csv > $O/proxy/host.log 2>&1
  echo "proxy host bench rc=$? [$(el)s]"
fi
t python_ep_normal_graph_test_proxy.np2 60 150
t nv_device_all.np2 5 60; t python_ep_normal_test.np2 20 90; t python_ep_normal_graph_test.np2 16 90; t python_ep_low_latency_test.np2 12 90
t amo_gpu_test.np2 4 60; t sync_gpu_test.np2 4 60; t stream_gpu_test.np2 4 60; t coll_collect_gpu_test.np2 4 60
t python_gpu_test.np2 12 60
echo "end $(el) s"
(cd "$O" && tar czf /tmp/shoal-final.tgz --exclude=all.tgz . && mv /tmp/shoal-final.tgz all.tgz)
