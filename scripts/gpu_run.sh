#!/usr/bin/env bash
# One call on a GPU machine: configure + build (Release), then by mode:
#   tests      the GPU tests (ctest -L gpu; codegen runs in CPU CI)
#   bench      the device RMA/sync set through shoal-bench and every shoal-bench-nvshmem* (bench/run_gpu_bench.sh),
#              then the collectives (the `coll` mode), then the relaxed-poll variant (the `variants` mode)
#   coll       the collectives only: shoal-bench's collective set (shoal block/stream/graph and NCCL stream/graph,
#              one process), every shoal-bench-nvshmem* --coll where NVSHMEM is installed, compare.py (issue 3
#              and 4 targets, against each NVSHMEM release) and plot.py
#   rma        the device RMA/sync set only (as in bench), with compare.py and plot.py
#   collsweep  shoal-bench's collectives (stream, graph) at 8 B and 256 MiB under every SHOAL_COLL_CHANNELS in
#              16 32 64 132 x SHOAL_COLL_ALGO in auto ll direct (NCCL rows in the first run only), then
#              compare.py --sweep: which defaults to pick (SHOAL_SWEEP_CHANNELS, SHOAL_SWEEP_ALGOS: other lists)
#   variants   the latency benchmarks built with relaxed polls (SHOAL_WAIT_ACQUIRE_POLL=0)
#   scale      issue 5, at each PE count of SHOAL_SCALE_PES ("2 4 8"; counts above the node's GPUs are skipped
#              with a line): shoal-bench's pair set (put_bw, get_bw, p_ping_pong, atomic_latency; block scope;
#              --pairs SHOAL_SCALE_PAIRS: "all" pairs by default, or e.g. "from0"), its all-PE barrier and its
#              collectives beside NCCL (on a stream; SHOAL_SCALE_COLL_SCOPES to change), into scale/np<N>/; then
#              bench/scale.py merges them into scale/scale.csv (one row per figure; num_pes and pair columns),
#              scale/scale.md and scale/*.png (docs/results/scale/ holds the committed copy)
#   all        tests + bench
#
#   scripts/gpu_run.sh [tests|bench|rma|coll|collsweep|variants|scale|all] [shoal-bench options, e.g. -e 64M -r 7]
#
# Everything lands in $OUT (or ./gpu-out): summary.txt (the figures), logs/ (configure, build, ctest and every
# benchmark's log), bench/ (CSV, JSON, compare.md/.txt, plots/*.png), collsweep/ (one CSV + log per configuration,
# sweep.md). Every benchmark run is bounded twice: shoalrun --timeout, and timeout(1) around it; shoal-bench
# itself stops a stuck point after 30-45 s with a "STOPPED:" line and keeps the rows measured so far. Limits
# (seconds): SHOAL_GPU_BUILD_TIMEOUT (480), SHOAL_BENCH_TIMEOUT (200, each RMA binary), SHOAL_COLL_TIMEOUT (300,
# each collective binary), SHOAL_SWEEP_TIMEOUT (90, each sweep configuration). PEs: SHOAL_GPU_TEST_PES (the
# GPU tests' PE counts, "2"; "2;4;8" on an 8-GPU node) and SHOAL_BENCH_PES (2). SHOAL_GPU_BUILD_DIR: the build
# folder (build/gpu). SHOAL_NVSHMEM_HOME: the NVSHMEM to compare with (default: python3's nvidia.nvshmem), built
# into shoal-bench-nvshmem. SHOAL_NVSHMEM_BUNDLE: a second NVSHMEM, the .tar.xz that `scripts/carry_bundle.sh
# nvshmem` makes (NVSHMEM 3.8.0), unpacked under $TMPDIR and built into shoal-bench-nvshmem-<version>; the
# benchmark modes then run both binaries one after the other, and compare.py sets shoal beside each release
# (rows' impl nvshmem-<version>; CSVs bench/nvshmem.csv and bench/nvshmem-<version>.csv, _coll for the
# collectives). Carry the bundle file itself (carry: [".whl/nvshmem-3.8.0.tar.xz"]); with the working tree it
# must stay under the call's 64 MiB. When the node has fewer GPUs than the PEs asked for, the PEs share GPUs
# (SHOAL_GPU_TEST_SHARE_GPUS=1) under a private MPS daemon that this script starts and stops
# (scripts/mps.sh); SHOAL_GPU_MPS=0 leaves MPS off, so the PEs are time-sliced (slow, the harshest
# interleaving). SHOAL_UCX_WHEEL: a libucx-cu13 wheel, or the bundle scripts/carry_bundle.sh makes of it, to
# build the proxy transport with (its GPU tests skip without UCX). SHOAL_GPU_RISKY: tests run last, one at a time (see the tests step).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
what=${1:-all}
shift || true
case $what in
  tests | bench | rma | coll | collsweep | variants | scale | all) ;;
  *)
    echo "usage: $0 [tests|bench|rma|coll|collsweep|variants|scale|all] [shoal-bench options...]" >&2
    exit 2
    ;;
