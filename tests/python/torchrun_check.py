#!/usr/bin/env python3
"""shoal.core.init() under torchrun, without and with torch.distributed initialized (jobs/torchrun_init.py),
at NUM_PES processes on a free local port. Exits 77 (skipped) when torch's torchrun is not installed.
Usage: torchrun_check.py NUM_PES"""
import importlib.util
import socket
import subprocess
import sys

npes = int(sys.argv[1])
if importlib.util.find_spec("torch") is None:
    print("torchrun_check: skipped, torch is not installed")
    sys.exit(77)
job = __file__.replace("torchrun_check.py", "jobs/torchrun_init.py")
failed = False
for mode in ("env", "torch"):
    with socket.socket() as s:  # a free port for torchrun's store; shoal takes the next one
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={npes}",
                          "--master-addr=127.0.0.1", f"--master-port={port}", job, mode],
                         capture_output=True, text=True, timeout=120)
    print(out.stdout + out.stderr)
    missing = [pe for pe in range(npes) if f"torchrun {mode} PE {pe} ok" not in out.stdout]
    if out.returncode != 0 or missing:
        print(f"FAILED: mode {mode}: rc={out.returncode}, PEs without ok: {missing}")
        failed = True
sys.exit(1 if failed else 0)
