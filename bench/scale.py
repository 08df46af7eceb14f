#!/usr/bin/env python3
"""shoal-bench figures across PE counts (issue 5): merges the CSVs of `scripts/gpu.sh scale`
(the pair set and the collectives at each PE count) into one CSV, a Markdown summary and plots.

    bench/scale.py CSV... -o DIR

Writes DIR/scale.csv (every input row, one per figure, with its num_pes and pair columns),
DIR/scale.md (per PE count: the pair figures over all pairs measured, the device barrier, and each
collective beside NCCL at 8 B / 64 KiB / 16 MiB / 256 MiB) and DIR/scale_*.png (matplotlib; skipped
with a line on stderr when it is missing). Exit status 1 when no input has a row.
"""
import argparse
import csv
import os
import statistics
import sys

COLLECTIVES = ("allreduce", "broadcast", "fcollect", "alltoall")
COLL_SIZES = (8, 64 << 10, 16 << 20, 256 << 20)
PAIR_SETS = (  # (benchmark, impl, scope prefix, size or None for the largest, field, label, unit)
    ("put_bw", "shoal", "block/", None, "bandwidth_gbps", "put_bw block, full grid, largest size", "GB/s"),
    ("get_bw", "shoal", "block/", None, "bandwidth_gbps", "get_bw block, full grid, largest size", "GB/s"),
    ("p_ping_pong", "shoal", "thread", 4, "latency_us", "p ping-pong half round trip", "us"),
    ("atomic_latency", "shoal", "thread", 8, "latency_us", "uint64 atomic_fetch_add", "us"),
)


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def read_rows(paths):
    rows, fields = [], []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            for name in reader.fieldnames or []:
                if name not in fields:
                    fields.append(name)
            for r in reader:
                r.setdefault("pair", "")
                rows.append(r)
    return rows, fields


def num(r, key):
    try:
        return float(r.get(key) or 0)
    except ValueError:
        return 0.0


def full_grid(rows, bench, impl):
    """The block scope with the most CTAs among the rows of (bench, impl): the full-grid label."""
    labels = {r["scope"] for r in rows if r["benchmark"] == bench and r["impl"] == impl and r["scope"].startswith("block/")}
    return max(labels, key=lambda s: int(s.split("/")[1].split("x")[0]), default=None)


def pair_table(rows, pes):
    out = []
    for bench, impl, scope, size, field, label, unit in PAIR_SETS:
        sel = [r for r in rows if int(r["num_pes"]) == pes and r["benchmark"] == bench and r["impl"] == impl and r["pair"]]
        if scope == "block/":
            grid = full_grid(sel, bench, impl)
            sel = [r for r in sel if r["scope"] == grid]
            scope = grid
        else:
            sel = [r for r in sel if r["scope"] == scope]
        if not sel:
            continue
        if size is None:
            size = max(int(r["size_bytes"]) for r in sel)
        sel = [r for r in sel if int(r["size_bytes"]) == size]
        if not sel:
            continue
        vals = sorted((num(r, field), r["pair"]) for r in sel)
        worst = vals[0] if field == "bandwidth_gbps" else vals[-1]
        out.append(
            f"| {pes} | {label} ({scope}, {human(size)}) | {len(vals)} | {vals[0][0]:.3f} | "
            f"{statistics.median(v for v, _ in vals):.3f} | {vals[-1][0]:.3f} | {unit} | {worst[1]} |"
        )
    return out


def coll_table(rows, pes):
    out = []
    for coll in COLLECTIVES:
        for size in COLL_SIZES:
            for scope in ("stream", "graph"):
                mine = [r for r in rows if int(r["num_pes"]) == pes and r["benchmark"] == coll and r["impl"] == "shoal"
                        and r["scope"] == scope and int(r["size_bytes"]) == size]
                nccl = [r for r in rows if int(r["num_pes"]) == pes and r["benchmark"] == coll and r["impl"] == "nccl"
                        and r["scope"] == scope and int(r["size_bytes"]) == size]
                if not mine:
                    continue
                m = mine[0]
                n = nccl[0] if nccl else None
                lat = f"{num(m, 'latency_us'):.2f}" + (f" vs {num(n, 'latency_us'):.2f}" if n else "")
                bus = f"{num(m, 'busbw_gbps'):.1f}" + (f" vs {num(n, 'busbw_gbps'):.1f}" if n else "")
                if n and size < (1 << 20):
                    ratio = f"{num(m, 'latency_us') / num(n, 'latency_us'):.2f} (time)" if num(n, "latency_us") else "-"
                elif n:
                    ratio = f"{num(m, 'busbw_gbps') / num(n, 'busbw_gbps'):.2f} (busBW)" if num(n, "busbw_gbps") else "-"
                else:
                    ratio = "-"
                out.append(f"| {pes} | {coll} | {scope} | {human(size)} | {lat} | {bus} | {ratio} |")
    return out


