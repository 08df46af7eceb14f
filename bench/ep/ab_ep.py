#!/usr/bin/env python3
"""The EP rows of scripts/gpu.sh ab --ab-ep: bench/ep/bench_normal.py's CSV with commit "base" and "new" rows (rounds
alternated), as one table: per op, dtype, rank and SM count, each side's best-chunk time over its rounds (range)
and new/base from each side's mean. A ratio above 1 is a slowdown.

    ab_ep.py EP_AB_CSV [--markdown OUT.md]
"""
import argparse
import collections
import csv
import statistics
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--markdown")
    args = p.parse_args()
    times = collections.defaultdict(list)
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            times[(r["op"], r["dtype"], int(r["num_ranks"]), int(r["num_sms"]), r["commit"])].append(float(r["time_us"]))
    keys = sorted({k[:4] for k in times})
    lines = ["| op | ranks | SMs | base µs | new µs | new / base |", "|---|---|---|---|---|---|"]
    for op, dtype, ranks, sms in keys:
        b, n = times.get((op, dtype, ranks, sms, "base")), times.get((op, dtype, ranks, sms, "new"))
        if not b or not n:
            continue
        lines.append(f"| {op} {dtype.upper()} | {ranks} | {sms} | {min(b):.0f}–{max(b):.0f} | {min(n):.0f}–{max(n):.0f} | "
                     f"{statistics.mean(n) / statistics.mean(b):.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
