"""shoal.ep.Buffer: DeepEP V1's ``deep_ep.Buffer`` on shoal's symmetric heap (normal mode).

Each rank allocates ``num_nvl_bytes`` with shoal's symmetric malloc; shoal_ptr gives every mapped peer's
copy as a load/store address, and the kernels of shoal._ep store tokens straight into the receiver's
buffer. A peer without a mapping (shoal's proxy path, e.g. on another node) is passed as 0: the kernels
stage its rows in this rank's buffer and put them with shoal's device put-with-signal; every buffer of
such a job then holds the staging slabs too (``staged``). Low-latency mode forwards to
``shoal.ep._low_latency.LowLatency``. See docs/ep.md."""

from __future__ import annotations

import os
import socket
from typing import Any, Dict, List, Optional, Tuple, Union

from .config import (CONTROL_NBYTES, MAX_RANKS, Config, check_resident, combine_slot_nbytes, dispatch_slot_nbytes,
                     num_slabs)
from .utils import EventOverlap, check_tensor, timeout_s, torch_module

def _kernels() -> Any:
    try:
        from .. import _ep
    except ImportError as e:
        raise ImportError("shoal.ep: the extension shoal._ep is missing (shoal was built without CUDA)") from e
    return _ep


def _join_shoal(group: Any, comm: Any, device: Any) -> None:
    """Initializes shoal over `group` (a torch.distributed group) or `comm` (an mpi4py communicator) unless it
    already runs; rank r of the group must be PE r."""
    from .. import core
    if core.is_initialized():
        return
    if group is not None:
        core.init(group=group)
    else:
        core.init(mpi_comm=comm)


def _ceil_to(n: int, k: int) -> int:
    return (n + k - 1) // k * k


