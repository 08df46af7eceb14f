"""Type stubs of shoal._ep_ll: the low-latency EP kernels (internal; use shoal.ep.Buffer)."""

from typing import Dict, Tuple

def layout(max_tokens: int, hidden: int, num_ranks: int, num_experts: int) -> Dict[str, int]:
    """Byte sizes and offsets of the symmetric buffer (total_nbytes, half_nbytes, workspace_nbytes,
    combine_send, msg_nbytes); ValueError on bad shapes."""

def world() -> Tuple[int, int]:
    """(my_pe, n_pes) of the default world; RuntimeError before init."""

def dispatch(send: bool, recv: bool, buffer: int, half: int, max_tokens: int, hidden: int, num_ranks: int,
             num_experts: int, x: int, topk_idx: int, num_tokens: int, num_topk: int, fp8: bool, round_scale: bool,
             ue8m0: bool, recv_x: int, recv_scales: int, src_info: int, layout_range: int, recv_count: int,
             cumulative_stats: int, wait_stats: int, stream: int, recv_blocks: int) -> None:
    """Launches the send and/or receive kernel of a low-latency dispatch (device pointers as ints)."""

def combine(send: bool, recv: bool, buffer: int, half: int, max_tokens: int, hidden: int, num_ranks: int,
            num_experts: int, x: int, src_info: int, layout_range: int, topk_idx: int, topk_weights: int,
            num_tokens: int, num_topk: int, out: int, wait_stats: int, stream: int, recv_blocks: int) -> None:
    """Launches the send and/or receive kernel of a low-latency combine (device pointers as ints)."""
