# torch tensors on a host-memory heap (CPU tensors through DLPack): tensor/free_tensor/get_peer_tensor
# and the calls on tensors. Skipped without torch or when the heap is on a GPU (test_core_gpu.py).
import numpy as np
import pytest

import shoal.core as sc

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def host_heap():
    if sc._core.backend_name() != "host":
        pytest.skip("the heap is on a GPU: test_core_gpu.py covers tensors there")


@pytest.mark.parametrize("dtype", [torch.float32, "bfloat16", np.int64])
def test_tensor_zeroed_on_the_heap_and_freed_once(dtype, me):
    t = sc.tensor((4, 3), dtype)
    assert t.device.type == "cpu" and tuple(t.shape) == (4, 3) and torch.count_nonzero(t).item() == 0
    assert sc.get_peer_tensor(t, me).data_ptr() == t.data_ptr()
    sc.free_tensor(t)
    with pytest.raises(sc.ShoalError, match=r"free_tensor: t is not a tensor from shoal.core.tensor"):
        sc.free_tensor(t)


def test_foreign_and_wrong_kinds_are_refused():
    t = sc.tensor(8, torch.int32)
    with pytest.raises(sc.ShoalError, match=r"free_tensor: t is not a tensor from shoal.core.tensor"):
        sc.free_tensor(torch.zeros(8, dtype=torch.int32))
    with pytest.raises(sc.ShoalError, match=r"free_array: a is not an array from shoal.core.array"):
        sc.free_array(t)
    with pytest.raises(sc.ShoalError, match=r"get_peer_array: a must be a numpy array"):
        sc.get_peer_array(t, 0)
    with pytest.raises(sc.ShoalError, match=r"tensor: dtype='nope' is not a torch dtype"):
        sc.tensor(4, "nope")
    with pytest.raises(sc.ShoalError, match=r"put: src must be contiguous"):
        sc.put(t, torch.zeros(16, dtype=torch.int32)[::2], 0)
    sc.free_tensor(t)


def test_views_keep_the_owner_and_the_block_is_freed_from_any_start_view(me):
    t = sc.tensor(12, torch.float32)
    base = t.data_ptr()
    v = t[4:8]
    del t
    v.fill_(1.5)
    assert sc.get_peer_tensor(v, me).data_ptr() == v.data_ptr()
    whole = v.as_strided((12,), (1,), 0)
    assert whole.data_ptr() == base and whole.sum().item() == 6.0
    sc.free_tensor(whole)
    with pytest.raises(sc.ShoalError, match=r"get_peer_tensor: t is not on the symmetric heap"):
        sc.get_peer_tensor(v, me)


def test_peer_views_put_get_and_collectives_on_tensors(me, npes):
    t = sc.tensor(6, torch.int64)
    t.fill_(me + 1)
    sc.barrier_all()
    nxt, prev = (me + 1) % npes, (me - 1) % npes
    assert torch.all(sc.get_peer_tensor(t, nxt) == nxt + 1).item()
    sc.barrier_all()
    dst = sc.tensor(6, torch.int64)
    sc.put(dst, torch.full((6,), 100 + me, dtype=torch.int64), nxt)
    sc.barrier_all()
    assert torch.all(dst == 100 + prev).item()
    got = torch.zeros(6, dtype=torch.int64)
    sc.get(got, dst, nxt)
    assert torch.all(got == 100 + me).item()
    sc.barrier_all()
    sc.reduce(sc.Teams.TEAM_WORLD, dst, t, "sum")
    assert torch.all(dst == npes * (npes + 1) // 2).item()
    half_s, half_d = sc.tensor(6, torch.bfloat16), sc.tensor(6, torch.bfloat16)
    half_s.fill_(me + 1)
    sc.reduce(sc.Teams.TEAM_WORLD, half_d, half_s, "max")
    assert torch.all(half_d == npes).item()
    coll = sc.tensor(6 * npes, torch.int64)
    sc.fcollect(sc.Teams.TEAM_WORLD, coll, t)
    assert coll.view(npes, 6)[:, 0].tolist() == list(range(1, npes + 1))
    sc.broadcast(sc.Teams.TEAM_WORLD, dst, t, root=npes - 1)
    assert torch.all(dst == npes).item()
    for x in (coll, half_d, half_s, dst, t):
        sc.free_tensor(x)
