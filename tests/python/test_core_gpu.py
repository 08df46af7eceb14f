# shoal.core on a GPU heap with torch CUDA tensors (ctest -L gpu: python_gpu_test.np2 and friends).
# Skipped without torch, without CUDA, or when the session's heap is in host memory (the CPU sessions
# set SHOAL_BACKEND=host). Every PE runs the same tests in the same order (collective calls match).
import os

import numpy as np
import pytest

import shoal.core as sc

torch = pytest.importorskip("torch")

STREAMS = [None, "torch", "int"]


@pytest.fixture(autouse=True)
def gpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if sc._core.backend_name() != "cuda":
        pytest.skip(f"the heap is not on a GPU (backend {sc._core.backend_name()})")
    local = int(os.environ.get("SHOAL_LOCAL_SIZE", "1"))
    if local > torch.cuda.device_count() and os.environ.get("SHOAL_GPU_TEST_SHARE_GPUS", "0") == "0":
        pytest.skip(f"{local} PEs on {torch.cuda.device_count()} GPU(s): set SHOAL_GPU_TEST_SHARE_GPUS=1 to share")


def make_stream(kind):
    """(the stream argument, the torch stream to synchronize) for a stream kind."""
    if kind is None:
        return None, None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # the fills on the current stream come first
    return (s if kind == "torch" else s.cuda_stream), s


def finish(s):
    if s is not None:
        s.synchronize()


def pe_tensor(pe, n, dtype, seed):
    """PE pe's deterministic input (on the GPU); every PE can rebuild every other PE's."""
    g = torch.Generator().manual_seed(seed * 1000 + pe)
    return torch.randint(-4, 8, (n,), generator=g).to(dtype).cuda()


def test_init_joined_as_the_launcher_or_group_says(me, npes, shoal_job):
    assert sc.is_initialized()
    dist = shoal_job
    if dist is not None:  # init from a torch.distributed group: PE numbers are the group's ranks
        assert (me, npes) == (dist.get_rank(), dist.get_world_size())
    else:
        assert (me, npes) == (int(os.environ["SHOAL_RANK"]), int(os.environ["SHOAL_SIZE"]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8])
def test_tensor_is_on_the_heap_zeroed_and_freed_once(dtype, me):
    t = sc.tensor((3, 5), dtype)
    assert t.is_cuda and t.dtype == dtype and tuple(t.shape) == (3, 5) and t.is_contiguous()
    assert torch.count_nonzero(t).item() == 0
    assert sc.get_peer_tensor(t, me).data_ptr() == t.data_ptr()  # its own copy maps to itself
    view = t[1]
    sc.free_tensor(t)
    with pytest.raises(sc.ShoalError, match=r"free_tensor: t is not a tensor from shoal.core.tensor"):
        sc.free_tensor(t)
    del view


def test_foreign_tensors_and_arrays_are_refused():
    t = sc.tensor(8, torch.int32)
    with pytest.raises(sc.ShoalError, match=r"free_tensor: t is not a tensor from shoal.core.tensor"):
        sc.free_tensor(torch.zeros(8, dtype=torch.int32, device="cuda"))
    with pytest.raises(sc.ShoalError, match=r"free_tensor: t must be a torch tensor"):
        sc.free_tensor(np.zeros(8))
    with pytest.raises(sc.ShoalError, match=r"free_array: a is not an array from shoal.core.array"):
        sc.free_array(t)
    with pytest.raises(sc.ShoalError, match=r"put: dst is not on the symmetric heap"):
        sc.put(torch.zeros(8, dtype=torch.int32, device="cuda"), t, 0)
    with pytest.raises(sc.ShoalError, match=r"array: the symmetric heap is on a GPU"):
        sc.array(4, "int32")
    with pytest.raises(sc.ShoalError, match=r"put: stream=.*not a CUDA stream"):
        sc.put(t, t, 0, stream="fast")
    sc.free_tensor(t)


def test_views_keep_the_block_owner_alive():
    t = sc.tensor(16, torch.float32)
    v = t[4:8]
    base = t.data_ptr()
    del t  # the view holds the block's owner (through DLPack): it stays valid and on the heap
    v.fill_(2.0)
    assert v.sum().item() == 8.0
    assert sc.get_peer_tensor(v, sc.my_pe()).data_ptr() == v.data_ptr()
    whole = v.as_strided((16,), (1,), 0)  # the tensor again, from its storage
    assert whole.data_ptr() == base
    sc.free_tensor(whole)
    with pytest.raises(sc.ShoalError, match=r"get_peer_tensor: t is not on the symmetric heap"):
        sc.get_peer_tensor(v, 0)


