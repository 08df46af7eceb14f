// The data and the reference model of the collective GPU tests (coll_stream_gpu_test.cu,
// coll_facade_gpu_test.cu): each PE's source values (exact in every type, about one in 23 a +0 or -0
// so that min/max/sum expose the fold order bitwise), the fold in team order that the library must
// reproduce, and the bytes of broadcast / fcollect / alltoall. Host and device both use it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpu_env.hpp"

namespace shoal_test {

enum op_id : int { op_sum, op_prod, op_min, op_max, op_and, op_or, op_xor };
inline const char* op_name(int op) {
  static const char* names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  return names[op];
}

enum move_id : int { mv_broadcast, mv_fcollect, mv_alltoall };
inline const char* move_name(int k) {
  return k == mv_broadcast ? "broadcast" : (k == mv_fcollect ? "fcollect" : "alltoall");
}

// ---- data -------------------------------------------------------------------------------------

template <class T>
inline constexpr bool is_f16 = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class T>
__host__ __device__ inline float f16_to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return __bfloat162float(v);
  }
}
template <class T>
__host__ __device__ inline T f16_from_float(float f) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(f);
  } else {
    return __float2bfloat16_rn(f);
  }
}

__host__ __device__ inline uint32_t hash32(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t x = a * 0x8DA6B343u + b * 0xD8163841u + c * 0xCB1AB31Fu + 0x9E3779B9u;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

/// Element i of team PE `pe`'s source for op `op` with `salt`. Every value is exact in T (so host and
/// device agree on it); sums mix exponents so that rounding happens, products stay near 1, and about
/// one value in 23 is +0 or -0 (min/max/sum of +0 and -0 expose the fold order bitwise).
template <class T>
__host__ __device__ inline T value_of(int op, int pe, uint32_t salt, size_t i) {
  const uint32_t h =
      hash32(static_cast<uint32_t>(pe) * 0x10001u + static_cast<uint32_t>(op), salt, static_cast<uint32_t>(i));
  const uint32_t g = hash32(h, salt ^ 0xA511E9B3u, static_cast<uint32_t>(pe) + 0x3C6EF372u);
  const bool zero = op != op_prod && g % 23u == 0;
  const bool negative_zero = (g & 0x100u) != 0;
  if constexpr (is_f16<T>) {
    constexpr bool kHalf = std::is_same_v<T, __half>;
    float v;
    if (op == op_prod) {
      v = kHalf ? static_cast<float>(896u + h % 256u) / 1024.0f : static_cast<float>(112u + h % 32u) / 128.0f;
    } else if (zero) {
      v = negative_zero ? -0.0f : 0.0f;
    } else {  // k / 64 (half) or k / 16 (bfloat16) times 2^-4 .. 2^4: at most 11 or 8 significant bits
      const int k = kHalf ? static_cast<int>(h % 2047u) - 1023 : static_cast<int>(h % 511u) - 255;
      const float scale = static_cast<float>(1u << ((h >> 20) % 9u)) / 16.0f;
      v = static_cast<float>(k) / (kHalf ? 64.0f : 16.0f) * scale;
    }
    return f16_from_float<T>(v);
  } else if constexpr (std::is_same_v<T, float>) {
    if (op == op_prod) return 1.0f + static_cast<float>(static_cast<int>(h & 0xFFFFu) - 32768) * 0x1p-20f;
    if (zero) return negative_zero ? -0.0f : 0.0f;
    const float scale = static_cast<float>(1u << (g >> 24) % 21u) * 0x1p-30f;
    return static_cast<float>(static_cast<int32_t>(h) >> 8) * scale;  // 24 significant bits
  } else if constexpr (std::is_same_v<T, double>) {
    if (op == op_prod) return 1.0 + static_cast<double>(static_cast<int>(h & 0xFFFFFu) - 524288) * 0x1p-25;
    if (zero) return negative_zero ? -0.0 : 0.0;
    const int64_t m = static_cast<int64_t>((static_cast<uint64_t>(g) << 32) | h) >> 11;  // 53 significant bits
    const double scale = static_cast<double>(1u << (h >> 27)) * 0x1p-60;
    return static_cast<double>(m) * scale;
  } else {
    return static_cast<T>((static_cast<uint64_t>(g) << 32) | h);
  }
}

/// The fold step, written independently of the library: integers wrap (computed unsigned, at least
/// 32 bits wide), 16-bit floats compute in float and round to nearest even, min is (b < a ? b : a) and
/// max (a < b ? b : a), as the library documents.
template <class T>
__host__ __device__ inline T ref_apply(int op, T a, T b) {
  if constexpr (is_f16<T>) {
    const float x = f16_to_float(a), y = f16_to_float(b);
    switch (op) {
      case op_sum:
        return f16_from_float<T>(x + y);
      case op_prod:
        return f16_from_float<T>(x * y);
      case op_min:
        return f16_from_float<T>(y < x ? y : x);
      default:
        return f16_from_float<T>(x < y ? y : x);
    }
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    switch (op) {
      case op_sum:
        return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) + static_cast<W>(static_cast<U>(b))));
      case op_prod:
        return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
      case op_min:
        return b < a ? b : a;
      case op_max:
        return a < b ? b : a;
      case op_and:
        return static_cast<T>(a & b);
      case op_or:
        return static_cast<T>(a | b);
      default:
        return static_cast<T>(a ^ b);
    }
  } else {
    switch (op) {
      case op_sum:
        return a + b;
      case op_prod:
        return a * b;
      case op_min:
        return b < a ? b : a;
      default:
        return a < b ? b : a;
    }
  }
}

