#!/usr/bin/env bash
# Runs shoal-bench's device-initiated set and, where it was built, the same measurements through
# NVSHMEM (shoal-bench-nvshmem, and shoal-bench-nvshmem-<version> for each other NVSHMEM the build was
# given: every binary BUILD_DIR/bench/nvshmem/nvshmem_benches.txt lists), on 2 PEs of this machine, one
# binary after the other; then prints shoal/NVSHMEM ratios (against each NVSHMEM release) against
# the issue-3 targets and the device collectives against NCCL for issue 4 (bench/compare.py; the
# collectives allreduce, broadcast, fcollect, alltoall and team_barrier are part of shoal-bench's
# default device set, with NCCL rows when shoal-bench was built with NCCL) and draws the curves
# (bench/plot.py). Builds nothing.
#
#   bench/run_gpu_bench.sh BUILD_DIR OUT_DIR [shoal-bench options, e.g. -e 64M or put_bw]
#
# Writes OUT_DIR/{shoal,nvshmem,nvshmem-<version>}.{csv,json,log}, OUT_DIR/compare.md and
# OUT_DIR/plots/*.png. Each binary gets SHOAL_BENCH_TIMEOUT seconds (default 200) before shoalrun stops
# it (and timeout(1) 30 s later); all run on SHOAL_BENCH_PES PEs (default 2).
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [shoal-bench options...]" >&2
  exit 2
fi
build=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
shoalrun=$build/tools/shoalrun/shoalrun
shoal_bench=$build/bench/shoal-bench
limit=${SHOAL_BENCH_TIMEOUT:-200}

for f in "$shoalrun" "$shoal_bench"; do
  if [ ! -x "$f" ]; then
    echo "$0: $f is missing (build the shoal-bench and shoalrun targets first)" >&2
    exit 2
  fi
done
mkdir -p "$out"

# No multicast/NVLS anywhere: the figures are point-to-point NVLink.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# A stuck shoal wait (device or host) reports what it waited for and fails after this long, instead
# of the 600 s default; below shoal-bench's own 30 s per-kernel watchdog, so its report comes first.
export SHOAL_WAIT_TIMEOUT=${SHOAL_WAIT_TIMEOUT:-25s}
# Both PEs are on this node: NVSHMEM's UID bootstrap can stay on loopback.
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}

# run_one PROGRAM NAME [args...]: PROGRAM on the PEs into OUT_DIR/NAME.{csv,json,log}; 1 if it failed.
run_one() {
  local program=$1 name=$2
  shift 2
  timeout -k 15 $((limit + 30)) "$shoalrun" -n "${SHOAL_BENCH_PES:-2}" --timeout "$limit" -- "$program" "$@" \
    --csv "$out/$name.csv" --json "$out/$name.json" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "$0: $(basename "$program") exited $rc" >&2
    return 1
  fi
}

status=0
echo "== shoal-bench (shoal) ==" >&2
run_one "$shoal_bench" shoal "$@" || status=1

# The NVSHMEM binaries of this configuration: "target<TAB>version<TAB>home" lines (bench/nvshmem/CMakeLists.txt);
# a build folder configured before that list existed has at most shoal-bench-nvshmem.
nv_list=$build/bench/nvshmem/nvshmem_benches.txt
nv_targets=()
nv_versions=()
if [ -f "$nv_list" ]; then
  while IFS=$'\t' read -r target version _; do
    nv_targets+=("$target")
    nv_versions+=("$version")
  done <"$nv_list"
elif [ -x "$build/bench/nvshmem/shoal-bench-nvshmem" ]; then
  nv_targets=(shoal-bench-nvshmem)
  nv_versions=("?")
fi
nv_csv=()
for i in "${!nv_targets[@]}"; do
  program=$build/bench/nvshmem/${nv_targets[$i]}
  name=${nv_targets[$i]#shoal-bench-}  # nvshmem, nvshmem-3.8.0
  if [ ! -x "$program" ]; then
    echo "$0: $program is not built (build the ${nv_targets[$i]} target)" >&2
    status=1
    continue
  fi
  echo "== ${nv_targets[$i]} (NVSHMEM ${nv_versions[$i]}) ==" >&2
  run_one "$program" "$name" "$@" || status=1
  [ -s "$out/$name.csv" ] && nv_csv+=("$out/$name.csv")
done
if [ ${#nv_targets[@]} -eq 0 ]; then
  echo "$0: no shoal-bench-nvshmem built (no NVSHMEM at configure time); shoal-only figures" >&2
fi

if [ -s "$out/shoal.csv" ]; then
  echo "== targets (issues 3 and 4) ==" >&2
  python3 "$here/compare.py" "$out/shoal.csv" "${nv_csv[@]}" --markdown "$out/compare.md" || status=1
  # One curve per (impl, scope): shoal's rows with their baselines, plus each NVSHMEM's own rows.
  plot_inputs=("$out/shoal.csv")
  for f in "${nv_csv[@]}"; do
    awk -F, 'NR == 1 || $2 ~ /^nvshmem/' "$f" >"${f%.csv}_only.csv"
    plot_inputs+=("${f%.csv}_only.csv")
  done
  python3 "$here/plot.py" "${plot_inputs[@]}" -o "$out/plots" >/dev/null ||
    echo "$0: plot.py failed (matplotlib missing?); CSVs are in $out" >&2
fi
exit $status
