#!/usr/bin/env bash
# Tests of shoalrun, the local launcher: output prefixing and completeness, the environment of each
# PE, the bootstrap listener handed to PE 0, failure, signal and timeout handling, exec failure and
# command-line errors. Usage: shoalrun_test.sh PATH_TO_SHOALRUN
set -u

shoalrun=${1:?usage: shoalrun_test.sh PATH_TO_SHOALRUN}
source "$(dirname "$0")/check_lib.sh"

now_ms() { date +%s%3N; }

# run_shoalrun ARGS...: runs shoalrun (bounded by timeout(1)) with stdout in $tmp/out, stderr in
# $tmp/err; sets rc and elapsed_ms.
run_shoalrun() {
  local start
  start=$(now_ms)
  timeout 15 "$shoalrun" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  elapsed_ms=$(($(now_ms) - start))
}

show() {
  echo "  rc=$rc elapsed=${elapsed_ms}ms"
  echo "  --- stdout (head)"
  head -n 10 "$tmp/out" | sed 's/^/  /'
  echo "  --- stderr (head)"
  head -n 10 "$tmp/err" | sed 's/^/  /'
}

# --- Output: every line of every PE arrives, once, in order, with its PE's prefix, on the right stream.
run_shoalrun -n 8 -- sh -c 'seq 2000 | sed "s/^/out $SHOAL_RANK /"; seq 2000 | sed "s/^/err $SHOAL_RANK /" >&2'
check_lines() {  # FILE STREAM: "[r] STREAM r k" with k = 1..2000 in order for each r in 0..7
  awk -v stream="$2" '
    { if (!match($0, /^\[[0-9]+\] /)) { print "unprefixed: " $0; bad = 1; next }
      r = substr($0, 2, RLENGTH - 3) + 0
      if ($2 != stream || $3 != r || $4 != next_k[r] + 1) { print "unexpected: " $0; bad = 1 }
      next_k[r] = $4 }
    END { for (r = 0; r < 8; r++) if (next_k[r] != 2000) { print "PE " r ": " next_k[r] " lines"; bad = 1 }
          exit bad }' "$1"
}
if [ "$rc" -eq 0 ] && check_lines "$tmp/out" out && check_lines "$tmp/err" err &&
  [ "$(wc -l <"$tmp/out")" -eq 16000 ] && [ "$(wc -l <"$tmp/err")" -eq 16000 ]; then
  pass "8 PEs x 2000 lines on stdout and stderr, complete and prefixed"
else
  fail "output relaying"; show
fi

# --- A partial last line is flushed with a newline; --no-prefix drops the prefix, keeps whole lines.
run_shoalrun -n 1 sh -c 'printf "first\nno newline"'
if [ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "$(printf '[0] first\n[0] no newline')" ] &&
  [ "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" = '\n' ]; then
  pass "partial last line"
else
  fail "partial last line"; show
fi
run_shoalrun -n 2 --no-prefix sh -c 'echo "pe $SHOAL_RANK"'
if [ "$rc" -eq 0 ] && [ "$(sort "$tmp/out" | tr '\n' ,)" = "pe 0,pe 1," ]; then
  pass "--no-prefix"
else
  fail "--no-prefix"; show
fi

# --- A line longer than the relay's buffer arrives complete, in prefixed pieces.
run_shoalrun -n 1 sh -c 'head -c 200000 /dev/zero | tr "\0" a; echo; echo after'
joined=$(sed '$d' "$tmp/out" | awk '!/^\[0\] a+$/ { bad = 1 } { sub(/^\[0\] /, ""); printf "%s", $0 } END { exit bad }')
if [ "$rc" -eq 0 ] && [ "${#joined}" -eq 200000 ] && [ "$(tail -n 1 "$tmp/out")" = "[0] after" ]; then
  pass "200000-byte line"
else
  fail "long line (joined ${#joined} bytes)"; show
fi

