// Kernels of the device-initiated benchmarks, shared by shoal-bench (shoal's header-only device API,
// no -rdc) and shoal-bench-nvshmem (NVSHMEM, -rdc): each measured kernel is a template on an API
// adapter `Api` (bench/device/shoal_api.cuh, bench/nvshmem/nvshmem_api.cuh) with static __device__
// functions named after the NVSHMEM calls they stand for. The baselines (plain SM copy, raw block put,
// raw flag ping-pong, raw atomics, raw flag barrier) use peer pointers only and are the same for every
// API.
//
// Defines kernels: included by exactly one translation unit of each binary.
//
// Every spin in this file is bounded (kernel_ctx::timeout_ns, checked on %globaltimer): a stuck wait
// records a failure in the PE's status word and leaves the kernel instead of hanging the job.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include <type_traits>

#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"

namespace shoal::bench::dev {

/// The scopes the bandwidth kernels run at (shoal's scope types; the NVSHMEM adapter maps each to
/// its nvshmem/nvshmemx name).
template <class S>
inline constexpr bool is_block_v = std::is_same_v<S, shoal::block_scope>;

/// Written by bench kernels (device memory of this PE), read by this PE's host after each kernel.
struct status_word {
  unsigned int code;   ///< 0: fine; else a failure code (kTimedOut, ...); first failure wins
  unsigned int where;  ///< which wait failed (kernel-specific tag)
};
inline constexpr unsigned int kTimedOut = 1;

/// What every bench kernel gets besides its own arguments.
struct kernel_ctx {
  status_word* status;  ///< this PE's status word
  uint64_t timeout_ns;  ///< bound on every spin
};

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void record_failure(const kernel_ctx& ctx, unsigned int code, unsigned int where) {
  if (atomicCAS(&ctx.status->code, 0u, code) == 0u) atomicExch(&ctx.status->where, where);
}

/// Polls `*flag >= value` with volatile (relaxed) loads, the clock read every 256 polls. false: timed out.
template <class T>
__device__ __forceinline__ bool spin_until_ge(const volatile T* flag, T value, const kernel_ctx& ctx,
                                              unsigned int where) {
  uint64_t deadline = 0;
  uint32_t polls = 0;
  while (*flag < value) {
    if ((++polls & 255u) == 0) {
      const uint64_t t = now_ns();
      if (deadline == 0) {
        deadline = t + ctx.timeout_ns;
      } else if (t > deadline) {
        record_failure(ctx, kTimedOut, where);
        return false;
      }
    }
  }
  return true;
}

// --- data pattern: fill, clear, verify ------------------------------------------------------------

/// 32-bit word `word_index` of the pattern `seed`; no byte is ever zero, so a cleared (zero) byte
/// never passes for data.
__host__ __device__ __forceinline__ uint32_t pattern_word(uint64_t word_index, uint32_t seed) {
  uint32_t x =
      static_cast<uint32_t>(word_index) * 2654435761u ^ (seed * 0x9E3779B9u + static_cast<uint32_t>(word_index >> 32));
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  return x | 0x01010101u;
}

__device__ __forceinline__ uint8_t pattern_byte(uint64_t i, uint32_t seed) {
  return static_cast<uint8_t>(pattern_word(i >> 2, seed) >> (8 * (i & 3)));
}

/// buf[0, nbytes) = pattern `seed` (buf 4-byte aligned; it may be a peer's memory).
__global__ void fill_pattern_kernel(char* buf, size_t nbytes, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t words = nbytes / 4;
  auto* w = reinterpret_cast<uint32_t*>(buf);
  for (size_t i = tid; i < words; i += stride) w[i] = pattern_word(i, seed);
  for (size_t i = words * 4 + tid; i < nbytes; i += stride) buf[i] = static_cast<char>(pattern_byte(i, seed));
}

/// `slices` copies of pattern `seed` of nbytes each, back to back from buf: each slice holds what
/// fill_pattern_kernel(slice, nbytes, seed) writes (the rotating get source).
__global__ void fill_pattern_slices_kernel(char* buf, size_t nbytes, size_t slices, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (nbytes % 4 == 0) {
    const size_t per = nbytes / 4;
    auto* w = reinterpret_cast<uint32_t*>(buf);
    for (size_t i = tid; i < per * slices; i += stride) w[i] = pattern_word(i % per, seed);
  } else {
    for (size_t i = tid; i < nbytes * slices; i += stride) buf[i] = static_cast<char>(pattern_byte(i % nbytes, seed));
  }
}

/// buf[0, nbytes) = 0 (it may be a peer's memory).
__global__ void clear_kernel(char* buf, size_t nbytes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t words = nbytes / 4;
  auto* w = reinterpret_cast<uint32_t*>(buf);
  for (size_t i = tid; i < words; i += stride) w[i] = 0;
  for (size_t i = words * 4 + tid; i < nbytes; i += stride) buf[i] = 0;
}

/// Adds to *mismatches the number of 4-byte words (and tail bytes) of buf that differ from the pattern.
__global__ void verify_pattern_kernel(const char* buf, size_t nbytes, uint32_t seed, unsigned long long* mismatches) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t words = nbytes / 4;
  const auto* w = reinterpret_cast<const uint32_t*>(buf);
  unsigned long long bad = 0;
  for (size_t i = tid; i < words; i += stride) bad += w[i] != pattern_word(i, seed);
  for (size_t i = words * 4 + tid; i < nbytes; i += stride)
    bad += static_cast<uint8_t>(buf[i]) != pattern_byte(i, seed);
  if (bad != 0) atomicAdd(mismatches, bad);
}

