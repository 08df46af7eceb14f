"""shoal.core: symmetric arrays, RMA, synchronization, collectives and teams, named as nvshmem4py's
``nvshmem.core`` so its users switch by import.

Run the script under the launcher (``shoalrun -n 2 python3 script.py``), call :func:`init` first and
:func:`finalize` last. On host-memory PEs :func:`array` returns a numpy array that *is* the symmetric
memory (zero-copy). Every error raises :class:`ShoalError` (a RuntimeError) naming the call and the
argument; the library never stops the interpreter for a bad call.
"""

from __future__ import annotations

import enum
import importlib.util
import math
import os
import sys
from typing import Any, Optional

import numpy as np

from . import _core
from ._core import ShoalError

__all__ = [
    "ShoalError", "Teams", "init", "is_initialized", "get_unique_id", "finalize", "my_pe", "n_pes", "array",
    "free_array", "get_peer_array", "tensor", "free_tensor", "get_peer_tensor",
    "put", "get", "quiet", "barrier", "barrier_all", "sync", "sync_all", "reduce", "broadcast", "fcollect",
    "alltoall", "team_my_pe", "team_n_pes", "team_translate_pe", "team_split_strided", "team_destroy",
]


class Teams(enum.IntEnum):
    """Predefined team handles (OpenSHMEM/NVSHMEM names)."""

    TEAM_INVALID = -1
    TEAM_WORLD = 0
    TEAM_SHARED = 1
    TEAM_NODE = 2
    TEAM_SAME_MYPE_NODE = 63  # one PE per node: those with this PE's index on their node


_initialized = False
# The GPU of the symmetric heap when it is on a GPU and init knew it (else torch's current device).
_device: Optional[int] = None
# Symmetric blocks this process allocated: base address -> nbytes (what free_array and the checks use).
_blocks: dict[int, int] = {}


class _Block:
    """Owner of one block under torch tensors: every tensor and view of it references this object
    (through DLPack), so its address stays valid and known while any of them lives."""

    __slots__ = ("addr", "nbytes", "cuda", "__weakref__")

    def __init__(self, addr: int, nbytes: int, cuda: bool) -> None:
        self.addr, self.nbytes, self.cuda = addr, nbytes, cuda


# Blocks under tensors from tensor(): base address -> owner.
_owners: dict[int, _Block] = {}


def _fail(call: str, what: str) -> ShoalError:
    return ShoalError(f"shoal.core.{call}: {what}")


def _stream(call: str, stream: Any) -> Optional[int]:
    """The cudaStream_t handle of ``stream`` (torch.cuda.Stream, a cuda.core Stream, anything with the
    ``__cuda_stream__`` protocol, or an int handle; 0 is the legacy default stream); None for None."""
    if stream is None:
        return None
    if _core.backend_name() != "cuda":
        raise _fail(call, f"stream={stream!r}: streams need a GPU heap (backend "
                    f"'{_core.backend_name() or 'none'}'); pass stream=None on host-memory PEs")
    handle: Any = None
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        handle = int(stream)
    elif isinstance(getattr(stream, "cuda_stream", None), int):  # torch.cuda.Stream / ExternalStream
        handle = stream.cuda_stream
    elif hasattr(stream, "__cuda_stream__"):  # cuda.core Stream: (version, handle)
        proto = stream.__cuda_stream__
        handle = int((proto() if callable(proto) else proto)[1])
    elif getattr(stream, "handle", None) is not None:
        handle = int(stream.handle)
    if not isinstance(handle, int) or handle < 0:
        raise _fail(call, f"stream={stream!r} is not a CUDA stream (torch.cuda.Stream, cuda.core Stream or int)")
    return handle


class _Buf:
    """What the calls need of a numpy array or torch tensor: address, bytes, elements, dtype name."""

    __slots__ = ("addr", "nbytes", "size", "dtype", "cuda")

    def __init__(self, addr: int, nbytes: int, size: int, dtype: str, cuda: bool) -> None:
        self.addr, self.nbytes, self.size, self.dtype, self.cuda = addr, nbytes, size, dtype, cuda


