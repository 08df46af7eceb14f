// coll::combine on the 16-bit floats (half = IEEE binary16, bfloat16): exact bit patterns of the
// results (rounding ties to even, subnormals, overflow to inf, NaN, min/max), every bit pattern
// through x * 1, and, where CUDA's headers are found, agreement with CUDA's own conversions
// (__float2half_rn / __float2bfloat16_rn, the rounding of the device's __hadd/__hmul) on many pairs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "coll/coll.hpp"
#include "shoal/error.hpp"

#if defined(SHOAL_HAVE_CUDA) && __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define SHOAL_TEST_CUDA_FP16 1
#else
#define SHOAL_TEST_CUDA_FP16 0
#endif

namespace {

using shoal::detail::scalar;
using shoal::detail::scalar_kind;
using shoal::detail::coll::combine;
using shoal::detail::coll::reduce_op;

constexpr scalar kHalf{scalar_kind::floating, 2};
constexpr scalar kBfloat{scalar_kind::bfloat, 2};

/// dst op src on one element of `type`, as bit patterns.
uint16_t one(scalar type, reduce_op op, uint16_t dst, uint16_t src) {
  combine(type, op, &dst, &src, 1);
  return dst;
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bfloat_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

TEST(CombineHalf, ExactSums) {
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x3c00, 0x4000), 0x4200);   // 1 + 2 = 3
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x3c00, 0xbc00), 0x0000);   // 1 + -1 = +0
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x8000, 0x8000), 0x8000);   // -0 + -0 = -0
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x4200, 0xc000), 0xc600);  // 3 * -2 = -6
}

TEST(CombineHalf, RoundsTiesToEven) {
  // Above 2048 the spacing is 2: 2048 + 1 = 2049 is a tie between 2048 (even) and 2050.
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x6800, 0x3c00), 0x6800);
  // 2050 + 1 = 2051: a tie between 2050 (odd significand) and 2052 (even).
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x6801, 0x3c00), 0x6802);
  // 2048 + 1.5 = 2049.5: above the tie, up to 2050.
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x6800, 0x3e00), 0x6801);
  // 1 + 2^-11 (half an ulp of 1): down to 1; (1 + 2^-10) + 2^-11: up to 1 + 2^-9.
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x3c00, 0x1000), 0x3c00);
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x3c01, 0x1000), 0x3c02);
}

TEST(CombineHalf, OverflowsToInf) {
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x7bff, 0x4800), 0x7bff);   // 65504 + 8 = 65512: down to 65504
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x7bff, 0x4c00), 0x7c00);   // 65504 + 16 = 65520 (tie, odd): inf
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0xfbff, 0xcc00), 0xfc00);   // -65520: -inf
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x5c00, 0x5c00), 0x7c00);  // 256 * 256 = 65536: inf
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x7c00, 0x3c00), 0x7c00);   // inf + 1
}

TEST(CombineHalf, Subnormals) {
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x0400, 0x3800), 0x0200);  // 2^-14 * 0.5 = 2^-15 (subnormal)
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x0001, 0x3800), 0x0000);  // 2^-25: tie between 0 (even) and 2^-24
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x8001, 0x3800), 0x8000);  // -2^-25: -0
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x0003, 0x3800), 0x0002);  // 1.5 * 2^-24: tie, to 2 (even)
  EXPECT_EQ(one(kHalf, reduce_op::prod_, 0x0001, 0x3a00), 0x0001);  // 0.75 * 2^-24: up to 2^-24
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x03ff, 0x0001), 0x0400);   // largest subnormal + 1 ulp: smallest normal
  EXPECT_EQ(one(kHalf, reduce_op::sum_, 0x0001, 0x0001), 0x0002);
}

TEST(CombineHalf, NaN) {
  EXPECT_TRUE(half_is_nan(one(kHalf, reduce_op::sum_, 0x7c00, 0xfc00)));   // inf + -inf
  EXPECT_TRUE(half_is_nan(one(kHalf, reduce_op::prod_, 0x7c00, 0x0000)));  // inf * 0
  EXPECT_TRUE(half_is_nan(one(kHalf, reduce_op::sum_, 0x7e00, 0x3c00)));
  EXPECT_TRUE(half_is_nan(one(kHalf, reduce_op::prod_, 0x3c00, 0x7d00)));  // a signaling NaN comes out a NaN
}

TEST(CombineHalf, MinMax) {
  EXPECT_EQ(one(kHalf, reduce_op::min_, 0x3c00, 0xc000), 0xc000);  // min(1, -2)
  EXPECT_EQ(one(kHalf, reduce_op::max_, 0x3c00, 0xc000), 0x3c00);
  EXPECT_EQ(one(kHalf, reduce_op::max_, 0x7bff, 0x7c00), 0x7c00);  // max(65504, inf)
  EXPECT_EQ(one(kHalf, reduce_op::min_, 0x0001, 0x8001), 0x8001);  // subnormals compare by value
  // As float min/max: a NaN from the source, or an equal value (-0 vs +0), leaves dest as it is.
  EXPECT_EQ(one(kHalf, reduce_op::min_, 0x3c00, 0x7e00), 0x3c00);
  EXPECT_EQ(one(kHalf, reduce_op::max_, 0x0000, 0x8000), 0x0000);
  EXPECT_EQ(one(kHalf, reduce_op::min_, 0x8000, 0x0000), 0x8000);
}