/// Spins for `ns` nanoseconds. Enqueued before a timed region so that the GPU is still busy while the
/// host records the start event and launches the measured kernel: the launch latency stays out of it.
__global__ void delay_kernel(uint64_t ns) {
  const uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

/// *out = *word (word may be a peer's memory): lets the host read a peer's counter.
__global__ void read_u64_kernel(const volatile uint64_t* word, uint64_t* out) { *out = *word; }

/// One volatile store to `word` (a peer's control word), then a system fence.
__global__ void store_u64_kernel(volatile uint64_t* word, uint64_t value) {
  *word = value;
  __threadfence_system();
}

/// Waits (bounded) until the local control word reaches `value`.
__global__ void wait_u64_kernel(const volatile uint64_t* word, uint64_t value, kernel_ctx ctx) {
  spin_until_ge(word, value, ctx, 90);
}

// --- bandwidth --------------------------------------------------------------------------------

/// The scope instance (thread, warp or block) this thread belongs to, numbered over the grid.
template <class S>
__device__ __forceinline__ size_t unit_index() {
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (std::is_same_v<S, shoal::thread_scope>) return tid;
  if constexpr (std::is_same_v<S, shoal::warp_scope>) return tid / 32;
  return blockIdx.x;
}

/// Optional start/stop protocol of background traffic (put_bw_bidir's second direction): block 0's
/// thread 0 writes `started_value` to `started_remote` (the measuring PE's control word) once the
/// kernel runs; every block leaves its loop at the first iteration that sees *stop >= stop_value
/// (the measuring PE writes it when done). Null pointers: a plain fixed-count loop.
struct background {
  uint64_t* started_remote = nullptr;
  uint64_t started_value = 0;
  const volatile uint64_t* stop = nullptr;
  uint64_t stop_value = 0;
};

/// True when a background loop must end: stop seen, or timed out (recorded). Block-uniform; has
/// __syncthreads().
__device__ __forceinline__ bool background_done(const background& bg, uint64_t deadline, const kernel_ctx& ctx) {
  __shared__ int s_done;
  if (threadIdx.x == 0) {
    int done = *bg.stop >= bg.stop_value;
    if (!done && now_ns() > deadline) {
      record_failure(ctx, kTimedOut, 91);
      done = 1;
    }
    s_done = done;
  }
  __syncthreads();
  const bool done = s_done != 0;
  __syncthreads();
  return done;
}

__device__ __forceinline__ void background_start(const background& bg) {
  if (bg.started_remote != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    *reinterpret_cast<volatile uint64_t*>(bg.started_remote) = bg.started_value;
    __threadfence_system();
  }
}

/// `iters` times, scope instance u of the grid puts (kGet: gets) bytes [u*chunk, (u+1)*chunk) of the
/// message with the API's _nbi call at scope S (shoal::thread_scope, warp_scope, block_scope); then every thread calls
/// quiet. dst/src: symmetric (put: dst remote; get: src remote). Iteration i reads slice i % slices of src (slices of
/// nbytes back to back): gets rotate over more than the L2 holds, since peer reads are cached there.
template <class Api, class S, bool kGet>
__global__ void rma_bw_kernel(char* dst, const char* src_base, size_t nbytes, size_t chunk, int iters, size_t slices,
                              int peer, background bg, kernel_ctx ctx) {
  const size_t off = unit_index<S>() * chunk;
  const size_t n = off < nbytes ? (nbytes - off < chunk ? nbytes - off : chunk) : 0;
  background_start(bg);
  const uint64_t deadline = bg.stop != nullptr ? now_ns() + ctx.timeout_ns : 0;
  // The slice's offset, stepped without a division (a 64-bit % costs ~0.13 us per iteration).
  const size_t span = slices * nbytes;
  size_t shift = 0;
  for (int i = 0; i < iters; ++i) {
    if constexpr (is_block_v<S>) {
      if (bg.stop != nullptr && background_done(bg, deadline, ctx)) break;
    }
    if (n == 0) break;  // uniform over the scope instance
    const char* src = src_base + shift;
    shift = shift + nbytes >= span ? 0 : shift + nbytes;
    if constexpr (kGet) {
      Api::getmem_nbi(S{}, dst + off, src + off, n, peer);
    } else {
      Api::putmem_nbi(S{}, dst + off, src + off, n, peer);
    }
  }
  Api::quiet();
}

/// Baseline of the block put: rma_bw_kernel's loop at block scope with the put written out on raw
/// pointers, one 16-byte load and store per thread per step (int4, the shape of NVSHMEM's block copy:
/// no unrolling), then __syncthreads(); `peer_dst` is the peer's buffer as this process maps it
/// (Api::host_ptr). Run by both binaries on their own heaps ("raw_block" rows): the same code on
/// shoal's heap and on NVSHMEM's, so its two figures separate the heap from the put path.
__global__ void raw_block_put_kernel(char* peer_dst, const char* src_base, size_t nbytes, size_t chunk, int iters,
                                     size_t slices) {
  const size_t off = static_cast<size_t>(blockIdx.x) * chunk;
  const size_t n = off < nbytes ? (nbytes - off < chunk ? nbytes - off : chunk) : 0;
  const size_t span = slices * nbytes;
  size_t shift = 0;  // as in rma_bw_kernel
  for (int i = 0; i < iters; ++i) {
    if (n == 0) break;
    const char* src = src_base + shift + off;
    char* dst = peer_dst + off;
    shift = shift + nbytes >= span ? 0 : shift + nbytes;
    const size_t vecs = n / 16;  // off and both buffers are 16-byte aligned (grid::chunk)
    for (size_t v = threadIdx.x; v < vecs; v += blockDim.x)
      reinterpret_cast<int4*>(dst)[v] = reinterpret_cast<const int4*>(src)[v];
    for (size_t b = vecs * 16 + threadIdx.x; b < n; b += blockDim.x) dst[b] = src[b];
    __syncthreads();
  }
}

/// Baseline: the plain SM copy kernel, grid-stride int4 loads and stores (4 loads in flight per
/// thread), `iters` times over the whole message; dst or src is a raw peer pointer. Same start/stop
/// protocol as rma_bw_kernel.
__global__ void sm_copy_kernel(char* dst, const char* src_base, size_t nbytes, int iters, size_t slices, background bg,
                               kernel_ctx ctx) {
  constexpr int kUnroll = 4;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t vecs = nbytes / 16;
  auto* d = reinterpret_cast<int4*>(dst);
  background_start(bg);
  const uint64_t deadline = bg.stop != nullptr ? now_ns() + ctx.timeout_ns : 0;
  const size_t span = slices * nbytes;
  size_t shift = 0;  // as in rma_bw_kernel
  for (int it = 0; it < iters; ++it) {
    if (bg.stop != nullptr && background_done(bg, deadline, ctx)) break;
    const char* src = src_base + shift;
    shift = shift + nbytes >= span ? 0 : shift + nbytes;
    const auto* s = reinterpret_cast<const int4*>(src);
    size_t i = tid;
    for (; i + (kUnroll - 1) * stride < vecs; i += kUnroll * stride) {
      int4 r[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) r[u] = s[i + u * stride];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) d[i + u * stride] = r[u];
    }
    for (; i < vecs; i += stride) d[i] = s[i];
    for (size_t b = vecs * 16 + tid; b < nbytes; b += stride) dst[b] = src[b];
    asm volatile("" ::: "memory");  // every iteration copies again
  }
}

