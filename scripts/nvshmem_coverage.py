#!/usr/bin/env python3
"""Measures how much of NVSHMEM's public C API shoal's compat headers (include/compat/nvshmem) provide.

Needs NVSHMEM's own headers (e.g. the PyPI wheel nvidia-nvshmem-cu13, include/) and nvcc; not run in CI.
  1. Lists NVSHMEM's functions from its preprocessed nvshmem.h + nvshmemx.h (scripts/nvshmem_api_parse.py):
     name, return and parameter types, host/device. The queue-pair (nvshmemx_qp_*) and tile APIs are counted apart.
  2. For each, what the compat header does: maps it (macro to a shoal function, or an inline wrapper), lists it as
     not provided (codegen/nvshmem_not_provided.txt), or neither (missing: a gap in the list).
  3. Type check: one nvcc compile of static_asserts that decltype(&name) is NVSHMEM's function type, and where
     NVSHMEM's function is device-callable, that shoal's is too (parsed from the preprocessed compat headers).
  4. Optionally compiles NVSHMEM example/perftest sources unchanged against the compat headers (--examples DIR).
Prints a summary; --markdown writes the tables docs/nvshmem-compat.md quotes; --write-not-provided rewrites
codegen/nvshmem_not_provided.txt from the missing names with reasons from REASONS below.

Usage: scripts/nvshmem_coverage.py --nvshmem-include DIR [--nvcc nvcc] [--examples DIR] [--markdown FILE]
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import nvshmem_api_parse as parse  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMPAT = ROOT / "include/compat/nvshmem"

# Why a family is not provided (first matching pattern wins); written into codegen/nvshmem_not_provided.txt.
REASONS = [
    (r"_qp_|qp_create", "queue-pair API (IBGDA QP handles): no counterpart; shoal has no contexts yet"),
    (r"tile", "tile/tensor API (NVLS): no counterpart"),
    (r"region", "RMA regions and region hints (3.8): no counterpart"),
    (r"smem", "shared-memory budget hints (ask/give/release_smem): no counterpart"),
    (r"mc_ptr", "NVLS multicast: multicast objects are not used by shoal"),
    (r"buffer_(un)?register_symmetric", "symmetric registration of user memory: shoal's symmetric heap is one "
     "reserved range per PE (local registration is provided)"),
    (r"maxloc", "maxloc reductions: no counterpart yet"),
    (r"signal_counted", "counted signals (3.8): no counterpart yet"),
    (r"barrier_warpgroup", "warpgroup scope: shoal's scopes are thread, warp and block"),
    (r"_(half|bfloat16)_atomic", "half-precision atomics: no counterpart yet"),
    (r"team_init|team_get_uniqueid", "team_init over any PE set: splits only (strided, 2d)"),
    (r"collective_launch_attr", "collective launch with user launch attributes (3.8): not yet"),
    (r"tma", "TMA policy: no counterpart"),
    (r"", "no counterpart yet"),
]


def reason(name):
    for pat, why in REASONS:
        if re.search(pat, name):
            return why
    return ""


def excluded(name):
    """Queue-pair and tile functions: outside the coverage target."""
    return "_qp_" in name or "qp_create" in name or "tile" in name


def compat_state():
    text = (COMPAT / "nvshmem.h").read_text()
    mapped = dict(re.findall(r"^#define (nvshmemx?_\w+) (shoalx?_\w+)$", text, re.M))
    wrapped = set(re.findall(r"inline [\w\s\*]+?\b(nvshmemx?_\w+)\(", (COMPAT / "shoal_nvshmem_base.h").read_text()))
    not_provided = set(re.findall(r"^SHOAL_NV_NOT_PROVIDED\((\w+),", text, re.M))
    return mapped, wrapped, not_provided


def type_probe(nvcc, nv, names, cuda_inc):
    """Names whose compat type differs from NVSHMEM's (one nvcc compile of static_asserts)."""
    lines = ["#include <type_traits>", "#include <nvshmem.h>", "#include <nvshmemx.h>"]
    for n in names:
        d = nv[n]
        lines.append(f'static_assert(std::is_same<decltype(&{n}), {d.ret} (*)({", ".join(d.params)})>::value, '
                     f'"SHOALPROBE:{n}:");')
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "probe.cu"
        src.write_text("\n".join(lines) + "\n")
        r = subprocess.run([nvcc, "-c", "-std=c++17", "-arch=sm_90", "-Xcudafe", "--error_limit=1000000",
                            f"-I{COMPAT}", f"-I{ROOT / 'include'}", f"-I{cuda_inc}", str(src), "-o",
                            str(pathlib.Path(tmp) / "probe.o")], capture_output=True, text=True)
    bad = set(re.findall(r"SHOALPROBE:(\w+):", r.stderr))
    other = [l for l in r.stderr.splitlines() if "error" in l and "SHOALPROBE" not in l]
    return bad, other


