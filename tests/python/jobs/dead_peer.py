# One PE of a shoal.core job dies (os._exit, no finalize) while the others wait in a barrier: each
# survivor's barrier raises ShoalError naming the dead PE, later calls raise too, and the interpreter
# goes on (ends normally). Usage: dead_peer.py [barrier_all|reduce|gpu_reduce] (gpu_reduce: torch CUDA
# tensors on a GPU heap, the blocking reduce waits for its kernel)
import os
import sys
import time

import shoal.core as sc

what = sys.argv[1] if len(sys.argv) > 1 else "barrier_all"
sc.init()
me, n = sc.my_pe(), sc.n_pes()
if what.startswith("gpu"):
    import torch
    a, b = sc.tensor(16, torch.int64), sc.tensor(16, torch.int64)
else:
    a, b = sc.array(16, "int64"), sc.array(16, "int64")
sc.barrier_all()
if me == n - 1:
    time.sleep(0.5)  # the others leave the barrier (it may release this PE first) and wait in the next call
    os._exit(0)  # status 0: the launcher leaves the others running (a failed PE would stop them)
start = time.monotonic()
try:
    if what.endswith("reduce"):
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
if what.startswith("gpu"):
    # The survivor's reduce kernel still spins on the GPU until its device timeout (SHOAL_WAIT_TIMEOUT);
    # leave without the library's exit-time cleanup, which would wait for it.
    os._exit(0)