// --- latency: ping-pongs (both PEs run; the initiator is timed, the responder runs one kernel) ---

/// `count` rounds of p + wait_until on an int flag, sequence numbers first .. first+count-1.
/// Initiator: p(seq) to the peer, then wait for the reply seq; responder: the other way round.
template <class Api>
__global__ void p_ping_pong_kernel(int* flag, int first, int count, int peer, bool initiator) {
  for (int i = 0; i < count; ++i) {
    const int seq = first + i;
    if (initiator) {
      Api::int_p(flag, seq, peer);
      Api::int_wait_until_ge(flag, seq);
    } else {
      Api::int_wait_until_ge(flag, seq);
      Api::int_p(flag, seq, peer);
    }
  }
}

/// Baseline: the raw relaxed-flag ping-pong, volatile store to the peer's flag, volatile poll of ours.
__global__ void raw_flag_ping_pong_kernel(int* my_flag, int* peer_flag, int first, int count, bool initiator,
                                          kernel_ctx ctx) {
  volatile int* mine = my_flag;
  volatile int* theirs = peer_flag;
  for (int i = 0; i < count; ++i) {
    const int seq = first + i;
    if (initiator) {
      *theirs = seq;
      if (!spin_until_ge(mine, seq, ctx, 1)) return;
    } else {
      if (!spin_until_ge(mine, seq, ctx, 2)) return;
      *theirs = seq;
    }
  }
}

