#!/usr/bin/env python3
"""Fails when the EP layer reaches past shoal's public API (issue 12: ep/ is a shoal user).

Checked: every source under ep/ and the EP nanobind modules (python/src/ep_*.cc).
  detail   an #include of shoal/detail/... (inline bodies of the public headers, not API)
  src      an #include of an internal header: "<layer>/..." for a folder of src/ (runtime/, heap/, ...),
           or any path through src/
  cmake    an ep/ CMakeLists.txt that puts src/ on the include path, or links shoal_flags (which does)
           or one of the internal layer libraries (shoal_common, shoal_heap, ...)

Usage: ep_public_api_check.py ROOT      check the tree at ROOT (the repository)
       ep_public_api_check.py --self-test  prove that each rule fails on a bad tree and passes on a good one
"""
import pathlib
import re
import sys
import tempfile

SOURCES = {".cc", ".cpp", ".hpp", ".h", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
LAYERS = ["common", "bootstrap", "heap", "transport", "runtime", "team", "coll", "shmem"]
CMAKE_BAD = [
    (re.compile(r"\$\{(PROJECT|CMAKE)_SOURCE_DIR\}/src\b"), "puts src/ on the include path"),
    (re.compile(r"\bshoal_flags\b"), "links shoal_flags (its include path has src/)"),
    (re.compile(r"\bshoal_(" + "|".join(LAYERS) + r")\b"), "links an internal layer library"),
]


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def files(root: pathlib.Path) -> list[pathlib.Path]:
    out = [p for p in sorted((root / "ep").rglob("*")) if p.is_file()]
    out += sorted((root / "python" / "src").glob("ep_*.cc"))
    return out


def violations(root: pathlib.Path) -> list[str]:
    layers = set(LAYERS) | {p.name for p in (root / "src").iterdir() if p.is_dir()} if (root / "src").is_dir() \
        else set(LAYERS)
    bad = []
    for f in files(root):
        rel = f.relative_to(root).as_posix()
        text = f.read_text(errors="replace")
        if f.suffix in SOURCES:
            for m in INCLUDE.finditer(text):
                path = m.group(1)
                where = f"{rel}:{line_of(text, m.start())}"
                if path.startswith("shoal/detail/"):
                    bad.append(f"{where}: detail: includes {path} (use a public header of include/shoal/)")
                elif ("/" in path and path.split("/", 1)[0] in layers) or "src/" in path:
                    bad.append(f"{where}: src: includes {path} (an internal header of src/)")
        elif f.name == "CMakeLists.txt":
            for rx, why in CMAKE_BAD:
                for m in rx.finditer(text):
                    bad.append(f"{rel}:{line_of(text, m.start())}: cmake: {why}: {m.group(0)}")
    return bad


def check(root: pathlib.Path) -> int:
    if not (root / "ep").is_dir():
        print(f"no ep/ folder under {root}")
        return 1
    bad = violations(root)
    if bad:
        print("the EP layer uses more than shoal's public API (docs/ep.md):")
        for b in bad:
            print("  " + b)
        return 1
    print(f"ep/ uses only the public API: {len(files(root))} files checked")
    return 0


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "ep" / "ll").mkdir(parents=True)
        (root / "src" / "runtime").mkdir(parents=True)
        (root / "python" / "src").mkdir(parents=True)
        good = '#include <shoal/device/ptx.cuh>\n#include "shoal/world.hpp"\n#include "ll_common.cuh"\n' \
               '#include <cuda/atomic>\n'
        (root / "ep" / "ll" / "a.cu").write_text(good)
        (root / "ep" / "CMakeLists.txt").write_text("target_link_libraries(shoal_ep PUBLIC shoal)\n"
                                                   "target_include_directories(shoal_ep PRIVATE "
                                                   "${PROJECT_SOURCE_DIR}/include)\n")
        (root / "python" / "src" / "ep_x.cc").write_text('#include "shoal/error.hpp"\n')
        (root / "python" / "src" / "core.cc").write_text('#include "runtime/world_impl.hpp"\n')  # not EP: ignored
        if violations(root):
            print(f"self-test: a clean tree was rejected: {violations(root)}")
            return 1
        cases = [
            (root / "ep" / "ll" / "b.cc", '// x\n#include "shoal/detail/device_registry.h"\n', "detail", ":2:"),
            (root / "ep" / "ll" / "c.cuh", '#  include "runtime/world_impl.hpp"\n', "src", ":1:"),
            (root / "ep" / "ll" / "d.hpp", '#include "../../src/heap/x.hpp"\n', "src", ":1:"),
            (root / "python" / "src" / "ep_y.cc", '#include <shoal/detail/host_api.h>\n', "detail", ":1:"),
            (root / "ep" / "ll" / "CMakeLists.txt", "target_link_libraries(x PRIVATE shoal_flags)\n", "cmake", ":1:"),
            (root / "ep" / "ll" / "CMakeLists.txt", "\n\ntarget_include_directories(x PRIVATE ${CMAKE_SOURCE_DIR}/src)\n",
             "cmake", ":3:"),
            (root / "ep" / "ll" / "CMakeLists.txt", "target_link_libraries(x PRIVATE shoal_heap)\n", "cmake", ":1:"),
        ]
        for path, text, rule, line in cases:
            path.write_text(text)
            found = violations(root)
            if len(found) != 1 or f": {rule}: " not in found[0] or line not in found[0]:
                print(f"self-test: {path.name} ({text.strip()!r}) was not reported as one '{rule}' at {line}: {found}")
                return 1
            path.unlink()
    print("self-test ok: each rule fails on a bad tree, a clean tree passes")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(self_test() or check(pathlib.Path(sys.argv[1])))
