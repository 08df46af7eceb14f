#!/usr/bin/env python3
"""Generates shoal's NVSHMEM compatibility headers from the same tables as shoal's own API.

Outputs (checked in; CI regenerates and fails on a diff):
  include/compat/nvshmem/nvshmem.h    NVSHMEM's names on shoal: one macro per function shoal provides
                                      (nvshmem_X -> shoal_X, nvshmemx_X -> shoalx_X, plus the aliases below),
                                      and an `unavailable` declaration per NVSHMEM function shoal does not
                                      provide (codegen/nvshmem_not_provided.txt), so using one fails to compile
                                      with a message naming it
  include/compat/nvshmem/nvshmemx.h   the same (NVSHMEM's nvshmemx.h includes nvshmem.h)

Names come from codegen/gen_host_api.py (typed host API), codegen/gen_device_api.py (device facade), and the
hand-written C API (<shoal/shoal.h>, <shoal/team.h>, parsed for SHOAL_API declarations). Types, constants and the
entry points whose NVSHMEM types differ from shoal's are in the hand-written
include/compat/nvshmem/shoal_nvshmem_base.h; the names it defines get no macro.

Every output carries the mark of codegen/generated.py.

Run from anywhere: python3 codegen/gen_nvshmem_compat.py [--check | --list]
"""
import argparse
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_device_api as dev  # noqa: E402
import gen_host_api as host  # noqa: E402
import generated  # noqa: E402  (the mark of a generated file)

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = ROOT / "include/compat/nvshmem"
GENERATOR = "codegen/gen_nvshmem_compat.py"
BASE = DIR / "shoal_nvshmem_base.h"
NOT_PROVIDED = ROOT / "codegen/nvshmem_not_provided.txt"
HAND_WRITTEN = [ROOT / "include/shoal/shoal.h", ROOT / "include/shoal/team.h"]

# NVSHMEM names whose shoal counterpart is not the plain rename (nvshmem_ <-> shoal_, nvshmemx_ <-> shoalx_).
ALIASES = {f"nvshmemx_{tn}_atomic_{op}": f"shoal_{tn}_atomic_{op}"
           for tn, _ in host.AMO_FLOAT + host.AMO_HALF for op in ("add", "fetch_add")}
ALIASES.update({
    "nvshmem_sync": "shoal_team_sync",            # NVSHMEM's alias of team_sync
    "nvshmemx_sync_warp": "shoalx_team_sync_warp",
    "nvshmemx_sync_block": "shoalx_team_sync_block",
    "nvshmemx_flush": "shoal_quiet",                  # flush (3.7): source reusable; quiet is stronger
    "nvshmemx_flush_on_stream": "shoalx_quiet_on_stream",
})


def nv_name(shoal_name):
    if shoal_name.startswith("shoalx_"):
        return "nvshmemx_" + shoal_name[len("shoalx_"):]
    return "nvshmem_" + shoal_name[len("shoal_"):]


def shoal_names():
    """Every function name shoal's public API has (host and device)."""
    names = set()
    he = host.Emitter()
    for part in (host.rma, host.signals, host.atomics, host.sync, host.stream_rma, host.collectives,
                 host.collectives_on_stream):
        part(he)
    names.update(n for _, n, _ in he.fns)
    g = dev.Gen()
    for part in (dev.rma, dev.signals, dev.atomics, dev.sync, dev.barriers, dev.collectives):
        part(g)
    names.update(f.name for f in g.items if not isinstance(f, str))
    names.update(re.findall(r"__host__ __device__ [\w\s\*]+?\b(shoalx?_\w+)\(", dev.HEADER))
    for path in HAND_WRITTEN:
        names.update(re.findall(r"SHOAL_API [\w\s\*]+?\b(shoalx?_\w+)\(", path.read_text()))
    return {n for n in names if not n.startswith("shoal_detail_")}


def wrapped_names():
    """NVSHMEM names the hand-written base header defines itself."""
    return set(re.findall(r"inline [\w\s\*]+?\b(nvshmemx?_\w+)\(", BASE.read_text()))


def not_provided():
    """(name, reason) per line of codegen/nvshmem_not_provided.txt ("name  reason"; # comments)."""
    out = []
    for line in NOT_PROVIDED.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, reason = line.partition(" ")
            out.append((name, reason.strip()))
    return out


