// The kernels of shoal-bench-moe (bench/study/moe_plain.cu): the routing and the token rows each PE makes for itself,
// the dispatch written on shoal's public device API alone (plain_dispatch_kernel), and the GPU steps of the
// CPU-orchestrated form (the rows grouped per destination). Rows are BF16, handled as their 16-bit patterns.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cub/block/block_scan.cuh>

#include "shoal/device/device.cuh"

namespace shoal::bench::moe {

inline constexpr int kMaxPes = 64;           ///< a token's destinations are one 64-bit mask
inline constexpr int kMaxTopk = 16;          ///< the most experts a token picks
inline constexpr int kDispatchWarps = 16;    ///< warps per block of plain_dispatch_kernel (one token per warp)
inline constexpr int kGroupWarps = 16;       ///< warps per block of group_rows_kernel
inline constexpr int kScanThreads = 1024;    ///< threads of the one-block scans
inline constexpr int kElementThreads = 256;  ///< threads per block of the element-wise kernels

/// A 32-bit integer mix (lowbias32): the hash behind the expert scores and the row values.
__host__ __device__ inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/// The routing seed of PE `pe` at `num_tokens` tokens per PE (bench/study/moe_a2a.py seeds torch with the same
/// formula; the generators differ, the kind of routing is the same).
__host__ __device__ inline uint32_t routing_seed(int pe, uint32_t num_tokens) {
  return static_cast<uint32_t>(pe) * 7919u + num_tokens;
}

/// Token `token`'s destinations: bit d set when PE d holds one of the token's top-`num_topk` experts among
/// num_pes x experts_per_rank, scored by a hash of (seed, token, expert), ties to the lower expert. Expert e lives on
/// PE e / experts_per_rank. Independent scores make the top-k a uniformly random set of k experts, as torch's
/// topk of random scores is in moe_a2a.py.
__device__ inline uint64_t route_token(uint32_t seed, uint32_t token, int num_pes, int experts_per_rank, int num_topk) {
  uint32_t best_score[kMaxTopk];
  int best_expert[kMaxTopk];
  int have = 0;
  const uint32_t base = mix32(seed ^ mix32(token + 0x9e3779b9u));
  const int num_experts = num_pes * experts_per_rank;
  for (int e = 0; e < num_experts; ++e) {
    const uint32_t score = mix32(base ^ (static_cast<uint32_t>(e) * 0x85ebca6bu));
    if (have == num_topk && score <= best_score[have - 1]) continue;
    int i = have < num_topk ? have++ : num_topk - 1;
    for (; i > 0 && best_score[i - 1] < score; --i) {
      best_score[i] = best_score[i - 1];
      best_expert[i] = best_expert[i - 1];
    }
    best_score[i] = score;
    best_expert[i] = e;
  }
  uint64_t mask = 0;
  for (int i = 0; i < have; ++i) mask |= uint64_t{1} << (best_expert[i] / experts_per_rank);
  return mask;
}

/// Element `h` of token `token`'s row on PE `pe`, as BF16 bits: finite (exponent 120..135), so never 0xffff, the
/// pattern a cleared receive buffer holds; a row that did not arrive, or came from another token, differs.
__host__ __device__ inline uint16_t row_value(int pe, uint32_t token, uint32_t h) {
  const uint32_t r = mix32(mix32(static_cast<uint32_t>(pe) * 0x9e3779b9u ^ token) ^ (h * 0x85ebca6bu));
  const uint32_t sign = r & 0x8000u;
  const uint32_t exponent = 120u + ((r >> 7) & 15u);
  return static_cast<uint16_t>(sign | exponent << 7 | (r & 0x7fu));
}

/// masks[i] = the destinations of token i % num_tokens of PE first_pe + i / num_tokens, for count_pes PEs.
__global__ void __launch_bounds__(kElementThreads)
    route_kernel(uint64_t* masks, int first_pe, int count_pes, uint32_t num_tokens, int num_pes, int experts_per_rank,
                 int num_topk) {
  const size_t total = static_cast<size_t>(count_pes) * num_tokens;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const int pe = first_pe + static_cast<int>(i / num_tokens);
    const auto token = static_cast<uint32_t>(i % num_tokens);
    masks[i] = route_token(routing_seed(pe, num_tokens), token, num_pes, experts_per_rank, num_topk);
  }
}

