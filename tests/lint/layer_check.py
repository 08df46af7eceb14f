#!/usr/bin/env python3
"""Fails on any upward #include between the layers of src/ (docs/design.md, "What may include what").

Layers, lowest first: common, bootstrap, heap, transport, runtime, team, coll. A file in src/<layer>/
may include headers of its own layer, of lower layers and of include/shoal/ ("shoal/..."); never of
a higher layer. A folder under src/ that is not in the list fails too (place it in the order first).

Usage: layer_check.py SRC_DIR      check a tree
       layer_check.py --self-test  prove the check fails on a bad tree and passes on a good one
"""
import pathlib
import re
import sys
import tempfile

LAYERS = ["common", "bootstrap", "heap", "transport", "runtime", "team", "coll", "shmem"]
SOURCES = {".cc", ".hpp", ".cu", ".cuh", ".h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"', re.MULTILINE)


def violations(src: pathlib.Path) -> list[str]:
    bad = []
    rank = {name: i for i, name in enumerate(LAYERS)}
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        if folder.name not in rank:
            bad.append(f"src/{folder.name}/: not a known layer (add it to LAYERS and docs/design.md)")
            continue
        for f in sorted(folder.rglob("*")):
            if f.suffix not in SOURCES:
                continue
            for m in INCLUDE.finditer(f.read_text(errors="replace")):
                target = m.group(1)
                if target in rank and rank[target] > rank[folder.name]:
                    line = f.read_text(errors="replace").count("\n", 0, m.start()) + 1
                    bad.append(f"src/{f.relative_to(src)}:{line}: {folder.name} includes {target} "
                               f"(a higher layer): {m.group(0).strip()}")
    return bad


def check(src: pathlib.Path) -> int:
    bad = violations(src)
    if bad:
        print("upward includes between src/ layers (order: " + " -> ".join(LAYERS) + "):")
        for b in bad:
            print("  " + b)
        return 1
    print(f"layers ok: {src}")
    return 0


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "src"
        for layer in LAYERS:
            (src / layer).mkdir(parents=True)
        (src / "common" / "a.hpp").write_text('#include "shoal/error.hpp"\n#include <vector>\n')
        (src / "runtime" / "b.cc").write_text('#include "transport/t.hpp"\n#include "runtime/b.hpp"\n')
        (src / "coll" / "c.cc").write_text('#include "team/x.hpp"\n')
        if violations(src):
            print("self-test: a tree with only downward includes was rejected")
            return 1
        (src / "transport" / "bad.hpp").write_text('#pragma once\n  #  include "runtime/world_impl.hpp"\n')
        found = violations(src)
        if len(found) != 1 or "transport includes runtime" not in found[0] or ":2:" not in found[0]:
            print(f"self-test: transport -> runtime was not reported as expected: {found}")
            return 1
        (src / "transport" / "bad.hpp").unlink()
        (src / "proxy").mkdir()
        if not violations(src):
            print("self-test: an unknown folder under src/ was not reported")
            return 1
    print("self-test ok: the layer check fails on an upward include and on an unknown folder")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(pathlib.Path(sys.argv[1])))
