#!/usr/bin/env python3
"""Keeps README.md's examples working: every ```c, ```cuda and ```python block is taken from the
README and checked, so a block that no longer compiles, runs or matches the API fails here.

  c          compiled as C11 and as C++20 (-Wall -Werror) against the build tree, run on 2 PEs
  cuda       compiled and linked by nvcc (-Werror all-warnings); one with <nvshmem.h> through the
             NVSHMEM compat headers; with --gpu, run on 2 PEs
  python     every call into shoal (shoal.core, shoal.ep, the Buffer it makes) bound to the real
             signature; the shoal.core block run on 2 host-memory PEs; with --gpu, the shoal.ep
             block run under torchrun on 2 ranks (skipped without torch)

A block that prints "PE <me> of <n>: got <value> from PE <left>" must print it on every PE with the
left neighbour's number as the value (a list of them for the Python block). The README must hold one
block of each kind (C, CUDA device code, NVSHMEM, shoal.core, shoal.ep), and every repository path and
relative link it names must exist.

usage: readme_blocks_test.py --source DIR --build DIR --shoalrun PATH --lib PATH [--nvcc PATH]
                             [--python PATH] [--gpu]
Exits 0 when every check passed, 1 on a failure, 77 (ctest's skip) with --gpu on a machine without a GPU.
"""
import argparse
import ast
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

SKIP = 77
KINDS = {"c": "C host program", "cuda": "CUDA device program", "nvshmem": "NVSHMEM program",
         "core": "shoal.core script", "moe": "shoal.ep (MoE) script"}
RING_LINE = re.compile(r"PE (\d+) of (\d+): got (\[[\d, ]*\]|-?\d+) from PE (\d+)")
failures = []


def fail(msg):
    print(f"FAIL: {msg}")
    failures.append(msg)


def blocks(readme):
    """(language, first line number, text) of every fenced block."""
    out, lang, start, lines = [], None, 0, []
    for n, line in enumerate(readme.splitlines(), 1):
        fence = re.match(r"^```(\S*)\s*$", line)
        if fence and lang is None:
            lang, start, lines = fence.group(1), n + 1, []
        elif line.startswith("```") and lang is not None:
            out.append((lang, start, "\n".join(lines) + "\n"))
            lang = None
        elif lang is not None:
            lines.append(line)
    return out


def kind_of(lang, text):
    if lang == "c":
        return "c"
    if lang == "cuda":
        return "nvshmem" if "<nvshmem.h>" in text else "cuda"
    if lang == "python":
        if "shoal.ep" in text:
            return "moe"
        if "shoal.core" in text:
            return "core"
    return None


def run(cmd, env=None, timeout=300, cwd=None):
    shown = " ".join(cmd)
    print(f"== {shown}", flush=True)
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or "") if isinstance(e.stdout, str) else ""
    if p.stdout:
        print(p.stdout, end="" if p.stdout.endswith("\n") else "\n")
    return p.returncode, p.stdout


def check_ring(what, out, npes):
    """Every PE printed the ring line with its left neighbour's number."""
    seen = {}
    for m in RING_LINE.finditer(out):
        me, n, value, left = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4))
        values = json.loads(value) if value.startswith("[") else [int(value)]
        if n != npes or left != (me - 1) % npes or not values or any(v != left for v in values):
            fail(f"{what}: wrong line '{m.group(0)}' (expected the value {(me - 1) % npes} from PE {(me - 1) % npes})")
        seen[me] = True
    missing = [pe for pe in range(npes) if pe not in seen]
    if missing:
        fail(f"{what}: no 'PE <me> of {npes}: got ... from PE ...' line from PE(s) {missing}")


