#!/bin/sh
# Driver of wait_timeout_gpu_test: runs it on 2 PEs with SHOAL_WAIT_TIMEOUT=200ms, once per API form,
# and passes only if each run (a) printed the bounded-wait report naming the waited-on address, the
# expected value (4242), the seen value (777) and PE 1, (b) had its wait kernel end between 150 ms and
# 5 s after launch, and (c) finished within 15 s in all. Exit 77 when the program skipped (no GPU).
# usage: wait_timeout_gpu_test.sh SHOALRUN PROGRAM
set -u
shoalrun=$1
program=$2
status=0
for mode in handle facade; do
  start=$(date +%s)
  out=$(SHOAL_WAIT_TIMEOUT=200ms "$shoalrun" -n 2 --timeout 30 -- "$program" "$mode" 2>&1)
  rc=$?
  elapsed=$(($(date +%s) - start))
  echo "---- $mode form: shoalrun exit $rc after ${elapsed} s; output:"
  echo "$out"
  echo "----"
  if echo "$out" | grep -q "SKIP: no usable GPU"; then
    echo "SKIP: no usable GPU"
    exit 77
  fi
  addr=$(echo "$out" | sed -n 's/.*waiting on sig_addr=0x0*\([0-9a-fA-F]*\).*/\1/p' | head -n 1)
  if [ -z "$addr" ]; then
    echo "FAIL ($mode): the program did not print the address it waits on (did it reach the wait?)"
    status=1
    continue
  fi
  report=$(echo "$out" | grep -i "timed out" | grep -i "$addr" | grep "4242" | grep "777" | grep "PE 1" | head -n 1)
  if [ -z "$report" ]; then
    echo "FAIL ($mode): no bounded-wait report naming address ...$addr, expected 4242, seen 777 and PE 1"
    status=1
  else
    echo "report ($mode): $report"
  fi
  trap_ms=$(echo "$out" | sed -n 's/.*trap_after_ms=\([0-9]*\).*/\1/p' | head -n 1)
  if [ -z "$trap_ms" ]; then
    echo "FAIL ($mode): the wait kernel's end was not reported (hung until shoalrun's timeout?)"
    status=1
  elif [ "$trap_ms" -lt 150 ] || [ "$trap_ms" -gt 5000 ]; then
    echo "FAIL ($mode): the wait kernel ended after $trap_ms ms; with SHOAL_WAIT_TIMEOUT=200ms expected 150..5000 ms"
    status=1
  fi
  if echo "$out" | grep -q "trap_after_ms=.* with cudaSuccess"; then
    echo "FAIL ($mode): the wait returned although nobody sent the signal"
    status=1
  fi
  if [ "$elapsed" -gt 15 ]; then
    echo "FAIL ($mode): the job took ${elapsed} s (expected a few seconds)"
    status=1
  fi
done
[ $status -eq 0 ] && echo "PASS: bounded device waits report and trap"
exit $status
