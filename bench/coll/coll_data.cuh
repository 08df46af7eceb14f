// The data side of the collective benchmarks, shared by shoal-bench (coll_bench.cu) and
// shoal-bench-nvshmem (nvshmem_coll_bench.cu) so that both move and check the same bytes: what each
// PE's source holds, what its dest must hold afterwards, a point's sizes as nccl-tests counts them,
// and nccl-tests' busBW factor. Included by one translation unit of each binary (it defines kernels).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace shoal::bench::coll_data {

/// The data a collective moves (barriers move none).
enum class kind : int { allreduce, broadcast, fcollect, alltoall };

/// nccl-tests' busBW factor: algBW x 2(n-1)/n (allreduce), x 1 (broadcast), x (n-1)/n (the others).
inline double bus_factor(kind k, int n) {
  switch (k) {
    case kind::allreduce:
      return 2.0 * (n - 1) / n;
    case kind::broadcast:
      return 1.0;
    case kind::fcollect:
    case kind::alltoall:
      return static_cast<double>(n - 1) / n;
  }
  return 0;
}

/// One point: `bytes` (nccl-tests' size: the whole buffer for allreduce/broadcast, the gathered
/// output for fcollect, one PE's send buffer for alltoall), the block each PE contributes or
/// receives (`per_pe`), and the bytes of source and dest in use; all multiples of 4.
struct shape {
  size_t bytes = 0;
  size_t per_pe = 0;
  size_t src_bytes = 0;
  size_t dst_bytes = 0;
};

inline shape shape_of(kind k, size_t size, int n) {
  shape s;
  if (k == kind::fcollect || k == kind::alltoall) {
    s.per_pe = size / n / 4 * 4;
    s.bytes = s.per_pe * n;
    s.src_bytes = k == kind::fcollect ? s.per_pe : s.bytes;
  } else {
    s.bytes = size / 4 * 4;
    s.per_pe = s.bytes;
    s.src_bytes = s.bytes;
  }
  s.dst_bytes = s.bytes;
  return s;
}

/// The data a benchmark's collective `c` moves: Coll is the benchmark's enum, with enumerators
/// broadcast, fcollect, alltoall, team_barrier and barrier; its other values are allreduces.
template <class Coll>
kind data_of(Coll c) {
  if (c == Coll::broadcast) return kind::broadcast;
  if (c == Coll::fcollect) return kind::fcollect;
  if (c == Coll::alltoall) return kind::alltoall;
  return kind::allreduce;
}
template <class Coll>
bool moves_data(Coll c) {
  return c != Coll::team_barrier && c != Coll::barrier;
}
template <class Coll>
double bus_factor_of(Coll c, int n) {
  return moves_data(c) ? bus_factor(data_of(c), n) : 0;
}
template <class Coll>
shape shape_of_coll(Coll c, size_t size, int n) {
  return shape_of(data_of(c), size, n);
}

/// A never-zero word of the pattern `seed` (a cleared dest never passes for data).
__device__ __forceinline__ uint32_t pat(uint32_t seed, uint64_t i) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ (seed * 0x9E3779B9u + static_cast<uint32_t>(i >> 32));
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  return x | 0x01010101u;
}

/// Word g of PE `me`'s source (allreduce: float bits of small integers, so every sum is exact;
/// block_words: words of one PE's block).
__device__ __forceinline__ uint32_t source_word(kind k, uint64_t g, uint64_t block_words, int me, int n) {
  switch (k) {
    case kind::allreduce:
      return __float_as_uint(static_cast<float>((g & 1023) + me));
    case kind::broadcast:  // every PE's source differs: data from the wrong root fails the check
      return pat(0x10000u + me, g);
    case kind::fcollect:
      return pat(2 + me, g);
    case kind::alltoall:
      return pat(2 + me * n + static_cast<uint32_t>(g / block_words), g % block_words);
  }
  return 0;
}

/// Word g of PE q's dest once the collective is done (broadcast: root 0).
__device__ __forceinline__ uint32_t dest_word(kind k, uint64_t g, uint64_t block_words, int q, int n) {
  switch (k) {
    case kind::allreduce:
      return __float_as_uint(static_cast<float>(n * (g & 1023) + n * (n - 1) / 2));
    case kind::broadcast:
      return pat(0x10000u, g);
    case kind::fcollect:
      return pat(2 + static_cast<uint32_t>(g / block_words), g % block_words);
    case kind::alltoall:
      return pat(2 + static_cast<uint32_t>(g / block_words) * n + q, g % block_words);
  }
  return 0;
}

__global__ void fill_source_kernel(kind k, uint32_t* src, size_t words, size_t block_words, int me, int n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t g = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < words; g += stride)
    src[g] = source_word(k, g, block_words, me, n);
}

/// Adds to *bad the number of words of PE q's dest (possibly a peer pointer) that differ from dest_word.
__global__ void count_bad_kernel(kind k, const uint32_t* dst, size_t words, size_t block_words, int q, int n,
                                 unsigned long long* bad) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (size_t g = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < words; g += stride)
    mine += dst[g] != dest_word(k, g, block_words, q, n);
  if (mine != 0) atomicAdd(bad, mine);
}

/// Copies `words` words from `src` (possibly a peer's memory) to `dst` (this GPU).
__global__ void copy_words_kernel(uint32_t* dst, const uint32_t* src, int words) {
  for (int i = threadIdx.x; i < words; i += blockDim.x) dst[i] = src[i];
}

/// Keeps the GPU busy for `ns` (enqueued ahead of a timed region, so the host's enqueue stays out).
__global__ void delay_kernel(uint64_t ns) {
  uint64_t t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (uint64_t t = t0; t < t0 + ns;) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}

}  // namespace shoal::bench::coll_data
