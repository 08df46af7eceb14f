// The kernels of quiet_after_k, fence_cost and signal_vs_flag (bench/order/order.cuh): one thread issues, the target
// is passive. Templated on the API adapter (bench/common/shoal_api.cuh, bench/nvshmem/nvshmem_api.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "shoal/device/scope.cuh"

namespace shoal::bench::dev {

/// `iters` x (k non-blocking puts of nbytes each, to consecutive slots, then one quiet).
template <class Api>
__global__ void quiet_after_k_kernel(char* dst, const char* src, size_t nbytes, int k, int iters, int peer) {
  for (int i = 0; i < iters; ++i) {
    for (int j = 0; j < k; ++j) {
      const size_t off = static_cast<size_t>(j) * nbytes;
      Api::putmem_nbi(shoal::thread_scope{}, dst + off, src + off, nbytes, peer);
    }
    Api::quiet();
  }
}

/// Baseline: the same k copies with int4 stores to a raw peer pointer, then one __threadfence_system().
__global__ void raw_k_then_fence_kernel(char* peer_dst, const char* src, size_t nbytes, int k, int iters) {
  const size_t total = static_cast<size_t>(k) * nbytes;
  for (int i = 0; i < iters; ++i) {
    for (int j = 0; j < k; ++j) {
      const size_t off = static_cast<size_t>(j) * nbytes;
      const size_t vecs = nbytes / 16;
      if (off % 16 == 0) {
        for (size_t v = 0; v < vecs; ++v)
          reinterpret_cast<int4*>(peer_dst + off)[v] = reinterpret_cast<const int4*>(src + off)[v];
        for (size_t b = vecs * 16; b < nbytes; ++b) peer_dst[off + b] = src[off + b];
      } else {
        for (size_t b = 0; b < nbytes; ++b) peer_dst[off + b] = src[off + b];
      }
    }
    __threadfence_system();
    asm volatile("" ::"l"(total) : "memory");  // every iteration copies again
  }
}

/// `iters` x (a non-blocking put of nbytes, then a fence when kFence), one quiet at the end.
template <class Api, bool kFence>
__global__ void put_fence_kernel(char* dst, const char* src, size_t nbytes, int iters, int peer) {
  for (int i = 0; i < iters; ++i) {
    Api::putmem_nbi(shoal::thread_scope{}, dst, src, nbytes, peer);
    if constexpr (kFence) Api::fence();
  }
  Api::quiet();
}

/// `iters` x (kSignal: put-with-signal, the signal set to first + i; else: put, fence, p of the flag), one quiet at
/// the end: the two ways of telling the target its data is there.
template <class Api, bool kSignal>
__global__ void signal_or_flag_kernel(char* dst, const char* src, size_t nbytes, uint64_t* word, uint64_t first,
                                      int iters, int peer) {
  for (int i = 0; i < iters; ++i) {
    if constexpr (kSignal) {
      Api::putmem_signal_nbi(dst, src, nbytes, word, first + static_cast<uint64_t>(i), peer);
    } else {
      Api::putmem_nbi(shoal::thread_scope{}, dst, src, nbytes, peer);
      Api::fence();
      Api::uint64_p(word, first + static_cast<uint64_t>(i), peer);
    }
  }
  Api::quiet();
}

}  // namespace shoal::bench::dev
