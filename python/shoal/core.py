"""shoal.core: symmetric arrays, RMA, synchronization, collectives and teams, named as nvshmem4py's
``nvshmem.core`` so its users switch by import.

Run the script under the launcher (``shoalrun -n 2 python3 script.py``), call :func:`init` first and
:func:`finalize` last. On host-memory PEs :func:`array` returns a numpy array that *is* the symmetric
memory (zero-copy). Every error raises :class:`ShoalError` (a RuntimeError) naming the call and the
argument; the library never stops the interpreter for a bad call.
"""

from __future__ import annotations

import enum
import math
from typing import Any, Optional

import numpy as np

from . import _core
from ._core import ShoalError

__all__ = [
    "ShoalError", "Teams", "init", "finalize", "my_pe", "n_pes", "array", "free_array", "get_peer_array",
    "put", "get", "quiet", "barrier", "barrier_all", "sync", "sync_all", "reduce", "broadcast", "fcollect",
    "alltoall", "team_my_pe", "team_n_pes", "team_translate_pe", "team_split_strided", "team_destroy",
]


class Teams(enum.IntEnum):
    """Predefined team handles (OpenSHMEM/NVSHMEM names)."""

    TEAM_INVALID = -1
    TEAM_WORLD = 0
    TEAM_SHARED = 1
    TEAM_NODE = 2


_initialized = False
# Symmetric blocks this process allocated: base address -> nbytes (what free_array and the checks use).
_blocks: dict[int, int] = {}


def _fail(call: str, what: str) -> ShoalError:
    return ShoalError(f"shoal.core.{call}: {what}")


def _no_stream(call: str, stream: Any) -> None:
    if stream is not None:
        raise _fail(call, f"stream={stream!r}: streams need a GPU heap (backend "
                    f"'{_core.backend_name() or 'none'}'); pass stream=None on host-memory PEs")


def _need_init(call: str) -> None:
    if not _initialized:
        raise _fail(call, "shoal is not initialized (call shoal.core.init() first, under shoalrun)")


def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _check_array(call: str, name: str, a: Any, symmetric: bool) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise _fail(call, f"{name} must be a numpy array, not {type(a).__name__}")
    if not a.flags["C_CONTIGUOUS"]:
        raise _fail(call, f"{name} must be C-contiguous")
    if symmetric and a.nbytes > 0:
        lo = _addr(a)
        if not any(base <= lo and lo + a.nbytes <= base + n for base, n in _blocks.items()):
            raise _fail(call, f"{name} is not on the symmetric heap (make it with shoal.core.array)")
    return a


def _check_team(call: str, team: Any) -> int:
    try:
        return int(team)
    except (TypeError, ValueError):
        raise _fail(call, f"team={team!r} is not a team handle") from None


def _check_pe(call: str, name: str, pe: Any) -> int:
    if not isinstance(pe, (int, np.integer)) or isinstance(pe, bool):
        raise _fail(call, f"{name}={pe!r} must be an int")
    n = _core.n_pes()
    if not 0 <= int(pe) < n:
        raise _fail(call, f"{name}={pe} is out of range [0, {n})")
    return int(pe)


def _same_dtype(call: str, dst: np.ndarray, src: np.ndarray) -> None:
    if dst.dtype != src.dtype:
        raise _fail(call, f"dst dtype {dst.dtype} differs from src dtype {src.dtype}")


# --- setup ---

def init(device: Any = None, uid: Any = None, rank: Optional[int] = None, nranks: Optional[int] = None,
         mpi_comm: Any = None, initializer_method: Optional[str] = None) -> None:
    """Joins the job started by the launcher (shoalrun; the environment it sets, as shoal_init reads it).

    The nvshmem4py arguments (device, uid, rank, nranks, mpi_comm, initializer_method) are accepted for
    signature compatibility; only their defaults are supported on host-memory PEs."""
    global _initialized
    given = {k: v for k, v in dict(device=device, uid=uid, rank=rank, nranks=nranks, mpi_comm=mpi_comm,
                                    initializer_method=initializer_method).items() if v is not None}
    if given:
        raise _fail("init", f"{', '.join(given)}: not supported yet; run under shoalrun and call init()")
    if _initialized:
        raise _fail("init", "already initialized")
    _core.set_return_mode()
    _core.init()
    _initialized = True


