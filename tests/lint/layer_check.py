#!/usr/bin/env python3
"""Fails on an #include that crosses the layering of docs/design.md ("What may include what", "What each
folder is for").

  upward   src/: layers, lowest first: common, bootstrap, heap, transport, runtime, team, coll, shmem. A file
           in src/<layer>/ may include headers of its own layer, of lower layers and of include/shoal/
           ("shoal/..."); never of a higher layer. A folder under src/ that is not in the list fails too
           (place it in the order first).
  public   src/shmem/ (libshoal_shmem, OpenSHMEM over shoal) including a header of another layer of src/
           ("runtime/c_api.hpp") or shoal/detail/...: it uses the public C API only (shoal/... outside detail/,
           <shmem.h>) and its own files
  src      tools/, bench/, examples/, python/ (programs on the public API) including a header of src/: a path
           whose first folder is a folder of src/ ("bootstrap/bootstrap.hpp"), a path through src/, or one that
           names a file of src/ from the src/ include root
  detail   the same programs including shoal/detail/... (bodies of the public headers, not API)
A program may include the public headers (shoal/... outside detail/, the EP layer's shoal/ep/...), its own files
(found from the including file's folder or any folder above it up to tools/, bench/, examples/ or python/), and
headers from outside the repository (the C++ library, CUDA, fmt, CLI11, nanobind, NCCL, NVSHMEM).

Usage: layer_check.py ROOT         check the repository at ROOT
       layer_check.py --self-test  prove each rule fails on a bad tree and a good tree passes
"""
import pathlib
import re
import sys
import tempfile
from typing import Optional

LAYERS = ["common", "bootstrap", "heap", "transport", "runtime", "team", "coll", "shmem"]
# Layers of src/ that sit on the public C API like a program (no other layer's headers, no shoal/detail/).
PUBLIC_ONLY = ["shmem"]
PROGRAMS = ["tools", "bench", "examples", "python"]
SOURCES = {".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh"}
# [ \t], not \s, before the '#': \s would run over blank lines and report the line above the include.
LAYER_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"/]+)/[^"]+"', re.MULTILINE)
ANY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def inside(path: pathlib.Path, folder: pathlib.Path) -> bool:
    return path == folder or folder in path.parents


def layer_violations(src: pathlib.Path) -> list[str]:
    bad = []
    rank = {name: i for i, name in enumerate(LAYERS)}
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        if folder.name not in rank:
            bad.append(f"src/{folder.name}/: not a known layer (add it to LAYERS and docs/design.md)")
            continue
        for f in sorted(folder.rglob("*")):
            if f.suffix not in SOURCES:
                continue
            text = f.read_text(errors="replace")
            for m in LAYER_INCLUDE.finditer(text):
                target = m.group(1)
                if target in rank and rank[target] > rank[folder.name]:
                    bad.append(f"src/{f.relative_to(src)}:{line_of(text, m.start())}: upward: {folder.name} includes "
                               f"{target} (a higher layer): {m.group(0).strip()}")
                elif folder.name in PUBLIC_ONLY and target in rank and target != folder.name:
                    bad.append(f"src/{f.relative_to(src)}:{line_of(text, m.start())}: public: {folder.name} includes "
                               f"{target} (it uses the public C API only): {m.group(0).strip()}")
            if folder.name in PUBLIC_ONLY:
                for m in ANY_INCLUDE.finditer(text):
                    if m.group(1).startswith("shoal/detail/"):
                        bad.append(f"src/{f.relative_to(src)}:{line_of(text, m.start())}: public: {folder.name} "
                                   f"includes {m.group(1)} (it uses the public C API only)")
    return bad


def classify(root: pathlib.Path, top: pathlib.Path, f: pathlib.Path, target: str, src_folders: set[str]) -> Optional[str]:
    """None for an allowed include of `target` by program file `f` under `top`, else the rule it breaks."""
    src = root / "src"
    detail = root / "include" / "shoal" / "detail"
    # The program's own files: from the including file's folder, then each folder above it up to `top`.
    folder = f.parent
    while True:
        candidate = (folder / target).resolve()
        if candidate.is_file():
            if inside(candidate, top.resolve()):
                return None
            if inside(candidate, src.resolve()):
                return "src"
            if inside(candidate, detail.resolve()):
                return "detail"
        if folder == top:
            break
        folder = folder.parent
    if target.startswith("shoal/detail/"):
        return "detail"
    if target.startswith("shoal/"):
        return None
    first = target.split("/", 1)[0]
    if ("/" in target and first in src_folders) or "src/" in target or (src / target).is_file():
        return "src"
    return None


def program_violations(root: pathlib.Path) -> list[str]:
    src_folders = set(LAYERS) | ({p.name for p in (root / "src").iterdir() if p.is_dir()}
                                 if (root / "src").is_dir() else set())
    bad = []
    why = {"src": "an internal header of src/", "detail": "a body of the public headers, not API"}
    for name in PROGRAMS:
        top = root / name
        if not top.is_dir():
            continue
        for f in sorted(top.rglob("*")):
            if f.suffix not in SOURCES or not f.is_file():
                continue
            text = f.read_text(errors="replace")
            for m in ANY_INCLUDE.finditer(text):
                rule = classify(root, top, f, m.group(1), src_folders)
                if rule:
                    bad.append(f"{f.relative_to(root).as_posix()}:{line_of(text, m.start())}: {rule}: includes "
                               f"{m.group(1)} ({why[rule]}; programs use include/shoal/ only)")
    return bad


def violations(root: pathlib.Path) -> list[str]:
    return layer_violations(root / "src") + program_violations(root)