/// Block-scope put-with-signal ping-pong: nbytes of `src` into the peer's `buf`, signal SET to seq;
/// thread 0 waits for the peer's signal (signal_wait_until >= seq), then the block goes on. kAlt: the API's other
/// put-with-signal shape (Api::putmem_signal_block_alt, a SHOAL_BENCH_PROBE=1 row).
template <class Api, bool kAlt = false>
__global__ void put_signal_ping_pong_kernel(char* buf, const char* src, size_t nbytes, uint64_t* sig, uint64_t first,
                                            int count, int peer, bool initiator) {
  for (int i = 0; i < count; ++i) {
    const uint64_t seq = first + i;
    if (!initiator) {
      if (threadIdx.x == 0) Api::signal_wait_until_ge(sig, seq);
      __syncthreads();
    }
    if constexpr (kAlt) {
      Api::putmem_signal_block_alt(buf, src, nbytes, sig, seq, peer);
    } else {
      Api::putmem_signal_block(buf, src, nbytes, sig, seq, peer);
    }
    if (initiator) {
      if (threadIdx.x == 0) Api::signal_wait_until_ge(sig, seq);
      __syncthreads();
    }
  }
}

/// Block-uniform bounded wait of thread 0 for *sig >= seq. false: timed out (recorded).
__device__ __forceinline__ bool block_wait_ge(const uint64_t* sig, uint64_t seq, const kernel_ctx& ctx,
                                              unsigned int where) {
  __shared__ int s_ok;
  if (threadIdx.x == 0) s_ok = spin_until_ge(reinterpret_cast<const volatile uint64_t*>(sig), seq, ctx, where);
  __syncthreads();
  const bool ok = s_ok != 0;
  __syncthreads();
  return ok;
}

