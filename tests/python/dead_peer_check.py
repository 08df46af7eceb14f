#!/usr/bin/env python3
"""A dead peer never hangs the interpreter: runs jobs/dead_peer.py under shoalrun and checks that the
job ends within 10 s, fails, and says which PE died. What happens today: the library's liveness monitor
sees PE n-1's bootstrap connection close and stops every surviving PE (exit status 1, message
"PE <n-1> died ...") -- the interpreter is stopped, the barrier neither returns nor raises.
Usage: dead_peer_check.py SHOALRUN NUM_PES"""
import os
import subprocess
import sys
import time

shoalrun, npes = sys.argv[1], int(sys.argv[2])
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "dead_peer.py")
start = time.monotonic()
out = subprocess.run([shoalrun, "-n", str(npes), "--timeout", "30", "--", sys.executable, job],
                     capture_output=True, text=True, timeout=60)
elapsed = time.monotonic() - start
text = out.stdout + out.stderr
print(text)
print(f"dead_peer_check: rc={out.returncode} after {elapsed:.1f} s")
ok = out.returncode not in (0, 124) and elapsed < 10 and f"PE {npes - 1} died" in text
ok = ok and "barrier_all returned" not in text
sys.exit(0 if ok else 1)