# --- Environment per PE; a stale SHOAL_BOOTSTRAP_FD from outside must not reach PEs 1..N-1.
SHOAL_BOOTSTRAP_FD=99 SHOAL_RANK=7 run_shoalrun -n 4 -x FOO=bar -x FOO=baz -x EMPTY= -- \
  sh -c 'echo "$SHOAL_RANK $SHOAL_SIZE $SHOAL_LOCAL_RANK $SHOAL_LOCAL_SIZE ${SHOAL_BOOTSTRAP_FD-unset} $FOO ${EMPTY-unset}x $SHOAL_BOOTSTRAP_UID"'
env_ok=1
for r in 0 1 2 3; do
  line=$(grep "^\[$r\] " "$tmp/out")
  set -- $line
  if [ "$r" -eq 0 ]; then want_fd='[0-9]+'; else want_fd=unset; fi
  if ! [[ "$2 $3 $4 $5 $7 $8" == "$r 4 $r 4 baz x" && "$6" =~ ^$want_fd$ &&
    "$9" =~ ^shoal-uid-v1:127\.0\.0\.1:[0-9]+:[0-9a-f]{32}$ ]]; then
    echo "  PE $r: $line"; env_ok=0
  fi
done
if [ "$rc" -eq 0 ] && [ "$env_ok" -eq 1 ] && [ "$(sed 's/.* //' "$tmp/out" | sort -u | wc -l)" -eq 1 ]; then
  pass "environment per PE"
else
  fail "environment"; show
fi