/// Baseline of put_signal_ping_pong on raw peer pointers: the block copies with int4 stores,
/// __syncthreads, thread 0 fences (system) and stores the signal with a volatile store; the waiting
/// side polls with volatile loads.
__global__ void raw_put_signal_ping_pong_kernel(char* peer_buf, const char* src, size_t nbytes, uint64_t* my_sig,
                                                uint64_t* peer_sig, uint64_t first, int count, bool initiator,
                                                kernel_ctx ctx) {
  const size_t vecs = nbytes / 16;
  auto* d = reinterpret_cast<int4*>(peer_buf);
  const auto* s = reinterpret_cast<const int4*>(src);
  for (int i = 0; i < count; ++i) {
    const uint64_t seq = first + i;
    if (!initiator && !block_wait_ge(my_sig, seq, ctx, 3)) return;
    for (size_t v = threadIdx.x; v < vecs; v += blockDim.x) d[v] = s[v];
    for (size_t b = vecs * 16 + threadIdx.x; b < nbytes; b += blockDim.x) peer_buf[b] = src[b];
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      *reinterpret_cast<volatile uint64_t*>(peer_sig) = seq;
    }
    if (initiator && !block_wait_ge(my_sig, seq, ctx, 4)) return;
  }
}

// --- latency: one PE (the other passive) ------------------------------------------------------

/// One thread: `iters` x (blocking putmem of nbytes to the peer, then quiet).
template <class Api>
__global__ void put_quiet_kernel(char* dst, const char* src, size_t nbytes, int iters, int peer) {
  for (int i = 0; i < iters; ++i) {
    Api::putmem(dst, src, nbytes, peer);
    Api::quiet();
  }
}

/// Baseline: one thread copies with int4 stores to a raw peer pointer, then __threadfence_system().
__global__ void raw_put_fence_kernel(char* peer_dst, const char* src, size_t nbytes, int iters) {
  const size_t vecs = nbytes / 16;
  for (int i = 0; i < iters; ++i) {
    for (size_t v = 0; v < vecs; ++v) reinterpret_cast<int4*>(peer_dst)[v] = reinterpret_cast<const int4*>(src)[v];
    for (size_t b = vecs * 16; b < nbytes; ++b) peer_dst[b] = src[b];
    __threadfence_system();
  }
}

/// atomic_latency's words: kAtomicWords uint64 words kAtomicWordStride bytes apart in one allocation, taken round
/// robin, so the figure is a mean over placements in the target GPU's L2 (one word's latency moved by up to 1.7x
/// with where the heap landed: sessions 14-17 of docs/results/gpu-1xh200/protocol/README.md).
inline constexpr int kAtomicWords = 64;
inline constexpr size_t kAtomicWordStride = size_t{64} << 10;
inline constexpr size_t kAtomicBytes = kAtomicWords * kAtomicWordStride;

/// How fetch_add_kernel and fetch_add_alt_kernel issue each fetch_add: the API, the raw atomicAdd_system on a peer
/// pointer, or a probe path of the API (SHOAL_BENCH_PROBE=1 rows): the session-24 address arithmetic
/// (Api::uint64_atomic_fetch_add_arith) or the run offset with no check (Api::uint64_atomic_fetch_add_nocheck).
enum class fetch_add_via { api, raw, arith, nocheck };

