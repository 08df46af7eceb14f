"""Tuning of the normal-mode kernels, shaped like DeepEP's ``deep_ep.Config``."""

from __future__ import annotations

CONTROL_NBYTES = 1 << 20  # shoal_ep::kControlNbytes: flags, progress words and metadata at a buffer's start
MAX_RANKS = 8
MAX_CHANNELS = 64


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


def dispatch_slot_nbytes(hidden_nbytes: int, num_scales: int, num_topk: int) -> int:
    """Bytes of one token's slot in a dispatch (row, scales, top-k indices and weights, source index)."""
    return _round16(_round16(hidden_nbytes) + 4 * (num_scales + 2 * num_topk + 1))


def combine_slot_nbytes(hidden: int, num_topk: int) -> int:
    """Bytes of one row's slot in a combine (BF16 row and its top-k weights)."""
    return _round16(_round16(2 * hidden) + 4 * num_topk)


def num_slabs(num_ranks: int, proxy: bool = False) -> int:
    """Slabs of num_tokens slots in a buffer: one per source rank, plus (proxy) one staging slab per other rank."""
    return 2 * num_ranks - 1 if proxy else num_ranks


def nvl_bytes_needed(num_tokens: int, hidden: int, num_ranks: int, num_topk: int = 32, fp8: bool = False,
                     proxy: bool = False) -> int:
    """num_nvl_bytes a buffer needs to dispatch and combine num_tokens tokens per rank of `hidden` channels.

    Slots are fixed worst-case size, one slab per source rank (no ring to wrap around, hence no deadlock
    when a receiver is slow): every rank's buffer holds num_ranks * num_tokens slots. With proxy=True (some
    rank of the job reaches another through shoal's proxy path, e.g. across nodes) it also holds a staging
    slab per other rank, (2 * num_ranks - 1) * num_tokens slots in all."""
    num_scales = hidden // 128 if fp8 else 0
    slot = max(dispatch_slot_nbytes(hidden * (1 if fp8 else 2), num_scales, num_topk), combine_slot_nbytes(hidden, num_topk))
    return CONTROL_NBYTES + num_slabs(num_ranks, proxy) * num_tokens * slot


def max_resident_num_sms(pes_per_gpu: int, gpu_sms: int) -> int:
    """The largest num_sms (even) whose blocks fit on a GPU of gpu_sms SMs with pes_per_gpu PEs sharing it."""
    return max(2, gpu_sms // max(1, pes_per_gpu) // 2 * 2)


def check_resident(call: str, blocks_per_pe: int, pes_per_gpu: int, gpu_sms: int) -> None:
    """Raises ValueError when the dispatch or combine kernels of PEs sharing one GPU cannot all be resident.

    Each PE's kernel is blocks_per_pe (= num_sms) blocks of 1024 threads, one block per SM; its receiving blocks
    spin until the peers' sending blocks run, so when several PEs share a GPU (MPS) every PE's blocks must
    fit at once, or a receiver holds the SM a peer's sender needs and every wait runs into its timeout. A PE
    alone on its GPU is never refused: its peers' senders run on other GPUs. pes_per_gpu and gpu_sms are the
    job's (most PEs on one GPU, fewest SMs of a GPU), so every rank decides alike."""
    if pes_per_gpu > 1 and blocks_per_pe * pes_per_gpu > gpu_sms:
        raise ValueError(f"{call}: num_sms={blocks_per_pe} on each of {pes_per_gpu} PEs sharing one GPU needs "
                         f"{blocks_per_pe * pes_per_gpu} resident blocks, the GPU has {gpu_sms} SMs: use num_sms <= "
                         f"{max_resident_num_sms(pes_per_gpu, gpu_sms)} (Config(num_sms=...) or Buffer.set_num_sms)")


class Config:
    """DeepEP's Config. shoal's normal kernels use ``num_sms`` (even: half the SMs send, half receive, one
    channel per pair) and ``num_max_nvl_chunked_send_tokens`` (tokens a sending channel moves between two
    progress signals); the receive-chunk and RDMA fields are kept for signature compatibility."""

    def __init__(self, num_sms: int = 24, num_max_nvl_chunked_send_tokens: int = 48,
                 num_max_nvl_chunked_recv_tokens: int = 256, num_max_rdma_chunked_send_tokens: int = 6,
                 num_max_rdma_chunked_recv_tokens: int = 128) -> None:
        if not isinstance(num_sms, int) or num_sms < 2 or num_sms % 2 or num_sms // 2 > MAX_CHANNELS:
            raise ValueError(f"Config: num_sms must be an even integer in [2, {2 * MAX_CHANNELS}], got {num_sms!r}")
        if num_max_nvl_chunked_send_tokens < 1:
            raise ValueError(f"Config: num_max_nvl_chunked_send_tokens must be >= 1, got {num_max_nvl_chunked_send_tokens}")
        self.num_sms = num_sms
        self.num_max_nvl_chunked_send_tokens = num_max_nvl_chunked_send_tokens
        self.num_max_nvl_chunked_recv_tokens = num_max_nvl_chunked_recv_tokens
        self.num_max_rdma_chunked_send_tokens = num_max_rdma_chunked_send_tokens
        self.num_max_rdma_chunked_recv_tokens = num_max_rdma_chunked_recv_tokens

    @property
    def num_channels(self) -> int:
        return self.num_sms // 2

    def get_nvl_buffer_size_hint(self, hidden_bytes: int, num_ranks: int, num_max_tokens: int = 4096,
                                 proxy: bool = False) -> int:
        """num_nvl_bytes for num_max_tokens tokens per rank of hidden_bytes BF16 bytes each (top-k up to 32);
        proxy=True: with the staging slabs of a job that has proxy peers (nvl_bytes_needed)."""
        return nvl_bytes_needed(num_max_tokens, max(hidden_bytes // 2, 1), num_ranks, proxy=proxy)

    def get_rdma_buffer_size_hint(self, hidden_bytes: int, num_ranks: int) -> int:
        """0: normal mode is intranode (NVLink) only."""
        return 0

    def __repr__(self) -> str:
        return (f"Config(num_sms={self.num_sms}, num_max_nvl_chunked_send_tokens={self.num_max_nvl_chunked_send_tokens}, "
                f"num_max_nvl_chunked_recv_tokens={self.num_max_nvl_chunked_recv_tokens})")
