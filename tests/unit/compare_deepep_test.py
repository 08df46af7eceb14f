#!/usr/bin/env python3
"""bench/ep/compare_deepep.py on synthetic CSVs (no GPU): DeepEP's rows beside shoal's of one commit (one row per
rank count, SM count and op; the ratio from each side's mean over rounds, the bound's ratio) and beside shoal's of
several switch configs (bench_normal.py --configs: a row per config, how many rows of each meet the target, the
fastest config per row).

Usage: compare_deepep_test.py SOURCE_DIR"""
import csv
import pathlib
import subprocess
import sys
import tempfile

OPS = (("dispatch", "bf16"), ("dispatch", "fp8"), ("combine", "bf16"))


def write_csv(path: pathlib.Path, fields: list, rows: list) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def main() -> int:
    tool = pathlib.Path(sys.argv[1]) / "bench/ep/compare_deepep.py"
    failures = []

    def check(cond: bool, what: str) -> None:
        print(("ok: " if cond else "FAIL: ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        # DeepEP: two rounds, 100 and 110 us (mean 105) everywhere; a low-latency row that must be left out.
        deepep = [dict(impl="deepep", op=op, dtype=dt, num_ranks=2, num_sms=24, chunk=c, time_us=t)
                  for op, dt in OPS for c, t in ((8, 100), (10, 110))]
        deepep.append(dict(impl="deepep", op="ll_dispatch", dtype="bf16", num_ranks=2, num_sms=24, chunk=0, time_us=1))
        write_csv(tmp / "deepep.csv", ["impl", "op", "dtype", "num_ranks", "num_sms", "chunk", "time_us"], deepep)
        fields = ["op", "dtype", "num_ranks", "num_sms", "chunk", "time_us", "commit"]

        # One commit: 84 us for every op (0.8x), bound 70 us (1.2x).
        write_csv(tmp / "one.csv", fields,
                  [dict(op=op + sfx, dtype=dt, num_ranks=2, num_sms=24, chunk=6, time_us=t, commit="abc1234")
                   for op, dt in OPS for sfx, t in (("", 84), ("_bound", 70))])
        r = subprocess.run([sys.executable, tool, tmp / "deepep.csv", tmp / "one.csv", "-o", tmp / "o1"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"one commit: exit 0 (got {r.returncode}: {r.stderr.strip()[-300:]})")
        rows = list(csv.DictReader(open(tmp / "o1/ep_vs_deepep.csv"))) if r.returncode == 0 else []
        check(len(rows) == 3 and "config" not in rows[0], "one commit: a row per op, no config column")
        check(all(x["shoal_over_deepep"] == "0.8" and x["shoal_over_bound"] == "1.2" and x["rounds"] == "2/1"
                  for x in rows), "one commit: ratios from the means (84/105, 84/70), rounds counted")
        md = (tmp / "o1/ep_vs_deepep.md").read_text() if rows else ""
        check("shoal commit(s): abc1234" in md and "| 2 | 24 | dispatch FP8 | 100–110 | 84 | 0.8 | 70.0 | 1.2 |" in md,
              "one commit: the table names the commit, DeepEP's range over its rounds")

        # Two configs in two rounds: "off" 105 us everywhere (1.0x); "on" faster for dispatch (84: 0.8x), slower
        # for combine (126: 1.2x).
        two = []
        for rnd in range(2):
            for label in ("off", "on"):
                for op, dt in OPS:
                    t = 105 if label == "off" else (84 if op == "dispatch" else 126)
                    two += [dict(op=op, dtype=dt, num_ranks=2, num_sms=24, chunk=6, time_us=t + rnd, commit=label),
                            dict(op=op + "_bound", dtype=dt, num_ranks=2, num_sms=24, chunk=6, time_us=70,
                                 commit=label)]
        write_csv(tmp / "two.csv", fields, two)
        r = subprocess.run([sys.executable, tool, tmp / "deepep.csv", tmp / "two.csv", "-o", tmp / "o2"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"configs: exit 0 (got {r.returncode}: {r.stderr.strip()[-300:]})")
        rows = list(csv.DictReader(open(tmp / "o2/ep_vs_deepep.csv"))) if r.returncode == 0 else []
        got = {(x["op"], x["dtype"], x["config"]): x["shoal_over_deepep"] for x in rows}
        check(got == {("dispatch", "bf16", "off"): "1.005", ("dispatch", "bf16", "on"): "0.805",
                      ("dispatch", "fp8", "off"): "1.005", ("dispatch", "fp8", "on"): "0.805",
                      ("combine", "bf16", "off"): "1.005", ("combine", "bf16", "on"): "1.205"},
              f"configs: a row per op and config, each from its own rounds (got {got})")
        md = (tmp / "o2/ep_vs_deepep.md").read_text() if rows else ""
        check("shoal config(s): off, on" in md and "| 2 | 24 | dispatch BF16 | on | 100–110 | 84–85 | 0.805 |" in md,
              "configs: the table names the configs and has a config column")
        check("| off | 0 | 3 |" in md and "| on | 2 | 3 |" in md, "configs: rows meeting 0.9x DeepEP counted per config")
        check("| 2 | 24 | dispatch FP8 | on | 0.805 |" in md and "| 2 | 24 | combine BF16 | off | 1.005 |" in md,
              "configs: the fastest config of each row")
        r = subprocess.run([sys.executable, tool, tmp / "deepep.csv", tmp / "two.csv", "-o", tmp / "o3",
                            "--target", "1.01"], capture_output=True, text=True)
        md = (tmp / "o3/ep_vs_deepep.md").read_text() if r.returncode == 0 else ""
        check("| off | 3 | 3 |" in md and "rows at most 1.01x DeepEP" in md, "--target sets the ratio counted")
    print(f"{len(failures)} check(s) failed" if failures else "all compare_deepep checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