esac
out=${OUT:-$PWD/gpu-out}
logs=$out/logs
mkdir -p "$out" "$logs"
source scripts/env.sh
summary=$out/summary.txt
: >"$summary"
log() { echo "$@" | tee -a "$summary"; }
build_limit=${SHOAL_GPU_BUILD_TIMEOUT:-480}
coll_limit=${SHOAL_COLL_TIMEOUT:-300}
sweep_limit=${SHOAL_SWEEP_TIMEOUT:-90}
build=${SHOAL_GPU_BUILD_DIR:-build/gpu}
# PEs: the GPU tests run at each count of SHOAL_GPU_TEST_PES ("2", or "2;4;8" on an 8-GPU node); the
# benchmarks at SHOAL_BENCH_PES (2).
test_pes=${SHOAL_GPU_TEST_PES:-2}
pes=${SHOAL_BENCH_PES:-2}
export SHOAL_BENCH_PES=$pes

# Benchmark environment (as bench/run_gpu_bench.sh sets it): no multicast, shoal's waits report after 25 s
# (below shoal-bench's own 30 s stream watchdog), NVSHMEM's UID bootstrap on loopback.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SHOAL_WAIT_TIMEOUT=${SHOAL_WAIT_TIMEOUT:-25s}
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}

log "== $(date -u) $(hostname) mode=$what args=$*"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee -a "$summary"
# PEs sharing GPUs: the most PEs any step runs against the GPUs of this node.
source scripts/mps.sh
node_gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
most_pes=$pes
for n in ${test_pes//;/ }; do ((n > most_pes)) && most_pes=$n; done
if ((node_gpus > 0 && most_pes > node_gpus)); then
  export SHOAL_GPU_TEST_SHARE_GPUS=1
  # NVSHMEM beside shoal on a shared GPU: both PEs at MPS's default 100% of the SMs, as shoal's PEs are.
  # NVSHMEM otherwise falls back to "limited MPG" support (its init then hung in our runs); NCCL cannot
  # serve two PEs on one GPU, so NVSHMEM's NCCL path is off.
  export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
  if [[ ${SHOAL_GPU_MPS:-1} != 0 ]] && mps_start; then
    log "PEs share the $node_gpus GPU(s) under a private MPS daemon"
  else
    # Every cross-PE wait costs a time slice: the tests run fewer rounds (same cases and checks).
    export SHOAL_GPU_TEST_QUICK=${SHOAL_GPU_TEST_QUICK:-1}
    log "PEs share the $node_gpus GPU(s) time-sliced (no MPS), SHOAL_GPU_TEST_QUICK=$SHOAL_GPU_TEST_QUICK"
  fi
fi
nvidia-smi topo -m >"$logs/topo.txt" 2>&1
nvsh=${SHOAL_NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null || true)}
log "nvshmem: ${nvsh:-not found}"
# A second NVSHMEM from a carried bundle (scripts/carry_bundle.sh nvshmem): its unpacked nvshmem/ folder becomes
# SHOAL_NVSHMEM_EXTRA_HOMES. The folder stays (the binary's RPATH points into it); unpacking again overwrites it.
nv_extra=""
if [[ -n ${SHOAL_NVSHMEM_BUNDLE:-} ]]; then
  nv_unpack=${TMPDIR:-/tmp}/shoal-nvshmem/$(basename "$SHOAL_NVSHMEM_BUNDLE" .tar.xz)
  if [[ -f $SHOAL_NVSHMEM_BUNDLE ]] && mkdir -p "$nv_unpack" &&
    timeout 180 tar -xJf "$SHOAL_NVSHMEM_BUNDLE" -C "$nv_unpack" >"$logs/nvshmem_bundle.log" 2>&1 &&
    [[ -f $nv_unpack/nvshmem/include/nvshmem.h ]]; then
    nv_extra=$nv_unpack/nvshmem
    log "nvshmem bundle: $SHOAL_NVSHMEM_BUNDLE unpacked to $nv_extra"
  else
    log "nvshmem bundle: $SHOAL_NVSHMEM_BUNDLE missing or not unpacked (logs/nvshmem_bundle.log); one NVSHMEM only"
  fi
