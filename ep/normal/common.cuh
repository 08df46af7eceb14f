// What the normal-mode kernels share: the control block's layout, slot addressing (receive and
// staging slabs), bounded waits, 16-byte copies, and the proxy path's puts. Kernel-internal (ep/normal/
// only); ordering comes from <shoal/device/ptx.cuh>, proxy peers are reached through shoal's public
// device API (<shoal/device/signal.cuh>, <shoal/device/sync.cuh>).
#pragma once

#include <shoal/types.h>
#include <shoal/device/ptx.cuh>
#include <shoal/device/signal.cuh>
#include <shoal/device/sync.cuh>
#include <shoal_ep/normal.hpp>

#include <cstdint>

namespace shoal_ep::detail {

/// The control block at the start of every rank's buffer. Flags and progress words hold
/// (seq << 32) | count, so a value from an earlier call never satisfies a later wait.
struct control {
  uint64_t entered[kMaxRanks];                          ///< [src]: src's kernel of call seq has started
  uint64_t meta_flag[2][kMaxRanks];                     ///< [parity][src]: src's metadata is written
  uint64_t dispatch_progress[kMaxRanks][kMaxChannels];  ///< [src][channel]: slots written
  uint64_t combine_progress[kMaxRanks][kMaxChannels];   ///< [src][channel]: rows written
  int meta[2][kMaxRanks][kMetaInts];                    ///< [parity][src]: counts per rank, channel prefix, per expert
  /// [dst]: this rank's metadata for a proxy peer dst, written by notify's block dst, then put (with
  /// meta_flag as the signal) into dst's meta[parity][this rank]. Local: only this rank's kernels touch it.
  int meta_stage[kMaxRanks][kMetaInts];
  // Local words (only this rank's kernels touch them): calls finished, notifies finished, and the
  // blocks of the running kernel that are done. Counting on the device keeps a replayed CUDA graph right.
  uint64_t epoch;
  uint64_t notify_epoch;
  unsigned int done_blocks;
};
static_assert(sizeof(control) <= kControlNbytes);

__device__ __forceinline__ control* ctrl(void* base) { return static_cast<control*>(base); }

__host__ __device__ __forceinline__ std::size_t round16(std::size_t n) { return (n + 15) / 16 * 16; }

/// Slot `slot` of the slab that rank `src` fills in the buffer at `base`.
__device__ __forceinline__ uint8_t* slot_ptr(void* base, int src, std::size_t cap, std::size_t slot,
                                             std::size_t slot_nbytes) {
  return static_cast<uint8_t*>(base) + kControlNbytes + (src * cap + slot) * slot_nbytes;
}

/// Slot `slot` of the staging slab for rank `dst` in rank `rank`'s own buffer at `base` (staged buffers):
/// laid out like slab `rank` of dst's buffer, so slots [i, j) go out as one put to the same offsets
/// there. Staging slabs follow the num_ranks receive slabs, one per rank other than `rank`.
__device__ __forceinline__ uint8_t* stage_ptr(void* base, int rank, int num_ranks, int dst, std::size_t cap,
                                              std::size_t slot, std::size_t slot_nbytes) {
  const int index = num_ranks + (dst < rank ? dst : dst - 1);
  return static_cast<uint8_t*>(base) + kControlNbytes + (index * cap + slot) * slot_nbytes;
}

/// True when rank r is reached through shoal's proxy path (no mapping of its buffer here).
__device__ __forceinline__ bool is_proxy(const peers& p, int r) { return p.base[r] == nullptr; }

/// Where this rank writes slot `slot` meant for slab `rank` of rank d's buffer: straight into d's buffer
/// when it is mapped, else into the staging slab for d (sent later by put_slots).
__device__ __forceinline__ uint8_t* out_slot_ptr(const peers& p, int rank, int num_ranks, int d, std::size_t cap,
                                                 std::size_t slot, std::size_t slot_nbytes) {
  if (!is_proxy(p, d)) return slot_ptr(p.base[d], rank, cap, slot, slot_nbytes);
  return stage_ptr(p.base[rank], rank, num_ranks, d, cap, slot, slot_nbytes);
}

__device__ __forceinline__ uint64_t tag(uint64_t seq, uint32_t count) { return (seq << 32) | count; }

/// This call's sequence number (the same on every rank: each makes the same calls), read at block start.
__device__ __forceinline__ uint64_t call_seq(const control* mine) {
  return shoal::ptx::ld_relaxed_sys(&mine->epoch) + 1;
}

/// Every block ends with it (all threads): the last block of the kernel advances the epoch (and the
/// notify epoch for a notify), after every block has read them at its start.
__device__ __forceinline__ void finish_block(control* mine, bool notify) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(&mine->done_blocks, 1u) == gridDim.x - 1) {
    mine->done_blocks = 0;
    shoal::ptx::st_relaxed_sys(&mine->epoch, shoal::ptx::ld_relaxed_sys(&mine->epoch) + 1);
    if (notify) shoal::ptx::st_relaxed_sys(&mine->notify_epoch, shoal::ptx::ld_relaxed_sys(&mine->notify_epoch) + 1);
    __threadfence();
  }
}

/// Polls `word` (acquire) until it reaches `want`; after timeout_ns it reports through the world's report box
/// (shoal::device::report_stall: "shoal: PE <rank>: shoal_ep <what>: no progress from PE <peer> (channel <c>) ...",
/// printed by the host; tags in hex, sequence number above count) and traps. No printf in the kernel.
__device__ __forceinline__ uint64_t wait_geq(const shoal::device_world& w, const uint64_t* word, uint64_t want,
                                             uint64_t timeout_ns, const char* what, int peer, int channel) {
  uint64_t v = shoal::ptx::ld_acquire_sys(word);
  if (v >= want) return v;
  const uint64_t start = shoal::ptx::globaltimer();
  while ((v = shoal::ptx::ld_acquire_sys(word)) < want) {
    const uint64_t waited = shoal::ptx::globaltimer() - start;
    if (waited > timeout_ns) shoal::device::report_stall(w, what, peer, channel, word, v, want, waited);
  }
  return v;
}