/// Element i of the reduced vector on team PE `me` (reducescatter: of its block) folded over team PEs
/// 0 .. n-1 in order.
template <class T>
__host__ __device__ inline T expected_of(int op, bool scatter, int me, int n, uint32_t salt, size_t nreduce, size_t i) {
  const size_t idx = scatter ? static_cast<size_t>(me) * nreduce + i : i;
  T acc = value_of<T>(op, 0, salt, idx);
  for (int r = 1; r < n; ++r) acc = ref_apply<T>(op, acc, value_of<T>(op, r, salt, idx));
  return acc;
}

template <class T>
__host__ __device__ inline unsigned long long bits_of(T v) {
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}

constexpr int kAnyPe = 0xFFFF;  // "to" of bytes that go to every member

/// Byte j of what team PE `from` sends team PE `to` (kAnyPe: every member): never the poison byte.
__host__ __device__ inline uint8_t move_byte(int from, int to, uint32_t salt, size_t j) {
  const uint8_t b = static_cast<uint8_t>(hash32(static_cast<uint32_t>(from) * 0x10001u + static_cast<uint32_t>(to),
                                                salt ^ 0x5851F42Du, static_cast<uint32_t>(j)) >>
                                         7);
  return b == kPoison ? static_cast<uint8_t>(b + 1) : b;
}
__host__ __device__ inline size_t move_src_bytes(int kind, size_t nb, int n) {
  return kind == mv_alltoall ? nb * static_cast<size_t>(n) : nb;
}
__host__ __device__ inline size_t move_dst_bytes(int kind, size_t nb, int n) {
  return kind == mv_broadcast ? nb : nb * static_cast<size_t>(n);
}
/// Byte i of dest on team PE `me` after a move of nb bytes per PE.
__host__ __device__ inline uint8_t move_expected(int kind, int me, int root, size_t nb, uint32_t salt, size_t i) {
  if (kind == mv_broadcast) return move_byte(root, kAnyPe, salt, i);
  return move_byte(static_cast<int>(i / nb), kind == mv_alltoall ? me : kAnyPe, salt, i % nb);
}
__host__ __device__ inline uint8_t move_source_byte(int kind, int me, size_t nb, uint32_t salt, size_t i) {
  return kind == mv_alltoall ? move_byte(me, static_cast<int>(i / nb), salt, i % nb) : move_byte(me, kAnyPe, salt, i);
}

}  // namespace shoal_test
