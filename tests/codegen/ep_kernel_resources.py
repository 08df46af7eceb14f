#!/usr/bin/env python3
"""Pins the local-memory use of the EP layer's normal-mode channel kernels (ep/normal/dispatch.cu, combine.cu).

Those kernels copy rows with 64 registers a thread (1024 threads a block). When code they inline grows (the
device API's proxy and report paths did), the compiler first copies the whole kernel-parameter struct (~800
bytes: every peer's buffer and the device world) to each thread's local memory, then spills around the copy
loops: every field read goes through local memory and the copies slow down by a quarter to a half, while every
test still passes. This check compiles the two files as the build does and fails, naming the kernel, when a
channel kernel's PTX holds a local-memory array (the parameter copy: `__local_depot` in the entry) or ptxas
spills more than the bound (ptxas -v). The stack frame ptxas reports is not bounded: it also counts the
frames of out-of-line cold callees, which cost the hot path nothing.

Usage: ep_kernel_resources.py NVCC ROOT WORKDIR     check ROOT/ep/normal/{dispatch,combine}.cu
       ep_kernel_resources.py NVCC --self-test WORKDIR  prove a kernel that copies its parameters fails it
"""
import pathlib
import re
import subprocess
import sys

MAX_SPILL_STORES = 160  # bytes a thread, outside the copy loops
ENTRY_PTX = re.compile(r"^(?:\.visible\s+)?\.entry\s+([^\s(]+)")
ENTRY = re.compile(r"Compiling entry function '(\S+)'")
PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
FLAGS = ["-std=c++20", "-arch=sm_90", "-O3", "--expt-relaxed-constexpr", "-Xptxas", "-v"]


def run(cmd: list) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"ep_kernel_resources: {' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stderr


def compile_report(nvcc: str, source: pathlib.Path, includes: list, work: pathlib.Path) -> tuple:
    """(ptxas -v report, PTX text) of source."""
    inc = [f"-I{i}" for i in includes]
    report = run([nvcc, *FLAGS, *inc, "-c", str(source), "-o", str(work / (source.stem + ".o"))])
    ptx = work / (source.stem + ".ptx")
    run([nvcc, *FLAGS[:-2], *inc, "-ptx", str(source), "-o", str(ptx)])
    return report, ptx.read_text()


def local_arrays(ptx: str, name_part: str) -> dict:
    """{entry name: local-memory bytes its PTX declares} for entries whose name holds name_part."""
    found, current = {}, None
    for line in ptx.splitlines():
        m = ENTRY_PTX.match(line)
        if m:
            current = m.group(1) if name_part in m.group(1) else None
            if current:
                found[current] = 0
            continue
        if current and "__local_depot" in line and ".local" in line:
            size = re.search(r"__local_depot\d+\[(\d+)\]", line)
            found[current] += int(size.group(1)) if size else 1
        if line.startswith("}"):
            current = None
    return found


def kernels(report: str, name_part: str) -> dict:
    """{mangled kernel name: (stack frame, spill stores, spill loads)} for entries whose name holds name_part."""
    found, current = {}, None
    for line in report.splitlines():
        m = ENTRY.search(line)
        if m:
            current = m.group(1) if name_part in m.group(1) else None
            continue
        m = PROPS.search(line)
        if m and current and current not in found:
            found[current] = tuple(int(g) for g in m.groups())
    return found


def violations(found: dict, local: dict) -> list:
    bad = []
    for name, nbytes in sorted(local.items()):
        if nbytes:
            bad.append(f"{name}: its PTX puts {nbytes} bytes in local memory (the kernel's parameters copied there?); "
                       "pass them as __grid_constant__ and keep cold paths out of line (ep/normal/common.cuh)")
    for name, (frame, stores, loads) in sorted(found.items()):
        if stores > MAX_SPILL_STORES:
            bad.append(f"{name}: {stores} bytes spill stores, {loads} bytes spill loads (bound: {MAX_SPILL_STORES}); "
                       "keep cold paths out of line (ep/normal/common.cuh)")
    return bad


def check(nvcc: str, root: pathlib.Path, work: pathlib.Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    found, local = {}, {}
    for f in ("dispatch.cu", "combine.cu"):
        report, ptx = compile_report(nvcc, root / "ep" / "normal" / f, [root / "include", root / "ep" / "include"],
                                     work)
        k, arrays = kernels(report, "channel_kernel"), local_arrays(ptx, "channel_kernel")
        if not k or not arrays:
            print(f"FAIL: ep/normal/{f}: no channel_kernel entry in ptxas's report or the PTX")
            return 1
        found.update(k)
        local.update(arrays)
    for name, (frame, stores, loads) in sorted(found.items()):
        print(f"{local.get(name, 0):4d} B local (PTX) {stores:5d} B spill stores {loads:5d} B spill loads "
              f"{frame:5d} B stack frame  {name[:110]}")
    bad = violations(found, local)
    for b in bad:
        print(f"FAIL: {b}")
    return 1 if bad else 0


PROBE = """
struct args_t { void* base[8]; char world[640]; int n; };
__device__ __noinline__ int cold(const args_t& a, int i) { return a.world[i % 640] + a.n; }
__global__ void __launch_bounds__(1024, 1) channel_kernel_probe(PARAM, int* out) {
  out[threadIdx.x] = cold(a, threadIdx.x);
}
"""


def self_test(nvcc: str, work: pathlib.Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for case, param in (("copied", "args_t a"), ("grid_constant", "const __grid_constant__ args_t a")):
        src = work / f"probe_{case}.cu"
        src.write_text(PROBE.replace("PARAM", param))
        report, ptx = compile_report(nvcc, src, [], work)
        results[case] = violations(kernels(report, "channel_kernel"), local_arrays(ptx, "channel_kernel"))
    ok = bool(results["copied"]) and not results["grid_constant"]
    print(f"self-test: parameters copied to the stack -> {len(results['copied'])} violation(s); __grid_constant__ -> "
          f"{len(results['grid_constant'])}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[2] == "--self-test":
        return self_test(sys.argv[1], pathlib.Path(sys.argv[3]))
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    return check(sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]))


if __name__ == "__main__":
    sys.exit(main())
