#!/usr/bin/env python3
"""Prints the end of a test run from ctest's JUnit file (ctest --output-junit FILE): how many tests
passed, failed and were skipped, the failed ones by name, and why the skipped ones skipped, grouped by
the reason each printed (no GPU, no torch, ...). scripts/test.sh runs it after ctest.

usage: ctest_summary.py JUNIT_XML
"""
import collections
import re
import sys
import xml.etree.ElementTree as ET

# A skipped test says why on a line with SKIP (the GPU tests' "SKIP: no usable GPU", the launchers'
# "SKIP (no torch)") or, under pytest -rs, "SKIPPED [n] file:line: reason".
SKIP_LINE = re.compile(r"\bSKIP(?:PED)?\b[^A-Za-z0-9]*(.*)", re.IGNORECASE)
# pytest's closing count ("1 skipped in 0.07s") says that, not why.
PYTEST_COUNT = re.compile(r"^\d+ skipped\b.* in [\d.]+s\b")
PE_PREFIX = re.compile(r"^\[\d+\]\s*")
CAUSES = (  # (pattern in the reason, the cause it is counted under), first match wins
    (re.compile(r"torch", re.IGNORECASE), "no torch"),
    (re.compile(r"\bGPU|CUDA device|no CUDA|cuda backend", re.IGNORECASE), "no GPU"),
    (re.compile(r"\bUCX\b"), "no UCX"),
    (re.compile(r"oshmem|oshcc|oshrun", re.IGNORECASE), "no OpenSHMEM (OSHMEM) to compare with"),
)


def skip_reason(output: str) -> str:
    reasons = []
    for line in output.splitlines():
        line = PE_PREFIX.sub("", line).strip()
        if PYTEST_COUNT.match(line):
            continue
        m = SKIP_LINE.search(line)
        if m and m.group(1).strip():
            reasons.append(m.group(1).strip())
    for reason in reasons:
        for pattern, cause in CAUSES:
            if pattern.search(reason):
                return cause
    if reasons:
        text = reasons[-1].strip(" ()")
        return text if len(text) <= 80 else text[:77] + "..."
    return "no reason printed"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        suite = ET.parse(sys.argv[1]).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"ctest_summary.py: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    passed, failed, skipped = [], [], collections.Counter()
    for case in suite.iter("testcase"):
        name = case.get("name", "?")
        out = "".join(e.text or "" for e in case.iter("system-out"))
        status = case.get("status", "")
        if case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped[skip_reason(out)] += 1
        elif case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed.append(name)
        else:
            passed.append(name)
    total = len(passed) + len(failed) + sum(skipped.values())
    why = ", ".join(f"{n} {cause}" for cause, n in skipped.most_common())
    print(f"== {total} tests: {len(passed)} passed, {len(failed)} failed, {sum(skipped.values())} skipped"
          + (f" ({why})" if why else ""))
    if failed:
        print("== failed: " + " ".join(sorted(failed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
