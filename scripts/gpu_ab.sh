#!/usr/bin/env bash
# Before/after on one GPU machine, in one call: builds shoal-bench twice (Release) -- the source tree in
# BASE (a checkout or unpacked archive of the earlier commit) and this tree -- then runs the same device
# RMA/sync set and collectives with both, interleaved (base, new, base, new), 2 PEs, and writes
# bench/ab_compare.py's table (new/base per row, and the spread between the two runs of each side).
# PEs share the GPU under a private MPS daemon when the node has fewer GPUs than PEs.
#
#   scripts/gpu_ab.sh BASE_DIR [shoal-bench options]      (results in $OUT or ./gpu-out/ab)
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

build_one() {  # SRC BUILD LOG
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS=OFF >"$3" 2>&1 &&
    cmake --build "$2" -j "$jobs" --target shoal-bench shoalrun >>"$3" 2>&1
}
t0=$(date +%s)
build_one "$base_src" build/ab-base "$out/build_base.log" &
b1=$!
build_one . build/ab-new "$out/build_new.log" &
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
for round in 1 2; do
  for side in base new; do
    run "$side" "rma$round" "${rma[@]}" -e "${SHOAL_AB_RMA_MAX:-16M}" "$@"
    run "$side" "coll$round" "${coll[@]}" -e "${SHOAL_AB_COLL_MAX:-4M}" "$@"
  done
done
mps_stop
python3 bench/ab_compare.py --base "$out"/base_rma1.csv "$out"/base_coll1.csv --base2 "$out"/base_rma2.csv \
  "$out"/base_coll2.csv --new "$out"/new_rma1.csv "$out"/new_coll1.csv --new2 "$out"/new_rma2.csv "$out"/new_coll2.csv \
  --markdown "$out/ab.md"
