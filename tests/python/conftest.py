# Every PE runs this pytest session under shoalrun (tests/python/CMakeLists.txt): the collection order
# is the same everywhere, so the collective calls of each test match across PEs.
# SHOAL_PY_INIT picks how the session joins: "env" (default: init() from the launcher's environment),
# "group" (init(group=...) with a torch.distributed gloo group over the PEs), "torch" (gloo initialized,
# then init() with nothing given: shoal takes torch.distributed's default group).
import hashlib
import os
import tempfile

import numpy as np
import pytest

import shoal.core as sc

INIT_MODE = os.environ.get("SHOAL_PY_INIT", "env")


def _torch_distributed():
    """torch.distributed initialized with gloo over the PEs (shoalrun's SHOAL_RANK/SHOAL_SIZE with a file
    store named after the job's bootstrap id, or torchrun's env://)."""
    import torch.distributed as dist
    if "SHOAL_RANK" in os.environ:
        rank, size = int(os.environ["SHOAL_RANK"]), int(os.environ["SHOAL_SIZE"])
        job = hashlib.sha256(os.environ.get("SHOAL_BOOTSTRAP_UID", "").encode()).hexdigest()[:16]
        store = dist.FileStore(os.path.join(tempfile.gettempdir(), f"shoal_pytest_{job}"), size)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=size)
    else:
        dist.init_process_group("gloo")
    return dist


@pytest.fixture(scope="session", autouse=True)
def shoal_job():
    dist = None
    if INIT_MODE == "env":
        sc.init()
    else:
        dist = _torch_distributed()
        if INIT_MODE == "group":
            sc.init(group=dist.new_group(list(range(dist.get_world_size()))))
        else:
            sc.init()
    yield dist
    sc.finalize()
    if dist is not None:
        dist.destroy_process_group()


@pytest.fixture
def me():
    return sc.my_pe()


@pytest.fixture
def npes():
    return sc.n_pes()


def pe_data(pe, n, dtype, seed):
    """PE pe's deterministic input: every PE can rebuild every other PE's data for the reference."""
    rng = np.random.default_rng(seed * 1000 + pe)
    if np.dtype(dtype).kind == "u":
        return rng.integers(0, 8, n).astype(dtype)
    return rng.integers(-4, 8, n).astype(dtype)
