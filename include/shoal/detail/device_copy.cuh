// Scope-wide copy engines behind put/get (not a public header): a vectorized load/store copy spread over a thread, a
// warp or a block (16-byte accesses when source and destination are co-aligned, narrower otherwise, never a misaligned
// vector access), and a TMA bulk-copy ring for large block-scope puts. Weak accesses: ordering is the caller's job
// (fence/quiet/put_signal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"

namespace shoal::detail {

/// The unsigned integer of kBytes bytes, or void when there is none.
template <size_t kBytes>
struct uint_of {
  using type = void;
};
template <>
struct uint_of<1> {
  using type = uint8_t;
};
template <>
struct uint_of<2> {
  using type = uint16_t;
};
template <>
struct uint_of<4> {
  using type = uint32_t;
};
template <>
struct uint_of<8> {
  using type = uint64_t;
};

/// What one vector access of kWidth bytes moves: the unsigned integer of that size, or uint4 for 16.
template <int kWidth>
struct vec_of {
  using type = typename uint_of<kWidth>::type;
};
template <>
struct vec_of<16> {
  using type = uint4;
};

/// A weak load of kWidth bytes; kGlobal: the address is global memory (ld.global), else generic.
template <int kWidth, bool kGlobal>
__device__ __forceinline__ typename vec_of<kWidth>::type vload(const void* p) {
  using V = typename vec_of<kWidth>::type;
  if constexpr (!kGlobal) {
    return *static_cast<const V*>(p);
  } else if constexpr (kWidth == 16) {
    return ptx::ld_global_v4(static_cast<const uint4*>(p));
  } else if constexpr (kWidth == 8) {
    return ptx::ld_global_b64(static_cast<const uint64_t*>(p));
  } else if constexpr (kWidth == 4) {
    return ptx::ld_global_b32(static_cast<const uint32_t*>(p));
  } else {
    return ptx::ld_global_b8(static_cast<const uint8_t*>(p));
  }
}

template <int kWidth, bool kGlobal>
__device__ __forceinline__ void vstore(void* p, typename vec_of<kWidth>::type v) {
  using V = typename vec_of<kWidth>::type;
  if constexpr (!kGlobal) {
    *static_cast<V*>(p) = v;
  } else if constexpr (kWidth == 16) {
    ptx::st_global_v4(static_cast<uint4*>(p), v);
  } else if constexpr (kWidth == 8) {
    ptx::st_global_b64(static_cast<uint64_t*>(p), v);
  } else if constexpr (kWidth == 4) {
    ptx::st_global_b32(static_cast<uint32_t*>(p), v);
  } else {
    ptx::st_global_b8(static_cast<uint8_t*>(p), v);
  }
}

/// Loads in flight per thread before its stores. A thread or warp alone needs depth (8 x 16 B per
/// lane); a block (or several warps) has width already (4 x 16 B x its threads) and must stay at <= 64 registers so
/// that 1024-thread blocks still launch.
template <class Scope, int kWidth>
inline constexpr int kCopyUnroll = (kWidth < 8 || Scope::kWide) ? 4 : 8;

/// Copies nbytes with kWidth-byte accesses; (dst ^ src) % kWidth == 0. Rank r of the scope takes
/// elements r, r + size, r + 2*size, ... (interleaved, so each unrolled step is coalesced), with
/// kCopyUnroll loads issued before their stores. Head and tail (< kWidth bytes) go byte by byte,
/// strided over the scope (any scope size, even 1).
/// kDepth: loads in flight per thread. kCopyDeep: 8 at every scope (48 registers at block scope), for the team
/// collectives, where one block alone must feed NVLink; kCopyDefault: kCopyUnroll (the RMA calls' inline paths);
/// kCopyLean: 2, for the out-of-line cold paths (rma_cold, putmem_signal_cold), whose registers add to those the
/// calling kernel keeps live across the call.
enum copy_depth { kCopyDefault, kCopyDeep, kCopyLean };
template <class Scope, int kWidth, bool kSrcGlobal, bool kDstGlobal, copy_depth kDepth = kCopyDefault>
__device__ __forceinline__ void copy_width(char* dst, const char* src, size_t nbytes) {
  using V = typename vec_of<kWidth>::type;
  constexpr int kUnroll = kDepth == kCopyLean ? 2 : kDepth == kCopyDeep && kWidth >= 8 ? 8 : kCopyUnroll<Scope, kWidth>;
  const uint32_t rank = Scope::rank();
  const uint32_t size = Scope::size();
  size_t head = (kWidth - (reinterpret_cast<uintptr_t>(dst) & (kWidth - 1))) & (kWidth - 1);
  if (head > nbytes) head = nbytes;
  const size_t num_vecs = (nbytes - head) / kWidth;
  const size_t tail = nbytes - head - num_vecs * kWidth;
  if constexpr (kWidth > 1) {
    for (size_t b = rank; b < head; b += size) vstore<1, kDstGlobal>(dst + b, vload<1, kSrcGlobal>(src + b));
  }
  const V* s = reinterpret_cast<const V*>(src + head);
  V* d = reinterpret_cast<V*>(dst + head);
  size_t i = rank;
#pragma unroll 1
  for (; i + static_cast<size_t>(kUnroll - 1) * size < num_vecs; i += static_cast<size_t>(kUnroll) * size) {
    V r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = vload<kWidth, kSrcGlobal>(s + i + u * size);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) vstore<kWidth, kDstGlobal>(d + i + u * size, r[u]);
  }
#pragma unroll 1
  for (; i < num_vecs; i += size) vstore<kWidth, kDstGlobal>(d + i, vload<kWidth, kSrcGlobal>(s + i));
  if constexpr (kWidth > 1) {
    const size_t done = head + num_vecs * kWidth;
    for (size_t b = rank; b < tail; b += size) {
      vstore<1, kDstGlobal>(dst + done + b, vload<1, kSrcGlobal>(src + done + b));
    }
  }
}

