#!/usr/bin/env python3
"""Merges the runs of scripts/nvshmem_perftests.sh into one table per program and size.

Usage: nvshmem_perftests_table.py OUT PERFTEST_DIR

Reads OUT/build.csv (impl, program, ok|compile|link|utils), OUT/runs.csv (impl, program, line, args, exit status) and
every run's log under OUT/logs/<impl>/ (NVSHMEM_MACHINE_READABLE_OUTPUT=1 lines:
"&&&& PERF <job>___<subjob>___size__<bytes>___<metric> <value> <+|-><units>"), and writes OUT/results.csv (one row
per figure) and OUT/summary.md: per program, whether each impl built it and ran each args line to the end, and why
not (the first error line of its build or run log); then, per program, args line, subjob and size, shoal's figure
beside NVSHMEM's and their ratio, oriented so that above 1 means shoal is better (latency: NVSHMEM / shoal;
bandwidth: shoal / NVSHMEM).
"""
import csv
import pathlib
import re
import sys

PERF = re.compile(r"&&&& PERF (\S+?)___(\S+?)___size__(\d+)___(\S+) ([-+0-9.eE]+) ([+-])(\S+)")
ERROR_HINTS = re.compile(r"error|failed|fatal|abort|trap|timed out|cannot|unavailable|too many resources", re.I)


def first_error(path: pathlib.Path) -> str:
    if not path.is_file():
        return "no log"
    for line in path.read_text(errors="replace").splitlines():
        if ERROR_HINTS.search(line):
            return line.strip()[:200]
    return "no error line in the log"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    out, pt = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    builds = {}
    if (out / "build.csv").is_file():
        for row in csv.reader((out / "build.csv").open()):
            if len(row) == 3:
                builds[(row[0], row[1])] = row[2]
    runs = []
    if (out / "runs.csv").is_file():
        runs = [r for r in csv.reader((out / "runs.csv").open()) if len(r) == 5]
    figures = []  # impl, program, line, args, job, subjob, size, metric, value, higher_is_better, units
    for impl, prog, line, args, _ in runs:
        log = out / "logs" / impl / f"{prog.rsplit('.', 1)[0].replace('/', '_')}.{line}.log"
        if not log.is_file():
            continue
        for text in log.read_text(errors="replace").splitlines():
            m = PERF.search(text)  # shoalrun prefixes "[PE] ", mpirun nothing
            if m:
                job, subjob, size, metric, value, sign, units = m.groups()
                figures.append([impl, prog, line, args, job, subjob, int(size), metric, float(value), sign == "+",
                                units])
    with (out / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["impl", "program", "line", "args", "job", "subjob", "size", "metric", "value", "higher_is_better",
                    "units"])
        w.writerows(figures)

    programs = sorted({p for _, p in builds} | {r[1] for r in runs})
    impls = [i for i in ("shoal", "nvshmem") if any(k[0] == i for k in builds)]
    md = ["# NVSHMEM perftests on shoal and on NVSHMEM", "",
          "Built unchanged from NVSHMEM's `perftest/`; each program run once per line of its `.args`. "
          "`ok` = every run exited 0; otherwise the first failing run and the first error line of its log.", "",
          "| program | " + " | ".join(impls) + " |", "|---|" + "---|" * len(impls)]
    for prog in programs:
        cells = []
        for impl in impls:
            b = builds.get((impl, prog))
            if b is None:
                cells.append("not built")
                continue
            if b != "ok":
                name = prog.rsplit(".", 1)[0]
                cells.append(f"does not {'compile' if b != 'link' else 'link'}: "
                             f"{first_error(out / 'build' / impl / (name + '.log'))}")
                continue
            mine = [r for r in runs if r[0] == impl and r[1] == prog]
            if not mine:
                cells.append("built, not run")
                continue
            bad = [r for r in mine if r[4] != "0"]
            if not bad:
                cells.append(f"ok ({len(mine)} run{'s' if len(mine) > 1 else ''})")
            else:
                r = bad[0]
                log = out / "logs" / impl / f"{prog.rsplit('.', 1)[0].replace('/', '_')}.{r[2]}.log"
                cells.append(f"exit {r[4]} [{r[3]}]: {first_error(log)}")
        md.append(f"| `{prog}` | " + " | ".join(c.replace("|", "/") for c in cells) + " |")

    # Shoal beside NVSHMEM, per program, args line, subjob, metric and size.
    index = {}
    for impl, prog, line, args, job, subjob, size, metric, value, hib, units in figures:
        index.setdefault((prog, line, args, job, subjob, metric, units, hib), {}).setdefault(size, {})[impl] = value
    md += ["", "## Figures", "",
           "Ratio above 1: shoal better (latency NVSHMEM / shoal, bandwidth shoal / NVSHMEM).", ""]
    for (prog, line, args, job, subjob, metric, units, hib), sizes in sorted(index.items()):
        md += [f"### `{prog}` [{args}] {subjob} {metric} ({units})", "", "| size (B) | shoal | NVSHMEM | ratio |",
               "|---|---|---|---|"]
        for size in sorted(sizes):
            v = sizes[size]
            s, n = v.get("shoal"), v.get("nvshmem")
            ratio = ""
            if s and n:
                ratio = f"{(s / n) if hib else (n / s):.2f}"
            md.append(f"| {size} | {'' if s is None else f'{s:.3f}'} | {'' if n is None else f'{n:.3f}'} | {ratio} |")
        md.append("")
    (out / "summary.md").write_text("\n".join(md) + "\n")
    print(f"{len(figures)} figures from {len(runs)} runs of {len(programs)} programs -> {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
