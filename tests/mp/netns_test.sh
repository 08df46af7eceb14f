#!/usr/bin/env bash
# Two "nodes" on one machine: two network namespaces joined by a veth pair (10.77.0.1 and
# 10.77.0.2), one shoalrun in each starting half of one job (--job-pes/--first-rank, bootstrap at
# 10.77.0.1). Checks with shoal-info that peers in the other namespace are reached through the UCX
# proxy over the veth (without SHOAL_DISABLE_P2P) and same-namespace peers by load/store, then runs
# PROGRAM. With --link-down-after S the veth is taken down S seconds after PE 0 started PROGRAM's first
# test (a GoogleTest "RUN" line, after the init) and the job must stop with an error naming a peer within
# --max-seconds. Needs root (ip netns); exits 77 (CTest SKIP_RETURN_CODE) with the reason when
# namespaces cannot be made. The namespaces go in every case.
#
#   netns_test.sh --shoalrun PATH --info PATH --per-ns K [--link-down-after S] [--max-seconds S]
#                 [--expect REGEX]... -- PROGRAM [ARGS...]
set -uo pipefail

shoalrun=
info=
per_ns=1
link_down_after=
max_s=30
expects=()
while (($#)); do
  case "$1" in
    --shoalrun) shoalrun=$2; shift 2 ;;
    --info) info=$2; shift 2 ;;
    --per-ns) per_ns=$2; shift 2 ;;
    --link-down-after) link_down_after=$2; shift 2 ;;
    --max-seconds) max_s=$2; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "netns_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
