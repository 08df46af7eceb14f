#!/usr/bin/env bash
# One GPU test, before and after, with 2 PEs time-sliced on one GPU (no MPS: the harshest
# interleaving we can get): builds TEST (Release) in BASE_DIR (an earlier tree) and in this tree, then
# runs each REPEAT times alternately (base, new, base, new, ...) with --filter=FILTER, and prints one
# line per run and a summary. Each run is bounded by shoalrun --timeout LIMIT (seconds).
#
#   scripts/gpu_timesliced.sh BASE_DIR TEST FILTER [REPEAT=2] [LIMIT=120]   (logs in $OUT or ./gpu-out/ts)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
base_src=${1:?usage: $0 BASE_DIR TEST FILTER [REPEAT] [LIMIT]}
test=${2:?test target}
filter=${3:?filter}
repeat=${4:-2}
limit=${5:-120}
out=${OUT:-$PWD/gpu-out}/ts
mkdir -p "$out"
source scripts/env.sh
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
jobs=$(( $(nproc) / 2 ))
build_one() {  # SRC BUILD LOG
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$3" 2>&1 &&
    cmake --build "$2" -j "$jobs" --target "$test" shoalrun >>"$3" 2>&1
}
t0=$(date +%s)
build_one "$base_src" build/ts-base "$out/build_base.log" &
b1=$!
build_one . build/ts-new "$out/build_new.log" &
b2=$!
wait $b1 || { echo "base build failed"; tail -20 "$out/build_base.log"; exit 1; }
wait $b2 || { echo "new build failed"; tail -20 "$out/build_new.log"; exit 1; }
echo "builds: $(( $(date +%s) - t0 )) s"
declare -A passed=([base]=0 [new]=0)
for i in $(seq "$repeat"); do
  for side in base new; do
    b=build/ts-$side
    t1=$(date +%s)
    SHOAL_GPU_TEST_SHARE_GPUS=1 SHOAL_WAIT_TIMEOUT=${SHOAL_WAIT_TIMEOUT:-60s} timeout -k 10 $((limit + 15)) \
      "$b/tools/shoalrun/shoalrun" -n 2 --timeout "$limit" -- "$b/tests/gpu/$test" "--filter=$filter" \
      >"$out/${side}_$i.log" 2>&1
    rc=$?
    ((rc == 0)) && passed[$side]=$((passed[$side] + 1))
    echo "$side run $i: rc=$rc $(( $(date +%s) - t1 )) s $(grep -m1 -oE 'FAIL \[[^]]*\][^:]*: [^:]*: [0-9]+ of [0-9]+ bytes differ' "$out/${side}_$i.log")"
  done
done
echo "time-sliced $test --filter=$filter: base passed ${passed[base]}/$repeat, new passed ${passed[new]}/$repeat"
