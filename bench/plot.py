#!/usr/bin/env python3
"""Draws shoal-bench / shoal-bench-nvshmem CSV files as curves against message size (PNG).

usage: plot.py results.csv [more.csv ...] -o out_dir

Point-to-point and sync benchmarks: one PNG per benchmark, bandwidth (GB/s) for *_bw rows, latency
(us) otherwise, one curve per (impl, scope, PEs); a benchmark measured at one size only (or with no
size: barrier_latency; atomic_latency, p_ping_pong at a single -b/-e) is a bar chart instead, one bar
per (impl, scope, PEs[, size]), its value written on it.
Collectives (allreduce, allreduce_scratch, broadcast, fcollect, alltoall): one PNG per collective,
coll_<name>.png, with latency vs size on the left and busBW vs size on the right; colour = impl
(shoal, NCCL, NVSHMEM; each NVSHMEM release, impl nvshmem-<version>, its own shade), line style =
scope (block/1x<t> solid, stream dashed, graph dotted). Rows whose data check failed are drawn as red
crosses. Barriers (team_barrier, barrier; no size): one bar chart, coll_barriers.png. Rows that repeat
a (benchmark, impl, scope, PEs, size) keep the last file's.
"""
import argparse
import collections
import csv
import pathlib
import sys

try:
    import matplotlib
except ImportError:
    sys.exit(
        f"plot.py needs matplotlib, which this Python ({sys.executable}) does not have. One of:\n"
        "  scripts/install_deps.sh, then build/venv/bin/python bench/plot.py ... (the checkout's venv)\n"
        "  python3 -m pip install matplotlib, in a virtual environment of yours, and run plot.py with its python\n"
        "  sudo apt-get install python3-matplotlib, and run plot.py with /usr/bin/python3"
    )

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLLECTIVES = ("allreduce", "allreduce_scratch", "broadcast", "fcollect", "alltoall")
BARRIERS = ("team_barrier", "barrier")
IMPL_COLOURS = {"shoal": "tab:blue", "nccl": "tab:green", "nvshmem": "tab:red"}
NVSHMEM_RELEASE_COLOURS = ("tab:red", "tab:purple", "tab:brown", "tab:orange")  # nvshmem-<version>, in order seen
IMPL_ORDER = {"shoal": 0, "nccl": 1, "nvshmem": 2}


def impl_colour(impl, default=None):
    if impl in IMPL_COLOURS:
        return IMPL_COLOURS[impl]
    if impl.startswith("nvshmem-"):
        seen = [k for k in IMPL_COLOURS if k.startswith("nvshmem-")]
        IMPL_COLOURS[impl] = NVSHMEM_RELEASE_COLOURS[len(seen) % len(NVSHMEM_RELEASE_COLOURS)]
        return IMPL_COLOURS[impl]
    return default


def impl_order(impl):
    return IMPL_ORDER.get("nvshmem" if impl.startswith("nvshmem-") else impl, 9)
BAR_CHARTS = set()  # the paths drawn as bar charts (main() says which)
SCOPE_STYLES = {"block": ("-", "o"), "stream": ("--", "s"), "graph": (":", "^")}


def scope_kind(scope):
    return "block" if scope.startswith("block") else scope


