#!/usr/bin/env python3
"""Fails on a kernel of the library (src/, ep/) without __launch_bounds__.

A kernel is compiled for as many registers as its code wants unless it states the most threads it is launched
with. The device API's inlined paths (proxy branches, bounded waits) grow with the library, so a kernel that
once fit its launch can stop launching ("too many resources requested for launch"): session 16's on-stream
collectives grew from 128 to 134 registers and failed at 512 threads. With __launch_bounds__(N, 1) the compiler
keeps the kernel within 65536 / N registers (spilling if it must), so a launch of at most N threads always
fits. The launch sites clamp to the same constants.

Usage: launch_bounds_check.py ROOT         check ROOT/src and ROOT/ep
       launch_bounds_check.py --self-test  prove the check fails on a kernel without bounds, passes with them
"""
import pathlib
import re
import sys
import tempfile

SOURCES = {".cu", ".cuh", ".hpp", ".cc"}
# A kernel's declaration: __global__ up to the opening parenthesis of its parameter list (templates, attributes
# and line breaks in between).
KERNEL = re.compile(r"__global__\s+(?P<head>[^;{]*?)\b(?P<name>\w+)\s*\(", re.DOTALL)


def violations(root: pathlib.Path) -> list[str]:
    bad = []
    for top in ("src", "ep"):
        base = root / top
        if not base.is_dir():
            continue
        for f in sorted(base.rglob("*")):
            if f.suffix not in SOURCES:
                continue
            text = f.read_text(errors="replace")
            for m in KERNEL.finditer(text):
                if m.group("name") == "__launch_bounds__":  # matched the attribute, not the name: look further
                    continue
                if "__launch_bounds__" not in m.group("head"):
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{f.relative_to(root)}:{line}: kernel {m.group('name')} has no __launch_bounds__")
    return bad


def self_test() -> int:
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        (root / "src").mkdir()
        k = root / "src" / "k.cu"
        k.write_text("template <class T>\n__global__ void\nmove_kernel(T* p) {}\n")
        if not violations(root):
            print("self-test: a kernel without __launch_bounds__ passed the check")
            return 1
        k.write_text("template <class T>\n__global__ void __launch_bounds__(512, 1)\nmove_kernel(T* p) {}\n"
                     "__global__ void __launch_bounds__(1) one(int x) {}\n")
        if bad := violations(root):
            print("self-test: kernels with __launch_bounds__ failed the check:", *bad, sep="\n  ")
            return 1
    print("self-test: ok")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bad = violations(pathlib.Path(sys.argv[1]))
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} kernel(s) without __launch_bounds__ (see the top of {pathlib.Path(__file__).name})")
        return 1
    print("every kernel in src/ and ep/ has __launch_bounds__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