/// The most bytes copy_small takes at Scope: one 16-byte element per rank.
template <class Scope>
__device__ __forceinline__ size_t small_copy_bytes() {
  return 16 * static_cast<size_t>(Scope::size());
}

/// Rank `rank`'s element of copy_small at width kWidth (dest, source and nbytes all multiples of it).
template <int kWidth>
__device__ __forceinline__ void copy_small_element(char* remote_dst, const char* src, size_t nbytes, size_t rank) {
  if (rank * kWidth < nbytes)
    vstore<kWidth, true>(remote_dst + rank * kWidth, vload<kWidth, false>(src + rank * kWidth));
}

/// A small put's data in one pass over the scope: rank r copies element r of the widest width (16, 8, 4 or 1 bytes)
/// that dest, source and nbytes allow, loaded from any space, stored st.global to the peer; single bytes stride over
/// the scope. nbytes <= small_copy_bytes<Scope>(); no scope sync. Put-with-signal's small case (device_signal.cuh).
template <class Scope>
__device__ __forceinline__ void copy_small(void* remote_dst, const void* src, size_t nbytes) {
  char* d = static_cast<char*>(remote_dst);
  const char* s = static_cast<const char*>(src);
  const uintptr_t bits = reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s) | nbytes;
  const size_t rank = Scope::rank();
  if ((bits & 15) == 0) {
    copy_small_element<16>(d, s, nbytes, rank);
  } else if ((bits & 7) == 0) {
    copy_small_element<8>(d, s, nbytes, rank);
  } else if ((bits & 3) == 0) {
    copy_small_element<4>(d, s, nbytes, rank);
  } else {
    for (size_t b = rank; b < nbytes; b += Scope::size()) vstore<1, true>(d + b, vload<1, false>(s + b));
  }
}

