# shoal.core on host-memory PEs: data checked across PEs against numpy references.
import zlib

import numpy as np
import pytest
from conftest import pe_data

import shoal.core as sc

WORLD = sc.Teams.TEAM_WORLD


def test_ring_put(me, npes):
    a = sc.array((3, 5), "int64")
    sc.put(a, np.full((3, 5), me, dtype=np.int64), (me + 1) % npes)
    sc.barrier_all()
    assert (a == (me - 1) % npes).all()
    sc.free_array(a)


def test_get_reads_the_neighbours_copy(me, npes):
    a = sc.array(16, "float64")
    a[:] = np.arange(16) + 100 * me
    sc.barrier_all()
    out = np.zeros(16)
    right = (me + 1) % npes
    sc.get(out, a, right)
    np.testing.assert_array_equal(out, np.arange(16) + 100 * right)
    sc.barrier_all()
    sc.free_array(a)


def test_array_is_zero_filled_and_zero_copy(me, npes):
    a = sc.array(8, "uint32")
    assert a.dtype == np.uint32 and a.shape == (8,) and not a.any()
    a[3] = 7 + me  # a local store is what peers read: the array is the symmetric memory itself
    sc.barrier_all()
    out = np.zeros(8, dtype=np.uint32)
    sc.get(out, a, (me + 1) % npes)
    assert out[3] == 7 + (me + 1) % npes
    sc.barrier_all()
    sc.free_array(a)


def test_peer_array_stores_land_on_the_peer(me, npes):
    a = sc.array(4, "int32")
    peer = sc.get_peer_array(a, (me + 1) % npes)
    assert peer.shape == a.shape and peer.dtype == a.dtype
    peer[:] = me + 10
    sc.barrier_all()
    assert (a == (me - 1) % npes + 10).all()
    sc.barrier_all()
    sc.free_array(a)


REDUCE_CASES = [(dt, op) for dt in ("int8", "int32", "int64", "uint16", "uint64")
                for op in ("sum", "prod", "min", "max", "and", "or", "xor")]
REDUCE_CASES += [(dt, op) for dt in ("float16", "float32", "float64") for op in ("sum", "prod", "min", "max")]
NUMPY_OP = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
            "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@pytest.mark.parametrize("dtype,op", REDUCE_CASES)
def test_reduce_equals_numpy(me, npes, dtype, op):
    n = 37
    seed = zlib.crc32(f"{dtype}-{op}".encode()) % 1000  # the same on every PE (hash() is salted per process)
    src = sc.array(n, dtype)
    dst = sc.array(n, dtype)
    src[:] = pe_data(me, n, dtype, seed=seed)
    ref = pe_data(0, n, dtype, seed=seed)
    for pe in range(1, npes):
        ref = NUMPY_OP[op](ref, pe_data(pe, n, dtype, seed=seed)).astype(dtype)
    sc.reduce(WORLD, dst, src, op)
    np.testing.assert_array_equal(dst, ref)
    sc.free_array(dst)
    sc.free_array(src)


def test_broadcast_from_each_root(me, npes):
    src = sc.array(10, "int32")
    dst = sc.array(10, "int32")
    src[:] = np.arange(10) * (me + 1)
    for root in range(npes):
        sc.broadcast(WORLD, dst, src, root)
        np.testing.assert_array_equal(dst, np.arange(10) * (root + 1))
    sc.free_array(dst)
    sc.free_array(src)


def test_fcollect_concatenates_in_pe_order(me, npes):
    src = sc.array(3, "float32")
    dst = sc.array((npes, 3), "float32")
    src[:] = [me, me + 0.5, -me]
    sc.fcollect(WORLD, dst, src)
    np.testing.assert_array_equal(dst, [[p, p + 0.5, -p] for p in range(npes)])
    sc.free_array(dst)
    sc.free_array(src)


def test_alltoall_transposes_blocks(me, npes):
    src = sc.array((npes, 2), "int64")
    dst = sc.array((npes, 2), "int64")
    src[:] = [[100 * me + j, -(100 * me + j)] for j in range(npes)]  # block j goes to PE j
    sc.alltoall(WORLD, dst, src)
    np.testing.assert_array_equal(dst, [[100 * i + me, -(100 * i + me)] for i in range(npes)])
    sc.free_array(dst)
    sc.free_array(src)


def test_same_mype_node_team_is_one_pe_per_node(me):
    # Every PE of these tests runs on one node: the team of PEs with this PE's node index is this PE.
    team = sc.Teams.TEAM_SAME_MYPE_NODE
    assert sc.team_n_pes(team) == 1
    assert sc.team_my_pe(team) == 0
    assert sc.team_translate_pe(team, 0, WORLD) == me


def test_team_split_strided_even_pes(me, npes):
    size = (npes + 1) // 2
    team = sc.team_split_strided(WORLD, 0, 2, size)
    if me % 2 == 0:
        assert team != sc.Teams.TEAM_INVALID
        assert sc.team_my_pe(team) == me // 2
        assert sc.team_n_pes(team) == size
        assert sc.team_translate_pe(team, sc.team_my_pe(team), WORLD) == me
    else:
        assert team == sc.Teams.TEAM_INVALID
        assert sc.team_my_pe(team) == -1
    src = sc.array(4, "int32")
    dst = sc.array(4, "int32")
    src[:] = me + 1
    if team != sc.Teams.TEAM_INVALID:
        sc.reduce(team, dst, src, "sum")
        assert (dst == sum(p + 1 for p in range(0, npes, 2))).all()
        sc.barrier(team)
        sc.sync(team)
    sc.team_destroy(team)
    sc.barrier_all()
    sc.free_array(dst)
    sc.free_array(src)


def test_world_queries(me, npes):
    assert 0 <= me < npes
    assert sc.team_my_pe(WORLD) == me and sc.team_n_pes(WORLD) == npes
    sc.sync_all()
    sc.barrier()
    sc.sync()
