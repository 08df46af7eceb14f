// The kernels of atomic_latency (bench/amo/amo.cuh): dependent fetch_add chains through the API adapter, its probe
// paths (SHOAL_BENCH_PROBE=1) and the raw atomicAdd_system baseline on peer pointers.
// Defines kernels: included by exactly one translation unit of each binary.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "common/kernels.cuh"

namespace shoal::bench::dev {

/// atomic_latency's words: kAtomicWords uint64 words kAtomicWordStride bytes apart in one allocation, taken round
/// robin, so the figure is a mean over placements in the target GPU's L2 (one word's latency moved by up to 1.7x
/// with where the heap landed: docs/results/gpu-1xh200/protocol/README.md).
inline constexpr int kAtomicWords = 64;
inline constexpr size_t kAtomicWordStride = size_t{64} << 10;
inline constexpr size_t kAtomicBytes = kAtomicWords * kAtomicWordStride;

/// How fetch_add_kernel and fetch_add_alt_kernel issue each fetch_add: the API, the raw atomicAdd_system on a peer
/// pointer, or a probe path of the API (SHOAL_BENCH_PROBE=1 rows): the address arithmetic
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

}  // namespace shoal::bench::dev
