// Helpers of the device atomics (<shoal/device/amo.cuh>). Not a public header.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda/atomic>

namespace shoal::detail {

template <class T>
using sys_atomic = cuda::atomic_ref<T, cuda::thread_scope_system>;

/// The unsigned integer red.* works on for integer T (same size).
template <class T>
using red_word = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <class T>
__device__ __forceinline__ void check_amo_type() {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shoal atomics work on 4- and 8-byte types");
}

}  // namespace shoal::detail
