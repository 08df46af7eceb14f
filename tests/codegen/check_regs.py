#!/usr/bin/env python3
"""Register footprint of user kernels that call shoal's device API (no GPU needed).

A CTA of 1024 threads launches only when its kernel needs at most 65536 / 1024 = 64 registers per thread. NVSHMEM's
perftests launch such CTAs from kernels without __launch_bounds__, and so may any user kernel: a device API whose
inlined and out-of-line code needs more makes the launch fail ("too many resources requested for launch").

This test compiles the probe files (regs_explicit.cu: the explicit handle; regs_nvshmem.cu: the NVSHMEM names on
the facade), one user kernel per family and scope in the perftests' shape, for sm_90 without -rdc and without
launch bounds, reads each kernel's register count from ptxas -v, and fails when a kernel needs more than 64, unless
regs_ceilings.txt lists it: a kernel that does not meet the bound yet is pinned there at its count, and fails when it
needs more than that. A kernel that meets a tighter bound than its ceiling is reported, so that the list shrinks.

Usage: check_regs.py NVCC SOURCE_DIR WORK_DIR
       check_regs.py NVCC --self-test WORK_DIR   prove that a kernel over the bound fails and one under it passes
"""
import pathlib
import re
import subprocess
import sys

BOUND = 64  # registers per thread that let a 1024-thread CTA launch (65536 / 1024)
PROBES = ("regs_explicit.cu", "regs_nvshmem.cu")


def compile_counts(nvcc: str, source: pathlib.Path, includes: list[pathlib.Path], work: pathlib.Path) -> dict[str, int]:
    """Register count of every kernel of `source` (whole-program compilation for sm_90, as a user compiles)."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [nvcc, "-std=c++20", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", str(work / (source.stem + ".cubin"))]
    cmd += [f"-I{p}" for p in includes] + [str(source)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stdout}{run.stderr}")
    counts, name = {}, None
    for line in (run.stdout + run.stderr).splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            counts[name] = int(m.group(1))
            name = None
    if not counts:
        raise RuntimeError(f"no kernel found in the ptxas output of {source}")
    return counts


def read_ceilings(path: pathlib.Path) -> dict[str, int]:
    ceilings = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise RuntimeError(f"{path}:{n}: expected 'KERNEL REGISTERS', got {line!r}")
        ceilings[parts[0]] = int(parts[1])
    return ceilings


def judge(counts: dict[str, int], ceilings: dict[str, int]) -> tuple[list[str], list[str]]:
    """(failures, notes) for the measured counts against the bound and the pinned ceilings."""
    failures, notes = [], []
    for kernel, regs in sorted(counts.items()):
        limit = ceilings.get(kernel, BOUND)
        if regs > limit:
            why = "the 1024-thread bound" if kernel not in ceilings else "its pinned ceiling (regs_ceilings.txt)"
            failures.append(f"{kernel}: {regs} registers per thread, over {why} of {limit}")
        elif kernel in ceilings and regs < limit:
            notes.append(f"{kernel}: {regs} registers, below its ceiling {limit}: lower it in regs_ceilings.txt"
                         + (" (or remove it: it meets the bound)" if regs <= BOUND else ""))
    for kernel in sorted(set(ceilings) - set(counts)):
        failures.append(f"regs_ceilings.txt names {kernel}, which no probe defines")
    return failures, notes


def self_test(nvcc: str, work: pathlib.Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    probe = work / "fat_and_thin.cu"
    # fat: 24 live 16-byte vectors (96 registers) across a loop; thin: one.
    probe.write_text("""
extern "C" __global__ void fat(uint4* p, int n) {
  uint4 v[24];
#pragma unroll
  for (int u = 0; u < 24; ++u) v[u] = p[u * n + threadIdx.x];
  for (int i = 1; i < n; ++i) {
#pragma unroll
    for (int u = 0; u < 24; ++u) { v[u].x += p[i + u].y; v[u].w ^= v[(u + 1) % 24].x; }
  }
#pragma unroll
  for (int u = 0; u < 24; ++u) p[u * n + threadIdx.x] = v[u];
}
extern "C" __global__ void thin(int* p) { p[threadIdx.x] += 1; }
""")
    counts = compile_counts(nvcc, probe, [], work)
    failures, _ = judge(counts, {})
    if not any(f.startswith("fat:") for f in failures):
        print(f"self-test: a kernel of {counts.get('fat')} registers passed the bound of {BOUND}")
        return 1
    if any(f.startswith("thin:") for f in failures):
        print(f"self-test: a kernel of {counts.get('thin')} registers failed the bound of {BOUND}")
        return 1
    failures, _ = judge(counts, {"fat": counts["fat"]})
    if failures:
        print("self-test: a kernel at its pinned ceiling failed:", *failures, sep="\n  ")
        return 1
    failures, _ = judge(counts, {"fat": counts["fat"] - 1})
    if not failures:
        print("self-test: a kernel over its pinned ceiling passed")
        return 1
    failures, _ = judge(counts, {"fat": counts["fat"], "gone": 70})
    if not any("gone" in f for f in failures):
        print("self-test: a ceiling for a kernel no probe defines passed")
        return 1
    print(f"self-test: ok (fat {counts['fat']} registers fails, thin {counts['thin']} passes)")
    return 0


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[2] == "--self-test":
        return self_test(sys.argv[1], pathlib.Path(sys.argv[3]))
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    nvcc, root, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    here = root / "tests" / "codegen"
    includes = [root / "include", root / "include" / "compat" / "nvshmem"]
    counts = {}
    for probe in PROBES:
        counts.update(compile_counts(nvcc, here / probe, includes, work))
    failures, notes = judge(counts, read_ceilings(here / "regs_ceilings.txt"))
    for kernel, regs in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{regs:4d} {kernel}")
    for n in notes:
        print("note:", n)
    under = sum(1 for r in counts.values() if r <= BOUND)
    print(f"{under} of {len(counts)} probe kernels need at most {BOUND} registers (1024-thread CTAs launch)")
    if failures:
        print(*failures, sep="\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
