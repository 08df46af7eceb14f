#!/usr/bin/env bash
# The one way to build, test and measure shoal on a GPU machine: steps in the order given, each a set of parts
# (a build, one test, one benchmark round) that a time box (--budget) starts only when they fit and that --resume
# skips once done. `scripts/gpu.sh --help` is the manual; docs/gpu-runs.md the map.
# shellcheck disable=SC2317  # the steps and parts are called by name
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

usage() {
  cat <<'EOF'
usage: scripts/gpu.sh [options] STEP [STEP ARGS]... [-- shoal-bench options]

Builds shoal on a GPU machine (CMake preset gpu, or gpu-proxy with a UCX bundle), runs the GPU tests and
measures shoal beside NVSHMEM and NCCL. Steps run in the order given; each is made of parts (the build, one
test, one benchmark run, one round), every part with its log under OUT/logs/ and a line in OUT/summary.txt.
Steps that need the build get a build step in front unless one is listed or --no-build is given.

Steps:
  build                    configure (cmake --preset) and build: everything when a step runs tests, else the
                           benchmarks (and the Python package for ep-bench); --targets chooses
  test [LABEL]             the tests of ctest label LABEL (default gpu; -R/-E narrow them), one ctest call each,
                           those labelled risky (or matching --risky) last; each test is a part
  rma                      the device RMA/sync set through shoal-bench, then through every shoal-bench-nvshmem*
                           of the build; bench/compare.py against the targets, bench/plot.py curves (OUT/bench)
  coll                     the collectives: shoal and NCCL in one process (an NCCL stop is retried with its graph
                           registration off, then without its graph rows), then each NVSHMEM; compare, plots
  variants                 the latency set built with relaxed polls (preset gpu-relaxed-polls)
  collsweep                the collectives at 8 B and 256 MiB under each SHOAL_COLL_CHANNELS x SHOAL_COLL_ALGO,
                           one part each, then compare.py --sweep (OUT/collsweep)
  scale                    pair set, barrier and collectives at each PE count of SHOAL_SCALE_PES (2 4 8; counts
                           above the node's GPUs are skipped), then bench/scale.py (OUT/scale)
  proxy                    bench/proxy/run.sh --quick: the proxy transport beside ucx_perftest (needs UCX)
  ep-bench                 shoal.ep in DeepEP's shapes: bench/ep/bench_normal.py at 24 and 12 SMs,
                           bench/ep/bench_low_latency.py (OUT/ep-bench)
  ab BASE_TREE             device figures of an earlier source tree and of this one, both built alike, the rma
                           and coll sets alternated base/new for --rounds rounds; bench/ab_compare.py (OUT/ab)
  ep-ab CONFIG...          shoal.ep's switches side by side: one bench/ep/bench_normal.py process per rank count
                           of SHOAL_EP_AB_RANKS (2 4) and SM count of SHOAL_EP_AB_SMS (24) measures every CONFIG,
                           alternated in each of --rounds rounds (2); a CONFIG is LABEL or LABEL:VAR=V[,VAR=V...]
                           with VAR an EP switch (docs/ep.md); bench/ep/ab_ep.py puts every label beside the
                           first (OUT/ep-ab)
  ab-test BASE_TREE TEST [FILTER]
                           one GPU test program (a tests/gpu target) of both trees, PEs time-sliced on one GPU
                           (no MPS), base/new alternated for --rounds rounds, each run bounded (OUT/ab-test)
  repeat TEST [N]          one ctest N times (20), each run a part; failing runs' logs kept (OUT/repeat)
  ep DEEPEP_SRC            scripts/ep_vs_deepep.sh: shoal.ep beside DeepEP V1 (OUT/ep)
  perftests NVSHMEM_SRC    scripts/nvshmem_perftests.sh: NVSHMEM's perftests on shoal and on NVSHMEM, a build
                           part then a run part per group (device/pt-to-pt, device/coll, device/tile, host)
                           (OUT/perftests)
  study                    scripts/study.sh: the study (docs/study.md), resumed across calls (OUT/study)
  bench                    = rma coll variants
  all                      = build test rma coll variants

Options:
  --out DIR                logs and results (default: $OUT, else ./gpu-out)
  --budget SECONDS         time box of this call: a part starts only when its estimate and the margin fit in
                           what is left, every command is cut at the end of the budget less the margin, and
                           what did not run is listed for a --resume call
  --margin SECONDS         kept free at the end of the budget for the summary and the MPS shutdown (30)
  --resume                 skip the parts OUT/state.tsv records done (passed, failed or skipped); without it the
                           state starts afresh. A build is recorded only when it succeeded
  --mps, --no-mps          start a private MPS daemon for the steps (scripts/mps.sh; always stopped on exit), or
                           never; default: when the node has fewer GPUs than the PEs a step runs. PEs that share
                           a GPU without MPS are time-sliced, and the GPU tests then run quick (a twentieth of
                           the rounds)
  --preset NAME            CMake preset (gpu; gpu-proxy when a UCX bundle is given); build folder build/NAME
  --build-dir DIR          another build folder for the preset
  --ucx-bundle FILE        UCX with CUDA for the proxy transport: scripts/carry_bundle.sh ucx's .tar.xz or the
                           libucx-cu13 wheel (default $SHOAL_UCX_WHEEL); unpacked by scripts/ucx_wheel.sh
  --deepep-src DIR         a DeepEP V1 checkout (default $SHOAL_DEEPEP_SRC): test then runs DeepEP's own test files
                           against shoal.ep (deepep_test_*); without one they skip
  --nvshmem-home DIR       the NVSHMEM to compare with (default $SHOAL_NVSHMEM_HOME, else python3's
                           nvidia.nvshmem), built into shoal-bench-nvshmem
  --nvshmem-bundle FILE    a second NVSHMEM, scripts/carry_bundle.sh nvshmem's .tar.xz (default
                           $SHOAL_NVSHMEM_BUNDLE), built into shoal-bench-nvshmem-<version>: rma and coll
                           compare shoal beside both releases
  --pes N                  PEs of the benchmarks (2)
  --test-pes LIST          PE counts of the GPU tests, e.g. "2;4;8" on an 8-GPU node (2)
  -R, --tests REGEX        test: only the tests whose names match
  -E, --exclude REGEX      test: leave these out
  --risky REGEX            test: run these last, one at a time, as the ones labelled risky
  --rounds N               ab: base/new rounds (4); ab-test: runs per side (2); ep-ab: rounds of the configs (2)
  --ab-ep                  ab: also the EP benchmark of both trees (their Python packages)
  --targets "T ..."        build: only these targets
  --no-build               do not put a build step in front
  --pack                   OUT/all.tgz with everything, at the end
  --dry-run                print the plan (parts, estimates, the commands in order) and run nothing
  -h, --help               this text

Estimates (seconds; a part runs only when it fits the budget): build 480, a test its ctest TIMEOUT up to 60,
rma 330, coll 300, variants 300, collsweep 120 a configuration, scale 240 a run, proxy 420, ep-bench 240+120,
ab 480 to build and 240 a round, ep-ab 30 a process and 12 a config and round, ab-test 300 to build and 150 a
round, repeat 60 a run, ep 600, perftests 540 to build and 300 a group of runs, study 540 a call (the study resumes
where the budget cut it).

Environment: SHOAL_BENCH_TIMEOUT (200 s: each RMA benchmark binary), SHOAL_COLL_TIMEOUT (300 s: each
collective binary), SHOAL_SWEEP_TIMEOUT (90 s: each sweep configuration), SHOAL_SWEEP_CHANNELS
("16 32 64 132"), SHOAL_SWEEP_ALGOS ("auto ll direct"), SHOAL_SCALE_PES ("2 4 8"), SHOAL_SCALE_PAIRS (all),
SHOAL_SCALE_COLL_SCOPES (stream), SHOAL_AB_RMA_MAX (16M), SHOAL_AB_COLL_MAX (4M), SHOAL_WAIT_TIMEOUT (25s),
SHOAL_EP_AB_RANKS ("2 4"), SHOAL_EP_AB_SMS ("24"), SHOAL_EP_AB_ARGS (more bench_normal.py options, e.g. "--no-bound"),
SHOAL_EP_CONFIGS (ep: shoal's switch configs, as ep-ab's, each beside DeepEP; see scripts/ep_vs_deepep.sh).
Other variables pass through to the programs (e.g. SHOAL_PROXY_CUDA_CONTEXT=primary). NVLink multicast stays
off (scripts/env.sh).

Exit status: 0 every part ran and none failed; 1 a part failed (or the build did); 2 usage; 3 parts are left
for a --resume call (the budget ran out).

Examples:
  scripts/gpu.sh all                                    # build, the GPU tests, the benchmarks
  scripts/gpu.sh --budget 560 --resume --ucx-bundle .whl/ucx-1.22.0.tar.xz test    # repeat until it exits 0 or 1
  scripts/gpu.sh --nvshmem-bundle .whl/nvshmem-3.8.0.tar.xz rma coll -- -e 64M -r 7
  scripts/gpu.sh --rounds 3 ab /tmp/base
  scripts/gpu.sh --no-build repeat rma_gpu_test.np2 50
  scripts/gpu.sh ep-ab off on:SHOAL_EP_L2_DISCARD=1,SHOAL_EP_SELF_DIRECT=1,SHOAL_EP_INTERLEAVE=1
  scripts/gpu.sh --dry-run --budget 560 all
EOF
}

