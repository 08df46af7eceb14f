#!/usr/bin/env bash
# NVSHMEM's own perftests, unchanged, on shoal and beside NVSHMEM: one command.
#
#   scripts/nvshmem_perftests.sh NVSHMEM_SRC [OUT]
#
# NVSHMEM_SRC is a snapshot of NVIDIA/nvshmem (its perftest/ folder is all that is read; NVSHMEM's code stays
# outside this tree). Every program under perftest/device/ and perftest/host/ is built twice, unchanged:
#  - shoal: against shoal's installed compat headers (`pkg-config --cflags --libs shoal-nvshmem`), whole-program
#    (shoal needs no -rdc), and run under shoalrun -n $PES;
#  - NVSHMEM: against the NVSHMEM of NVSHMEM_HOME (default: python3's nvidia.nvshmem, the nvidia-nvshmem-cu13
#    wheel) with NVSHMEMTEST_MPI_SUPPORT, -rdc and a device link as NVSHMEM's own CMake builds them, and run under
#    mpirun -np $PES (the perftests' UID bootstrap with the id broadcast over MPI: NVSHMEMTEST_USE_UID_BOOTSTRAP=1;
#    NVSHMEM_PERFTEST_LAUNCHER=mpi for NVSHMEM's MPI bootstrap instead; with no mpi.h to build against, the programs
#    are built without NVSHMEMTEST_MPI_SUPPORT and NVSHMEM_BOOTSTRAP=MPI starts them).
# Each program runs once per line of its .args (no .args: once with its defaults), each run bounded by
# timeout(1). When the node has fewer GPUs than PEs, the PEs share GPUs under a private MPS daemon (scripts/mps.sh),
# for both. Outputs in OUT (default ./nvshmem-perftest-out): logs/<impl>/<program>.<line>.log, build logs,
# results.csv (every figure: impl, program, args, job, subjob, size, metric, value, units), runs.csv (every run's
# exit status) and summary.md (per program: built, ran, checks; per program and size: shoal beside NVSHMEM),
# merged by scripts/nvshmem_perftests_table.py.
#
# A GPU call of at most 10 minutes does not hold a whole build and run: BUILD_ONLY=1 builds (both sides) and runs
# nothing; RUN_ONLY=1 runs what an earlier call built into the same OUT (ONLY selects the programs; the runs of the
# programs it runs replace their earlier rows of runs.csv, the others stay). summary.md covers everything in OUT.
#
# Environment: SHOAL_PREFIX (an installed shoal; default: this checkout built in $SHOAL_PERFTEST_BUILD, default
# build/perftest, Release, and installed into OUT/shoal), NVSHMEM_HOME, PES (2), ARCH (90), RUN_TIMEOUT (seconds per
# run, 180), ONLY (a regex of program paths to build and run, e.g. 'pt-to-pt/shmem_put_bw'), SKIP_NVSHMEM=1 (shoal
# only), SKIP_SHOAL=1 (NVSHMEM only), NVML_INCLUDE (a folder with nvml.h, which the perftests' utils.h includes;
# default: CUDA's include folder, then python3's nvidia/cu13/include of the nvidia-nvml-dev wheel, then NVSHMEM_SRC/nvml),
# MPI_HOME (mpi.h for the NVSHMEM build; default: mpicc's include folders).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-}
out=${2:-$PWD/nvshmem-perftest-out}
if [[ -z $src || ! -d $src/perftest ]]; then
  echo "usage: $0 NVSHMEM_SRC [OUT]   (NVSHMEM_SRC/perftest must exist)" >&2
  exit 2
fi
src=$(cd "$src" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
pt=$src/perftest
pes=${PES:-2}
arch=${ARCH:-90}
run_timeout=${RUN_TIMEOUT:-180}
only=${ONLY:-}
jobs=$(nproc 2>/dev/null || echo 2)
say() { echo "== perftests: $*" | tee -a "$out/progress.txt"; }
: >"$out/progress.txt"
build_only=${BUILD_ONLY:-0}
run_only=${RUN_ONLY:-0}

export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_MACHINE_READABLE_OUTPUT=1 CUDA_MODULE_LOADING=EAGER
export SHOAL_WAIT_TIMEOUT=${SHOAL_WAIT_TIMEOUT:-60s}
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}