def finalize() -> None:
    """Barrier, then releases the symmetric heap (arrays from :func:`array` must not be used after)."""
    global _initialized
    _need_init("finalize")
    _core.finalize()
    _blocks.clear()
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
    calls it with the same shape and dtype in the same order."""
    _need_init("array")
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
    _check_array("free_array", "a", a, symmetric=False)
    addr = _addr(a)
    if addr not in _blocks:
        raise _fail("free_array", "a is not an array from shoal.core.array (or was freed already)")
    _core.free(addr)
    del _blocks[addr]  # only once the library freed it: a failed (e.g. mismatched) free keeps the block


def get_peer_array(a: np.ndarray, pe: int) -> np.ndarray:
    """A numpy view of PE ``pe``'s copy of symmetric ``a``, for direct loads and stores (shoal_ptr).
    Raises when that copy cannot be mapped into this process."""
    _need_init("get_peer_array")
    _check_array("get_peer_array", "a", a, symmetric=True)
    pe = _check_pe("get_peer_array", "pe", pe)
    p = _core.ptr(_addr(a), pe)
    if p == 0:
        raise _fail("get_peer_array", f"pe={pe}: its heap is not mapped into this process")
    return _core.view(p, max(a.nbytes, 1))[: a.nbytes].view(a.dtype).reshape(a.shape)


# --- RMA ---

def put(dst: np.ndarray, src: np.ndarray, remote_pe: int = -1, stream: Any = None) -> None:
    """Copies local ``src`` into symmetric ``dst`` on ``remote_pe`` (blocking: src may be reused on return;
    call :func:`quiet` or a barrier before the target reads it)."""
    _need_init("put")
    _no_stream("put", stream)
    _check_array("put", "dst", dst, symmetric=True)
    _check_array("put", "src", src, symmetric=False)
    pe = _check_pe("put", "remote_pe", remote_pe)
    if src.nbytes > dst.nbytes:
        raise _fail("put", f"src has {src.nbytes} bytes, more than dst's {dst.nbytes}")
    _core.putmem(_addr(dst), _addr(src), src.nbytes, pe)


def get(dst: np.ndarray, src: np.ndarray, remote_pe: int = -1, stream: Any = None) -> None:
    """Copies symmetric ``src`` of ``remote_pe`` into local ``dst`` (complete on return)."""
    _need_init("get")
    _no_stream("get", stream)
    _check_array("get", "dst", dst, symmetric=False)
    _check_array("get", "src", src, symmetric=True)
    pe = _check_pe("get", "remote_pe", remote_pe)
    if dst.nbytes < src.nbytes:
        raise _fail("get", f"dst has {dst.nbytes} bytes, fewer than src's {src.nbytes}")
    _core.getmem(_addr(dst), _addr(src), src.nbytes, pe)


def quiet(stream: Any = None) -> None:
    """Completes this PE's outstanding puts."""
    _call("quiet", stream, _core.quiet)


# --- synchronization ---

def _call(call: str, stream: Any, fn: Any, *args: Any) -> None:
    _need_init(call)
    _no_stream(call, stream)
    fn(*args)


def barrier(team: Any = Teams.TEAM_WORLD, stream: Any = None) -> None:
    """Collective over ``team``: quiet, then wait for every member."""
    _call("barrier", stream, _core.barrier, _check_team("barrier", team))


def barrier_all(stream: Any = None) -> None:
    """Collective over every PE: quiet, then wait for all."""
    _call("barrier_all", stream, _core.barrier_all)


def sync(team: Any = Teams.TEAM_WORLD, stream: Any = None) -> None:
    """Collective over ``team``: wait for every member (no quiet)."""
    _call("sync", stream, _core.team_sync, _check_team("sync", team))


def sync_all(stream: Any = None) -> None:
    """Collective over every PE: wait for all (no quiet)."""
    _call("sync_all", stream, _core.sync_all)