/// rows[t][h] = row_value(pe, t, h): PE pe's tokens.
__global__ void __launch_bounds__(kElementThreads)
    fill_rows_kernel(uint16_t* rows, int pe, uint32_t num_tokens, uint32_t hidden) {
  const size_t total = size_t{num_tokens} * hidden;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x)
    rows[i] = row_value(pe, static_cast<uint32_t>(i / hidden), static_cast<uint32_t>(i % hidden));
}

// --- the plain dispatch: device-initiated from start to finish ----------------------------------------------------

/// This PE's own words of plain_dispatch_kernel, in its device memory (zeroed before the first launch). Only this
/// PE's kernels touch them; one launch ends before the next starts.
struct dispatch_local_words {
  /// Word d: rows this PE's blocks reserved at PE d in this launch (each block adds its count after its reservation);
  /// the last block reads each as the count it signals, and sets it back to 0.
  uint32_t sent[kMaxPes];
  /// Blocks past their puts and fence in this launch (the last to arrive sets it back to 0).
  uint32_t blocks_done;
  /// Written at the end of each launch: the rows that arrived (slots 0 .. rows_received - 1 of the receive buffer).
  uint32_t rows_received;
  /// Set to 1 by a launch in which a done word held another epoch or the slots reserved here did not add up to the
  /// rows signalled; never cleared by the kernel (the host reads and clears it), so it covers every launch between.
  uint32_t bad_epoch;
};

/// The symmetric words of plain_dispatch_kernel (shoal_calloc: zero, at the same offset on every PE).
struct dispatch_shared_words {
  /// 2 words, one per epoch parity. Word epoch % 2 on PE r: the slots of r's receive buffer reserved this epoch.
  /// Senders fetch-add their rows' count to it (one remote atomic per block and destination) and put the rows at the
  /// slots it returns; r swaps it back to 0 after every sender's done word of the epoch has arrived. A sender uses the
  /// word again two epochs later, after r's done word of the epoch in between has reached it: after the swap.
  uint64_t* reserved;
  /// 2 x kMaxPes words. Word [epoch % 2][s] on PE r: sender s's done word, set (signal SET) to epoch << 32 | the rows
  /// s sent r this epoch, after a fence that orders every one of those rows and their origins before it. r waits for
  /// it to reach epoch << 32 (bounded). The parity keeps a sender that is one epoch ahead (nothing holds it once its
  /// own rows are in) from overwriting a word r has not read yet.
  uint64_t* done;
};

struct plain_dispatch_args {
  shoal::device_world world;
  const uint16_t* rows;       ///< local [num_tokens][hidden]: this PE's tokens (BF16 bits)
  const uint64_t* rank_mask;  ///< local [num_tokens]: bit d set, the token goes to PE d
  uint32_t num_tokens;
  uint32_t hidden;  ///< elements per row; hidden * 2 bytes a multiple of 16
  /// Symmetric, two halves of recv_slots rows (hidden elements each), one per epoch parity: rows from every PE at
  /// reserved slots of half epoch % 2. A PE one epoch ahead writes the other half, so this PE's rows of a call stay
  /// in place until its own next call (a PE two epochs ahead would have needed this PE's done word of the next one).
  uint16_t* recv_rows;
  uint64_t* recv_src;   ///< symmetric, 2 x recv_slots: slot k's origin, pe << 32 | token, put after its row
  uint64_t recv_slots;  ///< slots per half: num_pes x the most tokens per PE
  dispatch_shared_words shared;
  dispatch_local_words* local;
  uint32_t epoch;  ///< 1, 2, 3 ... one per launch, the same sequence on every PE
};