# --- the programs ------------------------------------------------------------------------------------------------
mapfile -t programs < <(cd "$pt" && find device host -name '*.cu' -o -name '*.cpp' | sort)
if [[ -n $only ]]; then
  mapfile -t programs < <(printf '%s\n' "${programs[@]}" | grep -E "$only")
fi
((${#programs[@]})) || { echo "no perftest program under $pt/device or $pt/host matches '$only'" >&2; exit 2; }
say "${#programs[@]} programs under $pt"

# --- headers the perftests include: nvml.h -------------------------------------------------------------------------
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
nvml_inc=${NVML_INCLUDE:-}
if [[ -z $nvml_inc ]]; then
  for d in "$cuda_home/include" "$cuda_home/targets/x86_64-linux/include" \
    "$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "include"))' 2>/dev/null)" \
    "$src/nvml"; do
    [[ -n $d && -f $d/nvml.h ]] && { nvml_inc=$d; break; }
  done
fi
if [[ -z $nvml_inc || ! -f $nvml_inc/nvml.h ]]; then
  echo "no nvml.h (the perftests' utils.h includes it): set NVML_INCLUDE, or pip install nvidia-nvml-dev" >&2
  exit 2
fi
cuda_stubs=$cuda_home/lib64/stubs
common_flags=(-std=c++17 -O2 -gencode "arch=compute_${arch},code=sm_${arch}" -I"$pt/common" -I"$nvml_inc")
driver_libs=(-L"$cuda_stubs" -lcuda -ldl)

# One program: compile utils.cu (once per impl) and the program, link. $1 impl, $2 program path; the rest of the
# arguments are the impl's compile flags, then "--", then its link flags. Writes OUT/bin/<impl>/<program>.
build_one() {
  local impl=$1 prog=$2
  shift 2
  local cflags=() lflags=() seen=0
  for a in "$@"; do
    if [[ $a == -- ]]; then seen=1; continue; fi
    ((seen)) && lflags+=("$a") || cflags+=("$a")
  done
  local obj=$out/obj/$impl bin=$out/bin/$impl log=$out/build/$impl
  mkdir -p "$obj/${prog%/*}" "$bin/${prog%/*}" "$log/${prog%/*}"
  local name=${prog%.*}
  # The host programs (.cpp) are compiled as CUDA on both sides: under a plain C++ compiler shoal's <nvshmem.h>
  # declares half and bfloat16 as its own 2-byte structs, not cuda_fp16.h's types (docs/nvshmem-compat.md).
  local lang=()
  [[ $prog == *.cpp ]] && lang=(-x cu)
  if ! "$nvcc" "${common_flags[@]}" "${cflags[@]}" "${lang[@]}" -c "$pt/$prog" -o "$obj/$name.o" >"$log/$name.log" 2>&1; then
    echo "$impl,$prog,compile" >>"$out/build.csv"
    return 1
  fi
  if ! "$nvcc" "${common_flags[@]}" "${cflags[@]}" "$obj/$name.o" "$obj/utils.o" -o "$bin/$name" "${lflags[@]}" \
    >>"$log/$name.log" 2>&1; then
    echo "$impl,$prog,link" >>"$out/build.csv"
    return 1
  fi
  echo "$impl,$prog,ok" >>"$out/build.csv"
}

# Builds utils.cu and every program for one impl, $jobs at a time.
build_impl() {
  local impl=$1
  shift
  local cflags=() seen=0
  for a in "$@"; do
    [[ $a == -- ]] && seen=1
    ((seen)) || cflags+=("$a")
  done
  mkdir -p "$out/obj/$impl" "$out/build/$impl"
  say "$impl: building common/utils.cu"
  if ! "$nvcc" "${common_flags[@]}" "${cflags[@]}" -c "$pt/common/utils.cu" -o "$out/obj/$impl/utils.o" \
    >"$out/build/$impl/utils.log" 2>&1; then
    say "$impl: common/utils.cu does not compile (build/$impl/utils.log); no program of $impl can be built"
    for p in "${programs[@]}"; do echo "$impl,$p,utils" >>"$out/build.csv"; done
    return 1
  fi
  say "$impl: building ${#programs[@]} programs ($jobs at a time)"
  local running=0
  for p in "${programs[@]}"; do
    build_one "$impl" "$p" "$@" &
    if ((++running >= jobs)); then
      wait -n
      ((running--))
    fi
  done
  wait
  say "$impl: $(grep -c "^$impl,.*,ok$" "$out/build.csv") of ${#programs[@]} programs built"
}

# Runs every built program of one impl with each line of its .args. $1 impl, then the launcher command.
run_impl() {
  local impl=$1
  shift
  local launcher=("$@")
  mkdir -p "$out/logs/$impl"
  for p in "${programs[@]}"; do
    local name=${p%.*} bin=$out/bin/$impl/${p%.*}
    [[ -x $bin ]] || continue
    local argsfile=$pt/$name.args lines=()
    if [[ -f $argsfile ]]; then
      mapfile -t lines < <(grep -v '^[[:space:]]*$' "$argsfile"; [[ -n $(tail -c1 "$argsfile") ]] && echo)
      mapfile -t lines < <(printf '%s\n' "${lines[@]}" | grep -v '^[[:space:]]*$')
    fi
    ((${#lines[@]})) || lines=("")
    local i=0
    for args in "${lines[@]}"; do
      local log=$out/logs/$impl/${name//\//_}.$i.log
      # shellcheck disable=SC2086 # the .args line is split into words, as NVSHMEM's runner does
      timeout "$((run_timeout + 15))" "${launcher[@]}" "$bin" $args >"$log" 2>&1
      local rc=$?
      printf '%s,%s,%d,"%s",%d\n' "$impl" "$p" "$i" "$args" "$rc" >>"$out/runs.csv"
      say "$impl: $p [$args] -> exit $rc"
      ((i++))
    done
  done
}

if [[ $run_only == 1 ]]; then
  [[ -f $out/build.csv ]] || { echo "RUN_ONLY=1: nothing built in $out yet (run with BUILD_ONLY=1 first)" >&2; exit 2; }
  # The runs about to be made replace their programs' earlier rows.
  touch "$out/runs.csv"
  for p in "${programs[@]}"; do grep -v -F ",$p," "$out/runs.csv" >"$out/runs.csv.new"; mv "$out/runs.csv.new" "$out/runs.csv"; done
else
  : >"$out/build.csv"
  : >"$out/runs.csv"
fi

# --- PEs sharing GPUs: a private MPS daemon ------------------------------------------------------------------------
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if ((gpus > 0 && gpus < pes)); then
  # shellcheck source=scripts/mps.sh
  source "$here/scripts/mps.sh"
  mps_start || say "no MPS: the $pes PEs are time-sliced on $gpus GPU(s)"
fi
((gpus > 0)) || say "no GPU on this machine: the programs are built, not run"

# --- shoal ---------------------------------------------------------------------------------------------------------
if [[ ${SKIP_SHOAL:-0} != 1 ]]; then
  prefix=${SHOAL_PREFIX:-}
  [[ -z $prefix && $run_only == 1 ]] && prefix=$out/shoal
  if [[ -z $prefix ]]; then
    b=${SHOAL_PERFTEST_BUILD:-$here/build/perftest}
    prefix=$out/shoal
    say "shoal: building this checkout in $b (Release) and installing it into $prefix"
    {
      cmake -S "$here" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_PYTHON=OFF -DSHOAL_BUILD_TESTS=OFF \
        -DSHOAL_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX="$prefix" &&
        cmake --build "$b" -j "$jobs" --target shoal shoal_shmem shoalrun shoal-info &&
        cmake --install "$b"
    } >"$out/shoal-build.log" 2>&1 || { say "shoal: build or install failed (shoal-build.log)"; exit 1; }
  fi
  pc=$(dirname "$(find "$prefix" -name shoal-nvshmem.pc | head -1)")
  [[ -f $pc/shoal-nvshmem.pc ]] || { echo "no shoal-nvshmem.pc under $prefix" >&2; exit 1; }
  read -r -a shoal_cflags < <(PKG_CONFIG_PATH=$pc pkg-config --cflags shoal-nvshmem)
  read -r -a shoal_libs < <(PKG_CONFIG_PATH=$pc pkg-config --libs shoal-nvshmem)
  [[ $run_only == 1 ]] || build_impl shoal "${shoal_cflags[@]}" -- "${shoal_libs[@]}" "${driver_libs[@]}"
  if ((gpus > 0)) && [[ $build_only != 1 ]]; then
    run_impl shoal "$prefix/bin/shoalrun" -n "$pes" --timeout "$run_timeout" --
  fi
fi

# --- NVSHMEM -------------------------------------------------------------------------------------------------------
if [[ ${SKIP_NVSHMEM:-0} != 1 ]]; then
  home=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)}
  if [[ -z $home || ! -f $home/include/nvshmem.h ]]; then
    say "NVSHMEM: none found (NVSHMEM_HOME, or python3's nvidia.nvshmem); skipped"
  else
    hostlib=$(find "$home/lib" -maxdepth 1 -name 'libnvshmem_host.so*' | sort | head -1)
    mpi_cflags=()
    # mpi.h: utils.h includes it under NVSHMEMTEST_MPI_SUPPORT (libmpi itself is dlopen'ed at run time).
    if [[ -n ${MPI_HOME:-} ]]; then
      mpi_cflags=(-I"$MPI_HOME/include")
    elif command -v mpicc >/dev/null; then
      for d in $(mpicc --showme:incdirs 2>/dev/null); do mpi_cflags+=(-I"$d"); done
      ((${#mpi_cflags[@]})) || for f in $(mpicc -show 2>/dev/null); do [[ $f == -I* ]] && mpi_cflags+=("$f"); done
    fi
    # Without mpi.h: built without NVSHMEMTEST_MPI_SUPPORT, and nvshmem_init bootstraps through NVSHMEM's MPI plugin.
    mpi_support=(-DNVSHMEMTEST_MPI_SUPPORT)
    mpi_h_found=0
    for f in "${mpi_cflags[@]}"; do [[ -f ${f#-I}/mpi.h ]] && mpi_h_found=1; done
    if ((!mpi_h_found)); then
      mpi_support=()
      export NVSHMEM_BOOTSTRAP=MPI
    fi
    say "NVSHMEM: $home ($(basename "$hostlib")), MPI flags: ${mpi_cflags[*]:-none}${mpi_support[*]:+ (NVSHMEMTEST_MPI_SUPPORT)}"
    [[ $run_only == 1 ]] || build_impl nvshmem -rdc=true "${mpi_support[@]}" -I"$home/include" "${mpi_cflags[@]}" -- \
      "$home/lib/libnvshmem_device.a" -L"$home/lib" -Xlinker "-l:$(basename "$hostlib")" -Xlinker -rpath="$home/lib" \
      "${driver_libs[@]}"
    if ((gpus > 0)) && [[ $build_only != 1 ]]; then
      if ! command -v mpirun >/dev/null; then
        say "NVSHMEM: no mpirun on PATH; not run"
      else
        launch_env=(NVSHMEM_DISABLE_NVLS NVSHMEM_MACHINE_READABLE_OUTPUT CUDA_MODULE_LOADING
          NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY LD_LIBRARY_PATH)
        if [[ ${NVSHMEM_BOOTSTRAP:-} == MPI ]]; then
          launch_env+=(NVSHMEM_BOOTSTRAP)
        elif [[ ${NVSHMEM_PERFTEST_LAUNCHER:-uid} == mpi ]]; then
          export NVSHMEMTEST_USE_MPI_LAUNCHER=1
          launch_env+=(NVSHMEMTEST_USE_MPI_LAUNCHER)
        else
          export NVSHMEMTEST_USE_UID_BOOTSTRAP=1
          launch_env+=(NVSHMEMTEST_USE_UID_BOOTSTRAP)
        fi
        xargs_env=()
        for v in "${launch_env[@]}"; do [[ -n ${!v:-} ]] && xargs_env+=(-x "$v"); done
        run_impl nvshmem mpirun -np "$pes" --allow-run-as-root --oversubscribe --bind-to none "${xargs_env[@]}"
      fi
    fi
  fi
fi

python3 "$here/scripts/nvshmem_perftests_table.py" "$out" "$pt"
say "done: $out/summary.md"