# --- collectives (dst and src symmetric, same dtype; collective over the team's members) ---

def _coll_args(call: str, team: Any, dst: Any, src: Any, stream: Any) -> int:
    _need_init(call)
    _no_stream(call, stream)
    _check_array(call, "dst", dst, symmetric=True)
    _check_array(call, "src", src, symmetric=True)
    _same_dtype(call, dst, src)
    return _check_team(call, team)


def reduce(team: Any, dst: np.ndarray, src: np.ndarray, op: str = "sum", stream: Any = None) -> None:
    """dst = op over the team's src arrays, elementwise (op: sum, prod, min, max; and, or, xor for integers).
    dst and src have the same dtype and size."""
    t = _coll_args("reduce", team, dst, src, stream)
    if dst.size != src.size:
        raise _fail("reduce", f"dst has {dst.size} elements, src {src.size}; they must match")
    name = dst.dtype.name
    ops = _core.reduce_ops(name)
    if not ops:
        raise _fail("reduce", f"dtype {name} has no reductions")
    if op not in ops:
        raise _fail("reduce", f"op={op!r} is not one of {sorted(ops)} for dtype {name}")
    _core.reduce(t, _addr(dst), _addr(src), src.size, name, op)


def broadcast(team: Any, dst: np.ndarray, src: np.ndarray, root: int = 0, stream: Any = None) -> None:
    """Copies the team root's ``src`` into every member's ``dst`` (root is a number in the team)."""
    t = _coll_args("broadcast", team, dst, src, stream)
    if dst.nbytes < src.nbytes:
        raise _fail("broadcast", f"dst has {dst.nbytes} bytes, fewer than src's {src.nbytes}")
    _core.broadcastmem(t, _addr(dst), _addr(src), src.nbytes, int(root))


def fcollect(team: Any, dst: np.ndarray, src: np.ndarray, stream: Any = None) -> None:
    """Concatenates every member's ``src`` (same size on all) into ``dst`` in team order."""
    t = _coll_args("fcollect", team, dst, src, stream)
    n = _core.team_n_pes(t)
    if dst.nbytes < src.nbytes * n:
        raise _fail("fcollect", f"dst has {dst.nbytes} bytes; it needs {src.nbytes} x {n} PEs = {src.nbytes * n}")
    _core.fcollectmem(t, _addr(dst), _addr(src), src.nbytes)


def alltoall(team: Any, dst: np.ndarray, src: np.ndarray, stream: Any = None) -> None:
    """Block j of member i's ``src`` lands as block i of member j's ``dst`` (src splits into n_pes blocks)."""
    t = _coll_args("alltoall", team, dst, src, stream)
    n = _core.team_n_pes(t)
    if src.nbytes % n != 0:
        raise _fail("alltoall", f"src has {src.nbytes} bytes, not a multiple of the team's {n} PEs")
    if dst.nbytes < src.nbytes:
        raise _fail("alltoall", f"dst has {dst.nbytes} bytes, fewer than src's {src.nbytes}")
    _core.alltoallmem(t, _addr(dst), _addr(src), src.nbytes // n)


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
    _need_init("team_translate_pe")
    return _core.team_translate_pe(_check_team("team_translate_pe", src_team), int(src_pe),
                                   _check_team("team_translate_pe", dest_team))


def team_split_strided(parent_team: Any, start: int, stride: int, size: int) -> int:
    """The team of parent PEs start, start+stride, ... (size of them). Collective over the parent team's members
    (on GPU heaps: over every PE, non-members of the parent passing TEAM_INVALID); the parent's other PEs get
    TEAM_INVALID."""
    _need_init("team_split_strided")
    return _core.team_split_strided(_check_team("team_split_strided", parent_team), int(start), int(stride),
                                    int(size))


def team_destroy(team: Any) -> None:
    """Releases this PE's membership of ``team`` (TEAM_INVALID is a no-op)."""
    _need_init("team_destroy")
    _core.team_destroy(_check_team("team_destroy", team))
