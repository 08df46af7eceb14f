#!/usr/bin/env python3
"""A dead peer raises, it never stops or hangs the interpreter: runs jobs/dead_peer.py under shoalrun
(the last PE leaves without finalize, with status 0 so that the launcher lets the others run) and checks
that every survivor's waiting call (barrier_all, or a reduce) raised ShoalError naming the dead PE, that
a later call raised too, that each interpreter went on to the end, and that all this took under 10 s.
(The library's liveness monitor sees the dead PE's bootstrap connection close; under the error mode
shoal.core uses it records the failure and every wait ends with errc::peer_failure.)
Usage: dead_peer_check.py SHOALRUN NUM_PES [barrier_all|reduce|gpu_reduce] (gpu_reduce exits 77, a skip,
without torch or CUDA)"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ep_launch import why_no_torch_cuda  # noqa: E402

shoalrun, npes = sys.argv[1], int(sys.argv[2])
what = sys.argv[3] if len(sys.argv) > 3 else "barrier_all"
if what.startswith("gpu"):
    missing = why_no_torch_cuda()
    if missing is not None:
        print(f"dead_peer_check: skipped, {missing}")
        sys.exit(77)
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "dead_peer.py")
start = time.monotonic()
out = subprocess.run([shoalrun, "-n", str(npes), "--timeout", "30", "--", sys.executable, job, what],
                     capture_output=True, text=True, timeout=60)
elapsed = time.monotonic() - start
text = out.stdout + out.stderr
print(text)
print(f"dead_peer_check: rc={out.returncode} after {elapsed:.1f} s")
dead = npes - 1
problems = []
if elapsed >= 10:
    problems.append(f"took {elapsed:.1f} s (limit 10 s)")
if out.returncode == 124:
    problems.append("shoalrun timed out")
if "returned after a peer died" in text or "later barrier_all returned" in text:
    problems.append("a call returned instead of raising")
for pe in range(dead):
    raised = re.search(rf"PE {pe}: raised after [\d.]+ s: .*PE {dead} died", text)
    if raised is None:
        problems.append(f"PE {pe}'s {what} did not raise ShoalError naming PE {dead}")
    if not re.search(rf"PE {pe}: later call raised: .*PE {dead} died", text):
        problems.append(f"PE {pe}'s later call did not raise")
    if f"PE {pe}: interpreter alive" not in text:
        problems.append(f"PE {pe}'s interpreter did not go on after the error")
for p in problems:
    print("FAILED:", p)
sys.exit(1 if problems else 0)
