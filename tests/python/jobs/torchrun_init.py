# Under torchrun: init() with nothing given joins from torchrun's RANK/WORLD_SIZE/MASTER_ADDR ("env"), or,
# once torch.distributed is initialized, through its default group ("torch"). Usage: torchrun_init.py MODE
import os
import sys

import shoal.core as sc

mode = sys.argv[1]
if mode == "torch":
    import torch.distributed as dist
    dist.init_process_group("gloo")
sc.init()
me, n = sc.my_pe(), sc.n_pes()
assert (me, n) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])), (me, n)
a, b = sc.array(4, "int32"), sc.array(4, "int32")
a[:] = me + 1
sc.reduce(sc.Teams.TEAM_WORLD, b, a, "sum")
assert (b == n * (n + 1) // 2).all(), b
sc.free_array(b)
sc.free_array(a)
sc.finalize()
print(f"torchrun {mode} PE {me} ok")