fi

# --- build ---------------------------------------------------------------------------------------------------------
# UCX with CUDA for the proxy transport (the GPU machine has no UCX headers): SHOAL_UCX_WHEEL names a carried
# libucx-cu13 wheel (scripts/ucx_wheel.sh unpacks it); without one the proxy tests skip.
ucx_args=()
if [[ -n ${SHOAL_UCX_WHEEL:-} && -f ${SHOAL_UCX_WHEEL} ]]; then
  if eval "$(scripts/ucx_wheel.sh "$SHOAL_UCX_WHEEL" "${TMPDIR:-/tmp}/shoal-ucx" 2>"$logs/ucx_wheel.log")"; then
    ucx_args=(-DSHOAL_WITH_UCX=ON "$WHEEL_UCX_CMAKE_ARGS")
    log "ucx: $(ucx_info -v 2>/dev/null | head -1) from $(basename "$SHOAL_UCX_WHEEL")"
  else
    log "ucx: unpacking $SHOAL_UCX_WHEEL failed (logs/ucx_wheel.log); building without the proxy"
  fi
fi
t0=$(date +%s)
if ! timeout "$build_limit" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${ucx_args[@]}" \
    "-DSHOAL_GPU_TEST_PES=$test_pes" ${nvsh:+-DSHOAL_NVSHMEM_HOME=$nvsh} "-DSHOAL_NVSHMEM_EXTRA_HOMES=$nv_extra" \
    $(python3 -c "import nanobind" 2>/dev/null && echo -DSHOAL_BUILD_PYTHON=ON) >"$logs/configure.log" 2>&1; then
  tail -40 "$logs/configure.log" | tee -a "$summary"
  exit 1
fi
grep -E "shoal: (NCCL|NVSHMEM|no NVSHMEM)|shoal-bench-nvshmem" "$logs/configure.log" | tee -a "$summary"
# The NVSHMEM binaries of this configuration (bench/nvshmem/CMakeLists.txt writes the list): shoal-bench-nvshmem
# and one shoal-bench-nvshmem-<version> per extra NVSHMEM.
nv_targets=()
nv_list=$build/bench/nvshmem/nvshmem_benches.txt
[[ -f $nv_list ]] && mapfile -t nv_targets < <(cut -f1 "$nv_list")
log "nvshmem benchmarks: $(awk -F'\t' '{printf "%s%s (NVSHMEM %s)", NR > 1 ? ", " : "", $1, $2}' "$nv_list" \
  2>/dev/null)"
targets=()
if [[ $what != tests && $what != all ]]; then
  # Benchmark modes build only the benchmarks and the launcher.
  targets=(--target shoal-bench shoalrun "${nv_targets[@]}")
fi
if ! timeout "$build_limit" cmake --build "$build" -j "$(nproc)" "${targets[@]}" >"$logs/build.log" 2>&1; then
  grep -E "error|FAILED" "$logs/build.log" | head -60 | tee -a "$summary"
  log "build failed or took over $build_limit s"
  exit 1
fi
log "build: $(( $(date +%s) - t0 )) s"
shoalrun=$build/tools/shoalrun/shoalrun
shoal_bench=$build/bench/shoal-bench

# run_bounded LIMIT LOG PROGRAM ARGS...: 2 PEs through shoalrun, bounded by shoalrun and by timeout(1); the rc.
run_bounded() {
  local limit=$1 logfile=$2
  shift 2
  timeout -k 15 $((limit + 30)) "$shoalrun" -n "$pes" --timeout "$limit" -- "$@" >"$logfile" 2>&1
}

