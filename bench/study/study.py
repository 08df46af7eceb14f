#!/usr/bin/env python3
"""The study: where device-initiated issue wins, measured, modelled and written up by one command.

    scripts/study.sh [options]          (starts a private MPS daemon when PEs share a GPU, then runs this)
    bench/study/study.py [options]

Runs the plan (bench/study/plan.py: shoal-bench under shoalrun, one step per path and PE count, each path forced
through the variables shoal reads), merges the rows into OUT/study.csv with each step's variant, and writes the
report (bench/study/report.py): OUT/README.md (tables, crossovers, models, the default-against-best check, findings),
OUT/*.csv, OUT/*.png, and OUT/defaults.json (the crossovers shoal's defaults take, with machine and commit) when the
run measured the collective variants. --write-defaults then regenerates src/common/tuning_gen.hpp from it
(codegen/gen_tuning.py), the one table of shoal's measured defaults.

On a machine without a GPU it runs the host set on host-memory PEs: the same pipeline, the CPU test's subject.
"""
import argparse
import csv
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import plan as plan_mod  # noqa: E402
import report as report_mod  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def gpu_count():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    r = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return sum(1 for line in r.stdout.splitlines() if line.startswith("GPU ")) if r.returncode == 0 else 0


def machine():
    """One line naming the machine: GPU model and count, or the CPU model and core count."""
    smi = shutil.which("nvidia-smi")
    if smi:
        r = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
        names = [n.strip() for n in r.stdout.splitlines() if n.strip()]
        if r.returncode == 0 and names:
            return f"{len(names)}x {names[0]}"
    model = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"CPU only: {model}, {os.cpu_count()} cores"


def commit():
    r = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def find_program(build, rel, required=True):
    """The program `rel` of the build folder; a missing one stops the study when required (a dry run only lists)."""
    p = pathlib.Path(build) / rel
    if required and not p.is_file():
        sys.exit(f"study: {p} not found (build shoal first, or pass --build)")
    return p


def run_steps(steps, a, raw):
    shoalrun = find_program(a.build, "tools/shoalrun/shoalrun", not a.dry_run)
    bench = find_program(a.build, "bench/shoal-bench", not a.dry_run)
    done_file = raw / "done.txt"
    done = set(done_file.read_text().split()) if a.resume and done_file.exists() else set()
    start = time.monotonic()
    slowest = 0.0
    failed = []
    for st in steps:
        if st.name in done:
            print(f"study: {st.name}: done in an earlier run (--resume)", flush=True)
            continue
        left = a.budget - (time.monotonic() - start) if a.budget else None
        if left is not None and left < max(slowest * 1.5, 5.0):
            print(f"study: stopping before {st.name}: {left:.0f} s of the budget left; rerun with --resume",
                  flush=True)
            return failed, False
        csv_path = raw / f"{st.name}.csv"
        env = {**os.environ, **st.env}
        if st.script:  # torch's launcher; the package from the build folder
            cmd = ["timeout", str(st.timeout_s), a.torch_python, "-m", "torch.distributed.run",
                   f"--nproc_per_node={st.pes}", str(ROOT / st.script), *st.args, "--csv", str(csv_path)]
            env["PYTHONPATH"] = os.pathsep.join(x for x in (str(pathlib.Path(a.build) / "python"),
                                                            env.get("PYTHONPATH", "")) if x)
            shown_cmd = f"torch.distributed.run --nproc_per_node={st.pes} {st.script} {' '.join(st.args)}"
        else:  # shoal-bench, or the step's own program of the build
            program = find_program(a.build, st.program, False) if st.program else bench
            cmd = [str(shoalrun), "-n", str(st.pes), "--timeout", str(st.timeout_s), "--", str(program), *st.args,
                   "--csv", str(csv_path)]
            shown_cmd = f"shoalrun -n {st.pes} -- {program.name} {' '.join(cmd[7:])}"
            if not a.dry_run and not program.is_file():
                failed.append(st.name)
                print(f"study: {st.name}: {program} not found (a build without CUDA has none); skipped", flush=True)
                continue
        shown = " ".join(f"{k}={v}" for k, v in st.env.items())
        print(f"study: {st.name}: {shown + ' ' if shown else ''}{shown_cmd}", flush=True)
        if a.dry_run:
            continue
        t0 = time.monotonic()
        with open(raw / f"{st.name}.log", "w") as log:
            rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        slowest = max(slowest, time.monotonic() - t0)
        if rc != 0 or not csv_path.exists():
            failed.append(st.name)
            print(f"study: {st.name} failed (status {rc}); its log: {raw / (st.name + '.log')}", flush=True)
            continue
        with open(done_file, "a") as f:
            f.write(st.name + "\n")
    return failed, True


