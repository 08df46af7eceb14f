#!/usr/bin/env python3
"""Lint of the installed headers (include/shoal/**): the include graph and the public/detail split.

Fails on:
  cycle     any include cycle among the installed headers (a -> b -> ... -> a)
  upward    a detail header (include/shoal/detail/) including a public header that itself reaches a
            detail header: bodies never include API headers back (public -> detail, one way). Detail
            may include leaf public headers (types, device_world, scope, ptx).
  detail    a `namespace shoal::detail` / `namespace detail` block in a public device header
            (include/shoal/device/): bodies live in include/shoal/detail/
  body      a function body of more than MAX_BODY_LINES lines of code in a public device header

Usage: header_layers_check.py <repo root>     check the tree (runs the self-test first)
       header_layers_check.py --self-test      only prove that each rule fails on a bad tree
"""
import pathlib
import re
import sys
import tempfile

MAX_BODY_LINES = 10
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"](shoal/[^>"]+)[>"]', re.M)
DETAIL_NS_RE = re.compile(r"\bnamespace\s+(shoal::)?detail\b")
HEADER_EXTS = (".h", ".hpp", ".cuh")


def headers(root):
    inc = root / "include"
    return {p.relative_to(inc).as_posix(): p for p in sorted((inc / "shoal").rglob("*")) if p.suffix in HEADER_EXTS}


def graph(hs):
    return {name: [m for m in INCLUDE_RE.findall(path.read_text()) if m in hs] for name, path in hs.items()}


def find_cycle(g):
    """One include cycle as a list of headers (first == last), or None."""
    state = {}  # 1: on the DFS stack, 2: done
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in g[n]:
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in g:
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def reaches_detail(g, start):
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        for m in g[n]:
            if m.startswith("shoal/detail/"):
                return True
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return False


def strip_code(text):
    """Comments, string and char literals and preprocessor lines blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i) or (c == "#" and (i == 0 or text[i - 1] == "\n")):
            j = text.find("\n", i)
            j = n if j < 0 else j
            while c == "#" and j < n and text[j - 1] == "\\":  # continued directive
                j = text.find("\n", j + 1)
                j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_template_heads(head):
    """head without its `template <...>` parameter lists (their `class` is no class definition)."""
    out, i = [], 0
    while True:
        m = re.compile(r"\btemplate\s*<").search(head, i)
        if not m:
            return "".join(out) + head[i:]
        out.append(head[i:m.start()])
        depth, j = 1, m.end()
        while j < len(head) and depth:
            depth += {"<": 1, ">": -1}.get(head[j], 0)
            j += 1
        i = j


def long_bodies(text):
    """(line, lines) of every function body with more than MAX_BODY_LINES lines of code (comments and
    preprocessor lines not counted) between its braces."""
    code = strip_code(text)
    code_lines = code.split("\n")
    found = []
    stack = []  # (is_function_body, line of '{')
    head_start = 0  # start of the text since the last ; { or }
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            head = drop_template_heads(code[head_start:i])
            in_function = any(f for f, _ in stack)
            is_fn = (not in_function and ")" in head and
                     not re.search(r"\b(namespace|struct|class|enum|union)\b", head) and
                     not re.search(r"=\s*$", head.strip()) and not head.strip().endswith("]"))
            stack.append((is_fn, line))
            head_start = i + 1
        elif c == "}":
            if stack:
                is_fn, start = stack.pop()
                if is_fn:
                    lines = code_lines[start:line - 1]  # strictly between the braces
                    n = sum(1 for ln in lines if ln.strip())
                    if n > MAX_BODY_LINES:
                        found.append((start, n))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def check(root):
    hs = headers(root)
    g = graph(hs)
    problems = []
    cycle = find_cycle(g)
    if cycle:
        problems.append("cycle: " + " -> ".join(cycle))
    for name in g:
        if not name.startswith("shoal/detail/"):
            continue
        for m in g[name]:
            if not m.startswith("shoal/detail/") and reaches_detail(g, m):
                problems.append(f"upward: {name} includes {m}, a public header with detail bodies behind it")
    for name, path in hs.items():
        if not name.startswith("shoal/device/"):
            continue
        text = path.read_text()
        code = strip_code(text)
        for m in DETAIL_NS_RE.finditer(code):
            problems.append(f"detail: {name}:{code.count(chr(10), 0, m.start()) + 1}: a detail namespace block in a "
                            "public device header (bodies go to include/shoal/detail/)")
        for start, lines in long_bodies(text):
            problems.append(f"body: {name}:{start}: a function body of {lines} lines in a public device header "
                            f"(max {MAX_BODY_LINES}; move it to include/shoal/detail/)")
    return problems


def self_test():
    """Each rule must fire on a tree built to break it, and stay quiet on a clean one."""
    cases = {
        "clean": ({"shoal/a.h": '#include "shoal/detail/b.h"\n', "shoal/detail/b.h": "int b;\n",
                   "shoal/device/c.cuh": '#include "shoal/detail/b.h"\ninline int f() { return 1; }\n'}, None),
        "cycle": ({"shoal/a.h": '#include "shoal/b.h"\n', "shoal/b.h": '#include <shoal/a.h>\n'}, "cycle"),
        "upward": ({"shoal/device/api.cuh": '#include "shoal/detail/body.cuh"\n',
                    "shoal/detail/body.cuh": '#include "shoal/detail/other.cuh"\n',
                    "shoal/detail/other.cuh": '#include "shoal/device/api.cuh"\n'}, "cycle"),
        "upward2": ({"shoal/device/api.cuh": '#include "shoal/detail/x.cuh"\n', "shoal/detail/x.cuh": "\n",
                     "shoal/detail/y.cuh": '#include "shoal/device/api.cuh"\n'}, "upward"),
        "detail": ({"shoal/device/x.cuh": "namespace shoal::detail {\nint x;\n}\n"}, "detail"),
        "body": ({"shoal/device/x.cuh": "namespace shoal::device {\ntemplate <class T>\nT f(T a) {\n" +
                  "  a += 1;\n" * (MAX_BODY_LINES + 1) + "  return a;\n}\n}\n"}, "body"),
    }
    ok = True
    for what, (files, expect) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            for name, text in files.items():
                p = root / "include" / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
            problems = check(root)
            kinds = {p.split(":", 1)[0] for p in problems}
            if (expect is None and problems) or (expect is not None and expect not in kinds):
                print(f"self-test {what}: expected {expect or 'no problem'}, got {problems}")
                ok = False
    return ok


def main():
    if not self_test():
        print("header_layers_check: the self-test failed (a rule no longer catches what it must)")
        return 1
    if sys.argv[1:] == ["--self-test"]:
        print("header_layers_check: self-test passed")
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(pathlib.Path(sys.argv[1]))
    for p in problems:
        print(p)
    if problems:
        print(f"header_layers_check: {len(problems)} problem(s)")
        return 1
    print("header_layers_check: include graph acyclic, detail bodies only under include/shoal/detail/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
