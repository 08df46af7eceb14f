#!/usr/bin/env python3
"""Runs DeepEP V1's own test files (tests/test_intranode.py, tests/test_low_latency.py) unchanged, against
shoal.ep or against DeepEP itself, and reports their results and tuning figures.

DeepEP's code stays outside this tree: --deepep-src names a DeepEP V1 checkout (deepseek-ai/DeepEP at 567632d
is the one measured). Its tests/ folder is copied to a temporary folder and run there, with two changes only:
  - the import switch: with --impl shoal, `import deep_ep` resolves to shoal.ep (tests/deepep/shim/deep_ep);
    with --impl deepep, to DeepEP's own build (--deepep-build, the folder holding deep_ep/ and deep_ep_cpp*.so);
  - the one-GPU harness, when the machine has fewer GPUs than --num-processes: tests/deepep/one_gpu_harness.py
    is appended to the copy of tests/utils.py (a gloo group, device 0 for every rank, GPU-tensor collectives
    through host copies). The ranks then share the GPU; run this under an MPS daemon (scripts/mps.sh).
--num-sms N (benchmarks only) changes the SM count of test_intranode.py's tuning loop from 24 to N.

Without --deepep-src the folder comes from SHOAL_DEEPEP_SRC; with neither, or without torch and a CUDA device, it
exits 77 (ctest: skipped) saying why. Otherwise the exit status is the test's. With --csv, the figures the test prints (best dispatch/combine of the tuning sweep,
or the low-latency kernel times) are appended as rows: impl, test, num_ranks, num_sms, op, dtype, chunk,
gbps, time_us, rank.

    run_deepep_tests.py --deepep-src DIR --test intranode --impl shoal [--num-processes 2] [--csv out.csv]
"""
import argparse
import csv
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
FIELDS = ["impl", "test", "num_ranks", "num_sms", "op", "dtype", "chunk", "gbps", "time_us", "rank"]
BEST_DISPATCH = re.compile(r"\[tuning\] Best dispatch \((FP8|BF16)\): SMs (\d+), NVL chunk (\d+), ([\d.]+) GB/s \(NVL\), "
                           r"t: ([\d.]+) us")
BEST_COMBINE = re.compile(r"\[tuning\] Best combine: SMs (\d+), NVL chunk (\d+): ([\d.]+) GB/s \(NVL\), t: ([\d.]+) us")
LL_TIMES = re.compile(r"\[rank (\d+)\] Dispatch bandwidth: ([\d.]+) GB/s, avg_t=([\d.]+) us \| "
                      r"Combine bandwidth: ([\d.]+) GB/s, avg_t=([\d.]+) us")
LL_HALVES = re.compile(r"\[rank (\d+)\] Dispatch send/recv time: ([\d.]+) \+ ([\d.]+) us \| "
                       r"Combine send/recv time: ([\d.]+) \+ ([\d.]+) us")


def num_gpus() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(src: pathlib.Path, work: pathlib.Path, one_gpu: bool, num_sms: int) -> None:
    tests = src / "tests"
    for f in ("utils.py", "test_intranode.py", "test_low_latency.py"):
        if not (tests / f).is_file():
            sys.exit(f"run_deepep_tests: {tests / f} is missing: --deepep-src must be a DeepEP V1 checkout")
        shutil.copy(tests / f, work / f)
    if one_gpu:
        with open(work / "utils.py", "a") as out:
            out.write("\n\n" + (HERE / "one_gpu_harness.py").read_text())
    if num_sms != 24:
        path = work / "test_intranode.py"
        text = path.read_text()
        if "for i in (24, ):" not in text:
            sys.exit("run_deepep_tests: --num-sms: test_intranode.py has no `for i in (24, ):` loop to change")
        path.write_text(text.replace("for i in (24, ):", f"for i in ({num_sms}, ):"))


def figures(output: str, impl: str, test: str, num_ranks: int, num_sms: int) -> list:
    rows = []
    base = dict(impl=impl, test=test, num_ranks=num_ranks, num_sms=num_sms)
    for m in BEST_DISPATCH.finditer(output):
        rows.append(dict(base, op="dispatch", dtype=m.group(1).lower(), chunk=m.group(3), gbps=m.group(4),
                         time_us=m.group(5), rank=0))
    for m in BEST_COMBINE.finditer(output):
        rows.append(dict(base, op="combine", dtype="bf16", chunk=m.group(2), gbps=m.group(3), time_us=m.group(4),
                         rank=0))
    for m in LL_TIMES.finditer(output):
        rows.append(dict(base, op="ll_dispatch", dtype="fp8", chunk="", gbps=m.group(2), time_us=m.group(3),
                         rank=m.group(1)))
        rows.append(dict(base, op="ll_combine", dtype="bf16", chunk="", gbps=m.group(4), time_us=m.group(5),
                         rank=m.group(1)))
    for m in LL_HALVES.finditer(output):
        for op, t in (("ll_dispatch_send", 2), ("ll_dispatch_recv", 3), ("ll_combine_send", 4), ("ll_combine_recv", 5)):
            rows.append(dict(base, op=op, dtype="", chunk="", gbps="", time_us=m.group(t), rank=m.group(1)))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deepep-src", type=pathlib.Path, default=os.environ.get("SHOAL_DEEPEP_SRC") or None)
    p.add_argument("--deepep-build", type=pathlib.Path, help="with --impl deepep: the folder holding deep_ep/ and "
                   "its deep_ep_cpp extension (default: --deepep-src, built in place)")
    p.add_argument("--impl", choices=("shoal", "deepep"), default="shoal")
    p.add_argument("--test", choices=("intranode", "low_latency"), required=True)
    p.add_argument("--num-processes", type=int, default=2)
    p.add_argument("--num-sms", type=int, default=24)
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--csv", type=pathlib.Path)
    p.add_argument("--log", type=pathlib.Path)
    args, extra = p.parse_known_args()
    if args.deepep_src is None:
        print("run_deepep_tests: skipped: no DeepEP V1 source (give --deepep-src or set SHOAL_DEEPEP_SRC)")
        return 77
    try:
        import torch
        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        print("run_deepep_tests: skipped: needs torch with a CUDA device")
        return 77

    one_gpu = num_gpus() < args.num_processes
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), PYTHONUNBUFFERED="1")
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    env.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    env.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    front = str(HERE / "shim") if args.impl == "shoal" else str((args.deepep_build or args.deepep_src).resolve())
    env["PYTHONPATH"] = os.pathsep.join(x for x in (front, env.get("PYTHONPATH", "")) if x)
    with tempfile.TemporaryDirectory(prefix="deepep-tests-") as tmp:
        work = pathlib.Path(tmp)
        prepare(args.deepep_src.resolve(), work, one_gpu, args.num_sms)
        cmd = [sys.executable, f"test_{args.test}.py", "--num-processes", str(args.num_processes), *extra]
        print(f"run_deepep_tests: {args.impl}: {' '.join(cmd)} (one-GPU harness: {one_gpu})", flush=True)
        try:
            proc = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=args.timeout)
            output, rc = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            output += f"\nrun_deepep_tests: timed out after {args.timeout} s\n"
            rc = 124
    output += f"run_deepep_tests: {args.impl} test_{args.test}.py exited {rc}\n"
    sys.stdout.write(output)
    if args.log:
        args.log.write_text(output)
    if args.csv:
        rows = figures(output, args.impl, args.test, args.num_processes, args.num_sms)
        new = not args.csv.exists()
        with open(args.csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            if new:
                w.writeheader()
            w.writerows(rows)
    return rc


if __name__ == "__main__":
    sys.exit(main())
