#!/usr/bin/env bash
# Runs one ctest N times in a row on a GPU machine (the PEs sharing a GPU under a private MPS daemon when the
# machine has fewer GPUs than 4) and keeps the whole output of every failing run, to catch a rare failure.
#
#   scripts/gpu_repeat.sh BUILD_DIR TEST_NAME [N]     (N: 20; logs in $OUT/repeat or ./gpu-out/repeat)
#
# Prints one line per run (passed/failed, seconds) and the count; each failure's log is repeat/fail_<i>.log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${1:?usage: $0 BUILD_DIR TEST_NAME [N]}
name=${2:?usage: $0 BUILD_DIR TEST_NAME [N]}
n=${3:-20}
out=${OUT:-$PWD/gpu-out}/repeat
mkdir -p "$out"
source scripts/env.sh
source scripts/mps.sh
(($(nvidia-smi -L | wc -l) < 4)) && mps_start
failed=0
for i in $(seq "$n"); do
  t0=$(date +%s)
  if ctest --test-dir "$build" -R "^${name//./\\.}\$" -V --timeout 600 >"$out/run.log" 2>&1 &&
    grep -q "tests passed, 0 tests failed" "$out/run.log"; then
    echo "run $i: passed ($(($(date +%s) - t0)) s)"
  else
    failed=$((failed + 1))
    mv "$out/run.log" "$out/fail_$i.log"
    echo "run $i: FAILED ($(($(date +%s) - t0)) s), log repeat/fail_$i.log"
    sleep 5  # a crashed PE may leave the MPS server refusing clients for a moment
  fi
done
rm -f "$out/run.log"
echo "$name: $failed of $n runs failed"
((failed == 0))
