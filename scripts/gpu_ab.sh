#!/usr/bin/env bash
# Before/after on one GPU machine, in one call: builds shoal-bench twice (Release) -- the source tree in
# BASE (a checkout or unpacked archive of the earlier commit) and this tree -- then runs the same device
# RMA/sync set and collectives with both, interleaved (base, new, base, new, ...: SHOAL_AB_ROUNDS rounds,
# 4 by default), 2 PEs, and writes bench/ab_compare.py's table (new/base per row from each side's median,
# and each side's spread between its rounds). PEs share the GPU under a private MPS daemon when the node
# has fewer GPUs than PEs. SHOAL_AB_TESTS=1 also builds this tree's GPU tests and runs them (ctest -L gpu,
# PEs sharing the GPU under the same daemon) after the benchmarks. SHOAL_AB_EP=1 also builds both trees' Python
# package with the EP layer and runs this tree's bench/ep/bench_normal.py against each, alternated (DeepEP's shapes
# and method, 2 ranks, 24 SMs; SHOAL_AB_EP_ROUNDS rounds, 2 by default), into ep_ab.md: new/base per op.
#
#   scripts/gpu_ab.sh BASE_DIR [shoal-bench options]      (results in $OUT/ab or ./gpu-out/ab; ab.tgz: all)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
base_src=${1:?usage: $0 BASE_DIR [shoal-bench options]}
shift
out=${OUT:-$PWD/gpu-out}/ab
mkdir -p "$out"
source scripts/env.sh
source scripts/mps.sh
pes=${SHOAL_BENCH_PES:-2}
export SHOAL_WAIT_TIMEOUT=${SHOAL_WAIT_TIMEOUT:-25s} SHOAL_BENCH_NCCL=${SHOAL_BENCH_NCCL:-0}
jobs=$(( $(nproc) / 2 ))

tests=${SHOAL_AB_TESTS:-0}
ep=${SHOAL_AB_EP:-0}
build_one() {  # SRC BUILD LOG TESTS(0/1)
  local targets=(--target shoal-bench shoalrun)
  [[ $ep == 1 ]] && targets+=(shoal_py_core shoal_py_ep)
  [[ $4 == 1 ]] && targets=()
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DSHOAL_BUILD_TESTS=$([[ $4 == 1 ]] && echo ON || echo OFF)" \
    "-DSHOAL_BUILD_PYTHON=$([[ $ep == 1 ]] && echo ON || echo OFF)" >"$3" 2>&1 &&
    cmake --build "$2" -j "$jobs" "${targets[@]}" >>"$3" 2>&1
}
t0=$(date +%s)
build_one "$base_src" build/ab-base "$out/build_base.log" 0 &
b1=$!
build_one . build/ab-new "$out/build_new.log" "$tests" &
b2=$!
wait $b1 || { echo "base build failed"; tail -30 "$out/build_base.log"; exit 1; }
wait $b2 || { echo "new build failed"; tail -30 "$out/build_new.log"; exit 1; }
echo "builds: $(( $(date +%s) - t0 )) s"

gpus=$(nvidia-smi -L | wc -l)
((gpus < pes)) && mps_start

rma=(put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency)
coll=(allreduce broadcast fcollect alltoall team_barrier barrier)
limit=${SHOAL_AB_TIMEOUT:-150}
run() {  # SIDE TAG BENCHMARKS...
  local side=$1 tag=$2
  shift 2
  local b=build/ab-$side
  timeout -k 10 $((limit + 20)) "$b/tools/shoalrun/shoalrun" -n "$pes" --timeout "$limit" -- "$b/bench/shoal-bench" \
    "$@" --csv "$out/${side}_$tag.csv" >"$out/${side}_$tag.log" 2>&1
  echo "$side $tag rc=$? $(( $(date +%s) - t0 )) s"
}
t0=$(date +%s)
rounds=${SHOAL_AB_ROUNDS:-4}
for round in $(seq "$rounds"); do
  for side in base new; do
    run "$side" "rma$round" "${rma[@]}" -e "${SHOAL_AB_RMA_MAX:-16M}" "$@"
    run "$side" "coll$round" "${coll[@]}" -e "${SHOAL_AB_COLL_MAX:-4M}" "$@"
  done
done
args=()
for side in base new; do
  for round in $(seq "$rounds"); do args+=("--$side" "$out/${side}_rma$round.csv,$out/${side}_coll$round.csv"); done
done
python3 bench/ab_compare.py "${args[@]}" --markdown "$out/ab.md"
if [[ $ep == 1 ]]; then
  # The EP layer in both trees, measured by this tree's benchmark (--no-bound: an older Buffer has no raw-copy call).
  for round in $(seq "${SHOAL_AB_EP_ROUNDS:-2}"); do
    for side in base new; do
      SHOAL_EP_COMMIT=$side PYTHONPATH=$PWD/build/ab-$side/python timeout 600 python3 -m torch.distributed.run \
        --nproc_per_node=2 bench/ep/bench_normal.py --no-bound --csv "$out/ep_ab.csv" >"$out/ep_${side}_$round.log" 2>&1
      echo "ep $side round $round rc=$? $(( $(date +%s) - t0 )) s"
    done
  done
  python3 bench/ep/ab_ep.py "$out/ep_ab.csv" --markdown "$out/ep_ab.md"
fi
if [[ $tests == 1 ]]; then
  t0=$(date +%s)
  # SHOAL_AB_DEADLINE (epoch seconds): the tests stop in time for the results to be collected.
  test_limit=400
  [[ -n ${SHOAL_AB_DEADLINE:-} ]] && test_limit=$((SHOAL_AB_DEADLINE - $(date +%s)))
  ((test_limit < 30)) && test_limit=30
  SHOAL_GPU_TEST_SHARE_GPUS=1 timeout -k 10 "$test_limit" ctest --test-dir build/ab-new -L gpu --timeout 240 \
    >"$out/ctest_gpu.log" 2>&1
  echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"
  grep -E "Test +#|tests passed|FAILED|Skipped|\*\*\*" "$out/ctest_gpu.log" | tail -40
fi
mps_stop
(cd "$out" && tar czf ab.tgz ./*.csv ./*.log ./*.md 2>/dev/null)