/// Copy with the widest access width that source and destination allow (16, 8, 4 or 1 bytes).
/// No scope synchronization: every rank returns once its own part is issued.
template <class Scope, bool kSrcGlobal, bool kDstGlobal, copy_depth kDepth = kCopyDefault>
__device__ __forceinline__ void copy_spaces(void* dst, const void* src, size_t nbytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  if ((misalign & 15) == 0) {
    copy_width<Scope, 16, kSrcGlobal, kDstGlobal, kDepth>(d, s, nbytes);
  } else if ((misalign & 7) == 0) {
    copy_width<Scope, 8, kSrcGlobal, kDstGlobal, kDepth>(d, s, nbytes);
  } else if ((misalign & 3) == 0) {
    copy_width<Scope, 4, kSrcGlobal, kDstGlobal, kDepth>(d, s, nbytes);
  } else {
    copy_width<Scope, 1, kSrcGlobal, kDstGlobal, kDepth>(d, s, nbytes);
  }
}

/// Put copy: `remote_dst` is a peer's heap (global); the local source may be global, shared or
/// local memory (ld.global when it is global, generic loads otherwise).
template <class Scope, copy_depth kDepth = kCopyDefault>
__device__ __forceinline__ void copy_to_remote(void* remote_dst, const void* src, size_t nbytes) {
  if (__isGlobal(src)) {
    copy_spaces<Scope, true, true, kDepth>(remote_dst, src, nbytes);
  } else {
    copy_spaces<Scope, false, true, kDepth>(remote_dst, src, nbytes);
  }
}

/// copy_to_remote with 8 loads in flight per thread (the team collectives' pushes).
template <class Scope>
__device__ __forceinline__ void copy_to_remote_deep(void* remote_dst, const void* src, size_t nbytes) {
  if (__isGlobal(src)) {
    copy_spaces<Scope, true, true, kCopyDeep>(remote_dst, src, nbytes);
  } else {
    copy_spaces<Scope, false, true, kCopyDeep>(remote_dst, src, nbytes);
  }
}

/// Get copy: `remote_src` is a peer's heap (global); the local destination may be any space.
template <class Scope, copy_depth kDepth = kCopyDefault>
__device__ __forceinline__ void copy_from_remote(void* dst, const void* remote_src, size_t nbytes) {
  if (__isGlobal(dst)) {
    copy_spaces<Scope, true, true, kDepth>(dst, remote_src, nbytes);
  } else {
    copy_spaces<Scope, true, false, kDepth>(dst, remote_src, nbytes);
  }
}

/// True when `dest` and `source` are co-aligned modulo 16 (copy_width<16> after a byte head): the buffers of the
/// inline copy of thread- and warp-scope put/get.
__device__ __forceinline__ bool co16_ok(const void* dest, const void* source) {
  return ((reinterpret_cast<uintptr_t>(dest) ^ reinterpret_cast<uintptr_t>(source)) & 15) == 0;
}

/// True when a copy at Scope may take copy_vec16: the scope is whole warps
/// (size a multiple of 32), destination, source and size are multiples of 16 bytes, the size is below
/// 32 GiB (vector indices plus a round stay below 2^32) and the source is global memory (no head, no
/// tail, no narrower width, ld.global).
template <class Scope>
__device__ __forceinline__ bool vec16_ok(const void* dest, const void* source, size_t nbytes) {
  if constexpr (std::is_same_v<Scope, thread_scope>) {
    return false;
  } else {
    return ((reinterpret_cast<uintptr_t>(dest) | reinterpret_cast<uintptr_t>(source) | nbytes) & 15) == 0 &&
           nbytes != 0 && (nbytes >> 35) == 0 && Scope::size() % 32 == 0 && __isGlobal(source);
  }
}