def merge(steps, raw, out_csv):
    """Every step's rows with its variant, section and step name, into one CSV; returns the rows."""
    rows = []
    for st in steps:
        p = raw / f"{st.name}.csv"
        if not p.exists():
            continue
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                r.update(variant=st.variant, section=st.section, step=st.name)
                rows.append(r)
    if rows:
        with open(out_csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("SHOAL_STUDY_BUILD", str(ROOT / "build" / "ci")),
                    help="shoal's build folder (shoal-bench and shoalrun; default build/ci)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "study"), help="where the report goes")
    ap.add_argument("--platform", choices=("auto", "gpu", "host"), default="auto",
                    help="gpu: the device study; host: host-memory PEs (auto: gpu when nvidia-smi lists a GPU)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and grids (a smoke run of the same steps)")
    ap.add_argument("--pes", default=None, help="PE counts, comma-separated (default: 2,4,8 on GPUs, 2,4 host)")
    ap.add_argument("--only", default="", help="sections to run, comma-separated (p2p, latency, completion, host_issued, proxy, moe, coll, "
                    "coll_variants, host)")
    ap.add_argument("--resume", action="store_true", help="skip the steps an earlier run in OUT finished")
    ap.add_argument("--budget", type=float, default=0, help="seconds: start no step that the budget cannot fit")
    ap.add_argument("--report-only", action="store_true", help="no runs: the report from OUT/raw as it is")
    ap.add_argument("--write-defaults", action="store_true",
                    help="regenerate src/common/tuning_gen.hpp from OUT/defaults.json (codegen/gen_tuning.py)")
    ap.add_argument("--dry-run", action="store_true", help="print the steps, run nothing")
    ap.add_argument("--torch-python", default=os.environ.get("SHOAL_STUDY_TORCH_PYTHON", "python3"),
                    help="the Python with torch that runs the MoE section (default python3)")
    a = ap.parse_args(argv)

    gpus = gpu_count()
    where = a.platform if a.platform != "auto" else ("gpu" if gpus else "host")
    pes = tuple(int(x) for x in a.pes.split(",")) if a.pes else None
    if where == "gpu":
        steps = plan_mod.gpu_plan(a.quick, pes or plan_mod.COLL_PES, max(gpus, 1))
    else:
        steps = plan_mod.host_plan(a.quick, pes or (2, 4))
    if a.only:
        keep = set(a.only.split(","))
        steps = [s for s in steps if s.section in keep]
    out = pathlib.Path(a.out)
    raw = out / "raw"
    if not a.dry_run:
        raw.mkdir(parents=True, exist_ok=True)
    complete = True
    failed = []
    if not a.report_only:
        failed, complete = run_steps(steps, a, raw)
    if a.dry_run:
        return 0
    rows = merge(steps, raw, out / "study.csv")
    if not rows:
        print("study: no rows measured; nothing to report", file=sys.stderr)
        return 1
    meta = {"machine": machine(), "commit": commit(), "date": time.strftime("%Y-%m-%d"), "platform": where,
            "command": "scripts/study.sh " + " ".join(argv if argv is not None else sys.argv[1:]),
            "failed": failed, "complete": complete and not failed}
    written = report_mod.write(rows, out, meta)
    print("study: wrote " + ", ".join(sorted(p.name for p in written)), flush=True)
    if a.write_defaults:
        defaults = out / "defaults.json"
        if not defaults.exists():
            print("study: --write-defaults: this run measured no collective variants (no defaults.json)",
                  file=sys.stderr)
            return 1
        subprocess.run([sys.executable, str(ROOT / "codegen" / "gen_tuning.py"), "--defaults", str(defaults)],
                       check=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
