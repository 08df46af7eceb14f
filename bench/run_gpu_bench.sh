#!/usr/bin/env bash
# Runs shoal-bench's device-initiated set and, where it was built, the same measurements through
# NVSHMEM (shoal-bench-nvshmem), on 2 PEs of this machine; then prints shoal/NVSHMEM ratios against
# the issue-3 targets and the device collectives against NCCL for issue 4 (bench/compare.py; the
# collectives allreduce, broadcast, fcollect, alltoall and team_barrier are part of shoal-bench's
# default device set, with NCCL rows when shoal-bench was built with NCCL) and draws the curves
# (bench/plot.py). Builds nothing.
#
#   bench/run_gpu_bench.sh BUILD_DIR OUT_DIR [shoal-bench options, e.g. -e 64M or put_bw]
#
# Writes OUT_DIR/{shoal,nvshmem}.{csv,json,log}, OUT_DIR/compare.md and OUT_DIR/plots/*.png.
# Each binary gets SHOAL_BENCH_TIMEOUT seconds (default 200) before shoalrun stops it; both run on
# SHOAL_BENCH_PES PEs (default 2).
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
nvshmem_bench=$build/bench/nvshmem/shoal-bench-nvshmem
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

status=0
echo "== shoal-bench (shoal) ==" >&2
"$shoalrun" -n "${SHOAL_BENCH_PES:-2}" --timeout "$limit" -- "$shoal_bench" "$@" --csv "$out/shoal.csv" --json "$out/shoal.json" \
  2>&1 | tee "$out/shoal.log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "$0: shoal-bench exited $rc" >&2
  status=1
fi

nv_csv=()
if [ -x "$nvshmem_bench" ]; then
  echo "== shoal-bench-nvshmem (NVSHMEM) ==" >&2
  "$shoalrun" -n "${SHOAL_BENCH_PES:-2}" --timeout "$limit" -- "$nvshmem_bench" "$@" --csv "$out/nvshmem.csv" --json "$out/nvshmem.json" \
    2>&1 | tee "$out/nvshmem.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "$0: shoal-bench-nvshmem exited $rc" >&2
    status=1
  fi
  [ -s "$out/nvshmem.csv" ] && nv_csv=("$out/nvshmem.csv")
else
  echo "$0: $nvshmem_bench not built (no NVSHMEM at configure time); shoal-only figures" >&2
fi

if [ -s "$out/shoal.csv" ]; then
  echo "== targets (issues 3 and 4) ==" >&2
  python3 "$here/compare.py" "$out/shoal.csv" "${nv_csv[@]}" --markdown "$out/compare.md" || status=1
  # One curve per (impl, scope): shoal's rows with their baselines, plus NVSHMEM's own rows.
  plot_inputs=("$out/shoal.csv")
  if [ ${#nv_csv[@]} -gt 0 ]; then
    awk -F, 'NR == 1 || $2 == "nvshmem"' "$out/nvshmem.csv" >"$out/nvshmem_only.csv"
    plot_inputs+=("$out/nvshmem_only.csv")
  fi
  python3 "$here/plot.py" "${plot_inputs[@]}" -o "$out/plots" >/dev/null ||
    echo "$0: plot.py failed (matplotlib missing?); CSVs are in $out" >&2
fi
exit $status