# --- tests ---------------------------------------------------------------------------------------------------------
if [[ $what == tests || $what == all ]]; then
  t0=$(date +%s)
  # Tests that may crash or be killed with a kernel running (which can leave a shared GPU unusable for the
  # tests after them) run last, one ctest call each: SHOAL_GPU_RISKY (a regex; "" runs everything at once).
  # SHOAL_GPU_RISKY_TIMEOUT: each risky test's limit (240 s).
  risky=${SHOAL_GPU_RISKY-proxy|nv_device_all|nv_rdc|dead_peer|wait_timeout|torchrun}
  risky_limit=${SHOAL_GPU_RISKY_TIMEOUT:-240}
  if [[ -n $risky ]]; then
    timeout -k 15 900 ctest --test-dir "$build" -L gpu -E "$risky" -V --timeout 240 >"$logs/ctest_gpu.log" 2>&1
    for t in $(ctest --test-dir "$build" -L gpu -R "$risky" -N | sed -n 's/^ *Test *#[0-9]*: *//p'); do
      timeout -k 15 $((risky_limit + 60)) ctest --test-dir "$build" -R "^${t//./\\.}\$" -V --timeout "$risky_limit" \
        >>"$logs/ctest_gpu.log" 2>&1
    done
  else
    timeout -k 15 900 ctest --test-dir "$build" -L gpu -V --timeout 240 >"$logs/ctest_gpu.log" 2>&1
  fi
  grep -E "Test +#|tests passed|FAILED|Skipped|\*\*\*" "$logs/ctest_gpu.log" | tee -a "$summary"
  grep -hE "init_ms=|extra_device_mib=|litmus |footprint|MiB|first chunk" "$logs/ctest_gpu.log" | head -60 |
    tee -a "$summary"
  log "gpu tests: $(( $(date +%s) - t0 )) s"
fi

bench_dir=$out/bench
mkdir -p "$bench_dir"
rma_set=(put_bw get_bw put_bw_bidir p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency barrier_latency)
coll_set=(allreduce broadcast fcollect alltoall team_barrier barrier)

# --- bench: the device RMA/sync set (shoal and NVSHMEM) ------------------------------------------------------------
if [[ $what == bench || $what == rma || $what == all ]]; then
  t0=$(date +%s)
  bench/run_gpu_bench.sh "$build" "$bench_dir" "${rma_set[@]}" "$@" >"$logs/bench_rma.log" 2>&1
  log "rma bench rc=$? $(( $(date +%s) - t0 )) s"
  grep -h "shoal-bench-nvshmem: NVSHMEM\|^== shoal-bench-nvshmem\|shoal-bench-nvshmem (nvshmem" "$logs/bench_rma.log" |
    tee -a "$summary"
  tail -30 "$logs/bench_rma.log" >>"$summary"
fi