/// Publishes `value` in a peer's word after every earlier write of this CTA (bar.sync before it).
__device__ __forceinline__ void signal(uint64_t* word, uint64_t value) {
  shoal::ptx::fence_acq_rel_sys();
  shoal::ptx::st_release_sys(word, value);
}

/// Proxy peer d: puts staged slots [first, end) into slab `rank` of d's buffer (same symmetric offsets)
/// and then sets d's progress word `word` (the local word at the same offset) to `value`: one shoal
/// put-with-signal, non-blocking (the staging slab must stay untouched until quiet_proxies). One thread,
/// after a bar.sync that follows the block's staging stores; call fence_proxies once before a batch of
/// these: successive values of one word then land in order (a lower one never overwrites a higher).
__device__ __forceinline__ void put_slots(const peers& p, int rank, int num_ranks, int d, std::size_t cap,
                                          std::size_t first, std::size_t end, std::size_t slot_nbytes, uint64_t* word,
                                          uint64_t value) {
  void* local = p.base[rank];
  shoal::device::putmem_signal_nbi(shoal::thread, p.world, slot_ptr(local, rank, cap, first, slot_nbytes),
                                   stage_ptr(local, rank, num_ranks, d, cap, first, slot_nbytes),
                                   (end - first) * slot_nbytes, word, value, SHOAL_SIGNAL_SET, d);
}

/// Orders this rank's earlier proxy operations (all of its threads') before its later ones. One thread.
__device__ __forceinline__ void fence_proxies(const peers& p) { shoal::device::fence(p.world); }

/// Completes this rank's proxy operations (the staging slabs may be rewritten after). One thread.
__device__ __forceinline__ void quiet_proxies(const peers& p) { shoal::device::quiet(p.world); }

/// True when some rank in [0, num_ranks) is a proxy peer.
__device__ __forceinline__ bool any_proxy(const peers& p, int num_ranks) {
  for (int r = 0; r < num_ranks; ++r)
    if (is_proxy(p, r)) return true;
  return false;
}

/// Loads 16 bytes another GPU wrote (L2, never a stale L1 line).
__device__ __forceinline__ uint4 ld_cg(const void* p) { return __ldcg(static_cast<const uint4*>(p)); }

/// Marks this rank's kernel of call `seq` as started in every peer's control block (one thread). A proxy
/// peer gets a shoal signal_op (set) after a fence, so an earlier call's announcement never lands later.
__device__ __forceinline__ void announce_entered(const peers& p, int rank, int num_ranks, uint64_t seq) {
  bool fenced = false;
  for (int r = 0; r < num_ranks; ++r) {
    if (!is_proxy(p, r)) {
      signal(&ctrl(p.base[r])->entered[rank], tag(seq, 0));
      continue;
    }
    if (!fenced) fence_proxies(p), fenced = true;
    shoal::device::signal_op(p.world, &ctrl(p.base[rank])->entered[rank], tag(seq, 0), SHOAL_SIGNAL_SET, r);
  }
}

/// First slot of channel c in a [R, C+1] prefix row.
__device__ __forceinline__ int chan_begin(const int* prefix, int r, int num_channels, int c) {
  return prefix[r * (num_channels + 1) + c];
}

/// Rows received from ranks before `src` (the exclusive prefix of rank_prefix_matrix's column `rank`).
__device__ __forceinline__ int recv_offset(const int* rank_prefix_matrix, int num_ranks, int rank, int src) {
  return src == 0 ? 0 : rank_prefix_matrix[(src - 1) * num_ranks + rank];
}

/// Tokens [begin, end) of channel c out of num_tokens.
__device__ __forceinline__ int token_begin(int num_tokens, int num_channels, int c) {
  return static_cast<int>(static_cast<int64_t>(num_tokens) * c / num_channels);
}

/// Block 0 announces the call; even blocks run Send, odd blocks Recv, on channel blockIdx.x / 2.
template <class Args, void (*Send)(const Args&, uint64_t, int), void (*Recv)(const Args&, uint64_t, int)>
__global__ void __launch_bounds__(1024, 1) channel_kernel(Args a) {
  control* mine = ctrl(a.p.base[a.rank]);
  const uint64_t seq = call_seq(mine);
  if (blockIdx.x == 0 && threadIdx.x == 0) announce_entered(a.p, a.rank, a.num_ranks, seq);
  if (blockIdx.x % 2 == 0)
    Send(a, seq, blockIdx.x / 2);
  else
    Recv(a, seq, blockIdx.x / 2);
  finish_block(mine, false);
}

/// Launches channel_kernel: 2 * num_channels blocks of num_warps warps.
template <class Args, void (*Send)(const Args&, uint64_t, int), void (*Recv)(const Args&, uint64_t, int)>
void launch_channels(const Args& a, cudaStream_t stream) {
  channel_kernel<Args, Send, Recv><<<2 * a.num_channels, 32 * a.num_warps, 0, stream>>>(a);
}

/// Loads channel_kernel now rather than at its first launch (load_kernels()).
template <class Args, void (*Send)(const Args&, uint64_t, int), void (*Recv)(const Args&, uint64_t, int)>
cudaError_t load_channels() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, channel_kernel<Args, Send, Recv>);
}

/// load_channels for dispatch's and combine's kernels (defined next to their Send and Recv).
cudaError_t load_dispatch_kernel();
cudaError_t load_combine_kernel();

}  // namespace shoal_ep::detail
