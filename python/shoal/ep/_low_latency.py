"""The low-latency mode of ``shoal.ep.Buffer`` (DeepEP V1's ``low_latency_*`` calls).

``LowLatency(buffer)`` owns one symmetric allocation of ``buffer.num_rdma_bytes`` bytes on shoal's
heap and drives the low-latency kernels of ``shoal._ep`` (ep/low_latency): device-initiated stores per
(token, expert) into per-expert receive slots on the owner PE, a tagged count signal per
(expert, source rank) after the data, no CPU synchronization, two-phase receive hooks and CUDA-graph
capture. Shapes and dtypes are DeepEP's; see docs/ep.md (low-latency mode).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

try:
    import torch
except ImportError:  # the package imports without torch; LowLatency needs it
    torch = None  # type: ignore[assignment]

try:
    from .. import _ep
except ImportError:  # built without CUDA
    _ep = None  # type: ignore[assignment]

_MAX_TOPK = 32


def _fail(call: str, what: str) -> ValueError:
    return ValueError(f"shoal.ep.Buffer.{call}: {what}")


class _RawCuda:
    """A byte range of device memory, for torch.as_tensor (zero copy)."""

    def __init__(self, addr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (addr, False),
                                         "version": 3, "strides": None}


class _Event:
    """The event of an ``async_finish`` call (DeepEP's EventOverlap subset)."""

    def __init__(self, event: Any, keep: Tuple[Any, ...]) -> None:
        self.event = event
        self._keep = keep

    def current_stream_wait(self) -> None:
        if self.event is not None:
            torch.cuda.current_stream().wait_event(self.event)


def _event(async_finish: bool, keep: Tuple[Any, ...]) -> Any:
    try:
        from .utils import EventOverlap  # the Buffer's own class when shoal.ep provides it
    except ImportError:
        EventOverlap = None  # noqa: N806
    ev = None
    if async_finish:
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream())
    if EventOverlap is not None:
        try:
            return EventOverlap(ev, keep)
        except TypeError:
            pass
    return _Event(ev, keep)