def test_peer_views_load_and_store(me, npes):
    t = sc.tensor(64, torch.int32)
    t.fill_(me + 1)
    sc.barrier_all()
    nxt = (me + 1) % npes
    peer = sc.get_peer_tensor(t, nxt)
    assert peer.is_cuda and peer.shape == t.shape and peer.dtype == t.dtype
    assert torch.all(peer == nxt + 1).item()
    sc.barrier_all()
    peer[me % 64] = -(me + 1)  # a store into the next PE's copy
    torch.cuda.synchronize()
    sc.barrier_all()
    prev = (me - 1) % npes
    assert t[prev % 64].item() == -(prev + 1)
    sc.free_tensor(t)


@pytest.mark.parametrize("stream", STREAMS)
def test_put_get(stream, me, npes):
    n = 1000
    dst = sc.tensor(n, torch.float32)
    src = pe_tensor(me, n, torch.float32, 1)
    arg, s = make_stream(stream)
    nxt, prev = (me + 1) % npes, (me - 1) % npes
    sc.put(dst, src, nxt, stream=arg)
    sc.barrier_all(stream=arg)
    finish(s)
    assert torch.equal(dst, pe_tensor(prev, n, torch.float32, 1))
    got = torch.empty(n, dtype=torch.float32, device="cuda")
    if s is not None:
        s.wait_stream(torch.cuda.current_stream())
    sc.get(got, dst, nxt, stream=arg)
    sc.quiet(stream=arg)
    finish(s)
    assert torch.equal(got, pe_tensor(me, n, torch.float32, 1))
    sc.barrier_all()
    sc.free_tensor(dst)


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("dtype,op", [(torch.float32, "sum"), (torch.bfloat16, "sum"), (torch.int64, "max"),
                                      (torch.int32, "xor")])
def test_reduce(stream, dtype, op, npes):
    n = 777
    src, dst = sc.tensor(n, dtype), sc.tensor(n, dtype)
    src.copy_(pe_tensor(sc.my_pe(), n, dtype, 2))
    arg, s = make_stream(stream)
    sc.reduce(sc.Teams.TEAM_WORLD, dst, src, op, stream=arg)
    finish(s)
    inputs = [pe_tensor(pe, n, dtype, 2) for pe in range(npes)]
    want = inputs[0].clone()
    for x in inputs[1:]:
        if op == "sum":
            want = want + x
        elif op == "max":
            want = torch.maximum(want, x)
        else:
            want = want ^ x
    assert torch.equal(dst, want.to(dtype))  # small integers: exact in bfloat16 too
    sc.barrier_all()
    sc.free_tensor(dst)
    sc.free_tensor(src)


@pytest.mark.parametrize("stream", STREAMS)
def test_broadcast_fcollect_alltoall(stream, me, npes):
    n = 96 * npes
    src = sc.tensor(n, torch.int32)
    dst = sc.tensor(n * npes, torch.int32)
    src.copy_(pe_tensor(me, n, torch.int32, 3))
    arg, s = make_stream(stream)
    root = npes - 1
    sc.broadcast(sc.Teams.TEAM_WORLD, dst[:n], src, root=root, stream=arg)
    finish(s)
    assert torch.equal(dst[:n], pe_tensor(root, n, torch.int32, 3))
    sc.barrier_all(stream=arg)
    sc.fcollect(sc.Teams.TEAM_WORLD, dst, src, stream=arg)
    finish(s)
    assert torch.equal(dst, torch.cat([pe_tensor(pe, n, torch.int32, 3) for pe in range(npes)]))
    sc.sync_all(stream=arg)
    sc.alltoall(sc.Teams.TEAM_WORLD, dst[:n], src, stream=arg)
    finish(s)
    block = n // npes
    want = torch.cat([pe_tensor(pe, n, torch.int32, 3)[me * block:(me + 1) * block] for pe in range(npes)])
    assert torch.equal(dst[:n], want)
    sc.barrier(sc.Teams.TEAM_WORLD, stream=arg)
    sc.sync(sc.Teams.TEAM_WORLD, stream=arg)
    finish(s)
    sc.barrier_all()
    sc.free_tensor(dst)
    sc.free_tensor(src)


def test_cuda_core_stream_when_installed(me, npes):
    core = pytest.importorskip("cuda.core.experimental")
    dev = core.Device(torch.cuda.current_device())
    dev.set_current()
    s = dev.create_stream()
    t = sc.tensor(32, torch.int64)
    src = torch.full((32,), me, dtype=torch.int64, device="cuda")
    torch.cuda.synchronize()
    sc.put(t, src, (me + 1) % npes, stream=s)
    sc.barrier_all(stream=s)
    s.sync()
    assert torch.all(t == (me - 1) % npes).item()
    sc.free_tensor(t)
