# One PE of a shoal.core job dies (os._exit, no finalize) while the others wait in a barrier: each
# survivor's barrier raises ShoalError naming the dead PE, later calls raise too, and the interpreter
# goes on (ends normally). Usage: dead_peer.py [barrier_all|reduce]
import os
import sys
import time

import numpy as np

import shoal.core as sc

what = sys.argv[1] if len(sys.argv) > 1 else "barrier_all"
sc.init()
me, n = sc.my_pe(), sc.n_pes()
a = sc.array(16, "int64")
b = sc.array(16, "int64")
sc.barrier_all()
if me == n - 1:
    os._exit(0)  # status 0: the launcher leaves the others running (a failed PE would stop them)
start = time.monotonic()
try:
    if what == "reduce":
        sc.reduce(sc.Teams.TEAM_WORLD, b, a, "sum")
    else:
        sc.barrier_all()
    print(f"PE {me}: {what} returned after a peer died")
except sc.ShoalError as e:
    print(f"PE {me}: raised after {time.monotonic() - start:.1f} s: {e}", flush=True)
try:
    sc.barrier_all()
    print(f"PE {me}: a later barrier_all returned")
except sc.ShoalError as e:
    print(f"PE {me}: later call raised: {e}", flush=True)
print(f"PE {me}: interpreter alive", flush=True)
