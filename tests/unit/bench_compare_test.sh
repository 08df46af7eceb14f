#!/usr/bin/env bash
# bench/compare.py with CSVs of two NVSHMEM releases (impl nvshmem-<version>, as shoal-bench-nvshmem and
# shoal-bench-nvshmem-<version> write them): every NVSHMEM target is judged against each release, in
# version order whatever the order of the files, with a side-by-side table; and a CSV of before the impl
# named the version (impl "nvshmem") still reads as one unnamed release. Tiny synthetic CSVs; no GPU.
# Usage: bench_compare_test.sh PYTHON3 SOURCE_DIR
set -u
python=${1:?usage: bench_compare_test.sh PYTHON3 SOURCE_DIR}
src=${2:?}
source "$(dirname "$0")/check_lib.sh"
compare=$src/bench/compare.py
head=benchmark,impl,backend,num_pes,scope,size_bytes,iterations,latency_us,bandwidth_gbps,ratio,baseline,busbw_gbps,pair

# rows IMPL PING_US ALLREDUCE_US: a p_ping_pong row, its raw baseline, and a block allreduce row.
rows() {
  echo "$head"
  echo "p_ping_pong,$1,cuda,2,thread,4,1000,$2,0.0000,1.1000,raw,0.0000,0-1"
  echo "p_ping_pong,raw,cuda,2,thread,4,1000,0.7000,0.0000,0.0000,,0.0000,0-1"
  echo "allreduce,$1,cuda,2,block/1x512,8,1000,$3,0.0000,0.0000,,0.0000,"
}
rows shoal 0.8000 2.0000 >"$tmp/shoal.csv"
rows nvshmem-3.4.5 1.2000 8.0000 >"$tmp/nvshmem.csv"
rows nvshmem-3.8.0 1.0000 5.0000 >"$tmp/nvshmem-3.8.0.csv"
rows nvshmem 1.6000 4.0000 >"$tmp/old.csv"

# --- two releases, the newer file first: both judged, 3.4.5 before 3.8.0, side by side.
"$python" "$compare" "$tmp/shoal.csv" "$tmp/nvshmem-3.8.0.csv" "$tmp/nvshmem.csv" --markdown "$tmp/two.md" \
  >"$tmp/two" 2>&1
rc=$?
line() { grep -E "$1" "$tmp/two" | head -1; }
ping_345=$(line '^\| p_ping_pong half round trip +\| <= 0.6 x NVSHMEM 3.4.5 ')
ping_380=$(line '^\| p_ping_pong half round trip +\| <= 0.6 x NVSHMEM 3.8.0 ')
side=$(line '^\| p_ping_pong half round trip +\| <= 0.6 x NVSHMEM +\|')
if [ "$rc" -eq 0 ] && grep -q "vs NVSHMEM 3.4.5, NVSHMEM 3.8.0:" "$tmp/two" && grep -q "| 0.667 |" <<<"$ping_345" &&
  grep -q "| 0.800 |" <<<"$ping_380" && grep -qE "0.667 \(NOT met\) +\| 0.800 \(NOT met\)" <<<"$side"; then
  pass "issue 3: p_ping_pong judged against 3.4.5 (x0.667) and 3.8.0 (x0.800), side by side"
else
  fail "issue 3 with two releases (rc $rc)"
  cat "$tmp/two"
fi
ar_345=$(line '^\| device block-scope allreduce 8B +\| <= 0.5 x NVSHMEM 3.4.5 ')
ar_380=$(line '^\| device block-scope allreduce 8B +\| <= 0.5 x NVSHMEM 3.8.0 ')
keys=$(line '^\| collective ')
if grep -qE "\| 0.250 \| met" <<<"$ar_345" && grep -qE "\| 0.400 \| met" <<<"$ar_380" &&
  grep -qE "NVSHMEM 3.4.5 +\| NVSHMEM 3.8.0 +\| x NCCL +\| x NVSHMEM 3.4.5 +\| x NVSHMEM 3.8.0" <<<"$keys" &&
  grep -q "Issue 4 side by side" "$tmp/two" && grep -q "### Side by side" "$tmp/two.md" &&
  grep -q "## Issue 3: device RMA and sync vs NVSHMEM 3.4.5, NVSHMEM 3.8.0" "$tmp/two.md"; then
  pass "issue 4: block allreduce against each release; key-size table has a column per release"
else
  fail "issue 4 with two releases"
  cat "$tmp/two"
fi

# --- one CSV of before the version was named: one unnamed release, no side-by-side table.
"$python" "$compare" "$tmp/shoal.csv" "$tmp/old.csv" >"$tmp/one" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -qE '^\| p_ping_pong half round trip +\| <= 0.6 x NVSHMEM +\|.*\| 0.500 \| met' "$tmp/one" &&
  ! grep -q "side by side" "$tmp/one" && ! grep -q "NVSHMEM [0-9]" "$tmp/one"; then
  pass "an unversioned nvshmem CSV reads as one release"
else
  fail "unversioned nvshmem CSV (rc $rc)"
  cat "$tmp/one"
fi

finish_checks "bench compare"