# --- Python blocks: bind every call into shoal to its signature, in a child with the package importable.
BIND_CHILD = r"""
import ast, importlib, inspect, json, sys
src = sys.stdin.read()
tree = ast.parse(src)
modules = {}   # local name -> module or object imported from shoal
instances = {}  # variable -> class it was made from
problems = []
for node in ast.walk(tree):
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name.split(".")[0] != "shoal":
                continue
            module = importlib.import_module(a.name)  # `import a.b.c` binds a; `import a.b.c as x` binds a.b.c
            modules[a.asname or "shoal"] = module if a.asname else importlib.import_module("shoal")
    elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "shoal":
        mod = importlib.import_module(node.module)
        for a in node.names:
            if not hasattr(mod, a.name):
                problems.append(f"line {node.lineno}: {node.module} has no {a.name}")
            else:
                modules[a.asname or a.name] = getattr(mod, a.name)

def resolve(expr):
    # The shoal object an expression names (a.b.c from an imported name, or a method of a Buffer variable).
    if isinstance(expr, ast.Name):
        return modules.get(expr.id)
    if isinstance(expr, ast.Attribute):
        if isinstance(expr.value, ast.Name) and expr.value.id in instances:
            cls = instances[expr.value.id]
            if not hasattr(cls, expr.attr):
                problems.append(f"line {expr.lineno}: {cls.__name__} has no attribute {expr.attr}")
                return None
            return getattr(cls, expr.attr)
        base = resolve(expr.value)
        if base is None:
            return None
        if inspect.ismodule(base) and not hasattr(base, expr.attr):
            try:
                importlib.import_module(base.__name__ + "." + expr.attr)
            except ImportError:
                pass
        if not hasattr(base, expr.attr):
            problems.append(f"line {expr.lineno}: {getattr(base, '__name__', base)} has no attribute {expr.attr}")
            return None
        return getattr(base, expr.attr)
    return None

calls = 0
for node in ast.walk(tree):
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        target = resolve(node.value.func)
        if inspect.isclass(target):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    instances[t.id] = target
for node in ast.walk(tree):
    if not isinstance(node, ast.Call):
        continue
    target = resolve(node.func)
    if target is None or not callable(target):
        continue
    is_method = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
        and node.func.value.id in instances
    try:
        sig = inspect.signature(target.__init__ if inspect.isclass(target) else target)
    except (TypeError, ValueError):
        continue  # a builtin without a signature (nanobind functions have one in their stubs only)
    args = [None] * len(node.args)
    if inspect.isclass(target) or (is_method and not isinstance(inspect.getattr_static(instances[node.func.value.id],
                                                                                      node.func.attr), staticmethod)):
        args = [None] + args
    kwargs = {k.arg: None for k in node.keywords if k.arg is not None}
    try:
        sig.bind(*args, **kwargs)
        calls += 1
    except TypeError as e:
        problems.append(f"line {node.lineno}: {ast.unparse(node.func)}(...) does not match {sig}: {e}")
print(json.dumps({"problems": list(dict.fromkeys(problems)), "calls": calls}))
"""


def bind_python(what, text, python, env):
    p = subprocess.run([python, "-c", BIND_CHILD], input=text, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0:
        fail(f"{what}: could not check the calls into shoal:\n{p.stderr.strip()}")
        return
    result = json.loads(p.stdout.strip().splitlines()[-1])
    for problem in result["problems"]:
        fail(f"{what}: {problem}")
    print(f"== {what}: {result['calls']} calls into shoal match their signatures")
    if result["calls"] == 0:
        fail(f"{what}: no call into shoal was found to check")


def free_port_pair():
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                with socket.socket() as b:
                    b.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise RuntimeError("no free pair of ports")


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    return subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).returncode == 0


