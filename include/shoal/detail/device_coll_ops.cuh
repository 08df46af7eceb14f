// The reduction operators of the device collectives (shoal::device::sum_op ... xor_op are these,
// see <shoal/device/coll.cuh>) and the element types they take. Not a public header.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace shoal::detail {

template <class T>
inline constexpr bool is_float16_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
/// The element types the reductions take: integers (not bool), float, double, half, bfloat16.
template <class T>
inline constexpr bool is_reduce_type_v =
    (std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 8) || is_float16_v<T>;

/// f(a, b) for 16-bit floats: computed in float, rounded back to nearest-even.
template <class T, class F>
__device__ __forceinline__ T via_float(T a, T b, F f) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(f(__half2float(a), __half2float(b)));
  } else {
    return __float2bfloat16_rn(f(__bfloat162float(a), __bfloat162float(b)));
  }
}

}  // namespace shoal::detail

namespace shoal::detail {

// --- reduction operators (the Op of reduce*) ----------------------------------------------------

/// a + b (integers wrap: computed unsigned).
struct sum_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (is_float16_v<T>) {
      return via_float(a, b, [](float x, float y) { return x + y; });
    } else if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};
/// a * b (integers wrap: computed unsigned).
struct prod_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (is_float16_v<T>) {
      return via_float(a, b, [](float x, float y) { return x * y; });
    } else if constexpr (std::is_integral_v<T>) {
      // Unsigned, and at least as wide as unsigned int (a 16-bit product would overflow int).
      using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};
/// The smaller of a and b (b < a ? b : a).
struct min_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (is_float16_v<T>) {
      return via_float(a, b, [](float x, float y) { return y < x ? y : x; });
    } else {
      return b < a ? b : a;
    }
  }
};
/// The larger of a and b (a < b ? b : a).
struct max_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (is_float16_v<T>) {
      return via_float(a, b, [](float x, float y) { return x < y ? y : x; });
    } else {
      return a < b ? b : a;
    }
  }
};
/// maxloc on (value, index) pairs (x: the value, y: its index; CUDA's double2, NVSHMEM's maxloc): the pair with the
/// larger value, on equal values the smaller index. A total order on the pairs (NaN values aside), so the result does
/// not depend on the order of the members.
struct maxloc_op {
  static __device__ __forceinline__ double2 apply(double2 a, double2 b) {
    return (b.x > a.x || (b.x == a.x && b.y < a.y)) ? b : a;
  }
};
/// Bitwise and (integers only).
struct and_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    static_assert(std::is_integral_v<T>, "and_op reduces integer types only");
    return static_cast<T>(a & b);
  }
};
/// Bitwise or (integers only).
struct or_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    static_assert(std::is_integral_v<T>, "or_op reduces integer types only");
    return static_cast<T>(a | b);
  }
};
/// Bitwise xor (integers only).
struct xor_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    static_assert(std::is_integral_v<T>, "xor_op reduces integer types only");
    return static_cast<T>(a ^ b);
  }
};

}  // namespace shoal::detail