def _check_tensor(call: str, name: str, t: Any, dtype: Any, ndim: int, device: Any) -> None:
    if not isinstance(t, torch.Tensor):
        raise _fail(call, f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise _fail(call, f"{name} must have dtype {dtype}, got {t.dtype}")
    if t.dim() != ndim:
        raise _fail(call, f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if t.device != device:
        raise _fail(call, f"{name} must be on {device}, got {t.device}")
    if not t.is_contiguous():
        raise _fail(call, f"{name} must be contiguous")


def _capturing() -> bool:
    return bool(torch.cuda.is_current_stream_capturing())


class LowLatency:
    """Low-latency dispatch/combine over one symmetric buffer. Collective construction: every rank
    of ``buffer.group`` constructs it at the same point (it allocates on shoal's symmetric heap)."""

    def __init__(self, buffer: Any) -> None:
        if torch is None:
            raise RuntimeError("shoal.ep low-latency mode needs torch")
        if _ep is None:
            raise RuntimeError("shoal.ep low-latency mode needs shoal built with CUDA (shoal._ep is missing)")
        from .. import _core

        self._core = _core
        self.rank = int(buffer.rank)
        self.num_ranks = int(buffer.group_size)
        self.device = torch.device(buffer.device)
        self.nbytes = int(buffer.num_rdma_bytes)
        my_pe, n_pes = _ep.ll_world()
        if (my_pe, n_pes) != (self.rank, self.num_ranks):
            raise RuntimeError(f"shoal.ep.Buffer: the group (rank {self.rank} of {self.num_ranks}) must be shoal's "
                               f"world (PE {my_pe} of {n_pes})")
        self._addr = 0
        self._bytes: Optional[Any] = None
        # Loaded now, not at a first launch: under lazy module loading (PyTorch's setting) a first launch waits
        # for the context's running kernels, e.g. a peer's receive kernel spinning on this PE (shared GPU).
        _ep.ll_load_kernels()
        if self.nbytes > 0:
            self._addr = int(_core.malloc(self.nbytes))  # collective
            for pe in range(self.num_ranks):
                if int(_core.ptr(self._addr, pe)) == 0:
                    raise RuntimeError(f"shoal.ep.Buffer: low-latency mode needs every PE load/store-reachable "
                                       f"(NVLink/P2P); PE {pe} is not reachable from PE {self.rank}")
            self._bytes = torch.as_tensor(_RawCuda(self._addr, self.nbytes), device=self.device)
            self._bytes.zero_()
            torch.cuda.synchronize(self.device)
        _core.barrier_all()
        self._dispatch_half = 0
        self._combine_half = 0
        #: Most blocks a receive kernel uses. Its blocks poll for peers' data, so on a GPU shared by
        #: several PEs (MPS) they must leave SMs for the peers' send kernels.
        self.num_recv_blocks = 32
        #: Check topk_idx values against num_experts (one device->host read per call; skipped while
        #: a CUDA graph is captured). Benchmarks turn it off.
        self.check_topk_values = True

    def destroy(self) -> None:
        """Frees the symmetric buffer (collective)."""
        if self._addr:
            torch.cuda.synchronize(self.device)
            self._bytes = None
            self._core.free(self._addr)
            self._addr = 0

    # --- sizes ------------------------------------------------------------------------------------
    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank: int, hidden: int, num_ranks: int,
                                       num_experts: int) -> int:
        """Bytes of ``num_rdma_bytes`` these shapes need (both halves and the workspace)."""
        if _ep is None:
            raise RuntimeError("shoal.ep low-latency mode needs shoal built with CUDA")
        return int(_ep.ll_layout(num_max_dispatch_tokens_per_rank, hidden, num_ranks, num_experts)["total_nbytes"])

    def _layout(self, call: str, max_tokens: int, hidden: int, num_experts: int) -> dict:
        try:
            lay = _ep.ll_layout(int(max_tokens), int(hidden), self.num_ranks, int(num_experts))
        except ValueError as e:
            raise _fail(call, str(e)) from None
        if lay["total_nbytes"] > self.nbytes:
            raise _fail(call, f"num_rdma_bytes={self.nbytes} is too small: num_max_dispatch_tokens_per_rank="
                              f"{max_tokens}, hidden={hidden}, num_ranks={self.num_ranks}, num_experts={num_experts} "
                              f"need {lay['total_nbytes']} bytes (get_low_latency_rdma_size_hint)")
        return lay

    def _check_topk(self, call: str, topk_idx: Any, num_tokens: int, num_experts: int) -> int:
        _check_tensor(call, "topk_idx", topk_idx, torch.int64, 2, self.device)
        if topk_idx.shape[0] != num_tokens:
            raise _fail(call, f"topk_idx has {topk_idx.shape[0]} rows, x has {num_tokens} tokens")
        k = int(topk_idx.shape[1])
        if not 1 <= k <= min(_MAX_TOPK, num_experts):
            raise _fail(call, f"top-k ({k}) must be in 1..{min(_MAX_TOPK, num_experts)}")
        if self.check_topk_values and topk_idx.numel() > 0 and not _capturing():  # a device->host read; skipped under capture
            lo, hi = int(topk_idx.min()), int(topk_idx.max())
            if lo < -1 or hi >= num_experts:
                raise _fail(call, f"topk_idx values must be in -1..{num_experts - 1} (num_experts), got {lo}..{hi}")
        return k

    # --- dispatch ---------------------------------------------------------------------------------
    def low_latency_dispatch(self, x: Any, topk_idx: Any, num_max_dispatch_tokens_per_rank: int, num_experts: int,
                             cumulative_local_expert_recv_stats: Any = None, dispatch_wait_recv_cost_stats: Any = None,
                             use_fp8: bool = True, round_scale: bool = False, use_ue8m0: bool = False,
                             async_finish: bool = False, return_recv_hook: bool = False,
                             _raw_copy: bool = False) -> Tuple[Any, ...]:
        """Sends each token to its top-k experts. Returns (recv_x or (recv_x_fp8, recv_scales), recv_count,
        handle, event, hook); recv_x is [num_local_experts, num_ranks * max_tokens, hidden]. _raw_copy
        (measurement only, bench/ep/bench_low_latency.py): the receiving half waits for nothing and reuses
        the last call's counts, the bound a real call is set against (its output is not meaningful)."""
        call = "low_latency_dispatch"
        _check_tensor(call, "x", x, torch.bfloat16, 2, self.device)
        num_tokens, hidden = int(x.shape[0]), int(x.shape[1])
        m, e, r = int(num_max_dispatch_tokens_per_rank), int(num_experts), self.num_ranks
        if e <= 0 or e % r != 0:
            raise _fail(call, f"num_experts ({e}) must be a positive multiple of the number of ranks ({r})")
        self._layout(call, m, hidden, e)
        if num_tokens > m:
            raise _fail(call, f"x has {num_tokens} tokens, more than num_max_dispatch_tokens_per_rank ({m})")
        k = self._check_topk(call, topk_idx, num_tokens, e)
        if use_ue8m0 and not (use_fp8 and round_scale):
            raise _fail(call, "use_ue8m0 needs use_fp8=True and round_scale=True")
        if use_ue8m0 and hidden % 512 != 0:
            raise _fail(call, f"use_ue8m0 needs hidden divisible by 512, got {hidden}")
        nl = e // r
        if cumulative_local_expert_recv_stats is not None:
            _check_tensor(call, "cumulative_local_expert_recv_stats", cumulative_local_expert_recv_stats,
                          torch.int32, 1, self.device)
            if cumulative_local_expert_recv_stats.shape[0] != nl:
                raise _fail(call, f"cumulative_local_expert_recv_stats must have {nl} entries")
        if dispatch_wait_recv_cost_stats is not None:
            _check_tensor(call, "dispatch_wait_recv_cost_stats", dispatch_wait_recv_cost_stats, torch.int64, 1,
                          self.device)
            if dispatch_wait_recv_cost_stats.shape[0] != r:
                raise _fail(call, f"dispatch_wait_recv_cost_stats must have {r} entries (one per rank), got "
                                  f"{dispatch_wait_recv_cost_stats.shape[0]}")
        rows = r * m
        dev = self.device
        recv_x = torch.empty((nl, rows, hidden), dtype=torch.float8_e4m3fn if use_fp8 else torch.bfloat16, device=dev)
        scales = None
        if use_fp8 and use_ue8m0:
            scales = torch.empty((nl, hidden // 512, rows), dtype=torch.int32, device=dev).transpose(1, 2)
        elif use_fp8:
            scales = torch.empty((nl, hidden // 128, rows), dtype=torch.float32, device=dev).transpose(1, 2)
        src_info = torch.empty((nl, rows), dtype=torch.int32, device=dev)
        layout_range = torch.empty((nl, r), dtype=torch.int64, device=dev)
        count = torch.empty((nl,), dtype=torch.int32, device=dev)
        half = self._dispatch_half
        self._dispatch_half ^= 1

        def ptr(t: Any) -> int:
            return 0 if t is None else int(t.data_ptr())

        def launch(send: bool, recv: bool) -> None:
            _ep.ll_dispatch(send, recv, self._addr, half, m, hidden, r, e, ptr(x), ptr(topk_idx), num_tokens, k,
                            bool(use_fp8), bool(round_scale), bool(use_ue8m0), ptr(recv_x), ptr(scales),
                            ptr(src_info), ptr(layout_range), ptr(count), ptr(cumulative_local_expert_recv_stats),
                            ptr(dispatch_wait_recv_cost_stats), torch.cuda.current_stream(dev).cuda_stream,
                            self.num_recv_blocks, bool(_raw_copy))

        launch(True, not return_recv_hook)
        hook: Optional[Callable[[], None]] = (lambda: launch(False, True)) if return_recv_hook else None
        handle = (src_info, layout_range, m, hidden, e)
        event = _event(async_finish, (x, topk_idx, recv_x, scales, src_info, layout_range, count))
        return ((recv_x, scales) if use_fp8 else recv_x), count, handle, event, hook

    # --- combine ----------------------------------------------------------------------------------
    def _check_handle(self, call: str, handle: Any) -> Tuple[Any, Any, int, int, int]:
        if not isinstance(handle, tuple) or len(handle) != 5:
            raise _fail(call, "handle must be the handle low_latency_dispatch returned")
        src_info, layout_range, m, hidden, e = handle
        return src_info, layout_range, int(m), int(hidden), int(e)

    def low_latency_combine(self, x: Any, topk_idx: Any, topk_weights: Any, handle: Any, use_logfmt: bool = False,
                            zero_copy: bool = False, async_finish: bool = False, return_recv_hook: bool = False,
                            out: Any = None, combine_wait_recv_cost_stats: Any = None,
                            _raw_copy: bool = False) -> Tuple[Any, Any, Any]:
        """Returns each token's sum over its top-k experts of weight * expert output (FP32, rounded to BF16):
        (combined_x [num_tokens, hidden], event, hook). _raw_copy: as in low_latency_dispatch (measurement)."""
        call = "low_latency_combine"
        src_info, layout_range, m, hidden, e = self._check_handle(call, handle)
        if use_logfmt:
            raise _fail(call, "use_logfmt=True is not supported (combine is BF16)")
        r = self.num_ranks
        nl = e // r
        self._layout(call, m, hidden, e)
        _check_tensor(call, "x", x, torch.bfloat16, 3, self.device)
        if tuple(x.shape) != (nl, r * m, hidden):
            raise _fail(call, f"x must have shape {(nl, r * m, hidden)}, got {tuple(x.shape)}")
        _check_tensor(call, "topk_weights", topk_weights, torch.float32, 2, self.device)
        num_tokens = int(topk_weights.shape[0])
        if num_tokens > m:
            raise _fail(call, f"{num_tokens} tokens, more than num_max_dispatch_tokens_per_rank ({m})")
        k = self._check_topk(call, topk_idx, num_tokens, e)
        if tuple(topk_weights.shape) != tuple(topk_idx.shape):
            raise _fail(call, f"topk_weights shape {tuple(topk_weights.shape)} != topk_idx shape "
                              f"{tuple(topk_idx.shape)}")
        if out is None:
            out = torch.empty((num_tokens, hidden), dtype=torch.bfloat16, device=self.device)
        else:
            _check_tensor(call, "out", out, torch.bfloat16, 2, self.device)
            if tuple(out.shape) != (num_tokens, hidden):
                raise _fail(call, f"out must have shape {(num_tokens, hidden)}, got {tuple(out.shape)}")
        if combine_wait_recv_cost_stats is not None:
            _check_tensor(call, "combine_wait_recv_cost_stats", combine_wait_recv_cost_stats, torch.int64, 1,
                          self.device)
            if combine_wait_recv_cost_stats.shape[0] != r:
                raise _fail(call, f"combine_wait_recv_cost_stats must have {r} entries (one per rank), got "
                                  f"{combine_wait_recv_cost_stats.shape[0]}")
        half = self._combine_half
        self._combine_half ^= 1
        stats = combine_wait_recv_cost_stats

        def launch(send: bool, recv: bool) -> None:
            _ep.ll_combine(send, recv, self._addr, half, m, hidden, r, e, int(x.data_ptr()), int(src_info.data_ptr()),
                           int(layout_range.data_ptr()), int(topk_idx.data_ptr()), int(topk_weights.data_ptr()),
                           num_tokens, k, int(out.data_ptr()), 0 if stats is None else int(stats.data_ptr()),
                           torch.cuda.current_stream(self.device).cuda_stream, self.num_recv_blocks, bool(_raw_copy))

        launch(True, not return_recv_hook)
        hook: Optional[Callable[[], None]] = (lambda: launch(False, True)) if return_recv_hook else None
        event = _event(async_finish, (x, topk_idx, topk_weights, out))
        return out, event, hook

    def get_next_low_latency_combine_buffer(self, handle: Any) -> Any:
        """The BF16 [num_local_experts, num_ranks * max_tokens, hidden] view of the symmetric buffer the
        next combine sends from: write expert outputs there and pass it with zero_copy=True."""
        call = "get_next_low_latency_combine_buffer"
        _, _, m, hidden, e = self._check_handle(call, handle)
        lay = self._layout(call, m, hidden, e)
        r = self.num_ranks
        start = lay["workspace_nbytes"] + self._combine_half * lay["half_nbytes"] + lay["combine_send"]
        nbytes = (e // r) * r * m * hidden * 2
        return self._bytes[start:start + nbytes].view(torch.bfloat16).view(e // r, r * m, hidden)

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank: int, hidden: int, num_experts: int) -> None:
        """Zeroes the buffer's signals and workspace for these shapes (collective: every rank calls it)."""
        lay = self._layout("clean_low_latency_buffer", num_max_dispatch_tokens_per_rank, hidden, num_experts)
        torch.cuda.synchronize(self.device)
        self._core.barrier_all()  # every peer's earlier stores into this buffer are done
        if self._bytes is not None:
            self._bytes[:lay["total_nbytes"]].zero_()
        torch.cuda.synchronize(self.device)
        self._core.barrier_all()  # nobody sends into a buffer that is not zero yet
        self._dispatch_half = 0
        self._combine_half = 0