class Buffer:
    """DeepEP V1's Buffer: dispatch/combine for MoE expert parallelism over NVLink (normal mode) and the
    low-latency calls (``low_latency_mode=True``, forwarded to shoal.ep._low_latency)."""

    num_sms: int = 24

    def __init__(self, group: Any, num_nvl_bytes: int = 0, num_rdma_bytes: int = 0, low_latency_mode: bool = False,
                 num_qps_per_rank: int = 24, allow_nvlink_for_low_latency_mode: bool = True, allow_mnnvl: bool = False,
                 use_fabric: bool = False, explicitly_destroy: bool = False, enable_shrink: bool = False,
                 comm: Any = None) -> None:
        """DeepEP V1's arguments, in its order. ``group`` is a torch.distributed group (gloo is fine), or None
        with ``comm`` an mpi4py communicator. ``num_qps_per_rank``, ``allow_nvlink_for_low_latency_mode``,
        ``allow_mnnvl`` and ``use_fabric`` choose DeepEP's transports and have nothing to choose here: shoal
        maps every peer it can reach by load/store (NVLink, or PEs sharing a GPU) and reaches the others
        through its proxy path. ``enable_shrink`` (DeepEP's rank masking) is not supported: True raises."""
        torch = torch_module()
        if not torch.cuda.is_available():
            raise RuntimeError("Buffer: shoal.ep needs a CUDA device")
        if group is None and comm is None:
            raise ValueError("Buffer: give group (a torch.distributed process group) or comm (an mpi4py communicator)")
        for name, v in (("num_nvl_bytes", num_nvl_bytes), ("num_rdma_bytes", num_rdma_bytes)):
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"Buffer: {name} must be a non-negative int, got {v!r}")
        if enable_shrink:
            raise NotImplementedError("Buffer: enable_shrink=True (masking failed ranks) is not supported by shoal.ep")
        self.group = group if group is not None else comm
        self.rank: int = group.rank() if group is not None else comm.Get_rank()
        self.group_size: int = group.size() if group is not None else comm.Get_size()
        self._comm = comm if group is None else None
        self.num_nvl_bytes = num_nvl_bytes
        self.num_rdma_bytes = num_rdma_bytes
        self.low_latency_mode = low_latency_mode
        self.num_qps_per_rank = num_qps_per_rank
        self.explicitly_destroy = explicitly_destroy
        self.device = torch.device("cuda", torch.cuda.current_device())
        if not low_latency_mode and num_rdma_bytes > 0:
            raise ValueError("Buffer: normal mode takes no RDMA buffer (num_rdma_bytes > 0): ranks behind shoal's "
                             "proxy path (other nodes) go through staging slabs in num_nvl_bytes; pass "
                             "num_rdma_bytes=0 and size num_nvl_bytes with shoal.ep.config.nvl_bytes_needed(..., "
                             "proxy=True)")
        if not low_latency_mode and self.group_size > MAX_RANKS:
            raise ValueError(f"Buffer: normal mode serves at most {MAX_RANKS} NVLink ranks, the group has {self.group_size}")
        _join_shoal(group, comm, self.device)
        from .. import _core, core
        if core.my_pe() != self.rank or core.n_pes() != self.group_size:
            raise RuntimeError(f"Buffer: shoal PE {core.my_pe()} of {core.n_pes()} is not rank {self.rank} of the "
                               f"group's {self.group_size}: initialize shoal over this group")
        self._base = 0
        self._peers: List[int] = []  # each rank's buffer as this rank addresses it; 0: a proxy peer
        self.num_proxy_peers = 0  # ranks this one reaches through shoal's proxy path
        self._staged = False  # some rank of the job has a proxy peer: every buffer holds staging slabs
        # The job's most PEs on one GPU and its fewest SMs a GPU (the same on every rank): check_resident.
        self._pes_per_gpu, self._gpu_sms = 1, 0
        self._host: Optional[Tuple[int, int]] = None
        self._comm_stream = torch.cuda.Stream(device=self.device)
        self._switches: Any = None  # shoal._ep.Switches of the normal-mode calls
        if num_nvl_bytes > 0:
            ep = _kernels()
            if num_nvl_bytes <= CONTROL_NBYTES:
                raise ValueError(f"Buffer: num_nvl_bytes={num_nvl_bytes} holds no data; it needs more than {CONTROL_NBYTES}")
            self._switches = self._agree_switches(ep)
            self._base = _core.malloc(num_nvl_bytes)
            ep.zero(self._base, num_nvl_bytes)
            _core.barrier_all()
            # A peer without a mapping is reached through shoal's proxy path (0 here; a peer that shoal
            # cannot reach at all makes the first kernel report it and trap).
            self._peers = [_core.ptr(self._base, pe) for pe in range(self.group_size)]
            if self._peers[self.rank] == 0:
                raise RuntimeError(f"Buffer: rank {self.rank} cannot address its own buffer (shoal_ptr returned 0)")
            self.num_proxy_peers = sum(1 for p in self._peers if p == 0)
            self._staged, self._pes_per_gpu, self._gpu_sms = self._agree_job()
            if self._staged and os.environ.get("SHOAL_EP_PROXY", "1") == "0":
                # Agreed on every rank above, so every rank raises alike.
                proxies = [pe for pe, p in enumerate(self._peers) if p == 0]
                _core.free(self._base)  # collective, like the malloc: every rank is here
                self._base, self._peers = 0, []
                raise NotImplementedError(
                    f"Buffer: rank {self.rank}: ranks {proxies} of this job are reached through shoal's proxy path "
                    "(another node, or SHOAL_DISABLE_P2P=1), and SHOAL_EP_PROXY=0 turns normal mode over the proxy "
                    "off (docs/ep.md, 'Proxy peers'); unset it to stage those ranks' rows through the proxy")
            # Loaded now, not at a first launch: under lazy module loading (PyTorch's setting) a first launch
            # waits for the running kernels, e.g. a notify still waiting on this rank's proxy thread.
            ep.load_kernels()
            self._host = ep.host_alloc(4 * (3 + ep.max_local_experts))
        self._ll: Any = None
        if low_latency_mode:
            try:
                from ._low_latency import LowLatency
            except ImportError as e:
                raise ImportError("Buffer: low_latency_mode=True needs shoal.ep._low_latency, which this build lacks") from e
            self._ll = LowLatency(self)

    def _agree_job(self) -> Tuple[bool, int, int]:
        """(staged, most PEs on one GPU, fewest SMs of a GPU) of the whole job (collective over the group), so
        every rank decides alike: whether any rank has a proxy peer (the buffer layout, with or without
        staging slabs, must be the same on every rank), and the numbers check_resident needs. Through
        torch.distributed, as shoal's blocking collectives on GPU heaps refuse proxy members."""
        props = torch_module().cuda.get_device_properties(self.device)
        gpu = f"{socket.gethostname()}:{getattr(props, 'uuid', self.device.index)}"
        rows = self._allgather((self.num_proxy_peers, gpu, int(props.multi_processor_count)))
        gpus = [row[1] for row in rows]
        return (any(bool(row[0]) for row in rows), max(gpus.count(g) for g in gpus),
                min(int(row[2]) for row in rows))

    def _allgather(self, mine: Any) -> List[Any]:
        """Every rank's `mine`, in rank order (collective over the group: torch.distributed or mpi4py)."""
        if self._comm is not None:
            return list(self._comm.allgather(mine))
        rows: List[Any] = [None] * self.group_size
        torch_module().distributed.all_gather_object(rows, mine, group=self.group)
        return rows

    def _agree_switches(self, ep: Any) -> Any:
        """The switches the environment sets (docs/ep.md, "Switches"), read before anything is allocated. A bad
        value on any rank raises on every rank (collective), so no rank is left in the allocation alone."""
        try:
            switches, error = ep.switches_from_env(), ""
        except ValueError as e:
            switches, error = None, str(e)
        bad = [(r, e) for r, e in enumerate(self._allgather(error)) if e]
        if bad:
            r, e = bad[0]
            raise ValueError(f"Buffer: {e}" + ("" if r == self.rank else f" (rank {r}'s environment)"))
        return switches

    @property
    def switches(self) -> Dict[str, bool]:
        """This rank's normal-mode switches (docs/ep.md, "Switches"): l2_discard, self_direct, interleave. Taken
        from the environment when the Buffer is built; set_switches changes them."""
        sw = self._switches
        if sw is None:
            raise RuntimeError("switches: this Buffer has no NVLink buffer (num_nvl_bytes=0)")
        return {"l2_discard": sw.l2_discard, "self_direct": sw.self_direct, "interleave": sw.interleave}

    def set_switches(self, *, l2_discard: Optional[bool] = None, self_direct: Optional[bool] = None,
                     interleave: Optional[bool] = None) -> None:
        """Changes this rank's switches for the Buffer's later dispatch and combine calls (a CUDA graph keeps the
        ones of its capture); None keeps one as it is. A switch changes only what this rank's own blocks do, so the
        other ranks need not change theirs. For measurements that compare them in one process
        (bench/ep/bench_normal.py --configs); the environment variables are the way to set them otherwise."""
        ep = self._need_normal("set_switches")
        new = ep.Switches()
        for name, value in (("l2_discard", l2_discard), ("self_direct", self_direct), ("interleave", interleave)):
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"set_switches: {name} must be a bool or None, got {value!r}")
            setattr(new, name, getattr(self._switches, name) if value is None else value)
        self._switches = new

    @property
    def staged(self) -> bool:
        """True when the buffers hold staging slabs (some rank of the job has a proxy peer): they then fit
        nvl_bytes_needed(..., proxy=True) tokens."""
        return self._staged

    # --- lifetime ---

    def destroy(self) -> None:
        """Releases the buffer (collective: every rank calls it). The Buffer must not be used after."""
        from .. import _core
        if self._ll is not None and hasattr(self._ll, "destroy"):
            self._ll.destroy()
        if self._base:
            torch_module().cuda.synchronize(self.device)
            _core.free(self._base)
            self._base = 0
            self._peers = []
        if self._host is not None:
            _kernels().host_free(self._host[0])
            self._host = None

    # --- DeepEP's static helpers ---

    @staticmethod
    def is_sm90_compiled() -> bool:
        """True: shoal's EP kernels are built for sm_90 (Hopper; CMAKE_CUDA_ARCHITECTURES 90), FP8 included."""
        _kernels()
        return True

    def get_comm_stream(self) -> Any:
        """The communication stream the calls run on (a torch.cuda.Stream)."""
        return self._comm_stream

    def get_local_buffer_tensor(self, dtype: Any, size: Any = None, offset: int = 0,
                                use_rdma_buffer: bool = False) -> Any:
        """This rank's buffer as a tensor of `dtype` from element `offset` on (the low-latency buffer when
        use_rdma_buffer), viewed as `size` when given. The normal-mode buffer's first bytes are its control
        block: writing there corrupts the next call."""
        call = "get_local_buffer_tensor"
        torch = torch_module()
        if use_rdma_buffer:
            if self._ll is None or not self._ll._addr:
                raise RuntimeError(f"{call}: this Buffer has no low-latency (RDMA) buffer")
            addr, nbytes = self._ll._addr, self._ll.nbytes
        else:
            if self._base == 0:
                raise RuntimeError(f"{call}: this Buffer has no NVLink buffer (num_nvl_bytes=0, or destroyed)")
            addr, nbytes = self._base, self.num_nvl_bytes
        from ._low_latency import _RawCuda
        raw = torch.as_tensor(_RawCuda(addr, nbytes), device=self.device).view(dtype)
        if not isinstance(offset, int) or offset < 0 or offset > raw.numel():
            raise ValueError(f"{call}: offset={offset!r} is outside the buffer's {raw.numel()} elements")
        raw = raw[offset:]
        if size is None:
            return raw
        size = torch.Size(size)
        if size.numel() > raw.numel():
            raise ValueError(f"{call}: size {tuple(size)} needs {size.numel()} elements, the buffer has {raw.numel()}")
        return raw[:size.numel()].view(size)

    @staticmethod
    def set_num_sms(new_num_sms: int) -> None:
        """SMs the normal kernels use by default (even: one channel per pair)."""
        if not isinstance(new_num_sms, int) or new_num_sms < 2 or new_num_sms % 2:
            raise ValueError(f"set_num_sms: new_num_sms must be an even integer >= 2, got {new_num_sms!r}")
        Buffer.num_sms = new_num_sms

    @staticmethod
    def capture() -> EventOverlap:
        """An EventOverlap recorded on the current stream (pass it as previous_event)."""
        torch = torch_module()
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream())
        return EventOverlap(event)

    @staticmethod
    def get_dispatch_config(num_ranks: int) -> Config:
        """The dispatch Config for num_ranks NVLink ranks (2, 4 or 8)."""
        if num_ranks not in (2, 4, 8):
            raise ValueError(f"get_dispatch_config: num_ranks must be 2, 4 or 8, got {num_ranks}")
        return Config(Buffer.num_sms, 48, 256)

    @staticmethod
    def get_combine_config(num_ranks: int) -> Config:
        """The combine Config for num_ranks NVLink ranks (2, 4 or 8)."""
        if num_ranks not in (2, 4, 8):
            raise ValueError(f"get_combine_config: num_ranks must be 2, 4 or 8, got {num_ranks}")
        return Config(Buffer.num_sms, 48, 256)

    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank: int, hidden: int, num_ranks: int,
                                       num_experts: int) -> int:
        from ._low_latency import LowLatency
        return LowLatency.get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank, hidden, num_ranks, num_experts)

    # --- streams ---

    def _begin(self, previous_event: Optional[EventOverlap]) -> Any:
        torch = torch_module()
        compute = torch.cuda.current_stream(self.device)
        if previous_event is not None and previous_event.event is not None:
            self._comm_stream.wait_event(previous_event.event)
        else:
            self._comm_stream.wait_stream(compute)
        return compute

    def _finish(self, compute: Any, async_finish: bool, tensors: List[Any], allocate_on_comm_stream: bool) -> EventOverlap:
        torch = torch_module()
        live = [t for t in tensors if isinstance(t, torch.Tensor)]
        if async_finish or allocate_on_comm_stream:
            for t in live:  # a freed tensor is not reused by either stream before the other is done with it
                t.record_stream(compute)
                t.record_stream(self._comm_stream)
        if not async_finish:
            compute.wait_stream(self._comm_stream)
            return EventOverlap(None)
        event = torch.cuda.Event()
        event.record(self._comm_stream)
        return EventOverlap(event, live)

    def _alloc_stream(self, compute: Any, allocate_on_comm_stream: bool) -> Any:
        return torch_module().cuda.stream(self._comm_stream if allocate_on_comm_stream else compute)

    def _need_normal(self, call: str) -> Any:
        if self._base == 0:
            raise RuntimeError(f"{call}: this Buffer has no NVLink buffer (num_nvl_bytes=0, or destroyed)")
        return _kernels()

    def _topk_width(self, call: str, name: str, t: Any, dtype: Any, num_rows: int) -> int:
        check_tensor(call, name, t, dtype, 2, self.device, (num_rows, None))
        if t.shape[1] > 32:
            raise ValueError(f"{call}: top-k is at most 32, got {t.shape[1]} ({name})")
        return t.shape[1]

    def _capacity_error(self, call: str, what: str, num_tokens: int, hidden_nbytes: int, slot: int) -> Optional[str]:
        """The error when a slab of this buffer holds fewer than num_tokens slots of `slot` bytes, else None."""
        slabs = num_slabs(self.group_size, self._staged)
        needed = CONTROL_NBYTES + slabs * num_tokens * slot
        if needed <= self.num_nvl_bytes:
            return None
        staging = (f" ({self.group_size} receive slabs and {self.group_size - 1} staging slabs for the proxy "
                   f"path, {slot} bytes a slot)" if self._staged else "")
        return (f"{call}: num_nvl_bytes={self.num_nvl_bytes} is too small for {what} {num_tokens} tokens of "
                f"{hidden_nbytes} bytes on {self.group_size} ranks: it needs at least {needed} bytes{staging}")

    def _check_capacity(self, call: str, handle_or_tokens: Any, hidden: int, hidden_nbytes: int, num_scales: int,
                        num_topk: int) -> None:
        """Raises ValueError unless a slab holds the call's tokens. A handle from a dispatch that waited for its
        counts carries the job-wide most tokens one rank sends one rank (notify publishes it; the same on every
        rank), so every rank decides alike. Otherwise (an int: this rank's token count; a handle from a
        num_worst_tokens dispatch) only this rank's tokens are known: a rank over capacity raises alone and
        its peers' next kernel stalls until the timeout, so size num_nvl_bytes for the largest T of any rank."""
        slot = max(dispatch_slot_nbytes(hidden_nbytes, num_scales, num_topk), combine_slot_nbytes(hidden, num_topk))
        most = None if isinstance(handle_or_tokens, int) else getattr(handle_or_tokens[0], "_shoal_ep_most_sent", None)
        if most is not None:
            error = self._capacity_error(call, "a rank sending one rank", most, hidden_nbytes, slot)
        else:
            tokens = handle_or_tokens if isinstance(handle_or_tokens, int) else handle_or_tokens[4].shape[0]
            error = self._capacity_error(call, "this rank's", tokens, hidden_nbytes, slot)
        if error is not None:
            raise ValueError(error)

    def _check_resident(self, call: str, num_channels: int) -> None:
        if self._gpu_sms > 0:
            check_resident(call, 2 * num_channels, self._pes_per_gpu, self._gpu_sms)

    # --- layout ---

    def get_dispatch_layout(self, topk_idx: Any, num_experts: int, previous_event: Optional[EventOverlap] = None,
                            async_finish: bool = False, allocate_on_comm_stream: bool = False
                            ) -> Tuple[Any, Optional[Any], Any, Any, EventOverlap]:
        """(num_tokens_per_rank [R] int32, None, num_tokens_per_expert [E] int32, is_token_in_rank [T, R] bool, event)."""
        call = "get_dispatch_layout"
        torch = torch_module()
        ep = _kernels()
        R = self.group_size
        check_tensor(call, "topk_idx", topk_idx, torch.int64, 2, self.device)
        if not isinstance(num_experts, int) or num_experts <= 0 or num_experts % R:
            raise ValueError(f"{call}: num_experts={num_experts!r} must be a positive multiple of the {R} ranks")
        # The range check reads topk_idx on the host: skipped while a CUDA graph is captured (the layout
        # kernel ignores entries outside [0, num_experts), like -1).
        if topk_idx.numel() and not torch.cuda.is_current_stream_capturing():
            lo, hi = int(topk_idx.min()), int(topk_idx.max())
            if hi >= num_experts or lo < -1:
                raise ValueError(f"{call}: topk_idx holds {hi if hi >= num_experts else lo}, outside [-1, {num_experts})")
        num_tokens, num_topk = topk_idx.shape
        compute = self._begin(previous_event)
        with self._alloc_stream(compute, allocate_on_comm_stream):
            per_rank = torch.empty((R,), dtype=torch.int32, device=self.device)
            per_expert = torch.empty((num_experts,), dtype=torch.int32, device=self.device)
            in_rank = torch.empty((num_tokens, R), dtype=torch.bool, device=self.device)
        ep.get_dispatch_layout(topk_idx=topk_idx.data_ptr(), num_tokens=num_tokens, num_topk=num_topk,
                               num_experts=num_experts, num_ranks=R, num_tokens_per_rank=per_rank.data_ptr(),
                               num_tokens_per_expert=per_expert.data_ptr(), is_token_in_rank=in_rank.data_ptr(),
                               stream=self._comm_stream.cuda_stream)
        event = self._finish(compute, async_finish, [topk_idx, per_rank, per_expert, in_rank], allocate_on_comm_stream)
        return per_rank, None, per_expert, in_rank, event

    # --- dispatch ---

    def dispatch(self, x: Union[Any, Tuple[Any, Any]], handle: Optional[Tuple] = None,
                 num_tokens_per_rank: Optional[Any] = None, num_tokens_per_rdma_rank: Optional[Any] = None,
                 is_token_in_rank: Optional[Any] = None, num_tokens_per_expert: Optional[Any] = None,
                 topk_idx: Optional[Any] = None, topk_weights: Optional[Any] = None, expert_alignment: int = 1,
                 num_worst_tokens: int = 0, config: Optional[Config] = None,
                 previous_event: Optional[EventOverlap] = None, async_finish: bool = False,
                 allocate_on_comm_stream: bool = False) -> Tuple[Any, Any, Any, List[int], Tuple, EventOverlap]:
        """Sends each token to every rank holding one of its experts.

        Returns (recv_x (or (recv_x, recv_x_scales) for FP8), recv_topk_idx [N, k] int64 (local expert or -1),
        recv_topk_weights [N, k] float32, num_recv_tokens_per_expert_list (aligned to expert_alignment; empty
        when num_worst_tokens > 0), handle, event). Received rows are ordered by source rank, then by token.
        With `handle` (from an earlier dispatch) the layout is reused: no count exchange, no top-k.
        CUDA-graph capturable with num_worst_tokens > 0 or a handle (no host wait); without either,
        dispatch raises RuntimeError while a graph is being captured."""
        call = "dispatch"
        torch = torch_module()
        ep = self._need_normal(call)
        R, rank = self.group_size, self.rank
        if num_tokens_per_rdma_rank is not None:
            raise ValueError(f"{call}: num_tokens_per_rdma_rank must be None: shoal's normal mode has no RDMA "
                             "stage (get_dispatch_layout returns None for it; proxy peers are served through "
                             "num_nvl_bytes)")
        x, x_scales = (x if isinstance(x, tuple) else (x, None))
        check_tensor(call, "x", x, (torch.bfloat16, torch.float8_e4m3fn), 2, self.device)
        num_tokens, hidden = x.shape
        hidden_nbytes = hidden * x.element_size()
        if hidden_nbytes % 16:
            raise ValueError(f"{call}: a row of x must be a multiple of 16 bytes, got hidden={hidden}")
        num_scales = 0
        if x.dtype == torch.float8_e4m3fn:
            if x_scales is None:
                raise ValueError(f"{call}: FP8 x comes as (x_fp8, scales [T, num_scales]), got no scales")
            # Float32 or int32 scales with any column count (DeepEP's: H/128 float32, packed UE8M0 int32 H/512, ...)
            # and any layout (DeepEP's tests pass column-major ones); the kernels move them as 4-byte words.
            check_tensor(call, "scales", x_scales, (torch.float32, torch.int32), 2, self.device, (num_tokens, None),
                         contiguous=False)
            num_scales = x_scales.shape[1]
            if num_scales < 1:
                raise ValueError(f"{call}: scales must have at least one column, got shape {tuple(x_scales.shape)}")
        elif x_scales is not None:
            raise TypeError(f"{call}: scales come with FP8 x only, x is {x.dtype}")
        if not isinstance(num_worst_tokens, int) or num_worst_tokens < 0:
            raise ValueError(f"{call}: num_worst_tokens must be a non-negative int, got {num_worst_tokens!r}")
        if not isinstance(expert_alignment, int) or expert_alignment < 1:
            raise ValueError(f"{call}: expert_alignment must be a positive int, got {expert_alignment!r}")
        if handle is None and num_worst_tokens == 0 and torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"{call}: a CUDA graph is being captured and num_worst_tokens=0: the host would wait "
                               "for the receive counts, which a graph cannot; give num_worst_tokens (or a handle)")
        if handle is not None:
            return self._cached_dispatch(x, x_scales, handle, topk_idx, topk_weights, num_worst_tokens, config,
                                         previous_event, async_finish, allocate_on_comm_stream)
        for name, t in (("num_tokens_per_rank", num_tokens_per_rank), ("is_token_in_rank", is_token_in_rank),
                        ("num_tokens_per_expert", num_tokens_per_expert)):
            if t is None:
                raise ValueError(f"{call}: {name} is required without a handle (get_dispatch_layout gives it)")
        check_tensor(call, "num_tokens_per_rank", num_tokens_per_rank, torch.int32, 1, self.device, (R,))
        check_tensor(call, "is_token_in_rank", is_token_in_rank, torch.bool, 2, self.device, (num_tokens, R))
        check_tensor(call, "num_tokens_per_expert", num_tokens_per_expert, torch.int32, 1, self.device)
        num_experts = num_tokens_per_expert.shape[0]
        if num_experts == 0 or num_experts % R:
            raise ValueError(f"{call}: num_experts={num_experts} (num_tokens_per_expert) must be a positive multiple of {R}")
        num_local = num_experts // R
        if num_local > ep.max_local_experts:
            raise ValueError(f"{call}: {num_local} experts per rank; at most {ep.max_local_experts}")
        num_topk = 0
        if topk_idx is not None:
            num_topk = self._topk_width(call, "topk_idx", topk_idx, torch.int64, num_tokens)
            if topk_weights is None:
                raise ValueError(f"{call}: topk_weights is required with topk_idx")
            check_tensor(call, "topk_weights", topk_weights, torch.float32, 2, self.device, (num_tokens, num_topk))
        elif topk_weights is not None:
            raise ValueError(f"{call}: topk_weights needs topk_idx")
        config = config or self.get_dispatch_config(R)
        C = config.num_channels
        self._check_resident(call, C)
        if num_worst_tokens > 0:  # no host wait: only this rank's T is known here (_check_capacity)
            self._check_capacity(call, num_tokens, hidden, hidden_nbytes, num_scales, num_topk)

        compute = self._begin(previous_event)
        with self._alloc_stream(compute, allocate_on_comm_stream):
            send_slot = torch.empty((num_tokens, R), dtype=torch.int32, device=self.device)
            send_prefix = torch.empty((R, C + 1), dtype=torch.int32, device=self.device)
            recv_prefix = torch.empty((R, C + 1), dtype=torch.int32, device=self.device)
            rank_prefix_matrix = torch.empty((R, R), dtype=torch.int32, device=self.device)
        assert self._host is not None
        ep.notify_dispatch(
            peers=self._peers, staged=self._staged, rank=rank, num_channels=C, num_tokens=num_tokens,
            num_local_experts=num_local, is_token_in_rank=is_token_in_rank.data_ptr(),
            num_tokens_per_rank=num_tokens_per_rank.data_ptr(), num_tokens_per_expert=num_tokens_per_expert.data_ptr(),
            send_slot=send_slot.data_ptr(), send_chan_prefix=send_prefix.data_ptr(),
            recv_chan_prefix=recv_prefix.data_ptr(), rank_prefix_matrix=rank_prefix_matrix.data_ptr(),
            host_counts=0 if num_worst_tokens > 0 else self._host[1], timeout_ns=int(timeout_s() * 1e9),
            stream=self._comm_stream.cuda_stream)
        handle = (rank_prefix_matrix, send_prefix, recv_prefix, None, is_token_in_rank, send_slot)
        if num_worst_tokens > 0:
            num_recv, per_expert = num_worst_tokens, []
        else:
            counts = ep.wait_counts(self._host[0], self._host[1], num_local, timeout_s())
            num_recv = counts[0]
            per_expert = [_ceil_to(c, expert_alignment) for c in counts[2:]]
            # The job-wide most tokens one rank sends one rank: every rank has the same number, so a buffer too
            # small fails on every rank here, before any kernel that waits on a peer.
            rank_prefix_matrix._shoal_ep_most_sent = counts[1]
            self._check_capacity(call, handle, hidden, hidden_nbytes, num_scales, num_topk)
        return self._run_dispatch(x, x_scales, handle, num_recv, num_local, topk_idx, topk_weights, num_worst_tokens > 0,
                                  per_expert, config, compute, async_finish, allocate_on_comm_stream)

    def _cached_dispatch(self, x: Any, x_scales: Any, handle: Tuple, topk_idx: Any, topk_weights: Any,
                         num_worst_tokens: int, config: Optional[Config], previous_event: Optional[EventOverlap],
                         async_finish: bool, allocate_on_comm_stream: bool) -> Tuple:
        call = "dispatch (cached)"
        if topk_idx is not None or topk_weights is not None:
            raise ValueError(f"{call}: a cached dispatch (handle given) takes no topk_idx/topk_weights")
        rank_prefix_matrix, send_prefix, recv_prefix, recv_src_idx, is_token_in_rank, send_slot = self._unpack(call, handle)
        if is_token_in_rank.shape[0] != x.shape[0]:
            raise ValueError(f"{call}: x has {x.shape[0]} tokens, the handle {is_token_in_rank.shape[0]}")
        self._check_capacity(call, handle, x.shape[1], x.shape[1] * x.element_size(),
                             x_scales.shape[1] if x_scales is not None else 0, 0)
        self._check_resident(call, send_prefix.shape[1] - 1)
        compute = self._begin(previous_event)
        return self._run_dispatch(x, x_scales, handle, recv_src_idx.shape[0], 0, None, None, num_worst_tokens > 0, [],
                                  config or self.get_dispatch_config(self.group_size), compute, async_finish,
                                  allocate_on_comm_stream)

    def _unpack(self, call: str, handle: Tuple) -> Tuple:
        if not isinstance(handle, tuple) or len(handle) != 6 or handle[3] is None:
            raise ValueError(f"{call}: handle must be the handle an earlier dispatch of this Buffer returned")
        return handle

    def _run_dispatch(self, x: Any, x_scales: Any, handle: Tuple, num_recv: int, num_local: int, topk_idx: Any,
                      topk_weights: Any, worst: bool, per_expert: List[int], config: Config, compute: Any,
                      async_finish: bool, allocate_on_comm_stream: bool, raw_copy: bool = False) -> Tuple:
        torch = torch_module()
        rank_prefix_matrix, send_prefix, recv_prefix, recv_src_idx, is_token_in_rank, send_slot = handle
        num_tokens, hidden = x.shape
        num_scales = x_scales.shape[1] if x_scales is not None else 0
        num_topk = topk_idx.shape[1] if topk_idx is not None else 0
        dev = self.device
        with self._alloc_stream(compute, allocate_on_comm_stream):
            recv_x = torch.empty((num_recv, hidden), dtype=x.dtype, device=dev)
            recv_scales = torch.empty((num_recv, num_scales), dtype=x_scales.dtype, device=dev) if x_scales is not None else None
            fresh_src_idx = recv_src_idx is None
            if fresh_src_idx:
                recv_src_idx = torch.empty((num_recv,), dtype=torch.int32, device=dev)
            recv_topk_idx = recv_topk_weights = None
            if topk_idx is not None:
                recv_topk_idx = torch.empty((num_recv, num_topk), dtype=torch.int64, device=dev)
                recv_topk_weights = torch.empty((num_recv, num_topk), dtype=torch.float32, device=dev)
        if worst and topk_idx is not None:  # rows past the received ones: no expert (on the stream the kernel uses)
            with torch.cuda.stream(self._comm_stream):
                recv_topk_idx.fill_(-1)
                recv_topk_weights.zero_()
        ptr = lambda t: t.data_ptr() if t is not None else 0  # noqa: E731
        _kernels().dispatch(
            peers=self._peers, staged=self._staged, rank=self.rank, num_channels=send_prefix.shape[1] - 1,
            num_tokens=num_tokens, num_recv=num_recv, num_local_experts=num_local, buffer_nbytes=self.num_nvl_bytes,
            hidden_nbytes=hidden * x.element_size(), num_scales=num_scales,
            scale_token_stride=x_scales.stride(0) if x_scales is not None else 0,
            scale_hidden_stride=x_scales.stride(1) if x_scales is not None else 0, num_topk=num_topk,
            x=x.data_ptr(), x_scales=ptr(x_scales), topk_idx=ptr(topk_idx), topk_weights=ptr(topk_weights),
            send_slot=send_slot.data_ptr(), send_chan_prefix=send_prefix.data_ptr(),
            recv_chan_prefix=recv_prefix.data_ptr(), rank_prefix_matrix=rank_prefix_matrix.data_ptr(),
            recv_x=recv_x.data_ptr(), recv_x_scales=ptr(recv_scales), recv_topk_idx=ptr(recv_topk_idx),
            recv_topk_weights=ptr(recv_topk_weights), recv_src_idx=recv_src_idx.data_ptr(),
            tokens_per_signal=config.num_max_nvl_chunked_send_tokens, timeout_ns=int(timeout_s() * 1e9),
            raw_copy=raw_copy, switches=self._switches, stream=self._comm_stream.cuda_stream)
        if fresh_src_idx:
            handle = (rank_prefix_matrix, send_prefix, recv_prefix, recv_src_idx, is_token_in_rank, send_slot)
        event = self._finish(compute, async_finish, [x, x_scales, topk_idx, topk_weights, recv_x, recv_scales,
                                                     recv_topk_idx, recv_topk_weights, *handle],
                             allocate_on_comm_stream)
        out_x = (recv_x, recv_scales) if x_scales is not None else recv_x
        return out_x, recv_topk_idx, recv_topk_weights, per_expert, handle, event

    # --- combine ---

    def combine(self, x: Any, handle: Tuple, topk_weights: Optional[Any] = None,
                bias: Union[None, Any, Tuple[Any, ...]] = None, config: Optional[Config] = None,
                previous_event: Optional[EventOverlap] = None, async_finish: bool = False,
                allocate_on_comm_stream: bool = False, _raw_copy: bool = False) -> Tuple[Any, Optional[Any], EventOverlap]:
        """Sums each token's rows back from every rank it went to (FP32 sum, BF16 result, plus bias).

        x [N, hidden] BF16 in the received order of `handle`'s dispatch; topk_weights [N, k] float32 are
        summed the same way. Returns (combined_x [T, hidden] BF16, combined_topk_weights [T, k] or None, event).
        The channel count is the dispatch's (the handle's); config is accepted for compatibility."""
        call = "combine"
        torch = torch_module()
        ep = self._need_normal(call)
        rank_prefix_matrix, send_prefix, recv_prefix, recv_src_idx, is_token_in_rank, send_slot = self._unpack(call, handle)
        check_tensor(call, "x", x, torch.bfloat16, 2, self.device, (recv_src_idx.shape[0], None))
        num_recv, hidden = x.shape
        if hidden % 8:
            raise ValueError(f"{call}: hidden must be a multiple of 8, got {hidden}")
        num_tokens = is_token_in_rank.shape[0]
        num_topk = 0
        if topk_weights is not None:
            num_topk = self._topk_width(call, "topk_weights", topk_weights, torch.float32, num_recv)
        biases = [] if bias is None else list(bias) if isinstance(bias, tuple) else [bias]
        if len(biases) > 2:
            raise ValueError(f"{call}: bias is at most two tensors, got {len(biases)}")
        for i, b in enumerate(biases):
            check_tensor(call, f"bias[{i}]", b, torch.bfloat16, 2, self.device, (num_tokens, hidden))
        self._check_capacity(call, handle, hidden, 2 * hidden, 0, num_topk)
        self._check_resident(call, send_prefix.shape[1] - 1)
        compute = self._begin(previous_event)
        with self._alloc_stream(compute, allocate_on_comm_stream):
            combined_x = torch.empty((num_tokens, hidden), dtype=torch.bfloat16, device=self.device)
            combined_w = torch.empty((num_tokens, num_topk), dtype=torch.float32, device=self.device) \
                if topk_weights is not None else None
        ptr = lambda t: t.data_ptr() if t is not None else 0  # noqa: E731
        ep.combine(
            peers=self._peers, staged=self._staged, rank=self.rank, num_channels=send_prefix.shape[1] - 1,
            num_tokens=num_tokens, num_recv=num_recv, hidden=hidden, num_topk=num_topk,
            buffer_nbytes=self.num_nvl_bytes, x=x.data_ptr(), topk_weights=ptr(topk_weights),
            bias0=ptr(biases[0] if biases else None), bias1=ptr(biases[1] if len(biases) > 1 else None),
            send_slot=send_slot.data_ptr(), send_chan_prefix=send_prefix.data_ptr(),
            recv_chan_prefix=recv_prefix.data_ptr(), rank_prefix_matrix=rank_prefix_matrix.data_ptr(),
            combined_x=combined_x.data_ptr(), combined_topk_weights=ptr(combined_w),
            tokens_per_signal=(config or self.get_combine_config(self.group_size)).num_max_nvl_chunked_send_tokens,
            timeout_ns=int(timeout_s() * 1e9), raw_copy=_raw_copy, switches=self._switches,
            stream=self._comm_stream.cuda_stream)
        event = self._finish(compute, async_finish, [x, topk_weights, *biases, combined_x, combined_w, *handle],
                             allocate_on_comm_stream)
        return combined_x, combined_w, event

    # --- measurement ---

    def raw_copy_dispatch(self, x: Union[Any, Tuple[Any, Any]], handle: Tuple, config: Optional[Config] = None) -> Any:
        """Measurement only: a cached dispatch of `x` along `handle` with every wait and progress signal
        skipped (the start handshake stays: a slower peer's earlier result is never overwritten), so the same
        SMs move the same bytes with no protocol. The received data is garbage; the
        time is the bound a real dispatch is judged against (bench/ep/bench_normal.py). Collective."""
        x, x_scales = (x if isinstance(x, tuple) else (x, None))
        _, _, _, recv_src_idx, _, _ = self._unpack("raw_copy_dispatch", handle)
        compute = self._begin(None)
        return self._run_dispatch(x, x_scales, handle, recv_src_idx.shape[0], 0, None, None, False, [],
                                  config or self.get_dispatch_config(self.group_size), compute, False, False,
                                  raw_copy=True)[0]

    def raw_copy_combine(self, x: Any, handle: Tuple, config: Optional[Config] = None) -> Any:
        """Measurement only: combine's bytes on combine's SMs without its waits and signals (garbage out;
        the bound a real combine is judged against). Collective."""
        return self.combine(x, handle, config=config, _raw_copy=True)[0]

    # --- low-latency mode (shoal.ep._low_latency) ---

    def _low_latency(self, call: str) -> Any:
        if self._ll is None:
            raise RuntimeError(f"{call}: this Buffer was built with low_latency_mode=False")
        return self._ll

    def low_latency_dispatch(self, x: Any, topk_idx: Any, num_max_dispatch_tokens_per_rank: int, num_experts: int,
                             cumulative_local_expert_recv_stats: Any = None, dispatch_wait_recv_cost_stats: Any = None,
                             use_fp8: bool = True, round_scale: bool = False, use_ue8m0: bool = False,
                             async_finish: bool = False, return_recv_hook: bool = False) -> Tuple[Any, ...]:
        """DeepEP's low_latency_dispatch: (recv_x or (recv_x_fp8, recv_scales), recv_count, handle, event, hook)."""
        return self._low_latency("low_latency_dispatch").low_latency_dispatch(
            x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts,
            cumulative_local_expert_recv_stats=cumulative_local_expert_recv_stats,
            dispatch_wait_recv_cost_stats=dispatch_wait_recv_cost_stats, use_fp8=use_fp8, round_scale=round_scale,
            use_ue8m0=use_ue8m0, async_finish=async_finish, return_recv_hook=return_recv_hook)

    def low_latency_combine(self, x: Any, topk_idx: Any, topk_weights: Any, handle: Tuple, use_logfmt: bool = False,
                            zero_copy: bool = False, async_finish: bool = False, return_recv_hook: bool = False,
                            out: Any = None, combine_wait_recv_cost_stats: Any = None) -> Tuple[Any, Any, Any]:
        """DeepEP's low_latency_combine: (combined_x [T, hidden] BF16, event, hook)."""
        return self._low_latency("low_latency_combine").low_latency_combine(
            x, topk_idx, topk_weights, handle, use_logfmt=use_logfmt, zero_copy=zero_copy, async_finish=async_finish,
            return_recv_hook=return_recv_hook, out=out, combine_wait_recv_cost_stats=combine_wait_recv_cost_stats)

    def get_next_low_latency_combine_buffer(self, handle: Tuple) -> Any:
        """DeepEP's get_next_low_latency_combine_buffer (zero-copy combine input)."""
        return self._low_latency("get_next_low_latency_combine_buffer").get_next_low_latency_combine_buffer(handle)

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank: int, hidden: int, num_experts: int) -> None:
        """DeepEP's clean_low_latency_buffer (collective)."""
        self._low_latency("clean_low_latency_buffer").clean_low_latency_buffer(num_max_dispatch_tokens_per_rank, hidden,
                                                                               num_experts)

    def low_latency_update_mask_buffer(self, rank_to_mask: int, mask: bool = False) -> None:
        """DeepEP's shrink mode (masking failed ranks): not supported by shoal.ep."""
        raise NotImplementedError("low_latency_update_mask_buffer: shoal.ep has no shrink mode (enable_shrink)")

    def low_latency_query_mask_buffer(self, mask_status: Any) -> None:
        """DeepEP's shrink mode: not supported by shoal.ep."""
        raise NotImplementedError("low_latency_query_mask_buffer: shoal.ep has no shrink mode (enable_shrink)")

    def low_latency_clean_mask_buffer(self) -> None:
        """DeepEP's shrink mode: not supported by shoal.ep."""
        raise NotImplementedError("low_latency_clean_mask_buffer: shoal.ep has no shrink mode (enable_shrink)")
