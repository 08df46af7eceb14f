// What the normal-mode kernels share: the control block's layout, slot addressing (receive and
// staging slabs), bounded waits, warp copies with several loads in flight, a sending block's
// in-order progress publication, and the proxy path's puts. Kernel-internal (ep/normal/ only);
// ordering comes from <shoal/device/ptx.cuh>, proxy peers are reached through shoal's public device
// API (<shoal/device/signal.cuh>, <shoal/device/sync.cuh>).
#pragma once

#include <cuda_runtime.h>
#include <shoal/types.h>

#include <cstdint>
#include <cuda/atomic>
#include <shoal/device/ptx.cuh>
#include <shoal/device/signal.cuh>
#include <shoal/device/sync.cuh>
#include <shoal/ep/normal.hpp>

#include "row_list.hpp"

namespace shoal::ep::detail {

inline constexpr int kWarps = kChannelThreads / 32;

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

/// The slow part of wait_geq, out of line (its clock reads and report stay off the callers' registers).
static __device__ __noinline__ uint64_t wait_geq_slow(const shoal::device_world& w, const uint64_t* word, uint64_t want,
                                                      uint64_t timeout_ns, const char* what, int peer, int channel) {
  uint64_t v;
  const uint64_t start = shoal::ptx::globaltimer();
  while ((v = shoal::ptx::ld_acquire_sys(word)) < want) {
    const uint64_t waited = shoal::ptx::globaltimer() - start;
    if (waited > timeout_ns) shoal::device::report_stall(w, what, peer, channel, word, v, want, waited);
  }
  return v;
}

/// Polls `word` (acquire) until it reaches `want`; after timeout_ns it reports through the world's report box
/// (shoal::device::report_stall: "shoal: PE <rank>: shoal_ep <what>: no progress from PE <peer> (channel <c>) ...",
/// printed by the host; tags in hex, sequence number above count) and traps. No printf in the kernel.
__device__ __forceinline__ uint64_t wait_geq(const shoal::device_world& w, const uint64_t* word, uint64_t want,
                                             uint64_t timeout_ns, const char* what, int peer, int channel) {
  const uint64_t v = shoal::ptx::ld_acquire_sys(word);
  return v >= want ? v : wait_geq_slow(w, word, want, timeout_ns, what, peer, channel);
}

/// Publishes `value` in a peer's word after every write this thread has observed: its own, and those of
/// the warps whose completion it acquired (bar.sync, or a send_tracker record). Fence, then release.
__device__ __forceinline__ void signal(uint64_t* word, uint64_t value) {
  shoal::ptx::fence_acq_rel_sys();
  shoal::ptx::st_release_sys(word, value);
}

/// Proxy peer d: puts staged slots [first, end) into slab `rank` of d's buffer (same symmetric offsets)
/// and then sets d's progress word `word` (the local word at the same offset) to `value`: one shoal
/// put-with-signal, non-blocking (the staging slab must stay untouched until quiet_proxies). One thread,
/// after it has observed the staging stores (bar.sync, or a send_tracker record); call fence_proxies once
/// before a batch of these: successive values of one word then land in order (never a lower over a higher).
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

/// Completes this rank's proxy operations (the staging slabs may be rewritten after). One thread; out of
/// line, as every proxy path here, so it adds nothing to the copy loops' registers.
static __device__ __noinline__ void quiet_proxies(const peers& p) { shoal::device::quiet(p.world); }

/// True when some rank in [0, num_ranks) is a proxy peer.
__device__ __forceinline__ bool any_proxy(const peers& p, int num_ranks) {
  for (int r = 0; r < num_ranks; ++r)
    if (is_proxy(p, r)) return true;
  return false;
}

/// Marks this rank's kernel of call `seq` as started in every peer's control block (one thread). A proxy
/// peer gets a shoal signal_op (set) after a fence, so an earlier call's announcement never lands later.
static __device__ __noinline__ void announce_entered(const peers& p, int rank, int num_ranks, uint64_t seq) {
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

/// A sending block waits (one thread per rank) until every destination's kernel of this call has started:
/// its buffer's slots from the previous call have been consumed. raw_copy waits too: a measurement call
/// must not overwrite a slab that a slower peer's previous (real) call is still reading.
__device__ __forceinline__ void wait_entered(const channel_args& a, uint64_t seq, const char* what, int c) {
  if (threadIdx.x < static_cast<unsigned>(a.num_ranks))
    wait_geq(a.p.world, &ctrl(a.p.base[a.rank])->entered[threadIdx.x], tag(seq, 0), a.timeout_ns, what, threadIdx.x, c);
  __syncthreads();
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

// --- copies -------------------------------------------------------------------------------------

/// Loads of data nothing writes during the kernel (the caller's x): the read-only path.
struct load_input {
  __device__ __forceinline__ uint4 operator()(const uint4* p) const { return __ldg(p); }
};
/// Loads of data a peer wrote during the kernel (a slot, after an acquire of its progress word): L2,
/// never a stale L1 line.
struct load_peer {
  __device__ __forceinline__ uint4 operator()(const uint4* p) const { return __ldcg(p); }
};

/// Warp copy of n16 16-byte words from src to every non-null dst[d]: kUnroll loads per lane are in flight
/// before the first store (the loads' latency, not one round trip per word, sets the pace), and each word
/// read once goes to every destination. All lanes call it with the same arguments.
template <int kUnroll, int kDests, class Load>
__device__ __forceinline__ void warp_copy(uint4* const (&dst)[kDests], const uint4* src, int n16, int lane, Load load) {
  for (int base = lane; base < n16; base += 32 * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + 32 * u < n16) v[u] = load(src + base + 32 * u);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + 32 * u >= n16) continue;
#pragma unroll
      for (int d = 0; d < kDests; ++d)
        if (dst[d] != nullptr) dst[d][base + 32 * u] = v[u];
    }
  }
}

