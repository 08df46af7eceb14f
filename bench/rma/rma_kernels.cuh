// The kernels of put_bw, get_bw, put_bw_bidir, put_quiet_latency and p_ping_pong (bench/rma/rma.cuh): the
// measured loops, templates on the API adapter, and their raw baselines (plain SM copy, raw block put, raw flag
// ping-pong, raw put + fence), which use peer pointers only and are the same for every API.
// Defines kernels: included by exactly one translation unit of each binary.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include <type_traits>

#include "common/kernels.cuh"
#include "shoal/device/scope.cuh"

namespace shoal::bench::dev {

/// The scopes the bandwidth kernels run at (shoal's scope types; the NVSHMEM adapter maps each to
/// its nvshmem/nvshmemx name).
template <class S>
inline constexpr bool is_block_v = std::is_same_v<S, shoal::block_scope>;

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

// --- put_quiet_latency: one PE (the other passive) -------------------------------------------

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

// --- p_ping_pong (both PEs run; the initiator is timed, the responder runs one kernel) -----------

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

}  // namespace shoal::bench::dev