template <class Api, fetch_add_via kVia>
__device__ __forceinline__ uint64_t fetch_add_by(char* words, char* raw, size_t at, uint64_t add, int pe) {
  if constexpr (kVia == fetch_add_via::raw) {
    return atomicAdd_system(reinterpret_cast<unsigned long long*>(raw + at), static_cast<unsigned long long>(add));
  } else if constexpr (kVia == fetch_add_via::arith) {
    return Api::uint64_atomic_fetch_add_arith(reinterpret_cast<uint64_t*>(words + at), add, pe);
  } else if constexpr (kVia == fetch_add_via::nocheck) {
    return Api::uint64_atomic_fetch_add_nocheck(reinterpret_cast<uint64_t*>(words + at), add, pe);
  } else {
    return Api::uint64_atomic_fetch_add(reinterpret_cast<uint64_t*>(words + at), add, pe);
  }
}

/// One thread: `iters` dependent uint64 fetch_adds on the peer's words, word i % kAtomicWords at step i (each adds
/// 1; the next add depends on the value fetched, so they cannot overlap), through the API or (SHOAL_BENCH_PROBE=1:
/// the `probe-amo-arith` and `probe-amo-nocheck` rows) one of its probe paths. *sink keeps the result alive.
template <class Api, fetch_add_via kVia = fetch_add_via::api>
__global__ void fetch_add_kernel(char* words, int iters, int peer, uint64_t* sink) {
  uint64_t add = 1;
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) {
    const uint64_t old = fetch_add_by<Api, kVia>(words, nullptr, (i % kAtomicWords) * kAtomicWordStride, add, peer);
    acc += old;
    add = 1 + (old >> 63);  // 1 while the words stay below 2^63
  }
  *sink = acc;
}

/// fetch_add_kernel with the target alternating between `peer` (even steps) and `self` (odd steps), words of the
/// same offsets (SHOAL_BENCH_PROBE=1, the `probe-amo-alt` rows): a loop that cannot hoist a per-PE lookup, as a
/// kernel that spreads its AMOs over peers. The raw form adds on `raw_peer` / `raw_self` instead.
template <class Api, fetch_add_via kVia>
__global__ void fetch_add_alt_kernel(char* words, int iters, int peer, int self, char* raw_peer, char* raw_self,
                                     uint64_t* sink) {
  uint64_t add = 1;
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) {
    const bool even = (i & 1) == 0;
    const uint64_t old = fetch_add_by<Api, kVia>(words, even ? raw_peer : raw_self,
                                                 (i % kAtomicWords) * kAtomicWordStride, add, even ? peer : self);
    acc += old;
    add = 1 + (old >> 63);
  }
  *sink = acc;
}

/// Baseline: the same chain with atomicAdd_system on raw peer pointers.
__global__ void raw_fetch_add_kernel(char* peer_words, int iters, uint64_t* sink) {
  unsigned long long add = 1;
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) {
    auto* word = reinterpret_cast<unsigned long long*>(peer_words + (i % kAtomicWords) * kAtomicWordStride);
    const unsigned long long old = atomicAdd_system(word, add);
    acc += old;
    add = 1 + (old >> 63);
  }
  *sink = acc;
}

// --- barriers (every PE runs) ----------------------------------------------------------------

/// One thread: `count` device barrier_all calls.
template <class Api>
__global__ void barrier_all_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::barrier_all();
}

/// One thread: `count` barrier_all calls in the epoch protocol (Api::barrier_all_epochs).
template <class Api>
__global__ void barrier_all_epochs_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::barrier_all_epochs();
}

/// One thread: `count` barrier_all calls of the count protocol with relaxed polls (Api::barrier_all_relaxed_polls).
template <class Api>
__global__ void barrier_all_relaxed_polls_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::barrier_all_relaxed_polls();
}

/// One thread: clears this PE's device barrier words (Api::reset_barrier_words), between protocols.
template <class Api>
__global__ void reset_barrier_words_kernel() {
  Api::reset_barrier_words();
}

/// One block: `count` sync_all_block calls.
template <class Api>
__global__ void sync_all_block_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::sync_all_block();
}