/// Drops from L2, without writing them back to memory, the 128-byte lines that lie wholly inside [p, p + n):
/// a slot's lines once its receiver has read it (lines shared with a neighbouring slot stay). All lanes call
/// it after a __syncwarp that follows every read of the slot by any lane of the warp; the slot is rewritten
/// only by a later kernel (after the `entered` handshake), so no write can be lost.
__device__ __forceinline__ void discard_slot(const void* p, std::size_t n, int lane) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = (at + n) & ~uintptr_t{127};
  for (uintptr_t line = ((at + 127) & ~uintptr_t{127}) + 128u * lane; line < end; line += 32u * 128u)
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(line) : "memory");
}

// --- a sending block's progress -----------------------------------------------------------------

/// A sending block's list of items (tokens of its channel, or the rows it returns) is split round-robin
/// over kWarps - 1 copy warps: item i belongs to warp i % (kWarps - 1). done[w] counts the items warp w
/// has finished; the block's last warp (the publisher) turns the longest finished prefix of the list into
/// progress signals, in order, so a receiver's count never goes down and no copy warp waits for another.
/// done[w] is written by warp w's lane 0 (release, CTA scope, after __syncwarp: it covers the whole warp's
/// stores) and read by the publisher (acquire, CTA scope), whose sys-scope fence before each signal then
/// orders those stores before it.
struct send_tracker {
  int done[kWarps];

  static constexpr int kCopyWarps = kWarps - 1;

  __device__ __forceinline__ void init() {
    if (threadIdx.x < kWarps) done[threadIdx.x] = 0;
  }
  /// Copy warp `warp` has finished its first `count` items (all lanes call it).
  __device__ __forceinline__ void record(int warp, int count, int lane) {
    __syncwarp();
    if (lane == 0) cuda::atomic_ref<int, cuda::thread_scope_block>(done[warp]).store(count, cuda::memory_order_release);
  }
  /// The publisher warp: items [0, result) of an n-item list are finished (all lanes get it).
  __device__ __forceinline__ int finished_prefix(int n, int lane) {
    int next = n;
    if (lane < kCopyWarps) {
      const int k = cuda::atomic_ref<int, cuda::thread_scope_block>(done[lane]).load(cuda::memory_order_acquire);
      next = min(n, lane + kCopyWarps * k);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) next = min(next, __shfl_xor_sync(0xffffffffu, next, off));
    // A shuffle moves values, not ordering: the warp barrier makes every lane's acquire (lane w observed copy
    // warp w's stores) precede whatever any lane does next, e.g. lane d's fence and signal to rank d.
    __syncwarp();
    return next;
  }
};

/// Runs the publisher warp of a sending block: calls publish(from, to) with growing finished prefixes of
/// an n-item list, each at least `step` items past the last unless it reaches the end, until all n are
/// published. publish runs on all lanes of the warp.
template <class Publish>
__device__ __forceinline__ void run_publisher(send_tracker& tracker, int n, int step, int lane, Publish publish) {
  for (int published = 0; published < n;) {
    const int upto = tracker.finished_prefix(n, lane);
    if (upto == n || upto - published >= step) {
      publish(published, upto);
      published = upto;
    }
  }
}

// --- the channel kernel -------------------------------------------------------------------------

/// The smallest rank bucket (2, 4 or 8) holding num_ranks: kernels keep one pointer per possible rank
/// in registers, so fewer ranks mean fewer registers and unrolled loops over them.
template <template <int> class Kernel, class Args>
void launch_by_ranks(const Args& a, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.num_ranks <= 2)
    Kernel<2>::launch(a, s);
  else if (a.num_ranks <= 4)
    Kernel<4>::launch(a, s);
  else
    Kernel<8>::launch(a, s);
}

/// Block 0 announces the call; even blocks run Send, odd blocks Recv, on channel blockIdx.x / 2.
template <class Args, void (*Send)(const Args&, uint64_t, int), void (*Recv)(const Args&, uint64_t, int)>
__global__ void __launch_bounds__(kChannelThreads, 1) channel_kernel(const __grid_constant__ Args a) {
  control* mine = ctrl(a.p.base[a.rank]);
  const uint64_t seq = call_seq(mine);
  if (blockIdx.x == 0 && threadIdx.x == 0) announce_entered(a.p, a.rank, a.num_ranks, seq);
  if (blockIdx.x % 2 == 0)
    Send(a, seq, blockIdx.x / 2);
  else
    Recv(a, seq, blockIdx.x / 2);
  finish_block(mine, false);
}

/// Throws shoal::error naming `call` when the last launch failed.
void check_launch(const char* call);

}  // namespace shoal::ep::detail