/// Where a warp's round of copy_vec16 starts: warp k of the scope takes vectors [k*kDepth*32,
/// (k+1)*kDepth*32) of each round (rounds are size*kDepth vectors apart), lane l vectors l, l + 32, ...
/// of that span: every access instruction of a warp is 512 contiguous bytes (coalesced, like the
/// interleaved order), and a lane's kDepth accesses are 512 bytes apart, so one 64-bit address per
/// side serves them all (immediate offsets: fewer registers than copy_width).
template <class Scope, int kDepth>
__device__ __forceinline__ uint32_t vec16_first(uint32_t rank) {
  return (rank / 32) * (kDepth * 32) + rank % 32;
}

/// Loads of this lane's vectors j, j + 32, ... (kDepth of them, those below num_vecs) of `s`.
template <int kDepth>
__device__ __forceinline__ void vec16_load(uint4 (&v)[kDepth], const uint4* s, uint32_t j, uint32_t num_vecs) {
  const uint4* p = s + j;
#pragma unroll
  for (int u = 0; u < kDepth; ++u) {
    if (j + u * 32 < num_vecs) v[u] = ptx::ld_global_v4(p + u * 32);
  }
}
/// The matching stores into `d`.
template <int kDepth>
__device__ __forceinline__ void vec16_store(const uint4 (&v)[kDepth], uint4* d, uint32_t j, uint32_t num_vecs) {
  uint4* p = d + j;
#pragma unroll
  for (int u = 0; u < kDepth; ++u) {
    if (j + u * 32 < num_vecs) ptx::st_global_v4(p + u * 32, v[u]);
  }
}

/// The 16-byte copy of vec16_ok buffers (`dest` global, e.g. a peer's heap; `source` global) in
/// rounds of kDepth loads per thread, then their stores (vec16_first's order; 32-bit indices, no head
/// or tail). No scope sync.
template <class Scope, int kDepth>
__device__ __forceinline__ void copy_vec16(void* dest, const void* source, size_t nbytes) {
  const uint32_t num_vecs = static_cast<uint32_t>(nbytes / 16);  // vec16_ok: below 2^31
  const uint32_t round = Scope::size() * kDepth;
  // Defined before the loop: the loads and stores of a round are predicated (vectors past num_vecs), and registers
  // whose only definitions are predicated stay live from the kernel's start through every loop around the copy,
  // cold calls included, whose callees then place their registers above them (a block put in a loop: 72 registers
  // with the cold chain's, 56 so). A few moves per call, none in the loop.
  uint4 v[kDepth];
#pragma unroll
  for (int u = 0; u < kDepth; ++u) v[u] = make_uint4(0, 0, 0, 0);
#pragma unroll 1
  for (uint32_t j = vec16_first<Scope, kDepth>(Scope::rank()); j < num_vecs; j += round) {
    vec16_load(v, static_cast<const uint4*>(source), j, num_vecs);
    vec16_store(v, static_cast<uint4*>(dest), j, num_vecs);
  }
}

/// Loads in flight per thread in each round of the wide-scope put's and get's copy_vec16 (4 x 16 B, as
/// copy_width at wide scopes: a block of 512 threads moves 32 KiB per round trip).
inline constexpr int kPutLeadLoads = 4;

/// Smallest put (bytes) that the TMA ring sends (kTmaMinBytes); smaller ones take the vector path.
inline constexpr size_t kTmaMinBytes = 32768;

