# init(uid=, rank=, nranks=) without a launcher: rank 0 makes the unique id and writes it to a file,
# the other ranks read it from there (bounded wait). Usage: uid_init.py RANK NRANKS UID_FILE
import os
import sys
import time

import numpy as np

import shoal.core as sc

rank, nranks, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if rank == 0:
    uid = sc.get_unique_id()
    assert len(uid) == len(sc.get_unique_id(empty=True)) and any(uid)
    with open(path + ".tmp", "wb") as f:
        f.write(uid)
    os.rename(path + ".tmp", path)
else:
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit("uid file never appeared")
        time.sleep(0.05)
    with open(path, "rb") as f:
        uid = f.read()
assert not sc.is_initialized()
sc.init(uid=uid, rank=rank, nranks=nranks)
assert sc.is_initialized() and sc.my_pe() == rank and sc.n_pes() == nranks
src = sc.array(4, "int64")
dst = sc.array(4, "int64")
src[:] = rank + 1
sc.reduce(sc.Teams.TEAM_WORLD, dst, src, "sum")
assert (dst == nranks * (nranks + 1) // 2).all(), dst
sc.free_array(dst)
sc.free_array(src)
sc.finalize()
assert not sc.is_initialized()
print(f"uid_init rank {rank} ok")