# --- PE 0's SHOAL_BOOTSTRAP_FD is a socket listening on the uid's port; the other PEs hold no socket.
# /proc/net/tcp: field 2 local address (hex ip:port), 4 state (0A = LISTEN), 10 inode.
run_shoalrun -n 3 sh -c '
  sockets=0
  for f in /proc/$$/fd/*; do case $(readlink "$f") in socket:*) sockets=$((sockets + 1));; esac; done
  if [ "$SHOAL_RANK" != 0 ]; then echo "sockets $sockets"; exit 0; fi
  ino=$(readlink /proc/$$/fd/$SHOAL_BOOTSTRAP_FD | sed -n "s/^socket:\[\([0-9]*\)\]$/\1/p")
  port=${SHOAL_BOOTSTRAP_UID#shoal-uid-v1:127.0.0.1:}; port=${port%%:*}
  awk -v ino="$ino" -v want=":$(printf %04X "$port")" \
    "\$4 == \"0A\" && \$10 == ino && substr(\$2, length(\$2) - 4) == want { found = 1 } END { exit !found }" \
    /proc/net/tcp && echo "listening sockets $sockets"'
if [ "$rc" -eq 0 ] && grep -qx '\[0\] listening sockets 1' "$tmp/out" &&
  [ "$(grep -cx '\[[12]\] sockets 0' "$tmp/out")" -eq 2 ]; then
  pass "bootstrap listener only in PE 0"
else
  fail "bootstrap listener"; show
fi

# --- One PE fails: the others (sleeping 30 s) are stopped at once; its status is shoalrun's.
run_shoalrun -n 4 sh -c 'if [ "$SHOAL_RANK" = 2 ]; then echo dying >&2; exit 3; fi; exec sleep 30'
if [ "$rc" -eq 3 ] && [ "$elapsed_ms" -lt 5000 ] && grep -qx 'shoalrun: PE 2 exited with status 3' "$tmp/err" &&
  [ "$(grep -c 'shoalrun: PE' "$tmp/err")" -eq 1 ] &&
  [ "$(grep -n . "$tmp/err" | grep -F '[2] dying' | cut -d: -f1)" -eq 1 ]; then
  pass "failure stops the others (${elapsed_ms} ms)"
else
  fail "failure of one PE"; show
fi

# --- Two PEs fail, the first with 3, the next (once PE 1 has exited, before the others are stopped)
# with 5: shoalrun exits with the first failing PE's status, as mpirun does, not the worst. PE 2 waits
# for PE 1 to be a zombie (shoalrun leaves exited PEs so until the end), not for a fixed time, so that
# a slow machine neither reorders the two nor lets the stop of the others come first.
rm -f "$tmp/pe1-failing"
FLAG="$tmp/pe1-failing" run_shoalrun -n 4 sh -c 'case $SHOAL_RANK in
  1) echo $$ >"$FLAG.tmp" && mv "$FLAG.tmp" "$FLAG"; exit 3 ;;
  2) while [ ! -s "$FLAG" ]; do sleep 0.01; done
     p=$(cat "$FLAG")
     while [ -d "/proc/$p" ] && ! grep -q ") Z " "/proc/$p/stat" 2>/dev/null; do sleep 0.01; done
     exit 5 ;;
  *) exec sleep 30 ;;
esac'
if [ "$rc" -eq 3 ] && grep -qx 'shoalrun: PE 1 exited with status 3' "$tmp/err" &&
  grep -qx 'shoalrun: PE 2 exited with status 5' "$tmp/err"; then
  pass "exit status: the first failing PE's"
else
  fail "exit status of the first failing PE"; show
fi

# --- Every PE's output before a failure arrives, also output its C library had buffered: PEs print
# a line (python3 block-buffers stdout that is not a terminal) and mark that they did; PE 1 fails
# once all 8 have (bounded), and the others are stopped by SIGTERM, which does not flush anything.
if command -v python3 >/dev/null; then
  mkdir -p "$tmp/printed"
  run_shoalrun -n 8 env -u PYTHONUNBUFFERED python3 -c '
import os, sys, time
rank = int(os.environ["SHOAL_RANK"])
print("line from PE", rank)
open(os.path.join(sys.argv[1], str(rank)), "w").close()
if rank != 1:
    time.sleep(30)
for _ in range(200):
    if len(os.listdir(sys.argv[1])) == 8:
        break
    time.sleep(0.05)
sys.exit(1)' "$tmp/printed"
  if [ "$rc" -eq 1 ] && [ "$elapsed_ms" -lt 13000 ] &&
    [ "$(grep -cE '^\[([0-7])\] line from PE \1$' "$tmp/out")" -eq 8 ]; then
    pass "output of every PE survives a failure"
  else
    fail "output lost when a PE fails ($(grep -c 'line from' "$tmp/out") of 8 lines)"; show
  fi
else
  echo "skipped: output of every PE survives a failure (no python3)"
fi

# --- Death by a signal counts as 128+N.
run_shoalrun -n 3 sh -c 'if [ "$SHOAL_RANK" = 1 ]; then kill -s SEGV $$; fi; exec sleep 30'
if [ "$rc" -eq 139 ] && grep -qx 'shoalrun: PE 1 killed by signal 11 (Segmentation fault)' "$tmp/err"; then
  pass "signal death is 128+N"
else
  fail "signal death"; show
fi

# --- A PE that ignores SIGTERM gets SIGKILL after --kill-grace, and so does what it started.
run_shoalrun -n 2 --kill-grace 0.5 sh -c '
  if [ "$SHOAL_RANK" = 0 ]; then
    while [ ! -s "'"$tmp"'/grandchild" ]; do sleep 0.05; done; exit 1
  fi
  trap "" TERM; sleep 30 & echo $! > "'"$tmp"'/grandchild.tmp"; mv "'"$tmp"'/grandchild.tmp" "'"$tmp"'/grandchild"; wait'
grandchild=$(cat "$tmp/grandchild" 2>/dev/null || echo 0)
for _ in $(seq 40); do kill -0 "$grandchild" 2>/dev/null || break; sleep 0.05; done
if [ "$rc" -eq 1 ] && [ "$elapsed_ms" -lt 5000 ] && grep -q 'sending SIGKILL: 1$' "$tmp/err" &&
  [ "$grandchild" -gt 0 ] && ! kill -0 "$grandchild" 2>/dev/null; then
  pass "SIGKILL after --kill-grace reaches the PE's children"
else
  fail "kill grace (grandchild $grandchild)"; show
  [ "$grandchild" -gt 0 ] && kill "$grandchild" 2>/dev/null
fi

# --- SIGTERM on failure goes to the PE's whole process group: a process the PE started hears it.
run_shoalrun -n 2 sh -c '
  if [ "$SHOAL_RANK" = 0 ]; then
    while [ ! -e "'"$tmp"'/started" ]; do sleep 0.05; done; exit 1
  fi
  trap "wait; exit 0" TERM
  (trap "echo grandchild got TERM; exit 0" TERM; sleep 30 & touch "'"$tmp"'/started"; wait) &
  wait'
if [ "$rc" -eq 1 ] && [ "$elapsed_ms" -lt 5000 ] && grep -qx '\[1\] grandchild got TERM' "$tmp/out"; then
  pass "SIGTERM reaches the PE's process group"
else
  fail "SIGTERM to the process group"; show
fi

# --- A second signal at least a moment after the first skips the rest of the kill grace.
# (Not under timeout(1), which does not pass on a second signal.)
"$shoalrun" -n 2 --kill-grace 10 sh -c 'trap "" TERM; echo ready; sleep 30' >"$tmp/out" 2>"$tmp/err" &
launcher=$!
# A watchdog instead; it takes its sleep with it when stopped, and holds none of our output open.
(
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM
  sleep 15 &
  nap=$!
  wait "$nap" && kill -KILL "$launcher"
) >/dev/null 2>&1 &
watchdog=$!
start=$(now_ms)
for _ in $(seq 100); do [ "$(grep -c ready "$tmp/out")" -eq 2 ] && break; sleep 0.05; done
kill -TERM "$launcher"
sleep 2  # well past the 500 ms in which a repeated signal counts as the same one
kill -TERM "$launcher"
wait "$launcher"
rc=$? elapsed_ms=$(($(now_ms) - start))
kill "$watchdog" 2>/dev/null
if [ "$rc" -eq 143 ] && [ "$elapsed_ms" -lt 5000 ] && grep -q 'got another signal; sending SIGKILL' "$tmp/err"; then
  pass "second signal sends SIGKILL"
else
  fail "second signal"; show
fi

# --- A PE that exits 0 early is not a failure.
run_shoalrun -n 2 sh -c '[ "$SHOAL_RANK" = 0 ] || sleep 0.3; echo done'
if [ "$rc" -eq 0 ] && [ "$(grep -c done "$tmp/out")" -eq 2 ] && [ ! -s "$tmp/err" ]; then
  pass "early exit 0 is fine"
else
  fail "early exit 0"; show
fi

# --- --timeout: 124, naming the PEs still running.
run_shoalrun -n 4 --timeout 1 sh -c 'case $SHOAL_RANK in 1|3) exec sleep 30;; esac'
if [ "$rc" -eq 124 ] && [ "$elapsed_ms" -lt 5000 ] &&
  grep -qx 'shoalrun: timeout after 1 s; PEs still running: 1 3' "$tmp/err"; then
  pass "--timeout (${elapsed_ms} ms)"
else
  fail "--timeout"; show
fi

# --- SIGTERM to shoalrun is passed on to the PEs.
timeout 15 "$shoalrun" -n 3 sh -c 'trap "echo got TERM; exit 5" TERM; echo ready; sleep 30 & wait' \
  >"$tmp/out" 2>"$tmp/err" &
launcher=$!
for _ in $(seq 100); do [ "$(grep -c ready "$tmp/out")" -eq 3 ] && break; sleep 0.05; done
kill -TERM "$launcher"
wait "$launcher"
rc=$? elapsed_ms=-
if [ "$rc" -eq 143 ] && [ "$(grep -c 'got TERM' "$tmp/out")" -eq 3 ]; then
  pass "SIGTERM forwarded"
else
  fail "SIGTERM forwarding"; show
fi

# --- Exec failure: 127 (no such program), 126 (not executable).
run_shoalrun -n 2 /nonexistent/prog arg
if [ "$rc" -eq 127 ] &&
  grep -qx "\[[01]\] shoalrun: cannot execute '/nonexistent/prog': No such file or directory" "$tmp/err" &&
  grep -q 'shoalrun: PE [01] exited with status 127' "$tmp/err"; then
  pass "exec failure 127"
else
  fail "exec failure"; show
fi
run_shoalrun -n 1 /dev/null
if [ "$rc" -eq 126 ] && grep -q "cannot execute '/dev/null': Permission denied" "$tmp/err"; then
  pass "not executable 126"
else
  fail "not executable"; show
fi

# --- Command-line errors: status 2 and a message naming the option.
usage_case() {  # EXPECTED_MESSAGE_REGEX ARGS...
  local want=$1
  shift
  run_shoalrun "$@"
  if [ "$rc" -eq 2 ] && grep -qE "$want" "$tmp/err" && [ ! -s "$tmp/out" ]; then
    pass "usage error: $*"
  else
    fail "usage error: $* (want /$want/)"; show
  fi
}
usage_case '^shoalrun: --np: must be an integer from 1 to 1024' -n 0 true
usage_case '^shoalrun: --np: must be an integer from 1 to 1024' -n 1025 true
usage_case '^shoalrun: --np: must be an integer from 1 to 1024' -n x true
usage_case '^shoalrun: --np is required' true
usage_case '^shoalrun: missing the program' -n 2
usage_case "^shoalrun: unknown option '--tiemout'" -n 2 --tiemout 3 true
usage_case '^shoalrun: --timeout: must be a number of seconds' -n 2 --timeout -1 true
usage_case '^shoalrun: -x: .*SHOAL_RANK is set by shoalrun' -n 2 -x SHOAL_RANK=3 true
usage_case "^shoalrun: -x: expected NAME=VALUE" -n 2 -x FOO true

# --- The program's own options pass through; "--" ends shoalrun's options.
run_shoalrun -n 1 -- sh -c 'echo "$*"' sh -n 3 --timeout 5
if [ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "[0] -n 3 --timeout 5" ]; then
  pass "program arguments pass through"
else
  fail "program arguments"; show
fi
run_shoalrun --help
if [ "$rc" -eq 0 ] && grep -qE '^  --no-prefix +relay' "$tmp/out" && ! grep -qE '\{|!--' "$tmp/out"; then
  pass "--help renders --prefix and --no-prefix plainly"
else
  fail "--help flag rendering"; show
fi
run_shoalrun --version
if [ "$rc" -eq 0 ] && grep -qE '^shoalrun \(shoal\) [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out"; then
  pass "--version"
else
  fail "--version"; show
fi

# --- One host's share of a multi-host job: ranks from --first-rank, the job's size, local ranks from 0,
# the rendezvous address instead of a uid and no inherited listener.
run_shoalrun -n 2 --job-pes 5 --first-rank 3 --bootstrap-addr 10.9.8.7:4242 -- sh -c \
  'echo "env $SHOAL_RANK $SHOAL_SIZE $SHOAL_LOCAL_RANK $SHOAL_LOCAL_SIZE ${SHOAL_BOOTSTRAP_ADDR:-none} ${SHOAL_BOOTSTRAP_UID:-none} ${SHOAL_BOOTSTRAP_FD:-none}"'
if [ "$rc" -eq 0 ] && grep -qx '\[3\] env 3 5 0 2 10.9.8.7:4242 none none' "$tmp/out" &&
  grep -qx '\[4\] env 4 5 1 2 10.9.8.7:4242 none none' "$tmp/out"; then
  pass "--job-pes/--first-rank/--bootstrap-addr set ranks 3 and 4 of 5 meeting at the address"
else
  fail "multi-host environment"; show
fi
for bad in "--job-pes 4" "--job-pes 4 --first-rank 3 --bootstrap-addr h:1" "--job-pes 4 --bootstrap-addr nocolon"; do
  run_shoalrun -n 2 $bad -- true
  if [ "$rc" -eq 2 ] && grep -qE -- '--(job-pes|first-rank|bootstrap-addr)' "$tmp/err"; then
    pass "shoalrun -n 2 $bad: usage error naming the option"
  else
    fail "shoalrun -n 2 $bad"; show
  fi
done

finish_checks shoalrun