/// The dispatch on shoal's public device API alone. Each block takes a contiguous run of tokens: it counts its rows
/// per destination, reserves that many slots at each destination with one remote fetch-add, then each warp puts one
/// token's row to each of its destinations (warp-scope putmem_nbi) and the row's origin after it (p). Each block
/// fences and counts itself done; the last one signals every destination how many rows this PE sent it (fence +
/// signal SET, tagged with the epoch) and then waits for every PE's done word (bounded: SHOAL_WAIT_TIMEOUT).
/// On return the rows for this PE are in slots 0 .. local->rows_received - 1 of half epoch % 2 of the receive
/// buffer, in no particular order. The argument is __grid_constant__ (docs/ep.md, "Register budget"): the device
/// calls take the world by reference, and the parameter then stays in the constant bank instead of being free for
/// the compiler to copy to each thread's stack.
__global__ void __launch_bounds__(kDispatchWarps * 32)
    plain_dispatch_kernel(const __grid_constant__ plain_dispatch_args a) {
  __shared__ uint32_t block_count[kMaxPes];   // this block's rows per destination
  __shared__ uint64_t block_base[kMaxPes];    // the first slot reserved for them at the destination
  __shared__ uint32_t block_cursor[kMaxPes];  // slots handed out from block_base so far
  __shared__ uint32_t from[kMaxPes];          // the last block: rows from each PE (UINT32_MAX: a stale done word)
  __shared__ bool is_last;
  const shoal::device_world& w = a.world;
  const int num_pes = w.n_pes;
  const int me = w.my_pe;
  const uint32_t tid = threadIdx.x;
  const uint32_t parity = a.epoch & 1u;
  const uint32_t per_block = (a.num_tokens + gridDim.x - 1) / gridDim.x;
  const uint32_t first = min(a.num_tokens, blockIdx.x * per_block);
  const uint32_t end = min(a.num_tokens, first + per_block);

  for (uint32_t d = tid; d < kMaxPes; d += blockDim.x) block_count[d] = 0, block_cursor[d] = 0;
  __syncthreads();
  for (uint32_t t = first + tid; t < end; t += blockDim.x)
    for (uint64_t m = a.rank_mask[t]; m != 0; m &= m - 1)
      atomicAdd(&block_count[__ffsll(static_cast<long long>(m)) - 1], 1u);
  __syncthreads();
  if (tid < static_cast<uint32_t>(num_pes) && block_count[tid] != 0) {
    block_base[tid] = shoal::device::atomic_fetch_add(w, &a.shared.reserved[parity], uint64_t{block_count[tid]},
                                                      static_cast<int>(tid));
    atomicAdd(&a.local->sent[tid], block_count[tid]);
  }
  __syncthreads();

  const uint32_t warp = tid / 32;
  const uint32_t lane = tid % 32;
  const size_t row_bytes = size_t{a.hidden} * 2;
  uint16_t* const recv_rows = a.recv_rows + parity * a.recv_slots * a.hidden;
  uint64_t* const recv_src = a.recv_src + parity * a.recv_slots;
  for (uint32_t t = first + warp; t < end; t += kDispatchWarps) {
    const uint16_t* row = a.rows + size_t{t} * a.hidden;
    for (uint64_t m = a.rank_mask[t]; m != 0; m &= m - 1) {
      const int d = __ffsll(static_cast<long long>(m)) - 1;
      uint64_t slot = 0;
      if (lane == 0) slot = block_base[d] + atomicAdd(&block_cursor[d], 1u);
      slot = __shfl_sync(0xffffffffu, slot, 0);
      shoal::device::putmem_nbi(shoal::warp, w, recv_rows + slot * a.hidden, row, row_bytes, d);
      if (lane == 0) shoal::device::p(w, recv_src + slot, static_cast<uint64_t>(me) << 32 | t, d);
    }
  }

  // The block's puts, then (thread 0) a fence and the arrival: a release. The last block to arrive acquires with a
  // fence after its arrival, so every block's rows are ordered before the done words it sets next.
  __syncthreads();
  if (tid == 0) {
    shoal::device::fence(w);
    is_last = atomicAdd(&a.local->blocks_done, 1u) == gridDim.x - 1;
    if (is_last) {
      shoal::device::fence(w);
      a.local->blocks_done = 0;
    }
  }
  __syncthreads();
  if (!is_last) return;

  const uint64_t tag = static_cast<uint64_t>(a.epoch) << 32;
  if (tid < static_cast<uint32_t>(num_pes)) {
    const uint32_t rows = atomicExch(&a.local->sent[tid], 0u);
    shoal::device::fence(w);
    shoal::device::signal_op(w, &a.shared.done[parity * kMaxPes + me], tag | rows, SHOAL_SIGNAL_SET,
                             static_cast<int>(tid));
    const uint64_t seen =
        shoal::device::signal_wait_until(w, &a.shared.done[parity * kMaxPes + tid], SHOAL_CMP_GE, tag);
    from[tid] = (seen >> 32) == a.epoch ? static_cast<uint32_t>(seen) : UINT32_MAX;
  }
  __syncthreads();
  if (tid == 0) {
    uint64_t total = 0;
    bool stale = false;
    for (int s = 0; s < num_pes; ++s) {
      stale |= from[s] == UINT32_MAX;
      total += from[s];
    }
    const uint64_t reserved = shoal::device::atomic_swap(w, &a.shared.reserved[parity], uint64_t{0}, me);
    a.local->rows_received = static_cast<uint32_t>(total);
    if (stale || reserved != total) a.local->bad_epoch = 1u;
  }
}

