#!/usr/bin/env python3
"""Runs Sandia OpenSHMEM's unit suite (tests-sos, test/unit/) against an installed shoal, as the suite's
own `make check` does: every program of check_PROGRAMS is built with the installed oshcc / oshc++ (the
C++ ones) and run by `oshrun -np N`; exit status 0 is a pass, 77 a skip, anything else a failure.

The configuration is the one a shoal install offers: C++ and pthreads yes, Fortran no (shoal has no
Fortran bindings), profiling (pshmem) no, and not PMI-MPI (so global_exit runs). --deprecated builds
with -DENABLE_DEPRECATED_TESTS, as the suite's --enable-deprecated-tests does.

Programs known not to pass are listed, one line each with the reason, in docs/openshmem.md under the
heading "tests-sos programs that do not pass", as "- `name` (N PEs): reason" ("(N, M PEs)" for several
counts; no parenthesis: every count). Such a program is an expected failure; one that passes anyway is
reported (XPASS) and fails the run, so that the list stays true.

Stages (the ctest runs `build` once as a fixture, then `run` at 2 and at 4 PEs):
  build      installs shoal (--build-dir, cmake --install into WORK/prefix) or uses --prefix, and builds
             every program into WORK
  run        runs the programs WORK holds at --np PEs
  all        build, then run at every --np (default 2)
  reference  builds the same programs with OpenMPI's OSHMEM (oshcc / oshc++ / oshrun on PATH), runs them
             at --np PEs beside shoal's build, and compares their output lines (the PE prefix, addresses
             and timings left out). OSHMEM 4.1 crashes in shmem_finalize under UCX on one node, so its runs
             preload a shim whose shmem_finalize is a barrier that arranges for the PE to exit, with the
             status the program exits with, before the library's own teardown; each PE writes that status
             to a file, and a PE that wrote none stopped before shmem_finalize
Exit status: 0 when every program passed or failed as listed (reference: when the comparison ran), 1 when
not, 77 (skipped) when the suite's folder does not exist. The suite's folder: SHOAL_TESTS_SOS_DIR when
set, else --suite.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# The automake conditionals of test/unit/Makefile.am and their values for a shoal install.
CONDITIONS = {
    "USE_PMI_MPI": False,
    "ENABLE_PROFILING": False,
    "HAVE_CXX": True,
    "HAVE_FORTRAN": False,
    "HAVE_LONG_FORTRAN_HEADER": False,
    "HAVE_PTHREADS": True,
    "EXTERNAL_TESTS": True,
    "USE_PMI_SIMPLE": False,
    "SHMEMX_TESTS": False,
    "ENABLE_DEPRECATED_TESTS": False,
}
MAKE_VARS = {"PTHREAD_CFLAGS": "-pthread", "PTHREAD_LIBS": "-pthread", "AM_LDFLAGS": "", "LDADD": ""}
KNOWN_HEADING = "tests-sos programs that do not pass"
# OSHMEM on one node: UCX over shared memory and loopback (as tests/shmem/diff_test.sh runs it).
OSHMEM_RUN = ["--allow-run-as-root", "--oversubscribe", "--mca", "spml", "ucx", "-x", "UCX_TLS=self,sm,tcp", "-x",
              "UCX_NET_DEVICES=lo"]


def parse_makefile_am(path):
    """Returns ([program], {variable: value}) for the conditions above: check_PROGRAMS in order and the
    per-program _SOURCES / _CFLAGS / _LDFLAGS / _LDADD assignments."""
    text = open(path).read().replace("\\\n", " ")
    programs, variables = [], {}
    taken = []  # one bool per open `if`: whether its branch is taken
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0] == "if":
            value = CONDITIONS.get(words[1].lstrip("!"), False)
            taken.append(not value if words[1].startswith("!") else value)
            continue
        if words[0] == "else":
            taken[-1] = not taken[-1]
            continue
        if words[0] == "endif":
            taken.pop()
            continue
        if not all(taken):
            continue
        m = re.match(r"^([A-Za-z0-9_]+)\s*(\+?=)\s*(.*)$", line)
        if not m:
            continue
        name, op, value = m.groups()
        if name == "check_PROGRAMS":
            programs += value.split()
        elif op == "=":
            variables[name] = value
    return programs, variables


def expand(value):
    return re.sub(r"\$\((\w+)\)", lambda m: MAKE_VARS.get(m.group(1), ""), value).split()


def known_failures(doc):
    """{program: set of PE counts, or None for every count} from the doc's list."""
    known = {}
    if not doc:
        return known
    in_section = False
    for line in open(doc):
        if line.startswith("#"):
            in_section = KNOWN_HEADING in line
            continue
        m = re.match(r"^- `([\w.+-]+)`(?: \(([\d, ]+) PEs?\))?: \S", line) if in_section else None
        if m:
            known[m.group(1)] = None if m.group(2) is None else {int(x) for x in re.split(r"[, ]+", m.group(2))}
    return known