die() {
  echo "gpu.sh: $*" >&2
  exit 2
}

# --- the command line -----------------------------------------------------------------------------------------------
out=${OUT:-$PWD/gpu-out}
budget=0 margin=30 resume=0 mps=auto preset="" build_dir="" dry=0 pack=0 no_build=0
deepep_src=${SHOAL_DEEPEP_SRC:-} ucx_bundle=${SHOAL_UCX_WHEEL:-} nv_home=${SHOAL_NVSHMEM_HOME:-} nv_bundle=${SHOAL_NVSHMEM_BUNDLE:-}
pes=2 test_pes=2 tests_re="" exclude_re="" risky_re="" rounds="" ab_ep=0 targets=""
bench_args=()
steps=() step_args=()  # step_args[i]: the step's arguments, separated by newlines
declare -A nargs_min=([ab]=1 [ab-test]=2 [repeat]=1 [ep]=1 [perftests]=1 [ep-ab]=1)
declare -A nargs_max=([test]=1 [ab]=1 [ab-test]=3 [repeat]=2 [ep]=1 [perftests]=1 [ep-ab]=16)
is_step() {
  case $1 in build | test | rma | coll | variants | collsweep | scale | proxy | ep-bench | ep-ab | ab | ab-test | repeat | \
    ep | perftests | study | bench | all) return 0 ;; esac
  return 1
}
add_step() { steps+=("$1") step_args+=(""); }
need() { [[ $# -ge 2 ]] || die "$1 needs a value (see --help)"; }
while [[ $# -gt 0 ]]; do
  a=$1
  case $a in
    -h | --help) usage; exit 0 ;;
    --out) need "$@"; out=$2; shift ;;
    --budget) need "$@"; budget=$2; shift ;;
    --margin) need "$@"; margin=$2; shift ;;
    --resume) resume=1 ;;
    --mps) mps=on ;;
    --no-mps) mps=off ;;
    --preset) need "$@"; preset=$2; shift ;;
    --build-dir) need "$@"; build_dir=$2; shift ;;
    --ucx-bundle) need "$@"; ucx_bundle=$2; shift ;;
    --nvshmem-home) need "$@"; nv_home=$2; shift ;;
    --deepep-src) need "$@"; deepep_src=$2; shift ;;
    --nvshmem-bundle) need "$@"; nv_bundle=$2; shift ;;
    --pes) need "$@"; pes=$2; shift ;;
    --test-pes) need "$@"; test_pes=$2; shift ;;
    -R | --tests) need "$@"; tests_re=$2; shift ;;
    -E | --exclude) need "$@"; exclude_re=$2; shift ;;
    --risky) need "$@"; risky_re=$2; shift ;;
    --rounds) need "$@"; rounds=$2; shift ;;
    --ab-ep) ab_ep=1 ;;
    --targets) need "$@"; targets=$2; shift ;;
    --no-build) no_build=1 ;;
    --pack) pack=1 ;;
    --dry-run) dry=1 ;;
    --) shift; bench_args=("$@"); break ;;
    -*) die "unknown option $a (see --help)" ;;
    *)
      if is_step "$a"; then
        case $a in
          bench) add_step rma; add_step coll; add_step variants ;;
          all) for s in build test rma coll variants; do add_step "$s"; done ;;
          *) add_step "$a" ;;
        esac
      else
        last=$((${#steps[@]} - 1))
        ((last >= 0)) || die "'$a' is not a step (see --help)"
        s=${steps[$last]}
        n=$(grep -c . <<<"${step_args[$last]}")
        ((n < ${nargs_max[$s]:-0})) || die "'$a': $s takes at most ${nargs_max[$s]:-0} argument(s)"
        step_args[last]+="$a"$'\n'
      fi
      ;;
  esac
  shift
done
[[ ${#steps[@]} -gt 0 ]] || { usage >&2; die "no step given"; }
for i in "${!steps[@]}"; do
  s=${steps[$i]}
  n=$(grep -c . <<<"${step_args[$i]}")
  ((n >= ${nargs_min[$s]:-0})) || die "$s needs ${nargs_min[$s]} argument(s) (see --help)"
done
for v in budget margin pes; do [[ ${!v} =~ ^[0-9]+$ ]] || die "--$v takes a whole number"; done
[[ -z $rounds || $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a whole number"
[[ -n $preset ]] || { [[ -n $ucx_bundle ]] && preset=gpu-proxy || preset=gpu; }
B=${build_dir:-build/$preset}
case $B in /*) B_abs=$B ;; *) B_abs=$PWD/$B ;; esac
if [[ -n $deepep_src ]]; then
  [[ -f $deepep_src/tests/test_intranode.py ]] || die "--deepep-src $deepep_src: no tests/test_intranode.py there"
  export SHOAL_DEEPEP_SRC=$(cd "$deepep_src" && pwd)  # read by the deepep_test_* ctests
fi
mkdir -p "$out" || die "cannot make $out"
out=$(cd "$out" && pwd)
logs=$out/logs state=$out/state.tsv summary=$out/summary.txt
declare -A uses=()
for s in "${steps[@]}"; do uses[$s]=1; done
if [[ -z ${uses[build]:-} && $no_build == 0 ]]; then
  for s in test rma coll collsweep scale proxy ep-bench ep-ab repeat study; do
    if [[ -n ${uses[$s]:-} ]]; then
      steps=(build "${steps[@]}") step_args=("" "${step_args[@]}") uses[build]=1
      break
    fi
  done
fi

# --- parts, the budget and the state -------------------------------------------------------------------------------
t0=$(date +%s) sim=0 stop=0 stop_why="" part_rc=0 budget_hit=0 cur_log=/dev/null
left_parts=() failed_parts=() ran=0 skipped_done=0
exec 3>&1
elapsed() { if ((dry)); then echo "$sim"; else echo $(($(date +%s) - t0)); fi; }
# The summary: every part's line, the notes of the steps; stdout gets the same.
say() { if ((dry)); then echo "$*"; else echo "$*" | tee -a "$summary" >&3; fi; }
note() { ((dry)) || echo "$*" | tee -a "$summary" >&3; }
notes() {  # note of stdin, when there is any
  local s
  s=$(cat)
  [[ -z $s ]] || note "$s"
}
is_done() { [[ -f $state ]] && cut -f1 "$state" | grep -qxF -- "$1"; }

# shell_words ARGS...: the arguments as one line a shell reads back the same.
shell_words() {
  local a line=""
  for a in "$@"; do
    if [[ $a =~ ^[][A-Za-z0-9_./:=,@%+^-]+$ ]]; then line+=" $a"; else line+=" '${a//\'/\'\\\'\'}'"; fi
  done
  echo "${line# }"
}
# run_cmd LOG CMD...: CMD (its output to LOG, or to the part's log), cut at the budget's end; in a dry run, printed.
run_cmd() {
  local log=$1 rc
  shift
  if ((dry)); then
    echo "   \$ $(shell_words "$@")${log:+ > $log}"
    return 0
  fi
  echo "\$ $(shell_words "$@")"
  local bound=()
  if ((budget > 0)); then
    local left=$((t0 + budget - margin - $(date +%s)))
    ((left > 0)) || { budget_hit=1; return 124; }
    bound=(timeout -k 10 "$left")
  fi
  if [[ -n $log ]]; then "${bound[@]}" "$@" >"$log" 2>&1; else "${bound[@]}" "$@"; fi
  rc=$?
  ((budget > 0 && $(date +%s) >= t0 + budget - margin)) && budget_hit=1
  return "$rc"
}
x() {  # a command whose failure fails the part
  run_cmd "" "$@"
  local rc=$?
  ((rc != 0 && part_rc == 0)) && part_rc=$rc
  return "$rc"
}
xlog() {  # xlog FILE CMD...: x with the command's output in FILE
  local f=$1
  shift
  run_cmd "$f" "$@"
  local rc=$?
  ((rc != 0 && part_rc == 0)) && part_rc=$rc
  return "$rc"
}
xopt() { run_cmd "" "$@"; }  # a command whose failure is only reported in the log
plan() { ((dry)) && echo "   # $*"; return 0; }

# part NAME ESTIMATE FUNCTION ARGS...: runs FUNCTION (output in logs/NAME.log) unless done before (--resume), the
# budget has no room for ESTIMATE, or an earlier part stopped the run. FUNCTION sets part_status (passed, failed,
# skipped) or leaves it to part_rc; part_undone=1 keeps a finished part out of the state (a failed build).
part() {
  local name=$1 est=$2 now
  shift 2
  if ((resume)) && is_done "$name"; then
    skipped_done=$((skipped_done + 1))
    say "$(printf '%-44s done earlier: %s' "$name" "$(grep -m1 -F "$name"$'\t' "$state" | cut -f2)")"
    return 0
  fi
  if ((stop)); then
    left_parts+=("$name")
    return 0
  fi
  now=$(elapsed)
  if ((budget > 0 && now + est + margin > budget)); then
    stop=1 stop_why=budget
    left_parts+=("$name")
    say "$(printf '%-44s not started: needs ~%d s, %d s left of the budget' "$name" "$est" $((budget - margin - now)))"
    return 0
  fi
  if ((dry)); then
    echo "[$name] ~$est s, from ${now} s"
    "$@"
    sim=$((sim + est))
    return 0
  fi
  cur_log=$logs/${name//\//_}.log
  part_rc=0 part_status="" part_undone=0 budget_hit=0
  local t rc secs
  t=$(date +%s)
  echo "== $name" >&3
  "$@" >"$cur_log" 2>&1 </dev/null
  rc=$?
  ((rc != 0 && part_rc == 0)) && part_rc=$rc
  secs=$(($(date +%s) - t))
  ran=$((ran + 1))
  if ((budget_hit)); then
    stop=1 stop_why=budget
    left_parts+=("$name")
    say "$(printf '%-44s stopped at the budget'"'"'s end after %d s (log %s)' "$name" "$secs" "${cur_log#"$out"/}")"
    return 0
  fi
  [[ -n $part_status ]] || { ((part_rc == 0)) && part_status=passed || part_status="failed (rc=$part_rc)"; }
  [[ $part_status == passed || $part_status == skipped ]] || failed_parts+=("$name")
  ((part_undone)) || printf '%s\t%s\t%s\n' "$name" "$part_status" "$secs" >>"$state"
  say "$(printf '%-44s %s, %d s (log %s)' "$name" "$part_status" "$secs" "${cur_log#"$out"/}")"
}

# --- set-up, every call: environment, GPUs, bundles, MPS ----------------------------------------------------------
source scripts/env.sh
source scripts/mps.sh
wait_timeout_given=${SHOAL_WAIT_TIMEOUT:-}
# No multicast (env.sh); shoal's waits report after 25 s, below shoal-bench's 30 s stream watchdog; NVSHMEM's UID
# bootstrap on loopback (every PE is on this node).
export SHOAL_WAIT_TIMEOUT=${SHOAL_WAIT_TIMEOUT:-25s}
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}
mkdir -p "$logs"
if ((!dry)); then
  if ((resume)) && [[ -f $state ]]; then echo >>"$summary"; else : >"$state"; : >"$summary"; fi
fi
say "== scripts/gpu.sh $(date -u '+%F %T') UTC on $(hostname): steps ${steps[*]}; out $out"
say "   preset $preset (build folder $B), $( ((budget)) && echo "budget $budget s (margin $margin s)" || echo "no budget"), resume $( ((resume)) && echo on || echo off)"
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  ((dry)) || nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1 |
    tee -a "$summary" >&3
  ((dry)) || nvidia-smi topo -m >"$logs/topo.txt" 2>&1
fi
say "   GPUs: $gpus"
most_pes=$pes
for n in ${test_pes//;/ }; do ((n > most_pes)) && most_pes=$n; done
if [[ -n ${uses[ep-ab]:-} ]]; then
  for n in ${SHOAL_EP_AB_RANKS:-2 4}; do ((n > most_pes)) && most_pes=$n; done
fi
# A second NVSHMEM from its bundle: the unpacked nvshmem/ folder stays (the binary's RPATH points into it).
nv_extra=""
if [[ -n $nv_bundle ]]; then
  nv_extra=${TMPDIR:-/tmp}/shoal-nvshmem/$(basename "$nv_bundle" .tar.xz)/nvshmem
  if ((dry)); then
    plan "NVSHMEM bundle: tar -xJf $nv_bundle -C ${nv_extra%/nvshmem} (once)"
  elif [[ ! -f $nv_extra/include/nvshmem.h ]]; then
    mkdir -p "${nv_extra%/nvshmem}" && tar -xJf "$nv_bundle" -C "${nv_extra%/nvshmem}" >"$logs/nvshmem_bundle.log" 2>&1
  fi
  ((dry)) || [[ -f $nv_extra/include/nvshmem.h ]] ||
    { say "   NVSHMEM bundle $nv_bundle missing or not unpacked (logs/nvshmem_bundle.log): one NVSHMEM only"; nv_extra=""; }
fi
# UCX with CUDA from its bundle: ucx_wheel.sh prints the cmake argument and the run-time paths (ucx_info,
# ucx_perftest, its libraries), exported here for every step.
ucx_args=()
if [[ -n $ucx_bundle ]]; then
  ucx_dir=${TMPDIR:-/tmp}/shoal-ucx
  if ((dry)); then
    plan "UCX bundle: eval \"\$(scripts/ucx_wheel.sh $ucx_bundle $ucx_dir)\""
    ucx_args=("-Ducx_DIR=$ucx_dir/libucx/lib/cmake/ucx")
  elif ucx_env=$(scripts/ucx_wheel.sh "$ucx_bundle" "$ucx_dir" 2>"$logs/ucx_bundle.log"); then
    eval "$ucx_env"
    ucx_args=("$WHEEL_UCX_CMAKE_ARGS")
    say "   UCX: $(ucx_info -v 2>/dev/null | head -1) from $(basename "$ucx_bundle")"
  else
    say "   UCX bundle $ucx_bundle not unpacked (logs/ucx_bundle.log): the proxy build will fail"
  fi
fi
# PEs that share GPUs: under MPS when it runs, else time-sliced (and the GPU tests quick).
mps_on=0
if [[ $mps == on ]] || ((gpus > 0 && most_pes > gpus)); then
  export SHOAL_GPU_TEST_SHARE_GPUS=1
  # NVSHMEM beside shoal on a shared GPU: every PE at MPS's 100% of the SMs (else NVSHMEM's "limited MPG" init
  # hangs); NCCL cannot serve two PEs on one GPU, so NVSHMEM's NCCL path is off.
  export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
  if [[ $mps != off ]]; then
    if ((dry)); then
      plan "mps: start a private daemon (scripts/mps.sh mps_start), stopped on exit"
      mps_on=1
    elif mps_start; then
      mps_on=1
    fi
  fi
  if ((mps_on)); then
    say "   PEs ($most_pes) share the $gpus GPU(s) under a private MPS daemon"
  else
    export SHOAL_GPU_TEST_QUICK=${SHOAL_GPU_TEST_QUICK:-1}
    say "   PEs ($most_pes) share the $gpus GPU(s) time-sliced, SHOAL_GPU_TEST_QUICK=$SHOAL_GPU_TEST_QUICK"
  fi
fi
finish() {
  ((mps_on && !dry)) && mps_stop
  return 0
}
trap finish EXIT
trap 'exit 130' INT TERM

shoalrun=$B/tools/shoalrun/shoalrun
shoal_bench=$B/bench/shoal-bench
bench_limit=${SHOAL_BENCH_TIMEOUT:-200}
coll_limit=${SHOAL_COLL_TIMEOUT:-300}
sweep_limit=${SHOAL_SWEEP_TIMEOUT:-90}
rma_set=(put_bw get_bw put_bw_bidir p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency)
coll_set=(allreduce broadcast fcollect alltoall team_barrier barrier)
ab_rma_set=(put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency)

# nv_targets: the NVSHMEM benchmark binaries of this build ("target<TAB>version<TAB>home" lines that
# bench/nvshmem/CMakeLists.txt writes at configure time).
nv_targets=() nv_told=0
read_nv_targets() {
  nv_targets=()
  local list=$B/bench/nvshmem/nvshmem_benches.txt
  if [[ -f $list ]]; then
    mapfile -t nv_targets < <(cut -f1 "$list")
  elif ((dry)); then
    nv_targets=("shoal-bench-nvshmem")
    ((nv_told++)) || plan "shoal-bench-nvshmem stands for each NVSHMEM benchmark that $list lists after the configure"
  fi
}
# bench_run LIMIT PES OUT_BASE PROGRAM ARGS...: PROGRAM on PES PEs through shoalrun, bounded by shoalrun and by
# timeout(1); rows in OUT_BASE.csv/.json, output in OUT_BASE.log.
bench_run() {
  local limit=$1 n=$2 base=$3
  shift 3
  xlog "$base.log" timeout -k 15 $((limit + 30)) "$shoalrun" -n "$n" --timeout "$limit" -- "$@" \
    --csv "$base.csv" --json "$base.json"
}

# --- steps -----------------------------------------------------------------------------------------------------------
# Every step that follows needs a finished build: a failed one stops the run.
do_build() {
  x cmake --preset "$preset" ${build_dir:+-B "$build_dir"} "-DSHOAL_GPU_TEST_PES=$test_pes" \
    "-DSHOAL_NVSHMEM_HOME=$nv_home" "-DSHOAL_NVSHMEM_EXTRA_HOMES=$nv_extra" "${ucx_args[@]}" &&
    {
      ((dry)) || grep -E "shoal: (NCCL|NVSHMEM|no NVSHMEM|UCX)|shoal-bench-nvshmem" "$cur_log" | notes
      local t=()
      if [[ -n $targets ]]; then
        read -ra t <<<"$targets"
      elif [[ -z ${uses[test]:-} && -z ${uses[repeat]:-} ]]; then
        read_nv_targets
        t=(shoal-bench shoalrun "${nv_targets[@]}")
        [[ -n ${uses[ep-bench]:-} || -n ${uses[ep-ab]:-} ]] && t+=(shoal_py_core shoal_py_ep)
      fi
      ((${#t[@]})) && t=(--target "${t[@]}")
      x cmake --build "$B" -j "$(nproc)" "${t[@]}"
    }
  if ((part_rc != 0)); then
    part_undone=1 stop=1 stop_why=build
    ((dry)) || grep -E "error|FAILED" "$cur_log" | head -40 | notes
  fi
}
step_build() { part build 480 do_build; }

# exact_re NAME: a ctest -R regex that matches NAME alone.
exact_re() {
  local s=$1 out="" c i specials="[].*^\$+?(){}|\\"
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    [[ $specials == *"$c"* ]] && out+="\\"
    out+=$c
  done
  echo "^$out\$"
}
# One test: a test that fails at set-up because the shared GPU's MPS server still refuses clients (a PE that
# crashed or was killed in the test before) runs again 5 s later; both logs stay.
do_test() {
  local name=$1 limit=$2 re line
  re=$(exact_re "$name")
  x ctest --test-dir "$B" -R "$re" -V --timeout "$limit"
  ((dry)) && return 0
  line=$(grep -E "Test +#" "$cur_log" | tail -1)
  if [[ $line != *Passed* && $line != *Skipped* && $line != *"Not Run"* ]] &&
    grep -q cudaErrorDevicesUnavailable "$cur_log" && ((!budget_hit)); then
    cp "$cur_log" "${cur_log%.log}.busy.log"
    sleep 5
    part_rc=0
    x ctest --test-dir "$B" -R "$re" -V --timeout "$limit"
    line=$(grep -E "Test +#" "$cur_log" | tail -1)
  fi
  case $line in
    *Passed*) part_status=passed ;;
    *Skipped* | *"Not Run"*) part_status=skipped ;;
    *) part_status="failed: ${line##* ***}"; sleep 2 ;;  # a crashed PE may leave the MPS server busy a moment
  esac
}
# list_tests LABEL: "name<TAB>timeout<TAB>risky" for each test of the label, from ctest's JSON listing.
list_tests() {
  ctest --test-dir "$B" --show-only=json-v1 -L "$1" ${tests_re:+-R "$tests_re"} ${exclude_re:+-E "$exclude_re"} |
    python3 -c '
import json, re, sys
extra = sys.argv[1]
for t in json.load(sys.stdin).get("tests", []):
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    risky = "risky" in props.get("LABELS", []) or bool(extra and re.search(extra, t["name"]))
    print(t["name"], int(float(props.get("TIMEOUT", 1500))), int(risky), sep="\t")
' "$risky_re"
}
step_test() {
  local label=${1:-gpu} list name limit risky
  if ((dry)) && [[ ! -f $B/CTestTestfile.cmake ]]; then
    echo "[test/*] one part per test of: ctest --test-dir $B -N -L $label${tests_re:+ -R $tests_re}${exclude_re:+ -E $exclude_re}; risky ones last"
    plan "(listed after the build; each: ctest --test-dir $B -R '^NAME\$' -V --timeout TIMEOUT)"
    return
  fi
  list=$(list_tests "$label") || { note "test: ctest could not list the tests of $B"; failed_parts+=(test); return; }
  [[ -n $list ]] || { note "test: no test with label $label${tests_re:+ matching $tests_re}"; return; }
  for pass in 0 1; do
    while IFS=$'\t' read -r name limit risky; do
      ((risky == pass)) || continue
      part "test/$name" $((limit < 60 ? limit : 60)) do_test "$name" "$limit"
    done <<<"$list"
  done
  ((dry)) && return
  local counts
  counts=$(grep -E $'^test/' "$state" | cut -f2 | sed 's/:.*//; s/ (.*//' | sort | uniq -c | xargs)
  note "tests (this run so far): ${counts:-none}"
  grep -hE "init_ms=|extra_device_mib=|litmus |footprint|first chunk" "$logs"/test_*.log 2>/dev/null | head -40 |
    note "$(cat)"
}

do_rma() {
  local d=$out/bench
  mkdir -p "$d"
  bench_run "$bench_limit" "$pes" "$d/shoal" "$shoal_bench" "${rma_set[@]}" "${bench_args[@]}"
  read_nv_targets
  for t in "${nv_targets[@]}"; do
    bench_run "$bench_limit" "$pes" "$d/${t#shoal-bench-}" "$B/bench/nvshmem/$t" "${rma_set[@]}" "${bench_args[@]}"
  done
  compare_and_plot
}
step_rma() { part rma 330 do_rma; }

# compare_and_plot: bench/compare.py over every CSV in OUT/bench (shoal's against each NVSHMEM release's) and the
# curves: shoal's rows with NCCL's, plus each NVSHMEM's own rows (its CSVs repeat the shared baselines).
compare_and_plot() {
  local d=$out/bench f shoal_csvs=() nv_csvs=() plot_in=()
  for f in "$d/shoal.csv" "$d/shoal_coll.csv"; do [[ -s $f ]] || ((dry)) && shoal_csvs+=("$f"); done
  read_nv_targets
  for t in "${nv_targets[@]}"; do
    for f in "$d/${t#shoal-bench-}.csv" "$d/${t#shoal-bench-}_coll.csv"; do [[ -s $f ]] || ((dry)) && nv_csvs+=("$f"); done
  done
  if [[ ${#shoal_csvs[@]} -eq 0 ]]; then
    note "no shoal CSV in $d: no comparison"
    return
  fi
  xlog "$d/compare.txt" python3 bench/compare.py "${shoal_csvs[@]}" "${nv_csvs[@]}" --markdown "$d/compare.md"
  ((dry)) || [[ ! -f $d/compare.md ]] || note "$(cat "$d/compare.md")"
  plot_in=("${shoal_csvs[@]}")
  for f in "${nv_csvs[@]}"; do
    # shellcheck disable=SC2016  # an awk program
    run_cmd "${f%.csv}_only.csv" awk -F, 'NR == 1 || $2 ~ /^nvshmem/' "$f"
    plot_in+=("${f%.csv}_only.csv")
  done
  xopt python3 bench/plot.py "${plot_in[@]}" -o "$d/plots" || echo "plot.py failed (matplotlib missing?)"
}

# coll_shoal DIR NAME LIMIT PES ARGS...: shoal-bench's collectives (shoal and NCCL; coll_env: VAR=value settings of
# the run) into DIR/NAME.*. A run that
# stopped at an NCCL point ("STOPPED: ... nccl/") runs again with NCCL's graph-time registration off, then without
# NCCL's graph rows; each stopped run's rows and log stay as DIR/NAME_stopped<k>.*.
coll_shoal() {
  local dir=$1 name=$2 limit=$3 n=$4 k=0 rc extra=() fallbacks=(NCCL_GRAPH_REGISTER=0 SHOAL_BENCH_NCCL_GRAPH=0)
  shift 4
  local rc_before=$part_rc
  plan "if it stops at an NCCL point: again with ${fallbacks[0]}, then also ${fallbacks[1]}"
  while :; do
    part_rc=$rc_before
    local envs=("${coll_env[@]}" "${extra[@]}")
    ((${#envs[@]})) && envs=(env "${envs[@]}")
    xlog "$dir/$name.log" "${envs[@]}" timeout -k 15 $((limit + 30)) "$shoalrun" -n "$n" --timeout "$limit" -- \
      "$shoal_bench" "$@" --csv "$dir/$name.csv" --json "$dir/$name.json"
    rc=$?
    ((dry || rc == 0 || budget_hit || k >= ${#fallbacks[@]})) && break
    grep -q "STOPPED: .*nccl/" "$dir/$name.log" || break
    k=$((k + 1))
    note "$name: stopped at an NCCL point: $(grep -m1 -o 'STOPPED: .*' "$dir/$name.log"); again with ${fallbacks[$((k - 1))]}"
    [[ -f $dir/$name.csv ]] && mv "$dir/$name.csv" "$dir/${name}_stopped$k.csv"
    mv "$dir/$name.log" "$dir/${name}_stopped$k.log"
    extra+=("${fallbacks[$((k - 1))]}")
  done
  ((dry)) || grep -hE "STOPPED|NCCL [0-9]|capture refused|data check failed|no larger sizes|shoal-bench: PE" \
    "$dir/$name.log" 2>/dev/null | head -10 | notes
  coll_env=()
  return "$rc"
}
coll_env=()
do_coll() {
  local d=$out/bench
  mkdir -p "$d"
  coll_shoal "$d" shoal_coll "$coll_limit" "$pes" "${coll_set[@]}" "${bench_args[@]}"
  read_nv_targets
  for t in "${nv_targets[@]}"; do
    bench_run "$coll_limit" "$pes" "$d/${t#shoal-bench-}_coll" "$B/bench/nvshmem/$t" --coll "${bench_args[@]}"
  done
  compare_and_plot
}
step_coll() { part coll 300 do_coll; }

# Relaxed polls plus one acquire re-read instead of acquire polls: both orders are correct; which is faster?
do_variants() {
  local v=build/gpu-relaxed-polls d=$out/bench
  mkdir -p "$d"
  x cmake --preset gpu-relaxed-polls "-DSHOAL_NVSHMEM_HOME=$nv_home" &&
    x cmake --build --preset gpu-relaxed-polls -j "$(nproc)" &&
    xlog "$d/acqpoll.log" timeout -k 15 230 "$v/tools/shoalrun/shoalrun" -n "$pes" --timeout 200 -- \
      "$v/bench/shoal-bench" p_ping_pong put_signal_ping_pong barrier_latency -e 4K --csv "$d/acqpoll.csv"
  ((dry)) || grep -E "p_ping_pong|barrier_latency|put_signal_ping_pong +shoal" "$d/acqpoll.log" 2>/dev/null |
    head -12 | notes
}
step_variants() { part variants 300 do_variants; }

do_sweep_one() {  # CHANNELS ALGO NCCL(0/1)
  local d=$out/collsweep
  mkdir -p "$d"
  # shellcheck disable=SC2054  # 8,256M is one value
  coll_env=("SHOAL_COLL_CHANNELS=$1" "SHOAL_COLL_ALGO=$2" "SHOAL_BENCH_COLL_SIZES=8,256M"
    SHOAL_BENCH_COLL_SCOPES=stream,graph "SHOAL_BENCH_NCCL=$3")
  coll_shoal "$d" "ch$1_$2" "$sweep_limit" "$pes" allreduce broadcast fcollect alltoall barrier "${bench_args[@]}"
}
do_sweep_compare() {
  local d=$out/collsweep
  if ((dry)); then
    xlog "$d/compare.txt" python3 bench/compare.py --sweep "$d"/ch*.csv --markdown "$d/sweep.md"
  else
    local csvs=()
    local f
    for f in "$d"/ch*_*.csv; do [[ -f $f && $f != *_stopped* ]] && csvs+=("$f"); done
    [[ ${#csvs[@]} -gt 0 ]] || { echo "no sweep CSV"; return 1; }
    xlog "$d/compare.txt" python3 bench/compare.py --sweep "${csvs[@]}" --markdown "$d/sweep.md"
    [[ -f $d/sweep.md ]] && note "$(cat "$d/sweep.md")"
  fi
}
step_collsweep() {
  local first=1
  for ch in ${SHOAL_SWEEP_CHANNELS:-16 32 64 132}; do
    for algo in ${SHOAL_SWEEP_ALGOS:-auto ll direct}; do
      # NCCL does not depend on these knobs: its rows (the ratios' baseline) come from the first run only.
      part "collsweep/ch${ch}_$algo" $((sweep_limit + 30)) do_sweep_one "$ch" "$algo" "$first"
      first=0
    done
  done
  part collsweep/compare 30 do_sweep_compare
}

do_scale_pairs() {  # PES
  local d=$out/scale/np$1
  mkdir -p "$d"
  bench_run "$coll_limit" "$1" "$d/pairs" "$shoal_bench" put_bw get_bw p_ping_pong atomic_latency barrier_latency \
    -s block --pairs "${SHOAL_SCALE_PAIRS:-all}" "${bench_args[@]}"
}
do_scale_coll() {  # PES
  local d=$out/scale/np$1
  mkdir -p "$d"
  coll_env=("SHOAL_BENCH_COLL_SCOPES=${SHOAL_SCALE_COLL_SCOPES:-stream}")
  coll_shoal "$d" coll "$coll_limit" "$1" allreduce broadcast fcollect alltoall barrier "${bench_args[@]}"
}
do_scale_merge() {
  local csvs=()
  if ((dry)); then
    csvs=("$out/scale/np*/pairs.csv" "$out/scale/np*/coll.csv")
  else
    local f
    for f in "$out"/scale/np*/pairs.csv "$out"/scale/np*/coll.csv; do [[ -f $f ]] && csvs+=("$f"); done
    [[ ${#csvs[@]} -gt 0 ]] || { echo "no scale CSV"; return 1; }
  fi
  x python3 bench/scale.py "${csvs[@]}" -o "$out/scale"
  ((dry)) || [[ ! -f $out/scale/scale.md ]] || note "$(cat "$out/scale/scale.md")"
}
step_scale() {
  for np in ${SHOAL_SCALE_PES:-2 4 8}; do
    if ((!dry && np > gpus)); then
      note "scale: $np PEs skipped: this node has $gpus GPU(s)"
      continue
    fi
    part "scale/np$np/pairs" 240 do_scale_pairs "$np"
    part "scale/np$np/coll" 240 do_scale_coll "$np"
  done
  part scale/merge 30 do_scale_merge
}

step_proxy() { part proxy 420 x bench/proxy/run.sh --build "$B" --out "$out/proxy" --quick; }

# shoal.ep in DeepEP's shapes (normal: 4096 tokens, hidden 7168, top-8 of 256 experts, 24 and 12 SMs; low latency:
# 128 tokens per rank, 288 experts).
do_ep_normal() {
  mkdir -p "$out/ep-bench"
  x env "PYTHONPATH=$B_abs/python" python3 -m torch.distributed.run "--nproc_per_node=$pes" bench/ep/bench_normal.py \
    --num-sms 24 12 --csv "$out/ep-bench/ep_normal.csv"
}
do_ep_ll() {
  mkdir -p "$out/ep-bench"
  x env "PYTHONPATH=$B_abs/python" timeout -k 15 140 "$shoalrun" -n "$pes" --timeout 110 -- \
    python3 bench/ep/bench_low_latency.py --csv "$out/ep-bench/ep_ll.csv"
}
step_ep-bench() {
  part ep-bench/normal 240 do_ep_normal
  part ep-bench/low-latency 120 do_ep_ll
}

# The EP layer's switches side by side (docs/ep.md): one bench_normal.py process per rank count and SM count measures
# every CONFIG (LABEL or LABEL:VAR=V[,VAR=V...], VAR a switch) in each round, alternated, through
# Buffer.set_switches; rows carry the label as their commit, and bench/ep/ab_ep.py compares every label with the first.
ep_ab_switches="SHOAL_EP_L2_DISCARD SHOAL_EP_SELF_DIRECT SHOAL_EP_INTERLEAVE"
do_ep_ab_run() {  # RANKS SMS CONFIG...
  local n=$1 sms=$2 extra=()
  shift 2
  read -ra extra <<<"${SHOAL_EP_AB_ARGS:-}"
  mkdir -p "$out/ep-ab"
  xlog "$out/ep-ab/r${n}_s${sms}.log" env "PYTHONPATH=$B_abs/python" \
    timeout -k 10 "$ep_ab_bound" python3 -m torch.distributed.run "--nproc_per_node=$n" bench/ep/bench_normal.py \
    --num-sms "$sms" --configs "$@" --rounds "${rounds:-2}" "${extra[@]}" --csv "$out/ep-ab/ep_ab.csv"
}
# Each CONFIG is LABEL or LABEL:VAR=V[,VAR=V...] with VAR a switch and V 0 or 1; says what is wrong otherwise (exit 1).
check_ep_configs() {  # STEP CONFIG...
  local step=$1 cfg assign assigns
  shift
  for cfg in "$@"; do
    local ok=1
    [[ ${cfg%%:*} =~ ^[A-Za-z0-9_.-]+$ ]] || ok=0
    if [[ $cfg == *:* ]]; then
      IFS=, read -ra assigns <<<"${cfg#*:}"
      for assign in "${assigns[@]}"; do
        [[ " $ep_ab_switches " == *" ${assign%%=*} "* && $assign =~ =[01]$ ]] || ok=0
      done
    fi
    ((ok)) || { say "$step: '$cfg': a CONFIG is LABEL or LABEL:VAR=V[,VAR=V...], VAR one of $ep_ab_switches and V 0 or 1"
      return 1; }
  done
}
step_ep-ab() {
  local n sms
  check_ep_configs ep-ab "$@" || { failed_parts+=(ep-ab); return; }
  # A process start (~30 s) and about 12 s a config and round (4 ranks, 24 SMs, every chunk and the bounds).
  local est=$((30 + 12 * $# * ${rounds:-2}))
  ep_ab_bound=$((3 * est))
  for n in ${SHOAL_EP_AB_RANKS:-2 4}; do
    for sms in ${SHOAL_EP_AB_SMS:-24}; do
      part "ep-ab/r${n}_s${sms}" "$est" do_ep_ab_run "$n" "$sms" "$@"
    done
  done
  part ep-ab/compare 30 x python3 bench/ep/ab_ep.py "$out/ep-ab/ep_ab.csv" --base "${1%%:*}" \
    --markdown "$out/ep-ab/ep_ab.md"
  ((dry)) || [[ ! -f $out/ep-ab/ep_ab.md ]] || note "$(cat "$out/ep-ab/ep_ab.md")"
}

# Before/after: an earlier tree (a checkout or unpacked archive, which may predate the presets) and this one,
# configured with the same flags in build/ab-base and build/ab-new.
ab_build() {  # SRC DIR TARGETS...
  local src=$1 dir=$2
  shift 2
  x cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_TESTS="$ab_tests" \
    -DSHOAL_BUILD_PYTHON="$ab_python" && x cmake --build "$dir" -j "$(nproc)" --target "$@"
}
do_ab_build() {
  local t=(shoal-bench shoalrun)
  ((ab_ep)) && t+=(shoal_py_core shoal_py_ep)
  ab_tests=OFF ab_python=$( ((ab_ep)) && echo ON || echo OFF)
  ab_build "$1" build/ab-base "${t[@]}" && ab_build . build/ab-new "${t[@]}"
}
do_ab_round() {  # ROUND
  local d=$out/ab side b
  mkdir -p "$d"
  for side in base new; do
    b=build/ab-$side
    xlog "$d/${side}_rma$1.log" timeout -k 10 170 "$b/tools/shoalrun/shoalrun" -n "$pes" --timeout 150 -- \
      "$b/bench/shoal-bench" "${ab_rma_set[@]}" -e "${SHOAL_AB_RMA_MAX:-16M}" "${bench_args[@]}" \
      --csv "$d/${side}_rma$1.csv"
    xlog "$d/${side}_coll$1.log" env SHOAL_BENCH_NCCL=0 timeout -k 10 170 "$b/tools/shoalrun/shoalrun" -n "$pes" \
      --timeout 150 -- "$b/bench/shoal-bench" "${coll_set[@]}" -e "${SHOAL_AB_COLL_MAX:-4M}" "${bench_args[@]}" \
      --csv "$d/${side}_coll$1.csv"
  done
}
do_ab_compare() {  # ROUNDS
  local d=$out/ab args=() side r
  for side in base new; do
    for r in $(seq "$1"); do args+=("--$side" "$d/${side}_rma$r.csv,$d/${side}_coll$r.csv"); done
  done
  xlog "$d/ab.txt" python3 bench/ab_compare.py "${args[@]}" --markdown "$d/ab.md"
  ((dry)) || [[ ! -f $d/ab.md ]] || note "$(head -40 "$d/ab.md")"
}
do_ab_ep_round() {  # ROUND: this tree's EP benchmark against each tree's package (--no-bound: an older Buffer
  local side           # has no raw-copy call)
  for side in base new; do
    xlog "$out/ab/ep_${side}_$1.log" env "SHOAL_EP_COMMIT=$side" "PYTHONPATH=$PWD/build/ab-$side/python" \
      timeout 600 python3 -m torch.distributed.run --nproc_per_node=2 bench/ep/bench_normal.py --no-bound \
      --csv "$out/ab/ep_ab.csv"
  done
}
step_ab() {
  local base=$1 n=${rounds:-4} r
  [[ -d $base ]] || ((dry)) || { note "ab: $base is not a folder"; failed_parts+=(ab); return; }
  part ab/build 480 do_ab_build "$base"
  for r in $(seq "$n"); do part "ab/round$r" 240 do_ab_round "$r"; done
  part ab/compare 30 do_ab_compare "$n"
  if ((ab_ep)); then
    for r in $(seq 2); do part "ab/ep-round$r" 600 do_ab_ep_round "$r"; done
    part ab/ep-compare 30 x python3 bench/ep/ab_ep.py "$out/ab/ep_ab.csv" --markdown "$out/ab/ep_ab.md"
  fi
}

# One GPU test before and after, PEs time-sliced on one GPU (no MPS: the harshest interleaving).
do_abt_build() {  # BASE TEST
  ab_tests=ON ab_python=OFF
  ab_build "$1" build/ts-base "$2" shoalrun && ab_build . build/ts-new "$2" shoalrun
}
do_abt_round() {  # ROUND TEST [FILTER]
  local d=$out/ab-test side b rc
  mkdir -p "$d"
  for side in base new; do
    b=build/ts-$side
    xlog "$d/${side}_$1.log" env -u CUDA_MPS_PIPE_DIRECTORY -u CUDA_MPS_LOG_DIRECTORY SHOAL_GPU_TEST_SHARE_GPUS=1 \
      "SHOAL_WAIT_TIMEOUT=${wait_timeout_given:-60s}" timeout -k 10 135 "$b/tools/shoalrun/shoalrun" -n 2 \
      --timeout 120 -- "$b/tests/gpu/$2" ${3:+"--filter=$3"}
    rc=$?
    ((dry)) || note "ab-test $side run $1: rc=$rc $(grep -m1 -oE 'FAIL \[[^]]*\]' "$d/${side}_$1.log") $(grep -m1 -oE '[0-9]+ of [0-9]+ bytes differ' "$d/${side}_$1.log")"
  done
}
step_ab-test() {
  local base=$1 test=$2 filter=${3:-} r
  part ab-test/build 300 do_abt_build "$base" "$test"
  for r in $(seq "${rounds:-2}"); do part "ab-test/round$r" 150 do_abt_round "$r" "$test" "$filter"; done
}

do_repeat_one() {  # TEST RUN
  local d=$out/repeat re
  mkdir -p "$d"
  re=$(exact_re "$1")
  local rc=0
  xlog "$d/run_$2.log" ctest --test-dir "$B" -R "$re" -V --timeout 600 || rc=$?
  ((dry)) && return
  # ctest's exit status, and a test that ran (ctest exits 0 when -R matches none); its summary line reads
  # "100% tests passed out of 1" or, in older releases, "100% tests passed, 0 tests failed out of 1".
  if ((rc == 0)) && grep -qE "^100% tests passed" "$d/run_$2.log"; then
    rm -f "$d/run_$2.log"
  else
    mv "$d/run_$2.log" "$d/fail_$2.log"
    part_status="failed (repeat/fail_$2.log)"
    sleep 5  # a crashed PE may leave the MPS server refusing clients for a moment
  fi
}
step_repeat() {
  local name=$1 n=${2:-20} i
  [[ $n =~ ^[0-9]+$ ]] || { note "repeat: N must be a number, not $n"; failed_parts+=(repeat); return; }
  for i in $(seq "$n"); do part "repeat/$name/$i" 60 do_repeat_one "$name" "$i"; done
  local fails=("$out"/repeat/fail_*.log)
  [[ -f ${fails[0]} ]] || fails=()
  ((dry)) || note "repeat $name: ${#fails[@]} of $n runs failed (logs repeat/fail_<run>.log)"
}

step_ep() {
  local cfgs=()
  read -ra cfgs <<<"${SHOAL_EP_CONFIGS:-}"
  check_ep_configs ep "${cfgs[@]}" || { failed_parts+=(ep); return; }
  part ep 600 x env "OUT=$out" "SHOAL_EP_BUILD=$B" scripts/ep_vs_deepep.sh "$1"
}
# The perftests link against an installed shoal: this run's build folder installed into OUT/perftests/shoal (the
# script's own Release build of the checkout only when that install fails, e.g. after a benchmarks-only build).
do_perftests_build() {  # NVSHMEM_SRC
  local pre=$out/perftests/shoal prefix=()
  mkdir -p "$out/perftests"
  if xopt cmake --build "$B" -j "$(nproc)" --target shoal shoal_shmem shoalrun shoal-info &&
    xopt cmake --install "$B" --prefix "$pre"; then
    prefix=("SHOAL_PREFIX=$pre")
  fi
  x env BUILD_ONLY=1 "PES=$pes" "${prefix[@]}" scripts/nvshmem_perftests.sh "$1" "$out/perftests"
}
# The runs go in four parts (about 50 runs a side in all), so a budget cut loses one group, and --resume runs the rest.
perftest_groups=(device/pt-to-pt device/coll device/tile host)
step_perftests() {
  local g
  part perftests/build 540 do_perftests_build "$1"
  for g in "${perftest_groups[@]}"; do
    part "perftests/run-${g//\//-}" 300 x env RUN_ONLY=1 "ONLY=^$g/" "PES=$pes" scripts/nvshmem_perftests.sh "$1" \
      "$out/perftests"
  done
}

# The study stops where the budget cuts it (the part is then left for --resume) and its own --resume skips the
# steps it finished (OUT/study/raw/done.txt).
step_study() { part study 540 x scripts/study.sh --build "$B" --out "$out/study" --resume; }

# --- the run ---------------------------------------------------------------------------------------------------------
for i in "${!steps[@]}"; do
  args=()
  [[ -n ${step_args[$i]} ]] && mapfile -t args < <(printf '%s' "${step_args[$i]}")
  "step_${steps[$i]}" "${args[@]}"
done

say "== end after $(elapsed) s$( ((dry)) && echo " (estimated)"): $ran part(s) run, $skipped_done done earlier, ${#failed_parts[@]} failed, ${#left_parts[@]} left"
((${#failed_parts[@]})) && say "   failed: ${failed_parts[*]}"
if ((${#left_parts[@]})); then
  case $stop_why in
    build) say "   not run (the build failed): ${left_parts[*]}" ;;
    *) say "   left for a --resume call: ${left_parts[*]}" ;;
  esac
fi
if ((pack && !dry)); then
  (cd "$out" && tar czf "${TMPDIR:-/tmp}/shoal-gpu-out.$$.tgz" --exclude=all.tgz . && mv "${TMPDIR:-/tmp}/shoal-gpu-out.$$.tgz" all.tgz)
fi
((dry)) && exit 0
[[ $stop_why == build ]] && exit 1
((${#left_parts[@]})) && exit 3
((${#failed_parts[@]})) && exit 1
exit 0