def compile_examples(nvcc, examples, cuda_inc):
    results = []
    for src in sorted(pathlib.Path(examples).rglob("*")):
        if src.suffix not in (".cu", ".cpp", ".c"):
            continue
        cmd = [nvcc, "-c", "-arch=sm_90", "-x", "cu", f"-I{COMPAT}", f"-I{ROOT / 'include'}", f"-I{cuda_inc}",
               f"-I{src.parent}", str(src), "-o", os.devnull]
        r = subprocess.run(cmd, capture_output=True, text=True)
        first = next((l for l in r.stderr.splitlines() if "error" in l), "")
        results.append((src.relative_to(examples), r.returncode == 0, first.strip()))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvshmem-include", required=True)
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    ap.add_argument("--nvshmem-lib", help="libnvshmem_host.so: its exports tell which __host__ __device__ "
                    "declarations NVSHMEM really provides on the host (default: next to --nvshmem-include)")
    ap.add_argument("--examples")
    ap.add_argument("--markdown")
    ap.add_argument("--write-not-provided", action="store_true")
    args = ap.parse_args()

    nv = parse.parse(parse.preprocess(args.nvcc, [args.nvshmem_include], ["nvshmem.h", "nvshmemx.h"]),
                     ("nvshmem_", "nvshmemx_"))
    compat_pp = parse.preprocess(args.nvcc, [str(COMPAT), str(ROOT / "include")], ["nvshmem.h", "nvshmemx.h"])
    ours = parse.parse(compat_pp, ("nvshmem_", "nvshmemx_", "shoal_", "shoalx_"))
    mapped, wrapped, not_provided = compat_state()
    lib = args.nvshmem_lib or next(iter(sorted(pathlib.Path(args.nvshmem_include, "..", "lib").glob(
        "libnvshmem_host.so*"))), None)
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout if lib else ""
    exported = {line.split()[-1].split("@")[0] for line in nm.splitlines() if line.strip()}

    public = sorted(n for n in nv if not excluded(n))
    provided = [n for n in public if n in mapped or n in wrapped]
    missing = [n for n in public if n not in provided]
    unlisted = [n for n in missing if n not in not_provided]
    bad_types, other_errors = type_probe(args.nvcc, nv, provided, args.cuda_include)
    no_device = []  # callable on fewer sides than NVSHMEM's (NVSHMEM declares its on-stream calls __host__
    for n in provided:  # __device__ too, but they are host calls: those count as host only)
        target = ours.get(mapped.get(n, n))
        want = {"host"} if n.endswith("_on_stream") else set(nv[n].space)
        if "device" in want and n not in exported:
            want.discard("host")  # declared __host__ __device__ but absent from libnvshmem_host: device only
        have = target.space if target is not None else set()
        if not want <= have:
            no_device.append(n)
    ok = [n for n in provided if n not in bad_types and n not in no_device]
    frac = len(ok) / len(public)
    print(f"NVSHMEM public functions (queue-pair and tile APIs aside): {len(public)}")
    print(f"  provided with NVSHMEM's types and callable where NVSHMEM's are: {len(ok)} ({100 * frac:.1f}%)")
    print(f"  provided, type differs: {len(bad_types)} {sorted(bad_types)[:20]}")
    print(f"  provided, not callable on every side (host/device) NVSHMEM's is: {len(no_device)} {no_device[:20]}")
    print(f"  not provided: {len(missing)} (not listed in nvshmem_not_provided.txt: {len(unlisted)})")
    print(f"  queue-pair and tile functions (excluded): {sum(1 for n in nv if excluded(n))}")
    if other_errors:
        print("  probe errors not about a name:", *other_errors[:10], sep="\n    ")
    examples = compile_examples(args.nvcc, args.examples, args.cuda_include) if args.examples else []
    for path, good, err in examples:
        print(f"  example {path}: {'compiles' if good else 'FAILS: ' + err}")

    if args.write_not_provided:
        out = ["# NVSHMEM 3.8 functions shoal does not provide: `name reason`, one a line (scripts/nvshmem_coverage.py",
               "# --write-not-provided). codegen/gen_nvshmem_compat.py declares each `unavailable` in <nvshmem.h>."]
        for n in sorted(set(missing) | {n for n in nv if excluded(n)}):
            out.append(f"{n} {reason(n)}")
        (ROOT / "codegen/nvshmem_not_provided.txt").write_text("\n".join(out) + "\n")
    if args.markdown:
        by_reason = {}
        for n in missing:
            by_reason.setdefault(reason(n), []).append(n)
        md = [f"| NVSHMEM 3.8 public functions (queue-pair and tile aside) | {len(public)} |", "|---|---|",
              f"| provided with NVSHMEM's types | {len(ok)} ({100 * frac:.1f}%) |",
              f"| provided, type differs | {len(bad_types)} |",
              f"| provided, not callable on every side (host/device) NVSHMEM's is | {len(no_device)} |",
              f"| not provided (compile error naming them) | {len(missing)} |",
              f"| queue-pair and tile functions (not provided, excluded) | {sum(1 for n in nv if excluded(n))} |", "",
              "Not provided, by reason:", ""]
        for why, names in sorted(by_reason.items()):
            md.append(f"- {why} ({len(names)}): " + ", ".join(f"`{n}`" for n in names))
        if examples:
            md += ["", "| NVSHMEM example | compiles unchanged |", "|---|---|"]
            md += [f"| `{p}` | {'yes' if g else 'no: ' + e.replace('|', '/')} |" for p, g, e in examples]
        pathlib.Path(args.markdown).write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