HEADER = "/* clang-format off */\n/* " + generated.marker(GENERATOR) + """
 * shoal's NVSHMEM compatibility header: an NVSHMEM program builds against shoal by changing only its include and
 * link flags (-I<prefix>/include/shoal/compat/nvshmem -lshoal, or CMake shoal::nvshmem, or pkg-config
 * shoal-nvshmem). Provides the NVSHMEM 3.8 API level (NVSHMEM_VENDOR_*_VERSION); what is missing or behaves
 * differently is listed in docs/nvshmem-compat.md. Each NVSHMEM function maps to shoal's function of the same
 * contract (<shoal/shoal.h>, <shoal/device/facade.cuh>); a function shoal does not provide is declared
 * `unavailable`, so a program that calls it fails to compile with a message naming it. */
#ifndef SHOAL_COMPAT_NVSHMEM_H_
#define SHOAL_COMPAT_NVSHMEM_H_

/* As NVSHMEM's nvshmem.h: the CUDA driver and runtime headers. */
#if !defined(__CUDACC_RTC__)
#include <cuda.h>
#include <cuda_runtime.h>
#endif

#include "shoal_nvshmem_base.h"

#if defined(__CUDACC__) && defined(__cplusplus)
#define SHOAL_NV_NOT_PROVIDED(name, why) \\
  __host__ __device__ __attribute__((unavailable("not provided by shoal: " why))) int name(...);
#elif defined(__cplusplus)
#define SHOAL_NV_NOT_PROVIDED(name, why) __attribute__((unavailable("not provided by shoal: " why))) int name(...);
#else
#define SHOAL_NV_NOT_PROVIDED(name, why) __attribute__((unavailable("not provided by shoal: " why))) int name();
#endif
"""

FOOTER = """
#endif /* SHOAL_COMPAT_NVSHMEM_H_ */
"""

NVSHMEMX = "/* clang-format off */\n/* " + generated.marker(GENERATOR) + """
 * NVSHMEM's extension header: everything is in <nvshmem.h> (shoal's compat layer declares the nvshmemx_ names
 * there too). */
#ifndef SHOAL_COMPAT_NVSHMEMX_H_
#define SHOAL_COMPAT_NVSHMEMX_H_
#include "nvshmem.h"
#endif /* SHOAL_COMPAT_NVSHMEMX_H_ */
"""


def render():
    names = shoal_names()
    wrapped = wrapped_names()
    lines = [HEADER, "/* --- NVSHMEM names of shoal's functions (same types; host, device or both as shoal's) --- */"]
    mapped = {}
    for s in sorted(names):
        n = nv_name(s)
        if n not in wrapped:
            mapped[n] = s
    for n, s in ALIASES.items():
        assert s in names, f"alias {n} -> {s}: shoal has no {s}"
        mapped[n] = s
    for n in sorted(mapped):
        lines.append(f"#define {n} {mapped[n]}")
    lines.append("\n/* --- NVSHMEM functions shoal does not provide: a compile error naming them when used --- */")
    seen = set(mapped) | wrapped
    for n, why in not_provided():
        assert n not in seen, f"{n} is listed as not provided but shoal provides it"
        lines.append(f'SHOAL_NV_NOT_PROVIDED({n}, "{why}")')
    lines.append(FOOTER)
    return "\n".join(lines), len(mapped) + len(wrapped)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="fail if the checked-in outputs differ")
    ap.add_argument("--list", action="store_true", help="print the outputs (repository paths), one per line")
    args = ap.parse_args()
    text, count = render()
    outputs = {DIR / "nvshmem.h": text, DIR / "nvshmemx.h": NVSHMEMX}
    if args.list:
        print(*(p.relative_to(ROOT).as_posix() for p in outputs), sep="\n")
        return 0
    unmarked = generated.unmarked(GENERATOR, outputs, ROOT)
    if unmarked:
        print(f"outputs without the mark of codegen/generated.py ({generated.marker(GENERATOR)}):", *unmarked,
              sep="\n  ")
        return 1
    stale = [str(p.relative_to(ROOT)) for p, t in outputs.items() if not p.exists() or p.read_text() != t]
    if args.check:
        if stale:
            print("generated files are stale; run python3 codegen/gen_nvshmem_compat.py:", *stale, sep="\n  ")
            return 1
    else:
        for p, t in outputs.items():
            p.write_text(t)
    print(f"{'checked' if args.check else 'wrote'} NVSHMEM compat headers: {count} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
