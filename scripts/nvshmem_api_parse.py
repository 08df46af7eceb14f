#!/usr/bin/env python3
"""Lists the C functions an NVSHMEM-style header set declares, from its preprocessed text.

parse(text, prefixes) -> {name: Decl}: every top-level function declaration or inline definition whose name
starts with one of `prefixes`, with its return type, parameter types (names dropped) and where it is
callable (host, device or both; no CUDA attribute means host). Used by scripts/nvshmem_coverage.py on
NVSHMEM's own headers and on shoal's compat headers.
"""
import re
import subprocess

ATTR = re.compile(r"__attribute__\s*\(\((host|device|global)\)\)")
OTHER_ATTR = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
DECL = re.compile(
    r"(?P<pre>(?:[A-Za-z_][\w]*[\s\*]+|__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)+?)"
    r"(?P<name>\b[A-Za-z_]\w*)\s*\((?P<params>[^(){};]*)\)\s*(?:noexcept\s*)?(?P<end>[;{])")
KEYWORDS = {"static", "inline", "extern", "__inline__", "__forceinline__", "constexpr", "__device__", "__host__",
            "typedef", "return", "if", "while", "for", "switch", "sizeof", "else", "case", "do"}
QUALS = {"const", "volatile", "struct", "unsigned", "signed", "long", "short", "int", "char", "void", "float",
         "double", "enum", "union"}


class Decl:
    def __init__(self, ret, params, space):
        self.ret, self.params, self.space = ret, params, space

    def __repr__(self):
        return f"{self.ret} ({', '.join(self.params)}) [{'/'.join(sorted(self.space))}]"


def norm_type(t):
    t = re.sub(r"\s+", " ", t.replace("*", " * ").replace("&", " & ")).strip()
    return t.replace(" *", "*").replace("* ", "*").replace(" &", "&")


def param_type(p):
    """'const int *source' -> 'const int*'; 'int' -> 'int'; 'void' -> ''."""
    p = OTHER_ATTR.sub("", p).strip()
    if p in ("void", ""):
        return ""
    p = re.sub(r"=.*$", "", p).strip()  # default arguments
    toks = re.findall(r"[A-Za-z_]\w*|\*|&|\[\]|\[\w*\]|::|<[^>]*>|\S", p)
    if len(toks) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and toks[-1] not in QUALS:
        # drop the parameter name unless it is the only identifier (a bare typedef name)
        idents = [t for t in toks if re.fullmatch(r"[A-Za-z_]\w*", t) and t not in ("const", "volatile", "struct")]
        if len(idents) >= 2 and not all(t in QUALS for t in idents):
            toks = toks[:-1]
    out = []
    for t in toks:
        if t.startswith("[") and out:
            out.append("*")  # array parameter: a pointer
        else:
            out.append(t)
    return norm_type(" ".join(out))


def parse(text, prefixes):
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    found = {}
    for m in DECL.finditer(text):
        name = m.group("name")
        if not name.startswith(prefixes):
            continue
        pre = m.group("pre")
        space = set(ATTR.findall(pre)) or {"host"}
        if "global" in space:
            continue
        ret_toks = [t for t in OTHER_ATTR.sub(" ", ATTR.sub(" ", pre)).split() if t not in KEYWORDS]
        ret = norm_type(" ".join(ret_toks))
        if not ret or ret in ("return", "else") or "=" in ret:
            continue
        params = [param_type(p) for p in split_params(m.group("params"))]
        params = [p for p in params if p != ""]
        d = found.get(name)
        if d is None:
            found[name] = Decl(ret, params, space)
        else:
            d.space |= space
    return found


def split_params(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def preprocess(nvcc, include_dirs, headers, defines=(), device=False):
    """nvcc -E of a translation unit that includes `headers`; the device pass when device=True."""
    src = "".join(f"#include <{h}>\n" for h in headers)
    cmd = [nvcc, "-E", "-x", "cu", "-std=c++17", "-arch=sm_90", "-"]
    if device:
        cmd.insert(2, "--cuda")
        cmd[cmd.index("-E")] = "-E"
        cmd += ["-D__CUDA_ARCH__=900"]
    for d in include_dirs:
        cmd += ["-I", d]
    for d in defines:
        cmd += [f"-D{d}"]
    return subprocess.run(cmd, input=src, capture_output=True, text=True, check=True).stdout