def child_env():
    env = dict(os.environ)
    env.pop("SHOAL_TESTS_SOS_DIR", None)  # not shoal's: its PEs would warn about an unknown SHOAL_ variable
    return env


def build_one(program, variables, unit, include, cc, cxx, out_dir, deprecated):
    sources = [s for s in expand(variables.get(f"{program}_SOURCES", f"{program}.c")) if not s.endswith(".h")]
    if any(s.endswith((".f90", ".f")) for s in sources):
        return False, "a Fortran program"
    compiler = cxx if any(s.endswith((".cpp", ".cc")) for s in sources) else cc
    flags = ["-I" + include] + expand(variables.get(f"{program}_CFLAGS", ""))
    if deprecated:
        flags.append("-DENABLE_DEPRECATED_TESTS")
    ldflags = expand(variables.get(f"{program}_LDFLAGS", "")) + expand(variables.get(f"{program}_LDADD", ""))
    cmd = compiler + ["-O2", "-w"] + flags + [os.path.join(unit, s) for s in sources] + ldflags
    cmd += ["-o", os.path.join(out_dir, program)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env())
    return proc.returncode == 0, proc.stdout


def build_all(programs, variables, suite, cc, cxx, out_dir, deprecated, jobs):
    unit, include = os.path.join(suite, "test", "unit"), os.path.join(suite, "test", "include")
    os.makedirs(out_dir, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = pool.map(lambda p: build_one(p, variables, unit, include, cc, cxx, out_dir, deprecated), programs)
        return {p: {"built": ok, "log": log[-3000:]} for p, (ok, log) in zip(programs, done)}


def run_one(cmd, cwd, timeout):
    """(exit status, stdout, stderr, seconds); 124 when it ran past timeout."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                              timeout=timeout, errors="replace", env=child_env())
        return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        text = lambda b: b if isinstance(b, str) else (b or b"").decode(errors="replace")
        return 124, text(e.stdout), text(e.stderr), time.monotonic() - start


def shoal_cmd(prefix, np, timeout, exe):
    return [os.path.join(prefix, "bin", "oshrun"), "-np", str(np), "--timeout", str(timeout), exe]


def stage_build(args, suite, programs, variables):
    if args.build_dir:
        prefix = os.path.join(args.work, "prefix")
        shutil.rmtree(prefix, ignore_errors=True)
        proc = subprocess.run(["cmake", "--install", args.build_dir, "--prefix", prefix], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            print(f"tests_sos: cmake --install {args.build_dir} failed:\n{proc.stdout[-3000:]}")
            return 1
    else:
        prefix = os.path.abspath(args.prefix)
    for tool in ("oshcc", "oshc++", "oshrun"):
        if not os.access(os.path.join(prefix, "bin", tool), os.X_OK):
            print(f"tests_sos: {prefix}/bin/{tool} is missing (install shoal first)")
            return 1
    start = time.monotonic()
    cc, cxx = [os.path.join(prefix, "bin", "oshcc")], [os.path.join(prefix, "bin", "oshc++")]
    built = build_all(programs, variables, suite, cc, cxx, os.path.join(args.work, "shoal"), args.deprecated,
                      args.jobs)
    state = {"prefix": prefix, "suite": suite, "deprecated": args.deprecated, "programs": built}
    with open(os.path.join(args.work, "built.json"), "w") as f:
        json.dump(state, f)
    bad = [p for p, b in built.items() if not b["built"]]
    print(f"tests_sos: built {len(built) - len(bad)} of {len(built)} programs with {prefix}/bin/oshcc and oshc++ in "
          f"{time.monotonic() - start:.0f} s" + (f"; not built: {', '.join(bad)}" if bad else ""))
    return 0


def load_state(args):
    path = os.path.join(args.work, "built.json")
    if not os.path.exists(path):
        print(f"tests_sos: {path} is missing: run the build stage first")
        return None
    with open(path) as f:
        return json.load(f)


def stage_run(args, np, programs):
    state = load_state(args)
    if state is None:
        return 1
    known = known_failures(args.doc)
    exe_dir = os.path.join(args.work, "shoal")
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0, "XFAIL": 0, "XPASS": 0}
    report = []
    start = time.monotonic()
    for program in programs:
        b = state["programs"].get(program)
        if b is None:
            print(f"tests_sos: {program} was not part of the build stage")
            return 1
        if b["built"]:
            rc, out, err, secs = run_one(shoal_cmd(state["prefix"], np, args.timeout, os.path.join(exe_dir, program)),
                                         exe_dir, args.timeout + 30)
            status = "PASS" if rc == 0 else "SKIP" if rc == 77 else "FAIL"
            detail = f"exit {rc} after {secs:.1f} s" + (f":\n{(out + err)[-3000:]}" if status == "FAIL" else "")
        else:
            status, secs, detail = "FAIL", 0.0, f"does not compile:\n{b['log']}"
        listed = program in known and (known[program] is None or np in known[program])
        if listed and status in ("PASS", "FAIL"):
            status = "XPASS" if status == "PASS" else "XFAIL"
        counts[status] += 1
        print(f"{status}: {program} ({np} PEs, {secs:.1f} s)", flush=True)
        if status in ("FAIL", "XPASS"):
            report.append(f"--- {status}: {program} on {np} PEs: {detail}")
    print("\n".join([""] + report))
    total = len(programs)
    print(f"tests-sos on {np} PEs{' (deprecated tests)' if state['deprecated'] else ''}: {counts['PASS']} of {total} "
          f"pass ({100.0 * counts['PASS'] / max(total, 1):.1f} %), {counts['XFAIL']} fail as docs/openshmem.md lists, "
          f"{counts['FAIL']} fail otherwise, {counts['XPASS']} pass though listed, {counts['SKIP']} skip "
          f"({time.monotonic() - start:.0f} s)")
    return 1 if counts["FAIL"] or counts["XPASS"] else 0


def normalized(text, prefixed, folder):
    """Output lines in a comparable form: the "[pe] " prefix of shoalrun off, the programs' folder (in
    argv[0]), addresses and floating-point figures (timings, rates) masked, runs of blanks made one,
    sorted (PEs print in any order)."""
    lines = []
    for line in text.splitlines():
        if prefixed:
            line = re.sub(r"^\[\d+\] ", "", line)
        line = line.replace(folder, "<folder>")
        line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
        line = re.sub(r"\d+\.\d+", "#.#", line)
        line = " ".join(line.split())  # column widths follow the figures
        if line:
            lines.append(line)
    return sorted(lines)


# The shim the OSHMEM runs preload (see the reference stage above).
FINALIZE_SHIM = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
void shmem_barrier_all(void);
static void leave(int status, void* arg) {
  (void)arg;
  fflush(NULL);
  const char* dir = getenv("TESTS_SOS_STATUS_DIR");
  if (dir != NULL) {
    char path[4096], text[32];
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      int n = snprintf(text, sizeof text, "%d\n", status);
      if (write(fd, text, (size_t)n) != n) status = 99;
      close(fd);
    }
  }
  _exit(status);
}
void shmem_finalize(void) {
  shmem_barrier_all();
  on_exit(leave, NULL); /* registered last, so it runs before the library's own exit handlers */
}
"""


