#!/usr/bin/env bash
# Runs one fault scenario and checks how it ends: exit status, output, and that it ended in time.
#
#   fault_test.sh [options] -- COMMAND...
#     --expect-rc N|nonzero   status the job must end with (default: nonzero)
#     --expect REGEX          the output must match (grep -E); repeatable
#     --reject REGEX          the output must not match; repeatable
#     --max-seconds S         the job must have ended within S seconds (default 10)
#     --manual N              start N PEs of COMMAND by hand (SHOAL_RANK/SHOAL_SIZE and a
#                             SHOAL_BOOTSTRAP_ADDR rendezvous), without shoalrun, so nothing but
#                             shoal itself can stop the survivors; then every PE other than
#                             --fault-pe must end, each with the status and each output matching
#                             every --expect-each REGEX
#     --fault-pe P            the PE that causes the fault (manual mode; -1: none)
#     --expect-each REGEX     manual mode: each surviving PE's own output must match; repeatable
# Without --manual, COMMAND is normally `shoalrun -n N ... -- program mode`.
set -uo pipefail

expect_rc=nonzero
max_s=10
manual=0
fault_pe=-1
expects=()
rejects=()
each=()
while (($#)); do
  case "$1" in
    --expect-rc) expect_rc=$2; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --max-seconds) max_s=$2; shift 2 ;;
    --manual) manual=$2; shift 2 ;;
    --fault-pe) fault_pe=$2; shift 2 ;;
    --expect-each) each+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "fault_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "fault_test.sh: no command" >&2; exit 2; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
rc_ok() { if [[ $expect_rc == nonzero ]]; then (($1 != 0)); else (($1 == expect_rc)); fi; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-fault.XXXXXX")
cleanup() {
  # Stop whatever of ours is still running (a frozen PE, or survivors past the deadline).
  for f in "$dir"/pe*.pid; do
    [[ -f $f ]] || continue
    kill -CONT "$(cat "$f")" 2>/dev/null
    kill -KILL "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT

start=$(now_ms)
if ((manual == 0)); then
  # A hard cap well past the limit, so a hang shows up as a slow failure, not a stuck CTest.
  timeout -k 5 $((max_s * 3)) "$@" >"$dir/out" 2>&1
  rc=$?
  elapsed=$(($(now_ms) - start))
  cat "$dir/out"
  echo "---- fault_test.sh: status $rc after ${elapsed} ms (limit ${max_s} s)"
  rc_ok "$rc" || fail "status $rc, expected $expect_rc"
  ((elapsed <= max_s * 1000)) || fail "took ${elapsed} ms, more than ${max_s} s"
  for re in "${expects[@]}"; do grep -Eq -- "$re" "$dir/out" || fail "output lacks /$re/"; done
  for re in "${rejects[@]}"; do grep -Eq -- "$re" "$dir/out" && fail "output has /$re/"; done
else
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  unset SHOAL_BOOTSTRAP_UID SHOAL_BOOTSTRAP_FD
  for ((r = 0; r < manual; ++r)); do
    (
      SHOAL_RANK=$r SHOAL_SIZE=$manual SHOAL_LOCAL_RANK=$r SHOAL_LOCAL_SIZE=$manual \
        SHOAL_BOOTSTRAP_ADDR="127.0.0.1:$port" "$@" >"$dir/pe$r.log" 2>&1 &
      echo $! >"$dir/pe$r.pid"
      wait $!
      echo $? >"$dir/pe$r.rc"
    ) 2>/dev/null &  # (no "Killed" job notices when cleanup stops a frozen PE)
  done
  deadline=$((start + max_s * 1000))
  while (($(now_ms) < deadline)); do
    pending=0
    for ((r = 0; r < manual; ++r)); do
      ((r == fault_pe)) && continue
      [[ -f $dir/pe$r.rc ]] || pending=$((pending + 1))
    done
    ((pending == 0)) && break
    sleep 0.1
  done
  elapsed=$(($(now_ms) - start))
  for ((r = 0; r < manual; ++r)); do
    echo "---- PE $r (status $(cat "$dir/pe$r.rc" 2>/dev/null || echo 'still running')):"
    cat "$dir/pe$r.log" 2>/dev/null
  done
  echo "---- fault_test.sh: survivors done after ${elapsed} ms (limit ${max_s} s)"
  for ((r = 0; r < manual; ++r)); do
    ((r == fault_pe)) && continue
    if [[ ! -f $dir/pe$r.rc ]]; then
      fail "PE $r still running after ${max_s} s"
      continue
    fi
    rc=$(cat "$dir/pe$r.rc")
    rc_ok "$rc" || fail "PE $r: status $rc, expected $expect_rc"
    for re in "${each[@]}"; do grep -Eq -- "$re" "$dir/pe$r.log" || fail "PE $r: output lacks /$re/"; done
    for re in "${rejects[@]}"; do grep -Eq -- "$re" "$dir/pe$r.log" && fail "PE $r: output has /$re/"; done
  done
fi

if ((failures)); then
  echo "fault_test.sh: $failures check(s) failed"
  exit 1
fi
echo "fault_test.sh: ok"