/// Baseline for 2 PEs: a raw flag barrier. Thread 0 stores epoch to the peer's word (volatile) and
/// polls its own until the peer's epoch arrives; with more than one thread, __syncthreads around it.
/// kFenced: fence.acq_rel.sys before the store, the least a barrier_all needs to order this PE's
/// earlier writes to peers (the bound for any barrier that does: "raw-fenced" rows).
template <bool kFenced>
__global__ void raw_barrier_kernel(uint64_t* my_word, uint64_t* peer_word, uint64_t first, int count, kernel_ctx ctx) {
  for (int i = 0; i < count; ++i) {
    const uint64_t epoch = first + i;
    if (blockDim.x > 1) __syncthreads();
    if (kFenced && threadIdx.x == 0) ptx::fence_acq_rel_sys();
    if (threadIdx.x == 0) *reinterpret_cast<volatile uint64_t*>(peer_word) = epoch;
    if (blockDim.x > 1) {
      if (!block_wait_ge(my_word, epoch, ctx, 5)) return;
    } else if (!spin_until_ge(reinterpret_cast<const volatile uint64_t*>(my_word), epoch, ctx, 5)) {
      return;
    }
  }
}

/// SHOAL_BENCH_PROBE=1 rows of barrier_latency (2 PEs, one thread): raw-fenced plus one ingredient of shoal's
/// barrier per step, to find what its time over raw-fenced is made of. kStep 1: the polls are ld.acquire.sys (shoal's)
/// instead of volatile loads; 2: also the signal is red.relaxed.sys.add(1) to a count, awaited as count >= epoch;
/// 3: also the waiter consumes with red.relaxed.sys.add(-1) before its polls and waits for the word >= 0 as int64
/// (shoal's count protocol, on raw pointers); 4: also a call to a function that is not inlined, on a branch the
/// barrier never takes (shoal's barrier holds such calls: the timeout report, the cold lookups). Each row starts on
/// zeroed words; `first` must start at 1.
__device__ __noinline__ void probe_barrier_cold(kernel_ctx ctx, uint64_t seen) {
  printf("shoal-bench: probe barrier saw %llu\n", static_cast<unsigned long long>(seen));
  record_failure(ctx, kTimedOut, 7);
}
template <int kStep>
__global__ void probe_barrier_kernel(uint64_t* my_word, uint64_t* peer_word, uint64_t first, int count,
                                     kernel_ctx ctx) {
  for (int i = 0; i < count; ++i) {
    const uint64_t epoch = first + i;
    ptx::fence_acq_rel_sys();
    if constexpr (kStep >= 2) {
      ptx::red_add_relaxed_sys(peer_word, uint64_t{1});
    } else {
      *reinterpret_cast<volatile uint64_t*>(peer_word) = epoch;
    }
    if constexpr (kStep >= 3) ptx::red_add_relaxed_sys(my_word, ~uint64_t{0});
    if constexpr (kStep >= 4) {
      if (static_cast<int64_t>(epoch) < 0) probe_barrier_cold(ctx, epoch);
    }
    uint64_t deadline = 0;
    uint32_t polls = 0;
    for (;;) {
      const uint64_t seen =
          kStep >= 1 ? ptx::ld_acquire_sys(my_word) : *reinterpret_cast<const volatile uint64_t*>(my_word);
      if (kStep >= 3 ? static_cast<int64_t>(seen) >= 0 : seen >= epoch) break;
      if ((++polls & 255u) == 0) {
        const uint64_t t = now_ns();
        if (deadline == 0) {
          deadline = t + ctx.timeout_ns;
        } else if (t > deadline) {
          record_failure(ctx, kTimedOut, 6);
          return;
        }
      }
    }
  }
}

/// SHOAL_BENCH_PROBE=1 rows probe-lib* (Api::barrier_probe_lib, shoal only): one
/// thread, `count` barriers; the words start at zero and return to it (count protocol).
template <class Api, int kMode>
__global__ void probe_lib_barrier_kernel(uint64_t* mine, uint64_t* theirs, int peer, int count) {
  for (int i = 0; i < count; ++i) Api::template barrier_probe_lib<kMode>(mine, theirs, peer);
}

}  // namespace shoal::bench::dev