def check_paths(readme, source):
    """Repository paths in the text (words starting with a top-level folder of the tree) and relative links exist."""
    for link in sorted(set(re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme))):
        if "://" not in link and not os.path.exists(os.path.join(source, link)):
            fail(f"README links to {link}, which does not exist")
    words = {w.rstrip(".,:;") for w in re.split(r"[\s`()\[\]|,;\"']+", readme)}
    tops = ("scripts/", "examples/", "bench/", "docs/", "tests/", "tools/", "include/", "cmake/", "python/", "ep/")
    for word in sorted(words):
        path = word[2:] if word.startswith("./") else word
        if path.startswith(tops) and not os.path.exists(os.path.join(source, path)):
            fail(f"README names {path}, which does not exist")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--shoalrun", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--nvcc", default="")
    ap.add_argument("--python", default="", help="the interpreter the Python package was built for")
    ap.add_argument("--gpu", action="store_true", help="run the CUDA and MoE blocks (needs a GPU)")
    args = ap.parse_args()
    args.source, args.build = os.path.abspath(args.source), os.path.abspath(args.build)
    if args.gpu and not have_gpu():
        print("readme_blocks: SKIP (no usable GPU)")
        return SKIP

    readme = open(os.path.join(args.source, "README.md"), encoding="utf-8").read()
    work = tempfile.mkdtemp(prefix="shoal-readme-")
    libdir = os.path.dirname(os.path.abspath(args.lib))
    include = os.path.join(args.source, "include")
    link = [f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lshoal"]
    nvlink = [f"-L{libdir}", "-Xlinker", f"-rpath={libdir}", "-lshoal"]
    pypath = os.path.join(args.build, "python")
    env_host = dict(os.environ, SHOAL_BACKEND="host")
    env_py = dict(env_host, PYTHONPATH=pypath + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env_gpu = dict(os.environ, PYTHONPATH=env_py["PYTHONPATH"])
    found = {}
    try:
        for lang, line, text in blocks(readme):
            if lang not in ("c", "cuda", "python"):
                continue
            kind = kind_of(lang, text)
            what = f"README line {line} (```{lang})"
            if kind is None:
                fail(f"{what}: a block this test does not know how to check; teach tests/install/readme_blocks_test.py")
                continue
            if kind in found:
                fail(f"{what}: a second {KINDS[kind]}; the README has one of each")
            found[kind] = line
            what = f"{what}, the {KINDS[kind]}"
            if kind == "c":
                if args.gpu:
                    continue
                src = os.path.join(work, "ring.c")
                open(src, "w").write(text)
                for std, extra, exe in (("-std=c11", [], "ring-c"), ("-std=c++20", ["-x", "c++"], "ring-cxx")):
                    compiler = "cc" if std == "-std=c11" else "c++"
                    cmd = [compiler, std, "-Wall", "-Werror", f"-I{include}", *extra, src, "-x", "none", *link, "-o",
                           os.path.join(work, exe)]
                    rc, _ = run(cmd)
                    if rc != 0:
                        fail(f"{what}: {compiler} {std} failed")
                        continue
                    rc, out = run([args.shoalrun, "-n", "2", "--timeout", "60", "--", os.path.join(work, exe)], env_host)
                    if rc != 0:
                        fail(f"{what}: {exe} exited with {rc} on 2 PEs")
                    check_ring(f"{what} ({std})", out, 2)
            elif kind in ("cuda", "nvshmem"):
                if not args.nvcc:
                    print(f"== {what}: not compiled (no nvcc)")
                    continue
                src = os.path.join(work, f"{kind}.cu")
                open(src, "w").write(text)
                inc = [f"-I{os.path.join(include, 'compat', 'nvshmem')}"] if kind == "nvshmem" else []
                exe = os.path.join(work, kind)
                rc, _ = run([args.nvcc, "-arch=sm_90", "-Werror", "all-warnings", *inc, f"-I{include}", src, *nvlink,
                             "-o", exe])
                if rc != 0:
                    fail(f"{what}: nvcc failed")
                elif args.gpu:
                    rc, out = run([args.shoalrun, "-n", "2", "--timeout", "120", "--", exe], env_gpu, timeout=200)
                    if rc != 0:
                        fail(f"{what}: exited with {rc} on 2 PEs")
                    check_ring(what, out, 2)
            elif kind == "core":
                if args.gpu:
                    continue
                if not args.python:
                    fail(f"{what}: no Python package to check it with (configure with SHOAL_BUILD_PYTHON=ON)")
                    continue
                bind_python(what, text, args.python, env_py)
                src = os.path.join(work, "ring.py")
                open(src, "w").write(text)
                rc, out = run([args.shoalrun, "-n", "2", "--timeout", "60", "--", args.python, src], env_py)
                if rc != 0:
                    fail(f"{what}: exited with {rc} on 2 PEs")
                check_ring(what, out, 2)
            elif kind == "moe":
                if not args.python and args.gpu:
                    print(f"== {what}: SKIP (this build has no Python package: SHOAL_BUILD_PYTHON=OFF)")
                    continue
                if not args.python:
                    fail(f"{what}: no Python package to check it with (configure with SHOAL_BUILD_PYTHON=ON)")
                    continue
                if not args.gpu:
                    bind_python(what, text, args.python, env_py)  # shoal.ep imports without torch
                    continue
                probe = subprocess.run([args.python, "-c", "import torch; assert torch.cuda.is_available()"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if probe.returncode != 0:
                    print(f"== {what}: SKIP (no torch with CUDA)")
                    continue
                src = os.path.join(work, "moe.py")
                open(src, "w").write(text)
                cmd = [args.python, "-m", "torch.distributed.run", "--nproc_per_node=2", "--nnodes=1",
                       "--master_addr=127.0.0.1", f"--master_port={free_port_pair()}", src]
                rc, out = run(cmd, env_gpu, timeout=400)
                if rc != 0:
                    fail(f"{what}: torchrun exited with {rc}")
                for rank in range(2):
                    if not re.search(rf"rank {rank} of 2: received \d+ tokens for .*; combine checked", out):
                        fail(f"{what}: rank {rank} did not report its combine checked")
        for kind, name in KINDS.items():
            if kind not in found:
                fail(f"README.md has no {name} example (a ```{'python' if kind in ('core', 'moe') else kind.replace('nvshmem', 'cuda')} block)")
        if not args.gpu:
            check_paths(readme, args.source)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"readme_blocks: {len(failures)} failure(s)")
        return 1
    print("readme_blocks: every README block checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