(($#)) && [[ -n $shoalrun && -n $info ]] || { echo "netns_test.sh: needs --shoalrun, --info and a program" >&2; exit 2; }

skip() { echo "SKIP: $*"; exit 77; }
command -v ip >/dev/null || skip "no 'ip' command (iproute2) to make network namespaces"
(($(id -u) == 0)) || skip "making network namespaces needs root (uid $(id -u))"

# Names unique to this run; interfaces are created inside the namespaces, so their names never meet.
ns_a=shoal-nsA-$$
ns_b=shoal-nsB-$$
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-netns.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  ip netns pids "$ns_a" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns pids "$ns_b" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

err=$(ip netns add "$ns_a" 2>&1) || skip "cannot create a network namespace: $err"
err=$(ip netns add "$ns_b" 2>&1) || skip "cannot create a network namespace: $err"
err=$( (ip link add veth0 netns "$ns_a" type veth peer name veth1 netns "$ns_b" &&
  ip -n "$ns_a" addr add 10.77.0.1/24 dev veth0 && ip -n "$ns_b" addr add 10.77.0.2/24 dev veth1 &&
  ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
  ip -n "$ns_a" link set veth0 up && ip -n "$ns_b" link set veth1 up) 2>&1) ||
  skip "cannot create the veth pair: $err"
# UCX lists only devices that are up and running: wait for the carrier on both ends.
for ((i = 0; i < 100; ++i)); do
  [[ $(ip netns exec "$ns_a" cat /sys/class/net/veth0/operstate) == up &&
    $(ip netns exec "$ns_b" cat /sys/class/net/veth1/operstate) == up ]] && break
  sleep 0.05
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
n=$((2 * per_ns))
port=45123  # a fresh namespace: nothing else listens there

# run_job TAG TIMEOUT PROGRAM...: half the PEs in each namespace; writes $dir/TAG.{a,b} and .rc files.
run_job() {
  local tag=$1 limit=$2
  shift 2
  local ns dev first side
  for side in b a; do
    if [[ $side == a ]]; then ns=$ns_a dev=veth0 first=0; else ns=$ns_b dev=veth1 first=$per_ns; fi
    (
      ip netns exec "$ns" env -u SHOAL_DISABLE_P2P UCX_TLS=tcp UCX_NET_DEVICES=$dev \
        "$shoalrun" -n "$per_ns" --job-pes "$n" --first-rank "$first" --bootstrap-addr "10.77.0.1:$port" \
        --timeout "$limit" -- "$@" >"$dir/$tag.$side" 2>&1
      echo $? >"$dir/$tag.$side.rc"
    ) &
    pids+=($!)
  done
}
wait_job() {  # wait_job TAG LIMIT: both halves ended (shoalrun --timeout ends them; cleanup after that)
  local tag=$1 deadline=$(($(now_ms) + ($2 + 10) * 1000))
  while [[ ! -f $dir/$tag.a.rc || ! -f $dir/$tag.b.rc ]] && (($(now_ms) < deadline)); do sleep 0.05; done
  echo "---- $tag, namespace A (PEs 0..$((per_ns - 1)), status $(cat "$dir/$tag.a.rc")):"
  cat "$dir/$tag.a"
  echo "---- $tag, namespace B (PEs $per_ns..$((n - 1)), status $(cat "$dir/$tag.b.rc")):"
  cat "$dir/$tag.b"
}

# 1. The paths: every PE lists every peer; other namespace = proxy over its veth, same = load/store.
run_job info 20 "$info"
wait_job info 20
for side in a b; do [[ $(cat "$dir/info.$side.rc" 2>/dev/null) == 0 ]] || fail "shoal-info in namespace $side failed"; done
for ((me = 0; me < n; ++me)); do
  side=$( ((me < per_ns)) && echo a || echo b)
  dev=$( ((me < per_ns)) && echo veth0 || echo veth1)
  for ((pe = 0; pe < n; ++pe)); do
    if ((pe == me)); then
      want="self"
    elif (((pe < per_ns) == (me < per_ns))); then
      want="shared memory"
    else
      want="proxy \\(UCX tcp/$dev"
    fi
    # shoal-info prints "[me]     PE pe   path" under the line "paths from PE me:".
    grep -Eq "^\[$me\] +PE $pe +$want" "$dir/info.$side" || fail "PE $me -> PE $pe is not '$want'"
  done
done
grep -Eq "proxy engine: UCX [0-9]" "$dir/info.a" || fail "shoal-info names no UCX version"

# 2. The program over the mixed job, optionally with the link taken down under it.
start=$(now_ms)
run_job prog "$max_s" "$@"
if [[ -n $link_down_after ]]; then
  # The S seconds count from when PE 0 (namespace A; the others print no GoogleTest lines) runs the program's
  # first test, after the collective init: a slow start never has the link taken down under the bootstrap.
  for ((i = 0; i < max_s * 20; ++i)); do
    grep -q "RUN" "$dir/prog.a" 2>/dev/null && break
    sleep 0.05
  done
  sleep "$link_down_after"
  echo "---- netns_test.sh: taking veth0 down after ${link_down_after} s"
  ip -n "$ns_a" link set veth0 down
fi
wait_job prog "$max_s"
elapsed=$(($(now_ms) - start))
echo "---- netns_test.sh: program ended after ${elapsed} ms"
if [[ -n $link_down_after ]]; then
  for side in a b; do
    rc=$(cat "$dir/prog.$side.rc" 2>/dev/null || echo 124)
    ((rc != 0 && rc != 124)) || fail "namespace $side: status $rc, expected an error (not 0, not the 124 of a hang)"
  done
  ((elapsed <= max_s * 1000)) || fail "took ${elapsed} ms, more than ${max_s} s"
else
  for side in a b; do [[ $(cat "$dir/prog.$side.rc" 2>/dev/null) == 0 ]] || fail "namespace $side: the program failed"; done
fi
for re in "${expects[@]}"; do grep -Eqh -- "$re" "$dir"/prog.a "$dir"/prog.b || fail "output lacks /$re/"; done

if ((failures)); then
  echo "netns_test.sh: $failures check(s) failed"
  exit 1
fi
echo "netns_test.sh: ok"
