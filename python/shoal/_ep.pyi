"""Type stubs of shoal._ep: the EP layer's launches, both modes (use shoal.ep.Buffer instead).

Addresses are integers (tensor.data_ptr(), shoal_ptr); streams are integers (torch.cuda.Stream.cuda_stream).
The normal-mode launches take keyword arguments named like the fields of shoal::ep's *_args structs
(ep/include/shoal/ep/normal.hpp); `staged` is True when the job's buffers hold staging slabs, and in `peers`
0 marks a rank reached through shoal's proxy path. The ll_* functions drive the low-latency mode
(ep/include/shoal/ep/low_latency.hpp). Library errors raise ValueError (bad argument), TimeoutError or
RuntimeError with the library's message."""

from typing import Dict, List, Tuple

max_ranks: int
max_channels: int
max_local_experts: int
control_nbytes: int

def dispatch_slot_nbytes(hidden_nbytes: int, num_scales: int, num_topk: int) -> int: ...
def combine_slot_nbytes(hidden: int, num_topk: int) -> int: ...
def num_slabs(num_ranks: int, staged: bool) -> int: ...
def slot_capacity(buffer_nbytes: int, num_ranks: int, slot_nbytes: int, staged: bool) -> int: ...
def zero(addr: int, nbytes: int) -> None: ...
def host_alloc(nbytes: int) -> Tuple[int, int]: ...
def host_free(host: int) -> None: ...
class Switches:
    """The normal mode's switches of one call (shoal::ep::switches; docs/ep.md, "Switches")."""
    l2_discard: bool
    self_direct: bool
    interleave: bool
    def __init__(self) -> None: ...

def switches_from_env() -> Switches: ...
def load_kernels() -> None: ...
def wait_counts(host: int, device: int, num_local_experts: int, timeout_s: float) -> List[int]: ...
def get_dispatch_layout(*, topk_idx: int, num_tokens: int, num_topk: int, num_experts: int, num_ranks: int,
                        num_tokens_per_rank: int, num_tokens_per_expert: int, is_token_in_rank: int,
                        stream: int) -> None: ...
def notify_dispatch(*, peers: List[int], staged: bool, rank: int, num_channels: int, num_tokens: int,
                    num_local_experts: int, is_token_in_rank: int, num_tokens_per_rank: int,
                    num_tokens_per_expert: int, send_slot: int, send_chan_prefix: int, recv_chan_prefix: int,
                    rank_prefix_matrix: int, host_counts: int, timeout_ns: int, stream: int) -> None: ...
def dispatch(*, peers: List[int], staged: bool, rank: int, num_channels: int, num_tokens: int, num_recv: int,
             num_local_experts: int, buffer_nbytes: int, hidden_nbytes: int, num_scales: int,
             scale_token_stride: int, scale_hidden_stride: int, num_topk: int, x: int, x_scales: int, topk_idx: int,
             topk_weights: int, send_slot: int, send_chan_prefix: int, recv_chan_prefix: int,
             rank_prefix_matrix: int, recv_x: int, recv_x_scales: int, recv_topk_idx: int, recv_topk_weights: int,
             recv_src_idx: int, tokens_per_signal: int, timeout_ns: int, raw_copy: bool, switches: Switches,
             stream: int) -> None: ...
def combine(*, peers: List[int], staged: bool, rank: int, num_channels: int, num_tokens: int, num_recv: int,
            hidden: int, num_topk: int, buffer_nbytes: int, x: int, topk_weights: int, bias0: int, bias1: int,
            send_slot: int, send_chan_prefix: int, recv_chan_prefix: int, rank_prefix_matrix: int, combined_x: int,
            combined_topk_weights: int, tokens_per_signal: int, timeout_ns: int, raw_copy: bool,
            switches: Switches, stream: int) -> None: ...

def ll_layout(max_tokens: int, hidden: int, num_ranks: int, num_experts: int) -> Dict[str, int]:
    """Byte sizes and offsets of the low-latency buffer (total_nbytes, half_nbytes, workspace_nbytes,
    combine_send, msg_nbytes); ValueError on bad shapes."""

def ll_load_kernels() -> None:
    """Loads both low-latency kernels on the current device now; RuntimeError on failure."""

def ll_world() -> Tuple[int, int]:
    """(my_pe, n_pes) of the default world; RuntimeError before init."""

def ll_dispatch(send: bool, recv: bool, buffer: int, half: int, max_tokens: int, hidden: int, num_ranks: int,
                num_experts: int, x: int, topk_idx: int, num_tokens: int, num_topk: int, fp8: bool, round_scale: bool,
                ue8m0: bool, recv_x: int, recv_scales: int, src_info: int, layout_range: int, recv_count: int,
                cumulative_stats: int, wait_stats: int, stream: int, recv_blocks: int,
                raw_copy: bool) -> None:
    """Launches the send and/or receive half of a low-latency dispatch (one kernel; device pointers as ints)."""

def ll_combine(send: bool, recv: bool, buffer: int, half: int, max_tokens: int, hidden: int, num_ranks: int,
               num_experts: int, x: int, src_info: int, layout_range: int, topk_idx: int, topk_weights: int,
               num_tokens: int, num_topk: int, out: int, wait_stats: int, stream: int, recv_blocks: int,
               raw_copy: bool) -> None:
    """Launches the send and/or receive half of a low-latency combine (one kernel; device pointers as ints)."""