// --- the CPU-orchestrated form's GPU steps ------------------------------------------------------------------------

/// One block of kScanThreads threads walks [0, total) in order: emit(i, k) for every i where routed(i) holds, k being
/// how many such i come before it. Returns how many there are (on every thread).
template <class Routed, class Emit>
__device__ uint32_t block_enumerate(size_t total, Routed routed, Emit emit) {
  using block_scan = cub::BlockScan<uint32_t, kScanThreads>;
  __shared__ typename block_scan::TempStorage scratch;
  uint32_t running = 0;
  for (size_t tile = 0; tile < total; tile += kScanThreads) {
    const size_t i = tile + threadIdx.x;
    const uint32_t hit = i < total && routed(i) ? 1u : 0u;
    uint32_t at = 0;
    uint32_t tile_total = 0;
    block_scan(scratch).ExclusiveSum(hit, at, tile_total);
    if (hit) emit(i, running + at);
    running += tile_total;
    __syncthreads();  // the scan's scratch is reused by the next tile
  }
  return running;
}

/// Block d: position[d][t] = the place of token t among this PE's tokens routed to PE d, in token order (written for
/// those tokens only), and counts[d] = how many there are (the fcollect's source word d).
__global__ void __launch_bounds__(kScanThreads)
    group_positions_kernel(const uint64_t* rank_mask, uint32_t num_tokens, uint32_t* position, uint64_t* counts) {
  const uint32_t d = blockIdx.x;
  const uint32_t n = block_enumerate(
      num_tokens, [&](size_t t) { return (rank_mask[t] >> d & 1u) != 0; },
      [&](size_t t, uint32_t k) { position[size_t{d} * num_tokens + t] = k; });
  if (threadIdx.x == 0) counts[d] = n;
}

/// One warp per token: its row copied to grouped[d][position[d][t]] for each destination d (16-byte accesses).
__global__ void __launch_bounds__(kGroupWarps * 32)
    group_rows_kernel(const uint16_t* rows, const uint64_t* rank_mask, const uint32_t* position, uint32_t num_tokens,
                      uint32_t hidden, uint16_t* grouped) {
  const uint32_t lane = threadIdx.x % 32;
  const size_t vectors = size_t{hidden} * 2 / 16;
  for (uint32_t t = blockIdx.x * kGroupWarps + threadIdx.x / 32; t < num_tokens; t += gridDim.x * kGroupWarps) {
    const auto* from = reinterpret_cast<const uint4*>(rows + size_t{t} * hidden);
    for (uint64_t m = rank_mask[t]; m != 0; m &= m - 1) {
      const int d = __ffsll(static_cast<long long>(m)) - 1;
      const size_t at = static_cast<size_t>(d) * num_tokens + position[static_cast<size_t>(d) * num_tokens + t];
      auto* to = reinterpret_cast<uint4*>(grouped + at * hidden);
      for (size_t v = lane; v < vectors; v += 32) to[v] = from[v];
    }
  }
}

}  // namespace shoal::bench::moe
