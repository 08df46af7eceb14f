#!/usr/bin/env python3
"""The EP rows of scripts/gpu.sh ab --ab-ep and ep-ab: bench/ep/bench_normal.py's CSV whose commit column labels the
side ("base" and "new", or ep-ab's configs; rounds alternated), as one table: per op, dtype, rank and SM count, each
side's best-chunk time over its rounds (range) and side/base from each side's mean. A ratio above 1 is a slowdown.

    ab_ep.py EP_AB_CSV [--base LABEL] [--markdown OUT.md]     (--base: "base"; every other label beside it)
"""
import argparse
import collections
import csv
import statistics
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--base", default="base", help="the label the others are compared with")
    p.add_argument("--markdown")
    args = p.parse_args()
    times = collections.defaultdict(list)
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            times[(r["op"], r["dtype"], int(r["num_ranks"]), int(r["num_sms"]), r["commit"])].append(float(r["time_us"]))
    labels = sorted({k[4] for k in times if k[4] != args.base})
    if not any(k[4] == args.base for k in times):
        print(f"ab_ep.py: no rows labelled {args.base!r} in {args.csv}", file=sys.stderr)
        return 1
    keys = sorted({k[:4] for k in times})
    lines = ["| op | ranks | SMs | label | µs | base µs | label / base |", "|---|---|---|---|---|---|---|"]
    for op, dtype, ranks, sms in keys:
        b = times.get((op, dtype, ranks, sms, args.base))
        for label in labels:
            n = times.get((op, dtype, ranks, sms, label))
            if not b or not n:
                continue
            lines.append(f"| {op} {dtype.upper()} | {ranks} | {sms} | {label} | {min(n):.0f}–{max(n):.0f} | "
                         f"{min(b):.0f}–{max(b):.0f} | {statistics.mean(n) / statistics.mean(b):.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
