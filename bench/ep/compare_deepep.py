#!/usr/bin/env python3
"""Merges DeepEP V1's tuning figures (tests/deepep/run_deepep_tests.py --impl deepep --csv) with shoal.ep's
(bench/ep/bench_normal.py --csv) from one call into one table: per rank count, SM count and op, each side's best
time over its chunk sweep in every round (range over rounds), shoal's time over DeepEP's (from each side's mean
over rounds), and shoal's time over its raw-copy bound (same bytes, same SMs, no protocol).

    compare_deepep.py DEEPEP_CSV SHOAL_CSV -o OUT_DIR     writes OUT_DIR/ep_vs_deepep.{md,csv,png}

When shoal's rows carry several labels in their commit column (bench_normal.py --configs: the switches' configs,
each measured beside the same DeepEP runs), every label gets its own row (column "config", in the order the labels
first appear) and the table ends with, per label, how many rows meet TARGET x DeepEP's time (0.9) and, per row,
the fastest label.
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
    p.add_argument("--target", type=float, default=0.9, help="the shoal / DeepEP ratio a row must meet")
    args = p.parse_args()
    times = collections.defaultdict(list)  # (side, ranks, sms, op, dtype) -> [us per round]; side "shoal:LABEL"
    chunks = collections.defaultdict(set)
    labels = []  # shoal's commit column, in order of first appearance
    for r in load(args.deepep_csv):
        if r["impl"] != "deepep" or r["op"] not in ("dispatch", "combine"):
            continue
        key = ("deepep", int(r["num_ranks"]), int(r["num_sms"]), r["op"], r["dtype"])
        times[key].append(float(r["time_us"]))
        chunks[key].add(r["chunk"])
    for r in load(args.shoal_csv):
        label = r.get("commit", "")
        if label not in labels:
            labels.append(label)
        key = ("shoal:" + label, int(r["num_ranks"]), int(r["num_sms"]), r["op"], r["dtype"])
        times[key].append(float(r["time_us"]))
        chunks[key].add(r["chunk"])
    by_label = len(labels) > 1
    configs = sorted({(k[1], k[2]) for k in times})
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for ranks, sms in configs:
        for op, dtype in OPS:
            d = times.get(("deepep", ranks, sms, op, dtype))
            for label in labels or [""]:
                side = "shoal:" + label
                s, b = times.get((side, ranks, sms, op, dtype)), times.get((side, ranks, sms, op + "_bound", dtype))
                if not d and not s:
                    continue
                dm = statistics.mean(d) if d else None
                sm = statistics.mean(s) if s else None
                bm = statistics.mean(b) if b else None
                rows.append(dict(num_ranks=ranks, num_sms=sms, op=op, dtype=dtype,
                                 **({"config": label} if by_label else {}),
                                 deepep_us_min=min(d) if d else "", deepep_us_max=max(d) if d else "",
                                 deepep_chunks=" ".join(sorted(chunks[("deepep", ranks, sms, op, dtype)], key=int)),
                                 shoal_us_min=min(s) if s else "", shoal_us_max=max(s) if s else "",
                                 shoal_chunks=" ".join(sorted(chunks[(side, ranks, sms, op, dtype)], key=int)),
                                 bound_us=round(bm, 2) if bm else "",
                                 shoal_over_deepep=round(sm / dm, 3) if dm and sm else "",
                                 shoal_over_bound=round(sm / bm, 3) if bm and sm else "",
                                 rounds=f"{len(d or [])}/{len(s or [])}"))
    fields = list(rows[0].keys()) if rows else []
    with open(args.out / "ep_vs_deepep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    config_col = " config |" if by_label else ""
    lines = [f"shoal {'config(s)' if by_label else 'commit(s)'}: {', '.join(c for c in labels if c) or 'unknown'}",
             "", f"| ranks | SMs | op |{config_col} DeepEP µs (best chunk, per round) | shoal.ep µs | shoal / DeepEP |"
             " raw-copy bound µs | shoal / bound |", "|---|---|---|" + ("---|" if by_label else "") + "---|---|---|---|---|"]
    for r in rows:
        def rng(lo, hi):
            return "" if lo == "" else (f"{lo:.0f}" if abs(hi - lo) < 0.5 else f"{lo:.0f}–{hi:.0f}")
        lines.append(f"| {r['num_ranks']} | {r['num_sms']} | {r['op']} {r['dtype'].upper()} | "
                     + (f"{r['config']} | " if by_label else "") +
                     f"{rng(r['deepep_us_min'], r['deepep_us_max'])} | {rng(r['shoal_us_min'], r['shoal_us_max'])} | "
                     f"{r['shoal_over_deepep']} | {r['bound_us']} | {r['shoal_over_bound']} |")
    if by_label:
        lines += ["", f"| config | rows at most {args.target}x DeepEP | of |", "|---|---|---|"]
        for label in labels:
            mine = [r for r in rows if r["config"] == label and r["shoal_over_deepep"] != ""]
            lines.append(f"| {label} | {sum(r['shoal_over_deepep'] <= args.target for r in mine)} | {len(mine)} |")
        lines += ["", "| ranks | SMs | op | fastest config | shoal / DeepEP |", "|---|---|---|---|---|"]
        for ranks, sms in configs:
            for op, dtype in OPS:
                mine = [r for r in rows if (r["num_ranks"], r["num_sms"], r["op"], r["dtype"]) == (ranks, sms, op, dtype)
                        and r["shoal_over_deepep"] != ""]
                if mine:
                    best = min(mine, key=lambda r: r["shoal_over_deepep"])
                    lines.append(f"| {ranks} | {sms} | {op} {dtype.upper()} | {best['config']} | "
                                 f"{best['shoal_over_deepep']} |")
    (args.out / "ep_vs_deepep.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare_deepep: matplotlib missing, no plot", file=sys.stderr)
        return 0
    # One group per rank count, SM count and op: DeepEP, shoal (each config), the bound (the first config's).
    groups = []
    for r in rows:
        g = (r["num_ranks"], r["num_sms"], r["op"], r["dtype"])
        if not groups or groups[-1][0] != g:
            groups.append((g, {}))
        groups[-1][1][r.get("config", "")] = r
    names = [("DeepEP V1", lambda rs: rs[next(iter(rs))]["deepep_us_min"])]
    names += [(f"shoal.ep {label}".strip(), lambda rs, label=label: rs.get(label, {}).get("shoal_us_min", ""))
              for label in (labels if by_label else [""])]
    names += [("raw-copy bound", lambda rs: rs[next(iter(rs))]["bound_us"])]
    xs = range(len(groups))
    fig, ax = plt.subplots(figsize=(max(8, len(groups) * 0.9 * max(1, len(names) / 3)), 4.5))
    width = 0.8 / len(names)
    for i, (name, value) in enumerate(names):
        ax.bar([x + (i - (len(names) - 1) / 2) * width for x in xs], [float(value(rs) or 0) for _, rs in groups],
               width, label=name)
    labels = [f"{g[0]}R {g[1]}SM\n{g[2]} {g[3]}" for g, _ in groups]
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