/// Block-scope put through a TMA ring: thread 0 streams 16-byte-aligned chunks of kStageBytes
/// global -> shared (cp.async.bulk, completion on one mbarrier per stage) -> peer global
/// (cp.async.bulk bulk_group), kStages chunks in flight; everyone else handles the unaligned head and
/// tail. Returns (after __syncthreads) with every byte written and ordered before thread 0's later
/// accesses (wait_group 0 + proxy fence), so a later release by thread 0 covers the data.
/// `smem`: this block's shared memory, tma_workspace_bytes<kStages, kStageBytes> bytes, 16-aligned.
/// Falls back to the vector copy when the source is not global, source and destination are not
/// co-aligned mod 16, or the put is under kTmaMinBytes.
template <int kStages, int kStageBytes>
__device__ __forceinline__ void copy_to_remote_block_tma(void* remote_dst, const void* src, size_t nbytes, void* smem) {
  static_assert(kStages >= 2 && kStageBytes >= 16 && kStageBytes % 16 == 0 && kStageBytes < (1 << 20),
                "TMA stages: >= 2 stages of a multiple of 16 bytes below 1 MiB (mbarrier tx-count limit)");
  char* dst = static_cast<char*>(remote_dst);
  const char* s = static_cast<const char*>(src);
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(s);
  if ((misalign & 15) != 0 || nbytes < kTmaMinBytes || !__isGlobal(src) ||
      (reinterpret_cast<uintptr_t>(smem) & 15) != 0) {
    copy_to_remote<block_scope>(dst, s, nbytes);
    return;
  }
  const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
  const size_t body = (nbytes - head) & ~static_cast<size_t>(15);
  const size_t tail = nbytes - head - body;
  const uint32_t rank = block_scope::rank();
  // Head and tail (< 16 bytes each), byte by byte over the block (any block size, even 1 thread).
  for (size_t i = rank; i < head + tail; i += block_scope::size()) {
    const size_t at = i < head ? i : body + i;
    dst[at] = s[at];
  }
  // Every thread's earlier writes to `src` happen before thread 0's proxy fence (bar.sync), so the
  // async proxy reads them; the barrier also makes sure no thread still uses `smem`.
  block_scope::sync();
  if (rank == 0) {
    char* stages = static_cast<char*>(smem);
    uint64_t* bars = reinterpret_cast<uint64_t*>(stages + static_cast<size_t>(kStages) * kStageBytes);
    for (int st = 0; st < kStages; ++st) ptx::mbarrier_init(&bars[st], 1);
    ptx::fence_mbarrier_init_release_cluster();
    ptx::fence_proxy_async_shared_cta();
    ptx::fence_proxy_async_global();  // generic writes to src -> visible to the async-proxy reads
    const char* body_src = s + head;
    char* body_dst = dst + head;
    const size_t num_chunks = (body + kStageBytes - 1) / kStageBytes;
    auto chunk_bytes = [&](size_t c) -> uint32_t {
      const size_t left = body - c * kStageBytes;
      return static_cast<uint32_t>(left < static_cast<size_t>(kStageBytes) ? left : kStageBytes);
    };
    auto load_chunk = [&](size_t c) {
      const int st = static_cast<int>(c % kStages);
      ptx::mbarrier_arrive_expect_tx(&bars[st], chunk_bytes(c));
      ptx::cp_async_bulk_global_to_shared(stages + static_cast<size_t>(st) * kStageBytes, body_src + c * kStageBytes,
                                          chunk_bytes(c), &bars[st]);
    };
    for (size_t c = 0; c < num_chunks && c < static_cast<size_t>(kStages); ++c) load_chunk(c);
    for (size_t c = 0; c < num_chunks; ++c) {
      const int st = static_cast<int>(c % kStages);
      const uint32_t parity = static_cast<uint32_t>((c / kStages) & 1);
      while (!ptx::mbarrier_try_wait_parity(&bars[st], parity)) {
      }
      ptx::cp_async_bulk_shared_to_global(body_dst + c * kStageBytes, stages + static_cast<size_t>(st) * kStageBytes,
                                          chunk_bytes(c));
      ptx::cp_async_bulk_commit_group();
      // Refill the stage of chunk c-1 once its store has read it (all groups but the newest).
      if (c >= 1 && c - 1 + kStages < num_chunks) {
        ptx::cp_async_bulk_wait_group_read<1>();
        load_chunk(c - 1 + kStages);
      }
    }
    ptx::cp_async_bulk_wait_group<0>();  // every bulk store performed (writes visible to this thread)
    ptx::fence_proxy_async_global();     // ... and ordered before this thread's later generic accesses
    for (int st = 0; st < kStages; ++st) ptx::mbarrier_inval(&bars[st]);
  }
  block_scope::sync();
}

}  // namespace shoal::detail
