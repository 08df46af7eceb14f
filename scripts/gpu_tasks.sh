# Sourced by the time-boxed GPU drivers (scripts/gpu_final.sh, scripts/gpu_x2.sh): one call of at most DEADLINE
# seconds runs the next tasks that fit; each finished task leaves a marker in MARKS (under the build folder), so
# a second call on the still-warm machine (within its idle release) continues where the first stopped.
#
#   gpu_tasks_init MARKS DEADLINE   sets O (outputs: $OUT or ./gpu-out), B (build/gpu), R (shoalrun), the UCX
#                                   bundle (SHOAL_UCX_WHEEL, default .whl/ucx-1.22.0.tar.xz) and NVSHMEM 3.8.0
#                                   (SHOAL_NVSHMEM_BUNDLE, default .whl/nvshmem-3.8.0.tar.xz, beside the
#                                   machine's NVSHMEM), then configures and builds once (Release, UCX, Python;
#                                   SHOAL_GPU_TARGETS="a b ...": only those targets, every call)
#   fits COST                       true when COST more seconds fit before the deadline
#   t NAME COST LIMIT               one ctest (exact name), bounded by LIMIT, log in $O/logs/t_NAME.log
#   bn NAME COST PES BINARY ARGS... one benchmark on PES PEs into $O/bench/NAME.{csv,log}
#   task NAME COST CMD...           any command (bounded by COST + 30 s), log in $O/logs/NAME.log
#   gpu_tasks_pack                  $O/all.tgz: everything in one file (the device tool returns few files)
gpu_tasks_init() {
  GT_T0=$(date +%s)
  GT_DL=$2
  O=${OUT:-$PWD/gpu-out}
  mkdir -p "$O/logs" "$O/bench" "$O/proxy"
  B=build/gpu
  M=$B/$1
  mkdir -p "$M"
  R=$B/tools/shoalrun/shoalrun
  source scripts/env.sh
  eval "$(scripts/ucx_wheel.sh "${SHOAL_UCX_WHEEL:-.whl/ucx-1.22.0.tar.xz}" /tmp/shoal-ucx 2>/dev/null)"
  [[ -d /tmp/nv38/nvshmem ]] ||
    { mkdir -p /tmp/nv38 && tar -xJf "${SHOAL_NVSHMEM_BUNDLE:-.whl/nvshmem-3.8.0.tar.xz}" -C /tmp/nv38; }
  export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 SHOAL_WAIT_TIMEOUT=25s
  export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
  local nvsh
  nvsh=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
  if [[ -n ${SHOAL_GPU_TARGETS:-} ]]; then
    cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_WITH_UCX=ON $WHEEL_UCX_CMAKE_ARGS \
      -DSHOAL_GPU_TEST_PES=2 -DSHOAL_NVSHMEM_HOME=$nvsh -DSHOAL_NVSHMEM_EXTRA_HOMES=/tmp/nv38/nvshmem \
      -DSHOAL_BUILD_PYTHON=OFF >"$O/logs/configure.log" 2>&1
    # shellcheck disable=SC2086 # a list of targets
    timeout 300 cmake --build $B -j "$(nproc)" --target $SHOAL_GPU_TARGETS >"$O/logs/build.log" 2>&1 ||
      grep -E "error|FAILED" "$O/logs/build.log" | head -30
    echo "build ($SHOAL_GPU_TARGETS) $(gt_el) s"
  elif [[ ! -f $M/build ]]; then
    cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_WITH_UCX=ON $WHEEL_UCX_CMAKE_ARGS \
      -DSHOAL_GPU_TEST_PES=2 -DSHOAL_NVSHMEM_HOME=$nvsh -DSHOAL_NVSHMEM_EXTRA_HOMES=/tmp/nv38/nvshmem \
      -DSHOAL_BUILD_PYTHON=ON >"$O/logs/configure.log" 2>&1
    grep -E "shoal: (NVSHMEM|UCX|NCCL)" "$O/logs/configure.log"
    if timeout 300 cmake --build $B -j "$(nproc)" >"$O/logs/build.log" 2>&1; then
      touch "$M/build"
    else
      grep -E "error|FAILED" "$O/logs/build.log" | head -30
    fi
    echo "build $(gt_el) s"
  fi
}
gt_el() { echo $(($(date +%s) - GT_T0)); }
fits() { (($(gt_el) + $1 <= GT_DL)); }
t() {
  local n=$1 c=$2 l=$3
  [[ -f $M/t_$n ]] && return
  fits "$c" || { echo "skip $n (time)"; return; }
  timeout $((l + 20)) ctest --test-dir $B -R "^${n//./\\.}\$" --timeout "$l" -V >"$O/logs/t_$n.log" 2>&1
  local line
  line=$(grep -E "Test +#" "$O/logs/t_$n.log" | tail -1)
  # A PE that crashed or was killed on purpose in the test before (dead peer, stall and timeout reports) leaves the
  # shared GPU's MPS server refusing new clients for a moment: such a setup failure is retried once, 5 s later, and
  # both logs are kept.
  if [[ $line != *Passed* && $line != *Skipped* ]] && grep -q "cudaErrorDevicesUnavailable" "$O/logs/t_$n.log"; then
    mv "$O/logs/t_$n.log" "$O/logs/t_$n.busy.log"
    sleep 5
    timeout $((l + 20)) ctest --test-dir $B -R "^${n//./\\.}\$" --timeout "$l" -V >"$O/logs/t_$n.log" 2>&1
    line="$(grep -E "Test +#" "$O/logs/t_$n.log" | tail -1) (retried: MPS busy at setup)"
  fi
  echo "$(sed 's/^ *[0-9/]* *//' <<<"$line") [$(gt_el)s]"
  touch "$M/t_$n"
  [[ $line == *Passed* ]] || sleep 2  # a crashed PE may leave a shared GPU's MPS server busy for a moment
}
bn() {
  local n=$1 c=$2 pes=$3
  shift 3
  [[ -f $M/b_$n ]] && return
  fits "$c" || { echo "skip bench $n (time)"; return; }
  timeout $((c + 30)) $R -n "$pes" --timeout $((c + 10)) -- "$@" --csv "$O/bench/$n.csv" >"$O/bench/$n.log" 2>&1
  echo "bench $n rc=$? [$(gt_el)s]"
  touch "$M/b_$n"
}
task() {
  local n=$1 c=$2
  shift 2
  [[ -f $M/x_$n ]] && return
  fits "$c" || { echo "skip $n (time)"; return; }
  timeout $((c + 30)) "$@" >"$O/logs/$n.log" 2>&1
  echo "$n rc=$? [$(gt_el)s]"
  touch "$M/x_$n"
}
gpu_tasks_pack() {
  (cd "$O" && tar czf /tmp/shoal-gpu-out.tgz --exclude=all.tgz . && mv /tmp/shoal-gpu-out.tgz all.tgz)
}
