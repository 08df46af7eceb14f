// What every kernel of the device-initiated benchmarks shares, in shoal-bench (shoal's header-only device API, no
// -rdc) and shoal-bench-nvshmem (NVSHMEM, -rdc): the status word a bounded wait reports into, the kernels' context,
// the bounded spin, the data pattern (fill, clear, verify), the delay ahead of a timed region, and one-word reads,
// stores and waits. The measured kernels live with their family (bench/rma/, bench/amo/, bench/sync/): each is a
// template on an API adapter `Api` (bench/common/shoal_api.cuh, bench/nvshmem/nvshmem_api.cuh) with static
// __device__ functions named after the NVSHMEM calls they stand for.
//
// Defines kernels: included by exactly one translation unit of each binary.
//
// Every spin of the benchmarks is bounded (kernel_ctx::timeout_ns, checked on %globaltimer): a stuck wait
// records a failure in the PE's status word and leaves the kernel instead of hanging the job.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace shoal::bench::dev {

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

}  // namespace shoal::bench::dev
