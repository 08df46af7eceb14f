#!/usr/bin/env python3
"""Before/after table of two shoal-bench runs of the same set (scripts/gpu.sh ab).

Rows are matched on (benchmark, impl, scope, size_bytes, pair). Each side gives one or more runs
(`--base A.csv,B.csv --base C.csv,D.csv`: one --base per run, each a comma-separated list of CSVs):
the side's figure per row is the median over its runs, and its spread ((max-min)/median) is the
run-to-run noise that a before/after difference must exceed to mean anything. Prints one line per
benchmark, implementation and scope (median, min and max of new/base latency over its sizes, and the
largest spread seen on either side), then the detailed rows, as text or Markdown.
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def load(paths):
    rows = {}
    for path in paths or []:
        try:
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    key = (r["benchmark"], r["impl"], r["scope"], int(r["size_bytes"]), r.get("pair", ""))
                    rows[key] = float(r["latency_us"])
        except FileNotFoundError:
            print(f"ab_compare: {path} is missing; its rows are left out", file=sys.stderr)
    return rows


def combine(runs):
    """The side's figure per row (median of its runs) and its spread between runs (None with one run)."""
    out = {}
    for key in runs[0]:
        values = [run[key] for run in runs if key in run]
        med = statistics.median(values)
        spread = (max(values) - min(values)) / med if len(values) > 1 and med > 0 else None
        out[key] = (med, spread)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", action="append", required=True, help="one run of the earlier tree: CSV[,CSV...]")
    ap.add_argument("--new", action="append", required=True, help="one run of this tree: CSV[,CSV...]")
    ap.add_argument("--markdown", help="also write the tables as Markdown here")
    args = ap.parse_args()
    base = combine([load(run.split(",")) for run in args.base])
    new = combine([load(run.split(",")) for run in args.new])
    keys = sorted(k for k in base if k in new and base[k][0] > 0)
    if not keys:
        print("ab_compare: no row is in both runs", file=sys.stderr)
        return 1
    groups = defaultdict(list)
    for k in keys:
        groups[(k[0], k[1], k[2])].append(k)
    summary = ["| benchmark | impl | scope | sizes | new/base median | min | max | largest run-to-run spread |",
               "|---|---|---|---|---|---|---|---|"]
    for g, ks in sorted(groups.items()):
        ratios = [new[k][0] / base[k][0] for k in ks]
        spreads = [s for k in ks for s in (base[k][1], new[k][1]) if s is not None]
        spread = f"{max(spreads):.1%}" if spreads else "-"
        summary.append(f"| {g[0]} | {g[1]} | {g[2]} | {len(ks)} | {statistics.median(ratios):.3f} | "
                       f"{min(ratios):.3f} | {max(ratios):.3f} | {spread} |")
    detail = ["| benchmark | impl | scope | bytes | base us | new us | new/base | base spread | new spread |",
              "|---|---|---|---|---|---|---|---|---|"]
    for k in keys:
        (b, bs), (n, ns) = base[k], new[k]
        fmt = lambda s: "-" if s is None else f"{s:.1%}"
        detail.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {b:.3f} | {n:.3f} | {n / b:.3f} | {fmt(bs)} | {fmt(ns)} |")
    all_ratios = [new[k][0] / base[k][0] for k in keys]
    head = (f"{len(keys)} rows in both runs; new/base latency: median {statistics.median(all_ratios):.3f}, "
            f"min {min(all_ratios):.3f}, max {max(all_ratios):.3f}")
    text = "\n".join([head, "", *summary, "", *detail]) + "\n"
    print("\n".join([head, "", *summary]), flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
