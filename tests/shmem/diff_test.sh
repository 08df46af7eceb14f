#!/usr/bin/env bash
# diff_test.sh SHOALRUN SHOAL_EXE SOURCE NP [SHOAL_CXX_EXE]
# Runs the OpenSHMEM test program built against shoal (C and C++) on NP PEs, and the same source
# built with OpenMPI's oshcc run by oshrun; their outputs must be the same, leaving out the lines
# of the OpenSHMEM 1.5 families ("1.5 ...": OSHMEM 4.1 implements 1.4), each of which the source
# prints must be there in shoal's. Exit 77 (skipped) when oshcc/oshrun are not installed, after running shoal's alone.
set -euo pipefail
shoalrun=$1 exe=$2 src=$3 np=$4 cxx_exe=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run_shoal() {  # strip shoalrun's "[pe] " prefix; the program prints from PE 0 only
  "$shoalrun" -n "$np" --timeout 60 "$1" >"$tmp/raw" 2>"$tmp/err" || {
    { echo "FAIL: $1 on $np PEs exited nonzero"; cat "$tmp/raw" "$tmp/err"; } >&2; exit 1; }
  sed -E 's/^\[[0-9]+\] //' "$tmp/raw"
}
run_shoal "$exe" >"$tmp/shoal.txt"
cat "$tmp/shoal.txt"
# Every "1.5 ..." line the source prints (SAY("1.5 ...\n")) must be in shoal's output.
while IFS= read -r line; do
  grep -qxF "$line" "$tmp/shoal.txt" || { echo "FAIL: shoal's build skipped or failed the OpenSHMEM 1.5 family '$line'"; exit 1; }
done < <(sed -nE 's/.*SAY\("(1\.5 [^"\\]*)\\n"\);.*/\1/p' "$src")
grep -q '^done$' "$tmp/shoal.txt" || { echo "FAIL: no 'done' line"; exit 1; }
if [[ -n "$cxx_exe" ]]; then
  run_shoal "$cxx_exe" >"$tmp/shoal_cxx.txt"
  diff -u "$tmp/shoal.txt" "$tmp/shoal_cxx.txt" || { echo "FAIL: the C++ build differs from the C build"; exit 1; }
fi

if ! command -v oshcc >/dev/null || ! command -v oshrun >/dev/null; then
  echo "SKIP: OpenMPI OSHMEM (oshcc, oshrun: apt-get install libopenmpi-dev openmpi-bin) is not installed"
  exit 77
fi
oshcc -std=c11 -O1 "$src" -o "$tmp/osh_exe"
# One node: UCX over shared memory and loopback. OSHMEM 4.1 may crash in shmem_finalize under UCX
# on this kind of machine after the program is done, so its exit status is not used, its output is.
timeout 60 oshrun --allow-run-as-root --oversubscribe -np "$np" --mca spml ucx -x UCX_TLS=self,sm,tcp \
  -x UCX_NET_DEVICES=lo "$tmp/osh_exe" >"$tmp/osh.txt" 2>"$tmp/osh_err" || true
grep -v '^1\.5 ' "$tmp/shoal.txt" >"$tmp/shoal_14.txt"
if grep -q '^1\.5 ' "$tmp/osh.txt"; then echo "FAIL: OSHMEM ran the 1.5 families?"; exit 1; fi
if ! diff -u "$tmp/osh.txt" "$tmp/shoal_14.txt"; then
  echo "FAIL: shoal's output (+) differs from OSHMEM's (-) on $np PEs"; tail -20 "$tmp/osh_err"; exit 1
fi
echo "shmem_diff: shoal and OSHMEM agree on $np PEs"
