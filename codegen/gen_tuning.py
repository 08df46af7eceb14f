#!/usr/bin/env python3
"""shoal's measured defaults as code: src/common/tuning_gen.hpp from the study's defaults.json.

The study (bench/study/study.py, scripts/study.sh) measures every on-stream collective algorithm and channel count
at each size and PE count and writes the crossovers, with the machine and commit they came from, to
docs/results/study/defaults.json. This generator turns that file into the one table the library reads
(src/common/tuning.cc looks a row up; src/coll/coll_stream.cc chooses the collectives' algorithm with it,
src/runtime/stream_api.cc the on-stream put/get path). A variable that the user sets (SHOAL_COLL_LL_BYTES,
SHOAL_COLL_CE_BYTES, SHOAL_COLL_CHANNEL_BYTES, SHOAL_STREAM_KERNEL_BYTES) still wins.

Run from anywhere: python3 codegen/gen_tuning.py [--defaults FILE] [--check | --list]
"""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import generated  # noqa: E402  (the mark of a generated file)

ROOT = pathlib.Path(__file__).resolve().parent.parent
GENERATOR = "codegen/gen_tuning.py"
OUTPUT = ROOT / "src/common/tuning_gen.hpp"
DEFAULTS = ROOT / "docs/results/study/defaults.json"
COLLECTIVES = ("allreduce", "broadcast", "fcollect", "alltoall")
FIELDS = ("n_pes", "ll_max_bytes", "ce_min_bytes", "bytes_per_channel")
STREAM_FIELDS = ("n_pes", "kernel_max_bytes")


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(defaults):
    src = defaults["source"]
    lines = [
        f"// {generated.marker(GENERATOR)}",
        "// shoal's on-stream defaults per PE count (collectives: per collective), from docs/results/study/defaults.json",
        "// (the study's measured crossovers). Looked up by src/common/tuning.cc.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "",
        '#include "common/tuning.hpp"',
        "",
        "namespace shoal::detail::tuning {",
        "",
        f"inline constexpr char kMachine[] = {c_string(src.get('machine', ''))};",
        f"inline constexpr char kCommit[] = {c_string(src.get('commit', ''))};",
        f"inline constexpr char kDate[] = {c_string(src.get('date', ''))};",
        f"inline constexpr char kCommand[] = {c_string(src.get('command', ''))};",
        "",
    ]
    for name in COLLECTIVES:
        rows = sorted(defaults["coll"].get(name, []), key=lambda r: r["n_pes"])
        if not rows:
            sys.exit(f"gen_tuning: {name}: no rows in the defaults file")
        lines.append(f"inline constexpr coll_row k_{name}[] = {{")
        for r in rows:
            missing = [f for f in FIELDS if f not in r]
            if missing:
                sys.exit(f"gen_tuning: {name}: a row lacks {', '.join(missing)}")
            if r["n_pes"] < 2 or r["bytes_per_channel"] <= 0:
                sys.exit(f"gen_tuning: {name}: n_pes must be >= 2 and bytes_per_channel > 0 ({r})")
            lines.append("    {" + ", ".join(f"{int(r[f])}" + ("u" if f != "n_pes" else "") for f in FIELDS) + "},")
        lines.append("};")
    rows = sorted(defaults.get("stream_rma", []), key=lambda r: r["n_pes"])
    if not rows:
        sys.exit("gen_tuning: stream_rma: no rows in the defaults file")
    lines.append("inline constexpr stream_row k_stream_rma[] = {")
    for r in rows:
        missing = [f for f in STREAM_FIELDS if f not in r]
        if missing:
            sys.exit(f"gen_tuning: stream_rma: a row lacks {', '.join(missing)}")
        if r["n_pes"] < 2 or r["kernel_max_bytes"] < 0:
            sys.exit(f"gen_tuning: stream_rma: n_pes must be >= 2 and kernel_max_bytes >= 0 ({r})")
        lines.append(f"    {{{int(r['n_pes'])}, {int(r['kernel_max_bytes'])}u}},")
    lines.append("};")
    lines += ["", "}  // namespace shoal::detail::tuning", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--defaults", default=str(DEFAULTS), help="the study's defaults.json")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="fail when the checked-in output differs")
    g.add_argument("--list", action="store_true", help="print the outputs (repository paths)")
    a = ap.parse_args()
    if a.list:
        print(OUTPUT.relative_to(ROOT).as_posix())
        return 0
    text = render(json.loads(pathlib.Path(a.defaults).read_text()))
    if a.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python3 {GENERATOR}", file=sys.stderr)
            return 1
        print(f"{OUTPUT.relative_to(ROOT)} is up to date")
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
