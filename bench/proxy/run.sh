#!/usr/bin/env bash
# shoal's proxy transport beside UCX's own limit, in one run on one machine (issue 11 §5):
#  1. shoal-bench (host-issued put/get bandwidth, p and put-with-signal ping-pong, put+quiet,
#     fetch_add) at 2 PEs with every peer on the proxy: SHOAL_DISABLE_P2P=1 UCX_TLS=tcp UCX_NET_DEVICES=lo;
#  2. ucx_perftest (ucp_put_bw, ucp_get, ucp_put_lat, ucp_fadd, ucp_add) as a server/client pair on
#     127.0.0.1 over the same transport (bench/proxy/perftest.py);
#  3. where a GPU is present: the device-initiated set on GPU heaps (UCX_TLS=tcp,cuda_copy), the host-issued
#     put_bw/get_bw on the same GPU heaps (shoal-bench --host-issued), and
#     ucx_perftest on CUDA memory. With no load/store path between the PEs, shoal-bench runs the shoal
#     rows only (thread, warp and block scope; no sm_copy/copy_engine/raw baselines, said on stderr),
#     checks every row's data through host gets, and bounds its loops (at most 200 timed iterations
#     per latency repetition, 64 MiB per timed bandwidth kernel, warm-ups bounded in time);
#  4. bench/proxy/compare.py: the table against the targets (compare.csv, README.md; device put
#     at its best scope per size), and plots with bench/plot.py.
#
#   bench/proxy/run.sh [--build DIR] [--out DIR] [--quick] [--no-device]
#     --build DIR   build tree with shoalrun and shoal-bench (default build/ci)
#     --out DIR     where the CSVs, table and plots go (default docs/results/proxy)
#     --quick       sizes 16 B..64 MiB by 4x instead of 8 B..64 MiB by 2x
#     --no-device   skip the GPU variants even when a GPU is present
#     --no-perftest skip ucx_perftest (shoal's host and device rows only; the table then has no UCX column)
# UCX_PERFTEST names another ucx_perftest (e.g. the libucx-cu13 wheel's, for CUDA memory).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build/ci
out=$root/docs/results/proxy
quick=0
device=1
perftest_runs=1
args=("$@")
while (($#)); do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-device) device=0; shift ;;
    --no-perftest) perftest_runs=0; shift ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shoalrun=$build/tools/shoalrun/shoalrun
bench=$build/bench/shoal-bench
perftest=${UCX_PERFTEST:-ucx_perftest}
for exe in "$shoalrun" "$bench"; do [[ -x $exe ]] || { echo "run.sh: $exe is not built" >&2; exit 1; }; done
((perftest_runs == 0)) || command -v "$perftest" >/dev/null || { echo "run.sh: no ucx_perftest (apt-get install ucx-utils)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/plots/*.png

if ((quick)); then
  range=(-b 16 -e 64M -f 4)
  sizes=$(python3 -c 'print(",".join(str(16 << 2 * i) for i in range(12)))')
else
  range=(-b 8 -e 64M -f 2)
  sizes=$(python3 -c 'print(",".join(str(8 << i) for i in range(24)))')
fi
export SHOAL_DISABLE_P2P=1 UCX_TLS=tcp UCX_NET_DEVICES=lo
host_set=(put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency atomic_latency)

ucx_info=$(dirname "$(command -v "$perftest")")/ucx_info
ucx_version=$("$ucx_info" -v 2>/dev/null | head -1 | sed 's/^# *Version/UCX/' || true)  # not ucx_perftest -v: that serves
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== shoal-bench over the proxy (host-issued), $(date -u +%FT%TZ)"
# p_ping_pong and atomic_latency run at 8 B; the rest over the whole range.
SHOAL_BACKEND=host "$shoalrun" -n 2 --timeout 1200 -- "$bench" "${host_set[@]}" "${range[@]}" \
  --csv "$out/shoal_host.csv"
# Typical small-op latency: the median of 201 repetitions of 10 operations each (ucx_perftest's 50th
# percentile is the matching figure); the means above are at the mercy of the scheduler on a busy box.
# Where the scheduler places the two PEs' threads is drawn once per launch and moves a ping-pong by
# ~3 us on 2 cores, so it runs in 5 launches and the table takes the median launch per benchmark
# (shoal_host_typical.csv; each launch's rows in shoal_host_typical_runs.csv).
rm -f "$out/shoal_host_typical_runs.csv"
for launch in 1 2 3 4 5; do
  SHOAL_BACKEND=host "$shoalrun" -n 2 --timeout 600 -- "$bench" p_ping_pong put_signal_ping_pong put_quiet_latency \
    atomic_latency -b 8 -e 8 -n 1 -r 201 -w 20 --csv "$out/typical_$launch.csv"
done
python3 - "$out" <<'PY'
import csv, pathlib, statistics, sys
d = pathlib.Path(sys.argv[1])
runs = [list(csv.DictReader(f.open())) for f in sorted(d.glob("typical_*.csv"))]
fields = list(runs[0][0].keys())
with (d / "shoal_host_typical_runs.csv").open("w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    for rows in runs:
        w.writerows(rows)
by_key = {}
for rows in runs:
    for r in rows:
        by_key.setdefault((r["benchmark"], r["impl"], r["size_bytes"]), []).append(r)
with (d / "shoal_host_typical.csv").open("w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    for rows in by_key.values():
        rows.sort(key=lambda r: float(r["latency_us"]))
        w.writerow(rows[len(rows) // 2])  # the median launch (5 launches: the 3rd fastest)
for f in d.glob("typical_*.csv"):
    f.unlink()
PY
if ((perftest_runs)); then
  echo "== ucx_perftest, same transport"
  python3 "$root/bench/proxy/perftest.py" --csv "$out/ucx_host.csv" --sizes "$sizes" --ucx-perftest "$perftest"
fi

gpu=""
if ((device)) && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi -L | head -1)
  echo "== device-initiated over the proxy ($gpu)"
  # cuda_copy stages GPU memory through host buffers; never cuda_ipc here (a same-node GPU path).
  # SHOAL_DISABLE_P2P=1 keeps the GPUs apart too: the pair is on the proxy, device calls go through its ring.
  SHOAL_BACKEND=cuda UCX_TLS=tcp,cuda_copy "$shoalrun" -n 2 --timeout 1200 -- "$bench" "${host_set[@]}" \
    "${range[@]}" --csv "$out/shoal_device.csv" || echo "run.sh: the device set failed; see above" >&2
  # The same GPU heaps through the host API (shoal-bench --host-issued): the host side of the device target.
  SHOAL_BACKEND=cuda UCX_TLS=tcp,cuda_copy "$shoalrun" -n 2 --timeout 600 -- "$bench" put_bw get_bw \
    "${range[@]}" --host-issued --csv "$out/shoal_device_host.csv" || echo "run.sh: the host-issued GPU-heap set failed" >&2
  if ((perftest_runs)); then
    UCX_TLS=tcp,cuda_copy python3 "$root/bench/proxy/perftest.py" --csv "$out/ucx_cuda.csv" --sizes "$sizes" \
      --mem cuda --ucx-perftest "$perftest" || echo "run.sh: ucx_perftest on CUDA memory failed" >&2
  fi
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

if python3 -c 'import matplotlib' 2>/dev/null; then
  mkdir -p "$out/plots"
  # shoal and the UCX references only (the memcpy/local baselines would flatten the scale); ucp_am_bw
  # drawn on the put_bw figure as its own curve.
  python3 - "$out" <<'PY'
import csv, pathlib, sys
d = pathlib.Path(sys.argv[1])
rows = []
for f in sorted(d.glob("shoal_*.csv")) + sorted(d.glob("ucx_*.csv")):
    for r in csv.DictReader(f.open()):
        if r["impl"] not in ("shoal", "ucx_perftest") or f.name.startswith("shoal_host_typical"):
            continue
        if r["benchmark"] == "am_bw":
            r["benchmark"], r["impl"] = "put_bw", "ucx_perftest am_bw"
        if f.name in ("ucx_cuda.csv", "shoal_device.csv"):
            r["impl"] += " (GPU memory)"
        if f.name == "shoal_device_host.csv":
            r["impl"] += " host-issued (GPU memory)"
        rows.append(r)
with (d / "plots" / "input.csv").open("w", newline="") as out:
    w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
PY
  python3 "$root/bench/plot.py" "$out/plots/input.csv" -o "$out/plots"
else
  echo "run.sh: no matplotlib; no plots (scripts/install_deps.sh installs it in build/venv)" >&2
fi
machine="$(uname -srm), $(nproc) CPU cores ($cpu)${gpu:+, $gpu}, ${ucx_version:-UCX ?}; load average"
machine+=" $load_before before, $load_after after (other jobs share this machine)"
python3 "$root/bench/proxy/compare.py" --dir "$out" --machine "$machine" \
  --command "bench/proxy/run.sh ${args[*]}  (git $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))"
