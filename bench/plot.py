#!/usr/bin/env python3
"""Draws shoal-bench CSV files as bandwidth- and latency-vs-size curves (PNG).

usage: plot.py results.csv [more.csv ...] -o out_dir
One PNG per benchmark: bandwidth (GB/s) for *_bw rows, latency (us) otherwise, one curve per
(impl, scope, PEs).
"""
import argparse
import collections
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("-o", "--out", default=".", help="output folder")
    args = ap.parse_args()
    curves = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in args.csv:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = f'{r["impl"]} {r["scope"]} {r["num_pes"]}PE'
                curves[r["benchmark"]][key].append(
                    (int(r["size_bytes"]), float(r["bandwidth_gbps"]), float(r["latency_us"])))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for bench, series in curves.items():
        use_bw = bench.endswith("_bw") or "bw" in bench
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, pts in sorted(series.items()):
            pts.sort()
            xs = [p[0] for p in pts]
            ys = [p[1] if use_bw else p[2] for p in pts]
            ax.plot(xs, ys, marker="o", ms=3, label=label)
        ax.set_xscale("log", base=2)
        if not use_bw:
            ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bandwidth (GB/s)" if use_bw else "latency (us)")
        ax.set_title(bench)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"{bench}.png", dpi=120)
        plt.close(fig)
        print(f"wrote {out / (bench + '.png')}")


if __name__ == "__main__":
    main()
