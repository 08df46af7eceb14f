# Every PE runs this pytest session under shoalrun (tests/python/CMakeLists.txt): the collection order
# is the same everywhere, so the collective calls of each test match across PEs.
import numpy as np
import pytest

import shoal.core as sc


@pytest.fixture(scope="session", autouse=True)
def shoal_job():
    sc.init()
    yield
    sc.finalize()


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
