#!/usr/bin/env python3
"""Merges DeepEP V1's tuning figures (tests/deepep/run_deepep_tests.py --impl deepep --csv) with shoal.ep's
(bench/ep/bench_normal.py --csv) from one call into one table: per rank count, SM count and op, each side's best
time over its chunk sweep in every round (range over rounds), shoal's time over DeepEP's (from each side's mean
over rounds), and shoal's time over its raw-copy bound (same bytes, same SMs, no protocol).

    compare_deepep.py DEEPEP_CSV SHOAL_CSV -o OUT_DIR     writes OUT_DIR/ep_vs_deepep.{md,csv,png}
"""
import argparse
import collections
import csv
import pathlib
import statistics
import sys

OPS = [("dispatch", "bf16"), ("dispatch", "fp8"), ("combine", "bf16")]


def load(path: pathlib.Path) -> list:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("deepep_csv", type=pathlib.Path)
    p.add_argument("shoal_csv", type=pathlib.Path)
    p.add_argument("-o", "--out", type=pathlib.Path, required=True)
    args = p.parse_args()
    times = collections.defaultdict(list)  # (side, ranks, sms, op, dtype) -> [us per round]
    chunks = collections.defaultdict(set)
    commits = set()
    for r in load(args.deepep_csv):
        if r["impl"] != "deepep" or r["op"] not in ("dispatch", "combine"):
            continue
        key = ("deepep", int(r["num_ranks"]), int(r["num_sms"]), r["op"], r["dtype"])
        times[key].append(float(r["time_us"]))
        chunks[key].add(r["chunk"])
    for r in load(args.shoal_csv):
        key = ("shoal", int(r["num_ranks"]), int(r["num_sms"]), r["op"], r["dtype"])
        times[key].append(float(r["time_us"]))
        chunks[key].add(r["chunk"])
        commits.add(r.get("commit", ""))
    configs = sorted({(k[1], k[2]) for k in times})
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for ranks, sms in configs:
        for op, dtype in OPS:
            d, s = times.get(("deepep", ranks, sms, op, dtype)), times.get(("shoal", ranks, sms, op, dtype))
            b = times.get(("shoal", ranks, sms, op + "_bound", dtype))
            if not d and not s:
                continue
            dm = statistics.mean(d) if d else None
            sm = statistics.mean(s) if s else None
            bm = statistics.mean(b) if b else None
            rows.append(dict(num_ranks=ranks, num_sms=sms, op=op, dtype=dtype,
                             deepep_us_min=min(d) if d else "", deepep_us_max=max(d) if d else "",
                             deepep_chunks=" ".join(sorted(chunks[("deepep", ranks, sms, op, dtype)], key=int)),
                             shoal_us_min=min(s) if s else "", shoal_us_max=max(s) if s else "",
                             shoal_chunks=" ".join(sorted(chunks[("shoal", ranks, sms, op, dtype)], key=int)),
                             bound_us=round(bm, 2) if bm else "",
                             shoal_over_deepep=round(sm / dm, 3) if dm and sm else "",
                             shoal_over_bound=round(sm / bm, 3) if bm and sm else "",
                             rounds=f"{len(d or [])}/{len(s or [])}"))
    fields = list(rows[0].keys()) if rows else []
    with open(args.out / "ep_vs_deepep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    lines = [f"shoal commit(s): {', '.join(sorted(c for c in commits if c)) or 'unknown'}", "",
             "| ranks | SMs | op | DeepEP µs (best chunk, per round) | shoal.ep µs | shoal / DeepEP | raw-copy bound µs |"
             " shoal / bound |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def rng(lo, hi):
            return "" if lo == "" else (f"{lo:.0f}" if abs(hi - lo) < 0.5 else f"{lo:.0f}–{hi:.0f}")
        lines.append(f"| {r['num_ranks']} | {r['num_sms']} | {r['op']} {r['dtype'].upper()} | "
                     f"{rng(r['deepep_us_min'], r['deepep_us_max'])} | {rng(r['shoal_us_min'], r['shoal_us_max'])} | "
                     f"{r['shoal_over_deepep']} | {r['bound_us']} | {r['shoal_over_bound']} |")
    (args.out / "ep_vs_deepep.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare_deepep: matplotlib missing, no plot", file=sys.stderr)
        return 0
    labels = [f"{r['num_ranks']}R {r['num_sms']}SM\n{r['op']} {r['dtype']}" for r in rows]
    xs = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    width = 0.27
    for i, (name, key) in enumerate((("DeepEP V1", "deepep_us_min"), ("shoal.ep", "shoal_us_min"),
                                     ("raw-copy bound", "bound_us"))):
        ax.bar([x + (i - 1) * width for x in xs], [float(r[key] or 0) for r in rows], width, label=name)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("µs (lower is better)")
    ax.set_title("MoE normal mode, 4096 tokens x 7168, top-8 of 256 experts (best chunk)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "ep_vs_deepep.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