TEST(CombineBfloat16, ExactAndTies) {
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x3f80, 0x4000), 0x4040);   // 1 + 2 = 3
  EXPECT_EQ(one(kBfloat, reduce_op::prod_, 0x4040, 0xc000), 0xc0c0);  // 3 * -2 = -6
  // The ulp of 1 is 2^-7: 1 + 2^-8 is a tie, down to 1 (even); (1 + 2^-7) + 2^-8 up to 1 + 2^-6.
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x3f80, 0x3b80), 0x3f80);
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x3f81, 0x3b80), 0x3f82);
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x3f80, 0x3bc0), 0x3f81);  // 1 + 1.5 * 2^-8: above the tie
  // 256 + 1: a tie between 256 and 258 (spacing 2), down to 256.
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x4380, 0x3f80), 0x4380);
}

TEST(CombineBfloat16, OverflowSubnormalsNaN) {
  // Largest finite bfloat16 (0x7f7f) plus half its ulp (2^119) is a tie with an odd significand: inf.
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x7f7f, 0x7b00), 0x7f80);
  EXPECT_EQ(one(kBfloat, reduce_op::sum_, 0x7f7f, 0x7a80), 0x7f7f);   // a quarter ulp: stays
  EXPECT_EQ(one(kBfloat, reduce_op::prod_, 0x7f00, 0xc000), 0xff80);  // -2^128: float overflow, -inf
  EXPECT_EQ(one(kBfloat, reduce_op::prod_, 0x0001, 0x3f00), 0x0000);  // 2^-134: tie, to 0 (even)
  EXPECT_EQ(one(kBfloat, reduce_op::prod_, 0x0003, 0x3f00), 0x0002);  // 1.5 ulp: tie, to 2 (even)
  EXPECT_TRUE(bfloat_is_nan(one(kBfloat, reduce_op::sum_, 0x7f80, 0xff80)));
  EXPECT_TRUE(bfloat_is_nan(one(kBfloat, reduce_op::prod_, 0x7f81, 0x3f80)));  // signaling in, NaN out
  EXPECT_EQ(one(kBfloat, reduce_op::min_, 0x3f80, 0xc000), 0xc000);
  EXPECT_EQ(one(kBfloat, reduce_op::max_, 0x3f80, 0x7fc0), 0x3f80);  // NaN source: dest stays
}

// x * 1 is x for every non-NaN bit pattern (both conversions exact on representable values), and a
// vector of n elements is combined element by element.
TEST(Combine16, EveryBitPatternTimesOne) {
  for (scalar type : {kHalf, kBfloat}) {
    std::vector<uint16_t> d(65536), ones(65536, static_cast<uint16_t>(type == kHalf ? 0x3c00 : 0x3f80));
    for (uint32_t i = 0; i < 65536; ++i) d[i] = static_cast<uint16_t>(i);
    combine(type, reduce_op::prod_, d.data(), ones.data(), d.size());
    int bad = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      const bool nan = type == kHalf ? half_is_nan(static_cast<uint16_t>(i)) : bfloat_is_nan(static_cast<uint16_t>(i));
      const bool ok = nan ? (type == kHalf ? half_is_nan(d[i]) : bfloat_is_nan(d[i])) : d[i] == i;
      if (!ok && bad++ < 5)
        ADD_FAILURE() << (type == kHalf ? "half " : "bfloat16 ") << std::hex << i << " * 1 = " << d[i];
    }
  }
}

TEST(Combine16, BitwiseOpsAreRejected) {
  uint16_t d = 1, s = 1;
  for (reduce_op op : {reduce_op::and_, reduce_op::or_, reduce_op::xor_}) {
    EXPECT_THROW(combine(kHalf, op, &d, &s, 1), shoal::error);
    EXPECT_THROW(combine(kBfloat, op, &d, &s, 1), shoal::error);
  }
}

#if SHOAL_TEST_CUDA_FP16
// A reproducible stream of 16-bit patterns, biased toward the interesting exponents.
struct patterns {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  uint16_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint16_t>(state >> 48);
  }
};

uint16_t bits_of(__half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t bits_of(__nv_bfloat16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
__half half_of(uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half(r);
}
__nv_bfloat16 bfloat_of(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return __nv_bfloat16(r);
}

// Sums and products of 200k pairs: the same bits as rounding the float result with CUDA's conversion.
TEST(Combine16, MatchesCudaRounding) {
  patterns p;
  int bad = 0;
  for (int i = 0; i < 200000; ++i) {
    const uint16_t a = p.next(), b = p.next();
    for (reduce_op op : {reduce_op::sum_, reduce_op::prod_}) {
      const bool sum = op == reduce_op::sum_;
      {
        const float x = __half2float(half_of(a)), y = __half2float(half_of(b));
        const uint16_t want = bits_of(__float2half_rn(sum ? x + y : x * y));
        const uint16_t got = one(kHalf, op, a, b);
        if (half_is_nan(want) ? !half_is_nan(got) : got != want)
          if (bad++ < 5)
            ADD_FAILURE() << std::hex << "half " << a << (sum ? " + " : " * ") << b << " = " << got
                          << ", CUDA: " << want;
      }
      {
        const float x = __bfloat162float(bfloat_of(a)), y = __bfloat162float(bfloat_of(b));
        const uint16_t want = bits_of(__float2bfloat16_rn(sum ? x + y : x * y));
        const uint16_t got = one(kBfloat, op, a, b);
        if (bfloat_is_nan(want) ? !bfloat_is_nan(got) : got != want)
          if (bad++ < 5)
            ADD_FAILURE() << std::hex << "bfloat16 " << a << (sum ? " + " : " * ") << b << " = " << got
                          << ", CUDA: " << want;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}
#endif

}  // namespace
