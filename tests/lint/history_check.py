#!/usr/bin/env python3
"""Fails on work-log history in the code's comments and in the design docs.

Comments say what the code does and why, in present tense, and the design docs describe today's design. Dated runs
and what was tried on the way belong in docs/results/ (pages of dated runs) and in git. Three marks of a work log
are refused:
  - a work-log label: "session 16", "sessions 16-17", "session-18" (any case);
  - a commit hash: 7 to 12 or 40 lowercase hex digits, at least one of them a digit and one a letter, standing
    alone. Hex that is part of a longer name is not one: a file name (ab-fea0a03.md), a version (1.2-g5717c21), a
    constant (0x5717c21f), a hash of another project written owner/repo@hash (as GitHub links it);
  - a date, YYYY-MM-DD.
Code (SCOPE_CODE) is read in its comments and Python docstrings only: string literals and constants are data (a
digit table "0123456789abcdef" is no commit). Docs (docs/*.md, not docs/results/, and README.md) are read whole.
Issue numbers and version numbers pass: an issue names a piece of work, a version a release.

Usage: history_check.py ROOT         check ROOT
       history_check.py --self-test  prove the check fails on each mark and passes legitimate text
"""
import io
import pathlib
import re
import sys
import tempfile
import tokenize

SCOPE_CODE = ("include", "src", "ep", "python", "codegen", "examples", "cmake", "tools", "bench")
C_LIKE = {".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".inc"}
PYTHON = {".py", ".pyi"}
HASH_COMMENTS = {".cmake", ".in", ".sh"}  # and CMakeLists.txt, and scripts with a shebang

LABEL = re.compile(r"\bsessions?[ \t-]+\d+", re.IGNORECASE)
# A run of hex digits that no name character touches; '0x' ends in a letter, so a constant never matches.
HEX = re.compile(r"(?<![0-9A-Za-z_@/-])[0-9a-f]{7,40}(?![0-9A-Za-z_@/-]|\.[0-9A-Za-z])")
DATE = re.compile(r"(?<![0-9])(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?![0-9])")


def is_commit_hash(token: str) -> bool:
    return (7 <= len(token) <= 12 or len(token) == 40) and re.search(r"[0-9]", token) and re.search(r"[a-f]", token)


def c_comments(text: str) -> str:
    """`text` with everything but its // and /* */ comments blanked (newlines kept, so offsets and lines hold)."""
    out = [c if c == "\n" else " " for c in text]
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = text[i:j]
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = text[i:j]
            i = j
        elif c == '"' and i > 0 and text[i - 1] == "R" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_")):
            m = re.match(r'"([^(\s]*)\(', text[i:])  # raw string R"delim( ... )delim"
            if not m:
                i += 1
                continue
            j = text.find(")" + m.group(1) + '"', i)
            i = n if j < 0 else j + len(m.group(1)) + 2
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                i += 1  # a digit separator (1'000), not a character literal
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return "".join(out)


def python_comments(text: str) -> str:
    """`text` with everything but its comments and docstrings (string statements) blanked."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    out = [c if c == "\n" else " " for c in text]
    previous = tokenize.NEWLINE
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            keep = tok.type == tokenize.COMMENT or (
                tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT))
            if keep:
                a = starts[tok.start[0] - 1] + tok.start[1]
                b = starts[tok.end[0] - 1] + tok.end[1]
                out[a:b] = text[a:b]
            if tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok.type
    except (tokenize.TokenError, IndentationError):
        return text  # not Python after all: read it whole
    return "".join(out)


def hash_comments(text: str) -> str:
    """`text` with everything but its # comments (a # at the start of a line or after a blank) blanked."""
    out = []
    for line in text.splitlines(keepends=True):
        m = re.search(r"(^|\s)#", line)
        out.append(" " * m.end(1) + line[m.end(1):] if m else "".join(c if c == "\n" else " " for c in line))
    return "".join(out)


def readable_part(path: pathlib.Path) -> str | None:
    """What of `path` the check reads (comments of code, all of a doc), or None for a file it does not read."""
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        return None
    if path.suffix == ".md":
        return text
    if path.suffix in C_LIKE:
        return c_comments(text)
    if path.suffix in PYTHON:
        return python_comments(text)
    if path.suffix in HASH_COMMENTS or path.name == "CMakeLists.txt" or (path.suffix == "" and text.startswith("#!")):
        return hash_comments(text)
    return None


def files(root: pathlib.Path) -> list[pathlib.Path]:
    found = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    for top in SCOPE_CODE:
        found += sorted(p for p in (root / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [p for p in found if p.is_file()]


def violations(root: pathlib.Path) -> list[str]:
    bad = []
    for path in files(root):
        text = readable_part(path)
        if text is None:
            continue
        found = [(m.start(), "work-log label", m.group()) for m in LABEL.finditer(text)]
        found += [(m.start(), "commit hash", m.group()) for m in HEX.finditer(text) if is_commit_hash(m.group())]
        found += [(m.start(), "date", m.group()) for m in DATE.finditer(text)]
        for offset, what, token in sorted(found):
            line = text.count("\n", 0, offset) + 1
            bad.append(f"{path.relative_to(root)}:{line}: {what} '{token}'")
    return bad


def self_test() -> int:
    bad_cases = {
        "include/shoal/a.cuh": "// Faster than the old order (session 23).\nint a;\n",
        "src/b.cc": "int b; /* the order of the binary\n   at 5717c21 */\n",
        "src/c.hpp": "/// sessions 16-17: a p + quiet from every thread\nint c;\n",
        "src/d.cu": "// the session-18 probe\n",
        "python/e.py": '"""Measured on 2026-12-02."""\nx = 1\n',
        "python/f.py": "x = 1  # see a2c2ff0f\n",
        "ep/g.cuh": "// full hash 2e33a28d8f0c1b2a3e4f5a6b7c8d9e0f1a2b3c4d\n",
        "codegen/CMakeLists.txt": "# Session 14 decided it\n",
        "docs/h.md": "Built against commit `df2814155acf`.\n",
        "README.md": "As of session 25.\n",
        "bench/rma/i.cuh": "// the rows of 2026-12-03\n",
    }
    good = {
        "src/ok.cc": (
            'constexpr char kDigits[] = "0123456789abcdef";  // the hex digits\n'
            "constexpr unsigned long kOffset = 0xcbf29ce484222325;  // FNV-1a\n"
            'const char* kNote = "session 16";\n'
            "char c = 'a'; int million = 1'000'000;\n"
            "// issue 37 tracks the split; CUDA 12.8, NVSHMEM 3.4.5-0; round 0's signal; a pytest session\n"
            "class session {};\n"),
        "python/ok.py": 'X = "2026-12-02 at 5717c21"\n"""A module: issue 12\'s list."""\n',
        "docs/ok.md": (
            "NVSHMEM at NVIDIA/nvshmem@df2814155acf (tag v3.4.5-0), DeepEP at deepseek-ai/DeepEP@567632d.\n"
            "The A/B table is docs/results/gpu-1xh200/protocol/ab-fea0a03.md; the suite in tests-sos-ca9cb12.\n"
            "shoal 1.2.0-g5717c21 printed 0x7f3a2b1c00 and the secret 00112233445566778899aabbccddeeff.\n"
            "Words without digits (deadbeef, defaced) and numbers without letters (1234567) are neither.\n"
            "Every PE runs the same session; issue 38 tracks the rest.\n"),
        "docs/results/run.md": "Session 16 (2026-12-01) at 5717c21.\n",
        "tests/probe/k.cu": "// session 20's rows\n",
    }
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)

        def write(cases: dict[str, str]) -> None:
            for name, text in cases.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text)

        write(good)
        if bad := violations(root):
            print("self-test: legitimate text failed the check:", *bad, sep="\n  ")
            return 1
        for name, text in bad_cases.items():
            write({name: text})
            found = violations(root)
            if not found:
                print(f"self-test: {name} passed the check: {text!r}")
                return 1
            (root / name).unlink()
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
        print(f"{len(bad)} mark(s) of work-log history in code comments or design docs: say what and why in present "
              f"tense, and move dated runs to docs/results/ (see the top of {pathlib.Path(__file__).name})")
        return 1
    print("no work-log labels, commit hashes or dates in code comments or design docs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