def size_label(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def number(r, key):
    try:
        return float(r.get(key) or 0)
    except ValueError:
        return 0.0


def load(paths):
    """(benchmark, impl, scope, PEs) -> {size: row}, the last file winning."""
    series = collections.defaultdict(dict)
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (r["benchmark"], r["impl"], r["scope"], r["num_pes"])
                series[key][int(r["size_bytes"])] = r
    return series


def failed(r):
    return r.get("baseline") == "DATA-CHECK-FAILED"


def plot_point_to_point(bench, series, out):
    use_bw = bench.endswith("_bw") or "bw" in bench
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (_, impl, scope, pes), pts in sorted(series.items()):
        xs = sorted(pts)
        ys = [number(pts[x], "bandwidth_gbps") if use_bw else number(pts[x], "latency_us") for x in xs]
        ax.plot(xs, ys, marker="o", ms=3, label=f"{impl} {scope} {pes}PE")
    ax.set_xscale("log", base=2)
    if not use_bw:
        ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (GB/s)" if use_bw else "latency (us)")
    ax.set_title(bench)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / f"{bench}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_collective(bench, series, out):
    fig, (ax_lat, ax_bw) = plt.subplots(1, 2, figsize=(13, 4.8))
    by_impl_scope = sorted(series.items(), key=lambda kv: (impl_order(kv[0][1]), kv[0][1], kv[0][2]))
    for (_, impl, scope, pes), pts in by_impl_scope:
        xs = sorted(x for x in pts if x > 0)
        if not xs:
            continue
        style, marker = SCOPE_STYLES.get(scope_kind(scope), ("-.", "d"))
        colour = impl_colour(impl)
        label = f"{impl} {scope}" + (f" ({pes} PEs)" if pes != "2" else "")
        for ax, key in ((ax_lat, "latency_us"), (ax_bw, "busbw_gbps")):
            ys = [number(pts[x], key) for x in xs]
            if key == "busbw_gbps" and not any(ys):
                ys = [number(pts[x], "bandwidth_gbps") for x in xs]
            ax.plot(xs, ys, linestyle=style, marker=marker, ms=3, color=colour, label=label)
            bad = [(x, y) for x, y in zip(xs, ys) if failed(pts[x])]
            if bad:
                ax.plot([b[0] for b in bad], [b[1] for b in bad], "x", color="red", ms=8, mew=2)
    for ax, ylabel in ((ax_lat, "latency per call (us)"), (ax_bw, "busBW (GB/s)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes, nccl-tests' count)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    ax_lat.set_yscale("log")
    ax_lat.set_title(f"{bench}: latency")
    ax_bw.set_title(f"{bench}: busBW")
    handles, labels = ax_lat.get_legend_handles_labels()
    if handles:
        ax_bw.legend(handles, labels, fontsize=8, loc="upper left")
    fig.tight_layout()
    path = out / f"coll_{bench}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def draw_bars(bars, ylabel, title, path):
    """bars: (label, value, colour); one bar each, the value written on top."""
    fig, ax = plt.subplots(figsize=(max(6, 1.7 * len(bars)), 4.5))
    ax.bar(range(len(bars)), [b[1] for b in bars], color=[b[2] for b in bars])
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([b[0] for b in bars], fontsize=8)
    for i, b in enumerate(bars):
        ax.annotate(f"{b[1]:.3g}", (i, b[1]), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    BAR_CHARTS.add(path)
    return path


def single_point(series):
    """True when no curve of this benchmark has two sizes to join (one size, or no size at all)."""
    return all(len(pts) <= 1 for pts in series.values())


def plot_point_bars(bench, series, out):
    use_bw = bench.endswith("_bw") or "bw" in bench
    key = "bandwidth_gbps" if use_bw else "latency_us"
    bars = []
    for (_, impl, scope, pes), pts in sorted(series.items()):
        for size, r in sorted(pts.items()):
            label = f"{impl} {scope}\n{pes} PEs" + (f", {size_label(size)} B" if size > 0 else "")
            bars.append((label, number(r, key), impl_colour(impl, "tab:gray")))
    ylabel = "bandwidth (GB/s)" if use_bw else "latency (us)"
    return draw_bars(bars, ylabel, bench, out / f"{bench}.png")


def plot_barriers(series, out):
    bars = []
    by_bench_scope_impl = sorted(series.items(), key=lambda kv: (kv[0][0], kv[0][2], impl_order(kv[0][1]), kv[0][1]))
    for (bench, impl, scope, pes), pts in by_bench_scope_impl:
        for _, r in sorted(pts.items()):
            bars.append((f"{bench}\n{impl} {scope}", number(r, "latency_us"), impl_colour(impl, "tab:gray")))
    if not bars:
        return None
    return draw_bars(bars, "latency per call (us)", "team barriers", out / "coll_barriers.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("-o", "--out", default=".", help="output folder")
    args = ap.parse_args()
    series = load(args.csv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    by_bench = collections.defaultdict(dict)
    for key, pts in series.items():
        by_bench[key[0]][key] = pts
    written = []
    for bench, s in sorted(by_bench.items()):
        if bench in COLLECTIVES:
            written.append(plot_collective(bench, s, out))
        elif bench in BARRIERS:
            continue
        elif single_point(s):
            written.append(plot_point_bars(bench, s, out))
        else:
            written.append(plot_point_to_point(bench, s, out))
    written.append(plot_barriers({k: v for b in BARRIERS for k, v in by_bench.get(b, {}).items()}, out))
    for path in written:
        if path is not None:
            print(f"wrote {path}" + (" (bars)" if path in BAR_CHARTS else ""))


if __name__ == "__main__":
    main()
