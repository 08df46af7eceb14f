// The check of shoal-bench-moe (bench/study/moe_plain.cu): every row a PE received against the row its origin must
// have sent, and every token routed to the PE received exactly once. The receiver recomputes every PE's routing
// (the seeds are known: moe_plain_kernels.cuh), so the check needs no data from the senders beyond what a dispatch
// delivers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "moe_plain_kernels.cuh"

namespace shoal::bench::moe {

/// What the check found (device memory, zeroed before each check; first_wrong_slot starts at UINT64_MAX).
struct check_counts {
  uint32_t wrong_rows;   ///< slots whose row differs from their origin's row
  uint32_t bad_origin;   ///< slots whose origin is out of range or a token not routed to this PE
  uint32_t duplicates;   ///< tokens received more than once
  uint32_t missing;      ///< tokens routed to this PE and not received
  uint64_t first_wrong;  ///< the lowest slot with a wrong row or origin
};

/// The CPU-orchestrated form's layout, which its receiver knows without being told: the rows of PE 0 first, then
/// PE 1's, ..., each PE's in token order. origin[k] = pe << 32 | token of slot k; *num_rows = the slots. One block.
__global__ void __launch_bounds__(kScanThreads)
    expected_layout_kernel(const uint64_t* masks, int num_pes, uint32_t num_tokens, int me, uint64_t* origin,
                           uint32_t* num_rows) {
  const uint32_t n = block_enumerate(
      static_cast<size_t>(num_pes) * num_tokens, [&](size_t i) { return (masks[i] >> me & 1u) != 0; },
      [&](size_t i, uint32_t k) { origin[k] = (i / num_tokens) << 32 | (i % num_tokens); });
  if (threadIdx.x == 0) *num_rows = n;
}

/// One warp per slot k < num_rows: origin[k] names a token of some PE routed to this PE, received once (seen), and
/// the slot's row equals that token's row element for element.
__global__ void __launch_bounds__(kElementThreads)
    check_rows_kernel(const uint16_t* recv_rows, const uint64_t* origin, uint32_t num_rows, uint32_t hidden,
                      const uint64_t* masks, int num_pes, uint32_t num_tokens, int me, uint32_t* seen,
                      check_counts* out) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t warps = gridDim.x * (blockDim.x / 32);
  for (uint32_t k = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; k < num_rows; k += warps) {
    const uint64_t src = origin[k];
    const uint64_t pe = src >> 32;
    const auto token = static_cast<uint32_t>(src);
    const bool valid =
        pe < static_cast<uint64_t>(num_pes) && token < num_tokens && (masks[pe * num_tokens + token] >> me & 1u);
    bool wrong = !valid;
    if (valid) {
      for (uint32_t h = lane; h < hidden; h += 32)
        wrong |= recv_rows[size_t{k} * hidden + h] != row_value(static_cast<int>(pe), token, h);
      wrong = __any_sync(0xffffffffu, wrong);
    }
    if (lane != 0) continue;
    if (!valid) {
      atomicAdd(&out->bad_origin, 1u);
    } else {
      if (atomicAdd(&seen[pe * num_tokens + token], 1u) != 0) atomicAdd(&out->duplicates, 1u);
      if (wrong) atomicAdd(&out->wrong_rows, 1u);
    }
    if (wrong) atomicMin(reinterpret_cast<unsigned long long*>(&out->first_wrong), static_cast<unsigned long long>(k));
  }
}

/// Every (pe, token) routed to this PE was seen.
__global__ void __launch_bounds__(kElementThreads)
    check_coverage_kernel(const uint64_t* masks, const uint32_t* seen, int num_pes, uint32_t num_tokens, int me,
                          check_counts* out) {
  const size_t total = static_cast<size_t>(num_pes) * num_tokens;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x)
    if ((masks[i] >> me & 1u) && seen[i] == 0) atomicAdd(&out->missing, 1u);
}

}  // namespace shoal::bench::moe