def check(root: pathlib.Path) -> int:
    missing = [name for name in ["src"] + PROGRAMS[:2] if not (root / name).is_dir()]
    if missing:
        print(f"{root} is not the repository root: no {', '.join(m + '/' for m in missing)}")
        return 1
    bad = violations(root)
    if bad:
        print("includes that cross the layers (src/: " + " -> ".join(LAYERS) + ", " + ", ".join(PUBLIC_ONLY) +
              " on the public C API only; " + ", ".join(PROGRAMS) + ": the public API):")
        for b in bad:
            print("  " + b)
        return 1
    print(f"layers ok: src/ one way, {', '.join('src/' + p + '/' for p in PUBLIC_ONLY)} on the public C API; "
          f"{', '.join(p + '/' for p in PROGRAMS)} on the public headers ({root})")
    return 0


def write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        src = root / "src"
        for layer in LAYERS:
            (src / layer).mkdir(parents=True)
        write(src / "common" / "a.hpp", '#include "shoal/error.hpp"\n#include <vector>\n')
        write(src / "common" / "check.hpp", "#pragma once\n")
        write(src / "runtime" / "b.cc", '#include "transport/t.hpp"\n#include "runtime/b.hpp"\n')
        write(src / "coll" / "c.cc", '#include "team/x.hpp"\n')
        write(root / "include" / "shoal" / "launch.hpp", "#pragma once\n")
        write(root / "include" / "shoal" / "detail" / "proxy_ring.hpp", "#pragma once\n")
        # Programs: public headers, their own files (also from a subfolder, and one in a folder named like a
        # layer), headers from outside the repository.
        write(root / "tools" / "run" / "launcher.cc", '#include "launcher.hpp"\n#include "shoal/launch.hpp"\n'
                                                      '#include <fmt/format.h>\n#include <sys/wait.h>\n')
        write(root / "tools" / "run" / "launcher.hpp", "#pragma once\n")
        write(root / "bench" / "device" / "options.hpp", "#pragma once\n")
        write(root / "bench" / "transport" / "t.hpp", "#pragma once\n")
        write(root / "bench" / "device" / "kernels.cu", '#include "device/options.hpp"\n#include "options.hpp"\n'
                                                        '#include "transport/t.hpp"\n#include <shoal/device/ptx.cuh>\n'
                                                        '#include <cuda_runtime.h>\n#include <nvshmem.h>\n')
        write(root / "examples" / "hello" / "hello.c", "#include <shoal/shoal.h>\n#include <stdio.h>\n")
        write(src / "shmem" / "shmem_internal.hpp", "#pragma once\n")
        write(src / "shmem" / "shmem_lib.cc", '#include "shmem.h"\n#include "shmem_internal.hpp"\n'
                                              '#include "shoal/shoal.h"\n#include "shmem/shmem_internal.hpp"\n')
        write(root / "python" / "src" / "ep_module.hpp", "#pragma once\n")
        write(root / "python" / "src" / "core.cc", '#include "shoal/shoal.h"\n#include <nanobind/nanobind.h>\n'
                                                   '#include "ep_module.hpp"\n#include <shoal/ep/normal.hpp>\n')
        if violations(root):
            print(f"self-test: a tree that keeps the layers was rejected: {violations(root)}")
            return 1
        cases = [
            (src / "transport" / "bad.hpp", '#pragma once\n  #  include "runtime/world_impl.hpp"\n', "upward", ":2:"),
            (root / "tools" / "run" / "bad.cc", '#include "bootstrap/bootstrap.hpp"\n', "src", ":1:"),
            (root / "tools" / "run" / "bad.cc", '// x\n#include "common/check.hpp"\n', "src", ":2:"),
            (root / "tools" / "run" / "bad.cc", '#include "../../src/common/check.hpp"\n', "src", ":1:"),
            (root / "bench" / "proxy" / "probe.cu", '#include "transport/proxy/ring_consumer.hpp"\n', "src", ":1:"),
            (root / "bench" / "proxy" / "probe.cu", '\n\n#include "shoal/detail/proxy_ring.hpp"\n', "detail", ":3:"),
            (root / "bench" / "proxy" / "probe.cu", '#include "../../include/shoal/detail/proxy_ring.hpp"\n', "detail",
             ":1:"),
            (root / "examples" / "hello" / "bad.c", "#include <shoal/detail/host_api.h>\n", "detail", ":1:"),
            (src / "shmem" / "bad.cc", '#include "shmem.h"\n#include "runtime/c_api.hpp"\n', "public", ":2:"),
            (src / "shmem" / "bad.cc", '#include "common/check.hpp"\n', "public", ":1:"),
            (src / "shmem" / "bad.cc", '\n#include "shoal/detail/host_api.h"\n', "public", ":2:"),
            (root / "python" / "src" / "bad.cc", '#include "transport/transport.hpp"\n', "src", ":1:"),
            (root / "python" / "src" / "bad.cc", '#include <shoal/detail/device_world.hpp>\n', "detail", ":1:"),
        ]
        for path, text, rule, line in cases:
            write(path, text)
            found = violations(root)
            if len(found) != 1 or f": {rule}: " not in found[0] or line not in found[0]:
                print(f"self-test: {path.name} ({text.strip()!r}) was not reported as one '{rule}' at {line}: {found}")
                return 1
            path.unlink()
        (src / "proxy").mkdir()
        if not any("not a known layer" in b for b in violations(root)):
            print("self-test: an unknown folder under src/ was not reported")
            return 1
    print("self-test ok: the layer check fails on an upward include in src/, on src/shmem/ reaching past the public "
          "C API, on an unknown src/ folder and on a program (tools/, bench/, examples/, python/) that includes src/ "
          "or shoal/detail/; a good tree passes")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(pathlib.Path(sys.argv[1])))