def _is_tensor(a: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _buf(call: str, name: str, a: Any) -> _Buf:
    if isinstance(a, np.ndarray):
        if not a.flags["C_CONTIGUOUS"]:
            raise _fail(call, f"{name} must be C-contiguous")
        return _Buf(_addr(a), a.nbytes, a.size, a.dtype.name, False)
    if _is_tensor(a):
        if not a.is_contiguous():
            raise _fail(call, f"{name} must be contiguous")
        n = a.numel()
        return _Buf(a.data_ptr(), n * a.element_size(), n, str(a.dtype).replace("torch.", ""), a.is_cuda)
    raise _fail(call, f"{name} must be a numpy array or torch tensor, not {type(a).__name__}")


def _check_array(call: str, name: str, a: Any, symmetric: bool) -> _Buf:
    b = _buf(call, name, a)
    if symmetric and b.nbytes > 0:
        if not any(base <= b.addr and b.addr + b.nbytes <= base + n for base, n in _blocks.items()):
            raise _fail(call, f"{name} is not on the symmetric heap (make it with shoal.core.array/tensor)")
    return b


def _before_blocking(*bufs: _Buf) -> None:
    """A blocking call on CUDA tensors reads them after torch's pending work on the current stream."""
    if any(b.cuda for b in bufs):
        sys.modules["torch"].cuda.current_stream().synchronize()


def _torch_find() -> Any:
    """torch when it is installed (imported on first use), else None: shoal.core works without it."""
    if "torch" in sys.modules:
        return sys.modules["torch"]
    if importlib.util.find_spec("torch") is None:
        return None
    import torch
    return torch


def _torch_load(call: str) -> Any:
    torch = _torch_find()
    if torch is None:
        raise _fail(call, "needs PyTorch, which is not installed (numpy arrays: shoal.core.array)")
    return torch


def _check_int(call: str, name: str, value: Any) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise _fail(call, f"{name}={value!r} must be an int")
    return int(value)


def _need_init(call: str) -> None:
    if not _initialized:
        raise _fail(call, "shoal is not initialized (call shoal.core.init() first, under shoalrun)")


def _check_team(call: str, team: Any, name: str = "team") -> int:
    """A team handle: an int (Teams member, or one team_split_strided returned); not a bool, float or str."""
    if not isinstance(team, (int, np.integer)) or isinstance(team, bool):
        raise _fail(call, f"{name}={team!r} is not a team handle (an int: Teams.* or from team_split_strided)")
    return int(team)


def _check_pe(call: str, name: str, pe: Any) -> int:
    if not isinstance(pe, (int, np.integer)) or isinstance(pe, bool):
        raise _fail(call, f"{name}={pe!r} must be an int")
    n = _core.n_pes()
    if not 0 <= int(pe) < n:
        raise _fail(call, f"{name}={pe} is out of range [0, {n})")
    return int(pe)


def _same_dtype(call: str, dst: _Buf, src: _Buf) -> None:
    if dst.dtype != src.dtype:
        raise _fail(call, f"dst dtype {dst.dtype} differs from src dtype {src.dtype}")


# --- setup ---

def _launcher_local_rank() -> Optional[int]:
    for name in ("SHOAL_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                 "MPI_LOCALRANKID", "SLURM_LOCALID"):
        text = os.environ.get(name, "")
        if text.lstrip("-").isdigit() and int(text) >= 0:
            return int(text)
    return None


def _device_index(device: Any) -> int:
    """The CUDA ordinal of an int, "cuda:N", torch.device or cuda.core Device."""
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        index: Any = int(device)
    elif isinstance(device, str) or type(device).__module__.startswith("torch"):
        torch = _torch_load("init(device=...)")
        d = torch.device(device)
        if d.type != "cuda":
            raise _fail("init", f"device={device!r} is not a CUDA device")
        index = d.index if d.index is not None else torch.cuda.current_device()
    else:
        index = getattr(device, "device_id", None)  # cuda.core.experimental.Device
    if not isinstance(index, int) or index < 0:
        raise _fail("init", f"device={device!r} is not a CUDA device (an int, 'cuda:N', torch.device or "
                    "cuda.core Device)")
    return index


def _pick_device(device: Any) -> Optional[int]:
    """Makes the heap's GPU current before shoal_init (the library adopts the current CUDA context).
    None: no CUDA through torch and none asked for (the library picks: SHOAL_DEVICE, local rank)."""
    if os.environ.get("SHOAL_BACKEND", "auto") == "host":
        if device is not None:
            raise _fail("init", f"device={device!r} but SHOAL_BACKEND=host puts the heap in host memory")
        return None
    torch = _torch_find()
    cuda = torch is not None and torch.cuda.is_available()
    if device is None:
        if not cuda:
            return None
        if os.environ.get("SHOAL_DEVICE", "").isdigit():
            index = int(os.environ["SHOAL_DEVICE"])
        elif torch.cuda.is_initialized() or _launcher_local_rank() is None:
            index = torch.cuda.current_device()
        else:
            index = _launcher_local_rank() % torch.cuda.device_count()
    else:
        index = _device_index(device)
    if cuda:
        if index >= torch.cuda.device_count():
            raise _fail("init", f"device={index} but only {torch.cuda.device_count()} GPU(s) are visible")
        torch.cuda.set_device(index)
        torch.cuda.synchronize(index)  # a ready context on this thread: shoal adopts it
    else:
        os.environ["SHOAL_DEVICE"] = str(index)
    return index


def _torch_group(group: Any) -> Any:
    """The process group to bootstrap from: `group`, else torch.distributed's default group when it is
    initialized (and torch already imported), else None."""
    if group is not None:
        return group
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    return None


def _init_from_group(group: Any) -> None:
    torch = _torch_load("init(group=...)")
    dist = torch.distributed
    if not dist.is_initialized():
        raise _fail("init", "group: torch.distributed is not initialized (call init_process_group first)")
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise _fail("init", "group: this process is not a member of the group")
    uid = [_core.get_uniqueid() if rank == 0 else None]
    get_global = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
    root = 0 if group is None or group is dist.group.WORLD else get_global(group, 0)
    dist.broadcast_object_list(uid, src=root, group=group)
    if not isinstance(uid[0], bytes):
        raise _fail("init", f"group: rank 0 sent {type(uid[0]).__name__}, not a unique id")
    _core.init_attr(rank, size, uid[0])


def get_unique_id(empty: bool = False) -> bytes:
    """A rendezvous id for :func:`init` (``uid=``), made on the PE that will be rank 0 and sent to the
    others by any means (torch.distributed, MPI, a file). ``empty=True`` gives a placeholder of the
    same size (nvshmem4py's pattern: every rank makes one, rank 0's is broadcast)."""
    if empty:
        return bytes(_core.uniqueid_nbytes())
    return _core.get_uniqueid()


def init(group: Any = None, device: Any = None, uid: Any = None, rank: Optional[int] = None,
         nranks: Optional[int] = None, mpi_comm: Any = None, initializer_method: Optional[str] = None) -> None:
    """Joins a job; collective over its PEs. How, by what is given:

    - ``group`` (a torch.distributed ProcessGroup), or nothing while torch.distributed is initialized:
      the group's rank 0 makes a unique id, ``broadcast_object_list`` sends it over the group, and
      group rank r becomes PE r of a job of the group's size.
    - ``uid``, ``rank``, ``nranks`` (all three): join as PE ``rank`` of ``nranks`` with the id from
      :func:`get_unique_id` on rank 0.
    - nothing: the launcher's environment, as ``shoal_init`` reads it (shoalrun, torchrun's
      RANK/WORLD_SIZE/MASTER_ADDR, mpirun, srun).

    ``device`` (int, "cuda:N", torch.device, cuda.core Device) is the GPU of the symmetric heap. With
    torch and CUDA present it defaults to ``torch.cuda.current_device()`` (the launcher's local rank
    modulo the GPUs while torch has not touched CUDA yet, or SHOAL_DEVICE) and the heap is on that
    GPU; otherwise the heap is host memory. ``mpi_comm`` is not supported (run under mpirun and pass
    nothing). Errors raise :class:`ShoalError`; after :func:`init` the library never stops the process
    (a dead peer raises in the call that needs it)."""
    global _initialized, _device
    if _initialized:
        raise _fail("init", "already initialized")
    if mpi_comm is not None:
        raise _fail("init", "mpi_comm: not supported; run under mpirun and call init() (the launcher's "
                    "environment), or pass group= or uid/rank/nranks")
    if initializer_method not in (None, "", "uid", "env", "torch"):
        raise _fail("init", f"initializer_method={initializer_method!r} is not one of 'uid', 'env', 'torch'")
    explicit = {k: v for k, v in dict(uid=uid, rank=rank, nranks=nranks).items() if v is not None}
    if explicit and len(explicit) != 3:
        missing = sorted({"uid", "rank", "nranks"} - set(explicit))
        raise _fail("init", f"uid, rank and nranks go together; {', '.join(missing)} missing")
    if explicit and group is not None:
        raise _fail("init", "group and uid/rank/nranks are two ways to join; pass one")
    _core.set_return_mode()
    index = _pick_device(device)
    if explicit:
        try:
            uid_bytes = bytes(uid)
        except TypeError:
            raise _fail("init", f"uid={type(uid).__name__} is not bytes (make it with get_unique_id)") from None
        _core.init_attr(_check_int("init", "rank", rank), _check_int("init", "nranks", nranks), uid_bytes)
    elif _torch_group(group) is not None:
        _init_from_group(_torch_group(group))
    else:
        _core.init()
    _initialized = True
    _device = index if _core.backend_name() == "cuda" else None


def is_initialized() -> bool:
    """True between :func:`init` and :func:`finalize`."""
    return _initialized


def finalize() -> None:
    """Barrier, then releases the symmetric heap (arrays from :func:`array` must not be used after)."""
    global _initialized
    _need_init("finalize")
    if any(o.cuda for o in _owners.values()):
        sys.modules["torch"].cuda.synchronize()  # kernels still using heap tensors finish first
    _core.finalize()
    _blocks.clear()
    _owners.clear()
    _initialized = False


def my_pe() -> int:
    """This PE's number in the world (0 .. n_pes()-1)."""
    _need_init("my_pe")
    return _core.my_pe()


def n_pes() -> int:
    """Number of PEs in the job."""
    _need_init("n_pes")
    return _core.n_pes()


# --- symmetric memory ---

def array(shape: Any, dtype: Any = "float32") -> np.ndarray:
    """A numpy array on the symmetric heap (zero-copy view of it), zero-filled. Collective: every PE
    calls it with the same shape and dtype in the same order. Host-memory heaps only (GPU heaps:
    :func:`tensor`)."""
    _need_init("array")
    if _core.backend_name() != "host":
        raise _fail("array", f"the symmetric heap is on a GPU (backend '{_core.backend_name()}'): numpy "
                    "arrays need a host heap (SHOAL_BACKEND=host); use shoal.core.tensor for torch CUDA tensors")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise _fail("array", f"dtype={dtype!r} is not a numpy dtype") from None
    if dt.hasobject:
        raise _fail("array", f"dtype={dt}: object arrays cannot live on the symmetric heap")
    shp = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(not isinstance(d, (int, np.integer)) or d < 0 for d in shp):
        raise _fail("array", f"shape={shape!r} must be non-negative ints")
    nbytes = max(int(math.prod(shp)) * dt.itemsize, 1)  # 1 byte for empty arrays: every array has a block
    addr = _core.malloc(nbytes)
    _blocks[addr] = nbytes
    a = _core.view(addr, nbytes)[: int(math.prod(shp)) * dt.itemsize].view(dt).reshape(shp)
    a[...] = 0
    _core.barrier_all()  # the zero fill is done everywhere before anyone puts into it
    return a


def free_array(a: np.ndarray) -> None:
    """Frees an array made by :func:`array` (collective, same order on every PE). Views of it dangle after."""
    _need_init("free_array")
    b = _buf("free_array", "a", a)
    if b.addr not in _blocks or b.addr in _owners:
        raise _fail("free_array", "a is not an array from shoal.core.array (or was freed already)")
    _core.free(b.addr)
    del _blocks[b.addr]  # only once the library freed it: a failed (e.g. mismatched) free keeps the block


def get_peer_array(a: np.ndarray, pe: int) -> np.ndarray:
    """A numpy view of PE ``pe``'s copy of symmetric ``a``, for direct loads and stores (shoal_ptr).
    Raises when that copy cannot be mapped into this process."""
    _need_init("get_peer_array")
    if not isinstance(a, np.ndarray):
        raise _fail("get_peer_array", f"a must be a numpy array, not {type(a).__name__} (tensors: get_peer_tensor)")
    b = _check_array("get_peer_array", "a", a, symmetric=True)
    p = _peer_addr("get_peer_array", b, pe)
    return _core.view(p, max(a.nbytes, 1))[: a.nbytes].view(a.dtype).reshape(a.shape)


def _peer_addr(call: str, b: _Buf, pe: Any) -> int:
    pe = _check_pe(call, "pe", pe)
    p = _core.ptr(b.addr, pe)
    if p == 0:
        raise _fail(call, f"pe={pe}: its heap is not mapped into this process")
    return p


def _torch_dtype(call: str, torch: Any, dtype: Any) -> Any:
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name  # also numpy dtypes
    except TypeError:
        name = None
    dt = getattr(torch, name, None) if name else None
    if not isinstance(dt, torch.dtype):
        raise _fail(call, f"dtype={dtype!r} is not a torch dtype")
    return dt


def _heap_device(torch: Any) -> int:
    """The CUDA ordinal of the heap's tensors; -1 when the heap is host memory (CPU tensors)."""
    if _core.backend_name() != "cuda":
        return -1
    return _device if _device is not None else torch.cuda.current_device()


def _tensor_view(owner: _Block, addr: int, nbytes: int, device: int, dtype: Any, shape: tuple) -> Any:
    raw = _core.view_tensor(addr, max(nbytes, 1), device, owner)
    return raw[:nbytes].view(dtype).reshape(shape)


def tensor(shape: Any, dtype: Any = "float32") -> Any:
    """A torch tensor on the symmetric heap, zero-filled: on the heap's GPU (CUDA tensor) when the heap
    is on a GPU, a CPU tensor on host-memory PEs; zero-copy through DLPack. Collective: every PE calls
    it with the same shape and dtype in the same order. The tensor and its views keep the block's owner
    alive; the memory itself is released by :func:`free_tensor` (or :func:`finalize`)."""
    _need_init("tensor")
    torch = _torch_load("tensor")
    dt = _torch_dtype("tensor", torch, dtype)
    shp = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0 for d in shp):
        raise _fail("tensor", f"shape={shape!r} must be non-negative ints")
    nbytes = int(math.prod(shp)) * dt.itemsize
    device = _heap_device(torch)
    addr = _core.malloc(max(nbytes, 1))
    owner = _Block(addr, max(nbytes, 1), device >= 0)
    _blocks[addr] = owner.nbytes
    _owners[addr] = owner
    t = _tensor_view(owner, addr, nbytes, device, dt, tuple(int(d) for d in shp))
    t.zero_()
    if device >= 0:
        torch.cuda.current_stream(device).synchronize()
    _core.barrier_all()  # the zero fill is done everywhere before anyone puts into it
    return t


def free_tensor(t: Any) -> None:
    """Frees a tensor made by :func:`tensor` (collective, same order on every PE) after the current
    stream's work. Its views (and peer views) must not be used after. Raises on a tensor that did not
    come from :func:`tensor` or was freed already."""
    _need_init("free_tensor")
    if not _is_tensor(t):
        raise _fail("free_tensor", f"t must be a torch tensor, not {type(t).__name__} (arrays: free_array)")
    addr = t.data_ptr()
    if addr not in _owners:
        raise _fail("free_tensor", "t is not a tensor from shoal.core.tensor (or was freed already)")
    _before_blocking(_buf("free_tensor", "t", t))
    _core.free(addr)
    del _blocks[addr]
    del _owners[addr]


def get_peer_tensor(t: Any, pe: int) -> Any:
    """A tensor view of PE ``pe``'s copy of symmetric tensor ``t`` (same shape and dtype, on this PE's
    device), for direct loads and stores from kernels (shoal_ptr: NVLink/PCIe peers on the node).
    Raises when that copy cannot be mapped into this process."""
    _need_init("get_peer_tensor")
    if not _is_tensor(t):
        raise _fail("get_peer_tensor", f"t must be a torch tensor, not {type(t).__name__}")
    b = _check_array("get_peer_tensor", "t", t, symmetric=True)
    p = _peer_addr("get_peer_tensor", b, pe)
    owner = next((o for base, o in _owners.items() if base <= b.addr < base + o.nbytes), None)
    if owner is None:
        raise _fail("get_peer_tensor", "t is not a tensor from shoal.core.tensor (arrays: get_peer_array)")
    return _tensor_view(owner, p, b.nbytes, t.device.index if t.is_cuda else -1, t.dtype, tuple(t.shape))


# --- RMA ---

def put(dst: Any, src: Any, remote_pe: int = -1, stream: Any = None) -> None:
    """Copies local ``src`` into symmetric ``dst`` on ``remote_pe``. Without a stream it is blocking
    (src may be reused on return; :func:`quiet` or a barrier before the target reads it); with one it
    is enqueued on that CUDA stream. Arrays: numpy arrays or torch tensors."""
    _rma("put", dst, src, remote_pe, stream)


def get(dst: Any, src: Any, remote_pe: int = -1, stream: Any = None) -> None:
    """Copies symmetric ``src`` of ``remote_pe`` into local ``dst`` (complete on return without a
    stream; in stream order with one)."""
    _rma("get", dst, src, remote_pe, stream)


def _rma(call: str, dst: Any, src: Any, remote_pe: Any, stream: Any) -> None:
    """put or get: the remote side (dst of a put, src of a get) is symmetric; src.nbytes are copied."""
    _need_init(call)
    h = _stream(call, stream)
    d = _check_array(call, "dst", dst, symmetric=call == "put")
    s = _check_array(call, "src", src, symmetric=call == "get")
    pe = _check_pe(call, "remote_pe", remote_pe)
    if s.nbytes > d.nbytes:
        raise _fail(call, f"src has {s.nbytes} bytes, more than dst's {d.nbytes}")
    fn = {"put": (_core.putmem, _core.putmem_on_stream), "get": (_core.getmem, _core.getmem_on_stream)}[call]
    if h is None:
        _before_blocking(d, s)
        fn[0](d.addr, s.addr, s.nbytes, pe)
    else:
        fn[1](d.addr, s.addr, s.nbytes, pe, h)


def quiet(stream: Any = None) -> None:
    """Completes this PE's outstanding puts (those issued on or before ``stream``'s position with one)."""
    _call("quiet", stream, _core.quiet, _core.quiet_on_stream)


# --- synchronization ---

def _call(call: str, stream: Any, fn: Any, on_stream: Any, *args: Any) -> None:
    _need_init(call)
    h = _stream(call, stream)
    if h is None:
        fn(*args)
    else:
        on_stream(*args, h)


def barrier(team: Any = Teams.TEAM_WORLD, stream: Any = None) -> None:
    """Collective over ``team``: quiet, then wait for every member (in stream order with a stream)."""
    _call("barrier", stream, _core.barrier, _core.barrier_on_stream, _check_team("barrier", team))


def barrier_all(stream: Any = None) -> None:
    """Collective over every PE: quiet, then wait for all (in stream order with a stream)."""
    _call("barrier_all", stream, _core.barrier_all, _core.barrier_all_on_stream)


def sync(team: Any = Teams.TEAM_WORLD, stream: Any = None) -> None:
    """Collective over ``team``: wait for every member (no quiet; in stream order with a stream)."""
    _call("sync", stream, _core.team_sync, _core.team_sync_on_stream, _check_team("sync", team))


def sync_all(stream: Any = None) -> None:
    """Collective over every PE: wait for all (no quiet; in stream order with a stream)."""
    if stream is None:
        _call("sync_all", stream, _core.sync_all, None)
    else:
        _call("sync_all", stream, None, _core.team_sync_on_stream, int(Teams.TEAM_WORLD))


# --- collectives (dst and src symmetric, same dtype; collective over the team's members) ---

def _coll_args(call: str, team: Any, dst: Any, src: Any, stream: Any) -> tuple:
    _need_init(call)
    h = _stream(call, stream)
    d = _check_array(call, "dst", dst, symmetric=True)
    s = _check_array(call, "src", src, symmetric=True)
    _same_dtype(call, d, s)
    if h is None:
        _before_blocking(d, s)
    return _check_team(call, team), d, s, h


def reduce(team: Any, dst: Any, src: Any, op: str = "sum", stream: Any = None) -> None:
    """dst = op over the team's src arrays, elementwise (op: sum, prod, min, max; and, or, xor for integers).
    dst and src have the same dtype and size. Blocking without a stream, enqueued on it with one."""
    t, d, s, h = _coll_args("reduce", team, dst, src, stream)
    if d.size != s.size:
        raise _fail("reduce", f"dst has {d.size} elements, src {s.size}; they must match")
    ops = _core.reduce_ops(d.dtype)
    if not ops:
        raise _fail("reduce", f"dtype {d.dtype} has no reductions")
    if op not in ops:
        raise _fail("reduce", f"op={op!r} is not one of {sorted(ops)} for dtype {d.dtype}")
    _core.reduce(t, d.addr, s.addr, s.size, d.dtype, op, -1 if h is None else h)


def broadcast(team: Any, dst: Any, src: Any, root: int = 0, stream: Any = None) -> None:
    """Copies the team root's ``src`` into every member's ``dst`` (root is a number in the team)."""
    t, d, s, h = _coll_args("broadcast", team, dst, src, stream)
    root = _check_int("broadcast", "root", root)
    n = _core.team_n_pes(t)
    if not 0 <= root < n:
        raise _fail("broadcast", f"root={root} is out of range [0, {n}) (a PE number in the team)")
    if d.nbytes < s.nbytes:
        raise _fail("broadcast", f"dst has {d.nbytes} bytes, fewer than src's {s.nbytes}")
    if h is None:
        _core.broadcastmem(t, d.addr, s.addr, s.nbytes, root)
    else:
        _core.broadcastmem_on_stream(t, d.addr, s.addr, s.nbytes, root, h)


def fcollect(team: Any, dst: Any, src: Any, stream: Any = None) -> None:
    """Concatenates every member's ``src`` (same size on all) into ``dst`` in team order."""
    t, d, s, h = _coll_args("fcollect", team, dst, src, stream)
    n = _core.team_n_pes(t)
    if d.nbytes < s.nbytes * n:
        raise _fail("fcollect", f"dst has {d.nbytes} bytes; it needs {s.nbytes} x {n} PEs = {s.nbytes * n}")
    if h is None:
        _core.fcollectmem(t, d.addr, s.addr, s.nbytes)
    else:
        _core.fcollectmem_on_stream(t, d.addr, s.addr, s.nbytes, h)


def alltoall(team: Any, dst: Any, src: Any, stream: Any = None) -> None:
    """Block j of member i's ``src`` lands as block i of member j's ``dst`` (src splits into n_pes blocks)."""
    t, d, s, h = _coll_args("alltoall", team, dst, src, stream)
    n = _core.team_n_pes(t)
    if s.nbytes % n != 0:
        raise _fail("alltoall", f"src has {s.nbytes} bytes, not a multiple of the team's {n} PEs")
    if d.nbytes < s.nbytes:
        raise _fail("alltoall", f"dst has {d.nbytes} bytes, fewer than src's {s.nbytes}")
    if h is None:
        _core.alltoallmem(t, d.addr, s.addr, s.nbytes // n)
    else:
        _core.alltoallmem_on_stream(t, d.addr, s.addr, s.nbytes // n, h)


# --- teams ---

def team_my_pe(team: Any) -> int:
    """This PE's number in ``team``; -1 for TEAM_INVALID."""
    _need_init("team_my_pe")
    return _core.team_my_pe(_check_team("team_my_pe", team))


def team_n_pes(team: Any) -> int:
    """Number of PEs in ``team``; -1 for TEAM_INVALID."""
    _need_init("team_n_pes")
    return _core.team_n_pes(_check_team("team_n_pes", team))


def team_translate_pe(src_team: Any, src_pe: int, dest_team: Any) -> int:
    """The number in ``dest_team`` of ``src_team``'s PE ``src_pe``; -1 when it is not a member."""
    call = "team_translate_pe"
    _need_init(call)
    return _core.team_translate_pe(_check_team(call, src_team, "src_team"), _check_int(call, "src_pe", src_pe),
                                   _check_team(call, dest_team, "dest_team"))


def team_split_strided(parent_team: Any, start: int, stride: int, size: int) -> int:
    """The team of parent PEs start, start+stride, ... (size of them). Collective over the parent team's members
    only (other PEs do not call); the parent's other PEs get TEAM_INVALID."""
    call = "team_split_strided"
    _need_init(call)
    return _core.team_split_strided(_check_team(call, parent_team, "parent_team"), _check_int(call, "start", start),
                                    _check_int(call, "stride", stride), _check_int(call, "size", size))


def team_destroy(team: Any) -> None:
    """Releases this PE's membership of ``team`` (TEAM_INVALID is a no-op)."""
    _need_init("team_destroy")
    _core.team_destroy(_check_team("team_destroy", team))
