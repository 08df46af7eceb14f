#!/usr/bin/env python3
"""A stalled EP peer is reported, not hung on, and the report comes from the host (the EP kernels hold no printf):
runs jobs/ep_stall.py under torchrun on 2 ranks with SHOAL_EP_TIMEOUT_S=2 and checks that rank 0's dispatch
kernel reported "shoal: PE 0: shoal_ep dispatch (...): no progress from PE 1 ..." exactly once, that its
synchronize raised, and that the job ended within 60 s.
Usage: ep_stall_check.py (exits 77, a skip, without torch or a CUDA device)"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ep_launch import free_port_pair, why_no_torch_cuda  # noqa: E402

missing = why_no_torch_cuda()
if missing is not None:
    print(f"ep_stall_check: skipped, {missing}")
    sys.exit(77)
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "ep_stall.py")
env = dict(os.environ, SHOAL_EP_TIMEOUT_S="2")
start = time.monotonic()
try:
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--nnodes=1",
                          "--master_addr=127.0.0.1", f"--master_port={free_port_pair()}", job],
                         env=env, capture_output=True, text=True, timeout=90)
    text, rc = out.stdout + out.stderr, out.returncode
except subprocess.TimeoutExpired as e:
    text, rc = (e.stdout or b"").decode() + (e.stderr or b"").decode(), 124
elapsed = time.monotonic() - start
print(text)
print(f"ep_stall_check: rc={rc} after {elapsed:.1f} s")
problems = []
if rc == 124 or elapsed >= 60:
    problems.append(f"the job took {elapsed:.1f} s (limit 60 s)")
if "without the stalled peer" in text:
    problems.append("rank 0's dispatch returned although rank 1 never dispatched")
reports = re.findall(r"shoal: PE 0: shoal_ep dispatch \((?:count exchange|start)\): no progress from PE 1"
                     r"(?: \(channel \d+\))? for (\d+) ms on 0x[0-9a-f]+: have 0x[0-9a-f]+, want 0x[0-9a-f]+", text)
if len(reports) != 1:
    problems.append(f"{len(reports)} host-printed stall reports from PE 0 (want exactly 1)")
elif int(reports[0]) < 2000:
    problems.append(f"the report came after {reports[0]} ms, before SHOAL_EP_TIMEOUT_S=2")
if not re.search(r"rank 0: dispatch raised after [\d.]+ s", text):
    problems.append("rank 0's synchronize did not raise")
if "shoal_ep: rank" in text:
    problems.append("a device printf report (the old words) appeared")
for p in problems:
    print("FAILED:", p)
sys.exit(1 if problems else 0)