def barrier_lines(rows, pes):
    out = []
    for r in rows:
        if int(r["num_pes"]) != pes or r["impl"] != "shoal":
            continue
        if r["benchmark"] == "barrier_latency":
            out.append(f"| {pes} | device barrier_all ({r['scope']}) | {num(r, 'latency_us'):.3f} |")
        elif r["benchmark"] == "barrier" and r["scope"] in ("stream", "graph"):
            out.append(f"| {pes} | barrier on a stream ({r['scope']}) | {num(r, 'latency_us'):.3f} |")
    return out


def write_markdown(rows, path):
    counts = sorted({int(r["num_pes"]) for r in rows})
    lines = ["# shoal-bench across PE counts", "", f"PE counts: {', '.join(map(str, counts))}.", ""]
    lines += ["## Between pairs of PEs (one pair at a time; the other PEs idle)", "",
              "| PEs | figure | pairs | min | median | max | unit | worst pair |",
              "|---|---|---|---|---|---|---|---|"]
    for pes in counts:
        lines += pair_table(rows, pes)
    lines += ["", "## Barriers (every PE)", "", "| PEs | figure | us |", "|---|---|---|"]
    for pes in counts:
        lines += barrier_lines(rows, pes)
    lines += ["", "## Collectives, shoal vs NCCL (same run)", "",
              "Latency in us and busBW in GB/s, shoal vs NCCL; the ratio is shoal/NCCL time below 1 MiB and "
              "shoal/NCCL busBW from 1 MiB.", "",
              "| PEs | collective | scope | size | latency us | busBW GB/s | ratio |", "|---|---|---|---|---|---|---|"]
    for pes in counts:
        lines += coll_table(rows, pes)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(rows, out_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("scale.py: matplotlib is missing: no plots", file=sys.stderr)
        return
    counts = sorted({int(r["num_pes"]) for r in rows})
    for coll in COLLECTIVES:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        drawn = False
        for pes in counts:
            for impl, style in (("shoal", "-"), ("nccl", "--")):
                pts = sorted((int(r["size_bytes"]), num(r, "busbw_gbps")) for r in rows
                             if int(r["num_pes"]) == pes and r["benchmark"] == coll and r["impl"] == impl
                             and r["scope"] == "stream")
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker=".", label=f"{impl} {pes} PEs")
                    drawn = True
        if drawn:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("bytes per PE")
            ax.set_ylabel("busBW (GB/s)")
            ax.set_title(f"{coll} on a stream")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(os.path.join(out_dir, f"scale_{coll}.png"), dpi=110)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = False
    for pes in counts:
        sel = [r for r in rows if int(r["num_pes"]) == pes and r["benchmark"] == "put_bw" and r["impl"] == "shoal"
               and r["pair"]]
        grid = full_grid(sel, "put_bw", "shoal")
        by_size = {}
        for r in sel:
            if r["scope"] == grid:
                by_size.setdefault(int(r["size_bytes"]), []).append(num(r, "bandwidth_gbps"))
        if by_size:
            xs = sorted(by_size)
            ax.plot(xs, [statistics.median(by_size[x]) for x in xs], "-", marker=".", label=f"{pes} PEs (median)")
            ax.fill_between(xs, [min(by_size[x]) for x in xs], [max(by_size[x]) for x in xs], alpha=0.2)
            drawn = True
    if drawn:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("GB/s")
        ax.set_title("put_bw, block scope, full grid: median and range over pairs")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "scale_put_bw.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    rows, fields = read_rows(args.csv)
    if not rows:
        print("scale.py: no rows in " + " ".join(args.csv), file=sys.stderr)
        return 1
    if "pair" not in fields:
        fields.append("pair")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scale.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    write_markdown(rows, os.path.join(args.out, "scale.md"))
    plot(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
