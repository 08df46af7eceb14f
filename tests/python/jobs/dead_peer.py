# One PE of a shoal.core job dies (os._exit, no finalize) while the others wait in a barrier.
import os
import sys

import shoal.core as sc

sc.init()
if sc.my_pe() == sc.n_pes() - 1:
    os._exit(3)
try:
    sc.barrier_all()
    print("barrier_all returned after a peer died")
except sc.ShoalError as e:
    print(f"raised: {e}")
sys.exit(0)  # a survivor must not exit 0 here: the library stops it before (see dead_peer_check.py)