# run_coll_shoal DIR NAME LIMIT [shoal-bench args...]: shoal-bench's collectives into DIR/NAME.{csv,json,log}; the
# environment chooses scopes/sizes (SHOAL_BENCH_COLL_*). A run that stopped at an NCCL point (status 3,
# "STOPPED: ... nccl/...") is repeated with NCCL's graph-time buffer registration off (NCCL_GRAPH_REGISTER=0), and if
# that stops too, without NCCL's graph rows (SHOAL_BENCH_NCCL_GRAPH=0); each stopped run's rows and log stay in
# DIR/NAME_stopped<k>.{csv,log}.
run_coll_shoal() {
  local dir=$1 name=$2 limit=$3
  shift 3
  local fallbacks=("NCCL_GRAPH_REGISTER=0" "SHOAL_BENCH_NCCL_GRAPH=0") k=0 rc
  local extra=()
  while :; do
    env "${extra[@]}" timeout -k 15 $((limit + 30)) "$shoalrun" -n "$pes" --timeout "$limit" -- "$shoal_bench" "$@" \
      --csv "$dir/$name.csv" --json "$dir/$name.json" >"$dir/$name.log" 2>&1
    rc=$?
    [[ $rc -ne 0 && $k -lt ${#fallbacks[@]} ]] && grep -q "STOPPED: .*nccl/" "$dir/$name.log" || break
    k=$((k + 1))
    log "$name: stopped at an NCCL point (rc=$rc, ${extra[*]:-NCCL defaults}):" \
      "$(grep -m1 -o 'STOPPED: .*' "$dir/$name.log")"
    [[ -f $dir/$name.csv ]] && mv "$dir/$name.csv" "$dir/${name}_stopped$k.csv"
    mv "$dir/$name.log" "$dir/${name}_stopped$k.log"
    extra+=("${fallbacks[$((k - 1))]}")
    log "$name: rerun with ${extra[*]}"
  done
  return $rc
}

# --- coll: the collectives (shoal + NCCL in one process; NVSHMEM in its own) ---------------------------------------
if [[ $what == bench || $what == coll || $what == rma || $what == all ]]; then
  if [[ $what != rma ]]; then
    t0=$(date +%s)
    run_coll_shoal "$bench_dir" shoal_coll "$coll_limit" "${coll_set[@]}" "$@"
    rc=$?
    log "collectives (shoal + NCCL) rc=$rc $(( $(date +%s) - t0 )) s"
    grep -hE "STOPPED|NCCL [0-9]|capture refused|data check failed|no larger sizes|shoal-bench: PE" \
      "$bench_dir/shoal_coll.log" | head -20 | tee -a "$summary"
  fi
  # Each NVSHMEM binary's collectives in its own process, one after the other: <name>_coll.{csv,json,log} with
  # name nvshmem or nvshmem-<version>.
  nv_csvs=()
  if [[ ${#nv_targets[@]} -eq 0 ]]; then
    log "NVSHMEM: no shoal-bench-nvshmem built (no NVSHMEM at configure time)"
  fi
  for target in "${nv_targets[@]}"; do
    name=${target#shoal-bench-}
    if [[ $what != rma ]]; then  # rma: NVSHMEM's RMA rows came with run_gpu_bench.sh
      t0=$(date +%s)
      run_bounded "$coll_limit" "$bench_dir/${name}_coll.log" "$build/bench/nvshmem/$target" --coll "$@" \
        --csv "$bench_dir/${name}_coll.csv" --json "$bench_dir/${name}_coll.json"
      log "collectives ($target) rc=$? $(( $(date +%s) - t0 )) s"
      grep -hE "NVSHMEM [0-9]|STOPPED|stopping|refused|data check failed|built against" \
        "$bench_dir/${name}_coll.log" | head -10 | tee -a "$summary"
    fi
    for f in "$name.csv" "${name}_coll.csv"; do
      [[ -s $bench_dir/$f ]] && nv_csvs+=("$bench_dir/$f")
    done
  done
  shoal_csvs=()
  for f in shoal.csv shoal_coll.csv; do
    [[ -s $bench_dir/$f ]] && shoal_csvs+=("$bench_dir/$f")
  done
  if [[ ${#shoal_csvs[@]} -gt 0 ]]; then
    python3 bench/compare.py "${shoal_csvs[@]}" "${nv_csvs[@]}" --markdown "$bench_dir/compare.md" \
      >"$bench_dir/compare.txt" 2>&1
    log "compare.py rc=$?"
    cat "$bench_dir/compare.md" >>"$summary" 2>/dev/null
    # Plots: shoal's rows (with NCCL's), plus each NVSHMEM's own rows only (its CSVs repeat shared baselines).
    plot_inputs=("${shoal_csvs[@]}")
    for f in "${nv_csvs[@]}"; do
      awk -F, 'NR == 1 || $2 ~ /^nvshmem/' "$f" >"${f%.csv}_only.csv"
      plot_inputs+=("${f%.csv}_only.csv")
    done
    if ! python3 bench/plot.py "${plot_inputs[@]}" -o "$bench_dir/plots" >"$logs/plot.log" 2>&1; then
      log "plot.py failed (matplotlib missing?): $(tail -1 "$logs/plot.log")"
    fi
  else
    log "no shoal CSV: no comparison"
  fi
fi

# --- collsweep: SHOAL_COLL_CHANNELS x SHOAL_COLL_ALGO at 8 B and 256 MiB ------------------------------------------
if [[ $what == collsweep ]]; then
  sweep_dir=$out/collsweep
  mkdir -p "$sweep_dir"
  first=1
  t_all=$(date +%s)
  csvs=()
  for ch in ${SHOAL_SWEEP_CHANNELS:-16 32 64 132}; do
    for algo in ${SHOAL_SWEEP_ALGOS:-auto ll direct}; do
      name=ch${ch}_${algo}
      t0=$(date +%s)
      # NCCL does not depend on these knobs: its rows (the ratios' baseline) come from the first run only.
      SHOAL_COLL_CHANNELS=$ch SHOAL_COLL_ALGO=$algo SHOAL_BENCH_COLL_SIZES=8,256M SHOAL_BENCH_COLL_SCOPES=stream,graph \
        SHOAL_BENCH_NCCL=$first run_coll_shoal "$sweep_dir" "$name" "$sweep_limit" \
        allreduce broadcast fcollect alltoall barrier "$@"
      log "collsweep $name rc=$? $(( $(date +%s) - t0 )) s"
      grep -hE "STOPPED|data check failed" "$sweep_dir/$name.log" | head -3 | tee -a "$summary"
      [[ -s $sweep_dir/$name.csv ]] && csvs+=("$sweep_dir/$name.csv")
      first=0
    done
  done
  log "collsweep: $(( $(date +%s) - t_all )) s"
  if [[ ${#csvs[@]} -gt 0 ]]; then
    python3 bench/compare.py --sweep "${csvs[@]}" --markdown "$sweep_dir/sweep.md" >"$logs/sweep_compare.log" 2>&1
    log "compare.py --sweep rc=$?"
    cat "$sweep_dir/sweep.md" >>"$summary" 2>/dev/null
  fi
fi

# --- scale: the pair set, the barrier and the collectives at each PE count (issue 5) --------------------------------
if [[ $what == scale ]]; then
  scale_dir=$out/scale
  mkdir -p "$scale_dir"
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
  csvs=()
  for np in ${SHOAL_SCALE_PES:-2 4 8}; do
    if ((np > gpus)); then
      log "scale: $np PEs skipped: this node has $gpus GPU(s)"
      continue
    fi
    dir=$scale_dir/np$np
    mkdir -p "$dir"
    t0=$(date +%s)
    timeout -k 15 $((coll_limit + 30)) "$shoalrun" -n "$np" --timeout "$coll_limit" -- "$shoal_bench" \
      put_bw get_bw p_ping_pong atomic_latency barrier_latency -s block --pairs "${SHOAL_SCALE_PAIRS:-all}" "$@" \
      --csv "$dir/pairs.csv" --json "$dir/pairs.json" >"$dir/pairs.log" 2>&1
    log "scale np=$np pair set rc=$? $(( $(date +%s) - t0 )) s"
    grep -hE "STOPPED|data check failed|shoal-bench: PE|--pairs" "$dir/pairs.log" | head -5 | tee -a "$summary"
    [[ -s $dir/pairs.csv ]] && csvs+=("$dir/pairs.csv")
    t0=$(date +%s)
    pes=$np SHOAL_BENCH_COLL_SCOPES=${SHOAL_SCALE_COLL_SCOPES:-stream} run_coll_shoal "$dir" coll "$coll_limit" \
      allreduce broadcast fcollect alltoall barrier "$@"
    log "scale np=$np collectives rc=$? $(( $(date +%s) - t0 )) s"
    grep -hE "STOPPED|data check failed|shoal-bench: PE" "$dir/coll.log" | head -5 | tee -a "$summary"
    [[ -s $dir/coll.csv ]] && csvs+=("$dir/coll.csv")
  done
  if [[ ${#csvs[@]} -gt 0 ]]; then
    python3 bench/scale.py "${csvs[@]}" -o "$scale_dir" >"$logs/scale.log" 2>&1
    log "scale.py rc=$?"
    cat "$scale_dir/scale.md" >>"$summary" 2>/dev/null
  fi
fi

# --- variants: relaxed polls + one acquire re-read (SHOAL_WAIT_ACQUIRE_POLL=0) -------------------------------------
if [[ $what == bench || $what == all || $what == variants ]]; then
  # The same latency benchmarks with relaxed polls plus one acquire re-read instead of the default acquire polls:
  # both orders are correct; which is faster?
  t0=$(date +%s)
  if timeout "$build_limit" cmake -S . -B build/gpu-acqpoll -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSHOAL_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DSHOAL_WAIT_ACQUIRE_POLL=0 >"$logs/configure-acqpoll.log" 2>&1 &&
    timeout "$build_limit" cmake --build build/gpu-acqpoll -j "$(nproc)" --target shoal-bench shoalrun \
      >"$logs/build-acqpoll.log" 2>&1; then
    timeout -k 15 230 build/gpu-acqpoll/tools/shoalrun/shoalrun -n "$pes" --timeout 200 -- \
      build/gpu-acqpoll/bench/shoal-bench p_ping_pong put_signal_ping_pong barrier_latency -e 4K \
      --csv "$bench_dir/acqpoll.csv" >"$logs/bench-acqpoll.log" 2>&1
    log "relaxed-poll variant rc=$? $(( $(date +%s) - t0 )) s"
    grep -E "p_ping_pong|barrier_latency|put_signal_ping_pong +shoal" "$logs/bench-acqpoll.log" | head -12 >>"$summary"
  else
    log "relaxed-poll variant: build failed"
  fi
fi
exit 0