def oshmem_run(tools, shim, np, exe, cwd, timeout):
    """Runs exe under OSHMEM; returns (passed, stdout, why)."""
    status_dir = os.path.join(cwd, "status")
    shutil.rmtree(status_dir, ignore_errors=True)
    os.makedirs(status_dir)
    cmd = [tools["oshrun"]] + OSHMEM_RUN + ["-x", "LD_PRELOAD=" + shim, "-x", "TESTS_SOS_STATUS_DIR=" + status_dir,
                                            "-np", str(np), exe]
    rc, out, err, _ = run_one(cmd, cwd, timeout)
    statuses = [int(open(os.path.join(status_dir, f)).read()) for f in os.listdir(status_dir)]
    if rc == 124:
        return False, out, "timed out"
    if len(statuses) == np:  # every PE reached shmem_finalize: the program's own exit statuses
        bad = [s for s in statuses if s not in (0, 77)]
        return not bad, out, f"exit {bad[0]}" if bad else ""
    return rc == 0, out, f"exit {rc}, {np - len(statuses)} PEs stopped before shmem_finalize" if rc else ""


def stage_reference(args, np, programs, variables):
    state = load_state(args)
    if state is None:
        return 1
    tools = {t: shutil.which(t) for t in ("oshcc", "oshc++", "oshrun")}
    if not all(tools.values()) or any(os.path.dirname(os.path.realpath(p)) == os.path.realpath(
            os.path.join(state["prefix"], "bin")) for p in tools.values()):
        print("SKIP: OpenMPI's OSHMEM (oshcc, oshc++, oshrun: apt-get install libopenmpi-dev openmpi-bin) is not on "
              "PATH")
        return 77
    ref_dir = os.path.join(args.work, "oshmem")
    os.makedirs(ref_dir, exist_ok=True)
    shim = os.path.join(ref_dir, "finalize_shim.so")
    with open(os.path.join(ref_dir, "finalize_shim.c"), "w") as f:
        f.write(FINALIZE_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", os.path.join(ref_dir, "finalize_shim.c"), "-o", shim], check=True)
    start = time.monotonic()
    built = build_all(programs, variables, state["suite"], [tools["oshcc"]], [tools["oshc++"]], ref_dir,
                      state["deprecated"], args.jobs)
    print(f"tests_sos: OSHMEM built {sum(b['built'] for b in built.values())} of {len(programs)} programs in "
          f"{time.monotonic() - start:.0f} s")
    rows = {"same": [], "differs": [], "OSHMEM does not build": [], "OSHMEM fails": [], "shoal fails": []}
    exe_dir = os.path.join(args.work, "shoal")
    for program in programs:
        if not built[program]["built"]:
            rows["OSHMEM does not build"].append(program)
            continue
        ref_ok, ref_out, why = oshmem_run(tools, shim, np, os.path.join(ref_dir, program), ref_dir, args.timeout)
        if not state["programs"][program]["built"]:
            rows["shoal fails"].append(program)
            continue
        mine = run_one(shoal_cmd(state["prefix"], np, args.timeout, os.path.join(exe_dir, program)), exe_dir,
                       args.timeout + 30)
        if mine[0] not in (0, 77):
            rows["shoal fails"].append(program)
        elif not ref_ok:
            rows["OSHMEM fails"].append(program)
        elif normalized(mine[1], True, exe_dir) == normalized(ref_out, False, ref_dir):
            rows["same"].append(program)
        else:
            rows["differs"].append(program)
            if args.verbose:
                import difflib
                print(f"--- {program}: OSHMEM (-) and shoal (+)")
                print("\n".join(difflib.unified_diff(normalized(ref_out, False, ref_dir),
                                                     normalized(mine[1], True, exe_dir), lineterm="", n=0)))
        print(f"{program}: {next(k for k, v in rows.items() if program in v)}" + (f" ({why})" if why else ""),
              flush=True)
    print()
    for key, names in rows.items():
        print(f"{key} ({len(names)}): {' '.join(names)}")
    print(f"tests-sos against OSHMEM on {np} PEs: {len(rows['same'])} same output, {len(rows['differs'])} differ, "
          f"{len(rows['OSHMEM does not build']) + len(rows['OSHMEM fails'])} do not build or run on OSHMEM, "
          f"{len(rows['shoal fails'])} fail on shoal ({time.monotonic() - start:.0f} s)")
    return 1 if rows["shoal fails"] else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=["build", "run", "all", "reference"])
    ap.add_argument("--suite", help="the tests-sos folder (test/unit, test/include); SHOAL_TESTS_SOS_DIR wins")
    ap.add_argument("--work", required=True, help="folder for the built programs (and the install)")
    ap.add_argument("--build-dir", help="build: install this CMake build folder into WORK/prefix")
    ap.add_argument("--prefix", help="build: an installed shoal (bin/oshcc, oshc++, oshrun)")
    ap.add_argument("--np", type=int, action="append", help="PE counts (repeatable; default 2)")
    ap.add_argument("--doc", help="docs/openshmem.md: the programs known not to pass")
    ap.add_argument("--only", help="comma-separated program names")
    ap.add_argument("--deprecated", action="store_true", help="build with -DENABLE_DEPRECATED_TESTS")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per run")
    ap.add_argument("--verbose", action="store_true", help="reference: print each difference")
    args = ap.parse_args()
    suite = os.environ.get("SHOAL_TESTS_SOS_DIR") or args.suite
    if not suite or not os.path.exists(os.path.join(suite, "test", "unit", "Makefile.am")):
        print(f"SKIP: no tests-sos suite at {suite or '(none given)'} (pass --suite or set SHOAL_TESTS_SOS_DIR)")
        return 77
    suite = os.path.abspath(suite)
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    programs, variables = parse_makefile_am(os.path.join(suite, "test", "unit", "Makefile.am"))
    if args.only:
        unknown = [p for p in args.only.split(",") if p not in programs]
        if unknown:
            print(f"tests_sos: --only names programs not in check_PROGRAMS: {', '.join(unknown)}")
            return 1
        programs = [p for p in programs if p in args.only.split(",")]
    if args.stage in ("build", "all"):
        if bool(args.build_dir) == bool(args.prefix):
            print("tests_sos: the build stage takes --build-dir or --prefix")
            return 1
        rc = stage_build(args, suite, programs, variables)
        if rc != 0 or args.stage == "build":
            return rc
    nps = args.np or [2]
    if args.stage == "reference":
        return max(stage_reference(args, np, programs, variables) for np in nps)
    return max(stage_run(args, np, programs) for np in nps)


if __name__ == "__main__":
    sys.exit(main())
