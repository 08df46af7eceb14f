#!/usr/bin/env bash
# Issue 16's run on a two-GPU machine (nvidia-h200-x2), one PE per GPU, in as few device calls as the work
# allows: each call runs the next tasks that fit in DEADLINE seconds (10-minute calls: DEADLINE 560) and
# leaves markers in build/gpu/.x2_done, so the next call on the still-warm machine continues where this one
# stopped (scripts/gpu_tasks.sh). Carry .whl/ucx-1.22.0.tar.xz and .whl/nvshmem-3.8.0.tar.xz
# (scripts/carry_bundle.sh ucx / nvshmem). Outputs in $OUT: logs/, bench/ (the device RMA/sync set and the
# collectives beside NVSHMEM 3.4.5 and 3.8.0 and NCCL, compare.md), ep/ (DeepEP's shapes), proxy/ (one PE per
# GPU behind the proxy, beside ucx_perftest), and all.tgz with everything.
#
#   scripts/gpu_x2.sh [DEADLINE]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
source scripts/gpu_tasks.sh
gpu_tasks_init .x2_done "${1:-560}"
if (($(nvidia-smi -L | wc -l) < 2)); then
  echo "gpu_x2.sh: this machine has fewer than 2 GPUs (use scripts/gpu_final.sh or scripts/gpu_run.sh)" >&2
  exit 2
fi
mkdir -p "$O/ep"
SB=$B/bench/shoal-bench
rma_set=(put_bw get_bw put_bw_bidir p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency)
# 1. The device RMA/sync set (shoal, then every shoal-bench-nvshmem* of the build), the collectives (shoal +
#    NCCL in one process, then each NVSHMEM), and the comparison against the protocol-work targets.
task rma 330 env SHOAL_BENCH_TIMEOUT=100 bench/run_gpu_bench.sh $B "$O/bench" "${rma_set[@]}"
task coll_shoal 200 $R -n 2 --timeout 190 -- $SB allreduce broadcast fcollect alltoall team_barrier barrier \
  --csv "$O/bench/shoal_coll.csv"
# nvshmem_benches.txt: "target<TAB>version<TAB>home" lines (bench/nvshmem/CMakeLists.txt).
while IFS=$'\t' read -r target _; do
  [[ -x $B/bench/nvshmem/$target ]] || continue
  task "coll_$target" 150 $R -n 2 --timeout 140 -- "$B/bench/nvshmem/$target" --coll \
    --csv "$O/bench/${target#shoal-bench-}_coll.csv"
done < <(cat $B/bench/nvshmem/nvshmem_benches.txt 2>/dev/null)
task compare 30 bash -c "python3 bench/compare.py $O/bench/shoal*.csv $O/bench/nvshmem*.csv --markdown $O/bench/compare.md"
# 2. The GPU suite at 2 PEs, one per GPU (the proxy variants included: UCX is built in).
task gpu_tests 420 ctest --test-dir $B -L gpu -E "nv_rdc|dead_peer|wait_timeout|torchrun" --timeout 240
task gpu_tests_risky 200 ctest --test-dir $B -L gpu -R "nv_rdc|dead_peer|wait_timeout|torchrun" --timeout 120
# 3. The MoE layer in DeepEP's shapes (normal: 4096 tokens, hidden 7168, top-8, 256 experts, BF16/FP8 dispatch,
#    BF16 combine, 24 and 12 SMs; low latency: 128 tokens per rank, 288 experts), and the EP tests.
task ep_normal 240 python3 -m torch.distributed.run --nproc_per_node=2 bench/ep/bench_normal.py --num-sms 24 12 \
  --csv "$O/ep/ep_normal.csv"
task ep_ll 120 $R -n 2 --timeout 110 -- python3 bench/ep/bench_low_latency.py --csv "$O/ep/ep_ll.csv"
# 4. The proxy path with one PE per GPU (every peer behind UCX over TCP), beside ucx_perftest.
task proxy_bench 420 bench/proxy/run.sh --build $B --out "$O/proxy" --quick
echo "end $(gt_el) s"
gpu_tasks_pack
