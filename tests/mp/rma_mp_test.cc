// RMA on N PEs, data checked: typed put/get/p/g/_nbi/iput/iget for every OpenSHMEM standard RMA
// type, sized put8..put128 (and get/iput/iget/_nbi), putmem/getmem at odd sizes and offsets,
// all-to-all patterns, and strided transfers that must leave the gaps between elements untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }

// The typed family of one element type, as function pointers, so one test body serves all types.
template <class T>
struct typed_rma {
  const char* name;
  void (*put)(T*, const T*, size_t, int);
  void (*get)(T*, const T*, size_t, int);
  void (*put_nbi)(T*, const T*, size_t, int);
  void (*get_nbi)(T*, const T*, size_t, int);
  void (*p)(T*, T, int);
  T (*g)(const T*, int);
  void (*iput)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*iget)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
};

#define SHOAL_TEST_TYPED_RMA(T, NAME)                                                                                \
  typed_rma<T> {                                                                                                     \
#NAME, shoal_##NAME##_put, shoal_##NAME##_get, shoal_##NAME##_put_nbi, shoal_##NAME##_get_nbi, shoal_##NAME##_p, \
        shoal_##NAME##_g, shoal_##NAME##_iput, shoal_##NAME##_iget                                                   \
  }

// A value that differs per (pe, index, round) and survives the round trip through T exactly.
template <class T>
T value_of(int pe, size_t i, int round) {
  long v = 1 + pe * 37 + static_cast<long>(i) * 5 + round * 11;
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v) + static_cast<T>(0.25);
  } else {
    return static_cast<T>(v % 100 + 1);  // fits in signed char
  }
}

template <class T>
T sentinel() {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(-12345.5);
  } else {
    return static_cast<T>(-1);
  }
}

template <class T>
void check_typed(const typed_rma<T>& ops) {
  SCOPED_TRACE(ops.name);
  constexpr size_t kCount = 37;  // odd, not a multiple of any vector width
  auto* buf = static_cast<T*>(shoal_malloc(kCount * sizeof(T)));
  auto* scalar = static_cast<T*>(shoal_malloc(sizeof(T)));
  auto* strided = static_cast<T*>(shoal_malloc(3 * kCount * sizeof(T)));
  ASSERT_NE(buf, nullptr);
  ASSERT_NE(scalar, nullptr);
  ASSERT_NE(strided, nullptr);
  for (size_t i = 0; i < 3 * kCount; ++i) strided[i] = sentinel<T>();
  std::vector<T> src(kCount), got(kCount, sentinel<T>());
  for (size_t i = 0; i < kCount; ++i) src[i] = value_of<T>(me(), i, 0);
  shoal_barrier_all();

  // blocking put to the right, get back from the right (which holds my values)
  ops.put(buf, src.data(), kCount, right());
  shoal_barrier_all();
  for (size_t i = 0; i < kCount; ++i) EXPECT_EQ(buf[i], value_of<T>(left(), i, 0)) << "put, i=" << i;
  ops.get(got.data(), buf, kCount, right());
  EXPECT_EQ(got, src) << "get";
  shoal_barrier_all();

  // _nbi forms, completed by quiet
  for (size_t i = 0; i < kCount; ++i) src[i] = value_of<T>(me(), i, 1);
  ops.put_nbi(buf, src.data(), kCount, left());
  shoal_quiet();
  shoal_barrier_all();
  for (size_t i = 0; i < kCount; ++i) EXPECT_EQ(buf[i], value_of<T>(right(), i, 1)) << "put_nbi, i=" << i;
  std::fill(got.begin(), got.end(), sentinel<T>());
  ops.get_nbi(got.data(), buf, kCount, left());
  shoal_quiet();
  EXPECT_EQ(got, src) << "get_nbi";
  shoal_barrier_all();

  // p/g: each PE writes one element into its right neighbour's scalar, then reads both neighbours'.
  ops.p(scalar, value_of<T>(me(), 7, 2), right());
  shoal_barrier_all();
  EXPECT_EQ(*scalar, value_of<T>(left(), 7, 2)) << "p";
  EXPECT_EQ(ops.g(scalar, left()), value_of<T>((me() + 2 * npes() - 2) % npes(), 7, 2)) << "g";
  EXPECT_EQ(ops.g(scalar, right()), value_of<T>(me(), 7, 2)) << "g";
  shoal_barrier_all();

  // iput: 5 elements from every 2nd source slot to every 3rd destination slot; the rest untouched
  constexpr size_t kElems = 5;
  std::vector<T> sparse(2 * kElems, sentinel<T>());
  for (size_t i = 0; i < kElems; ++i) sparse[2 * i] = value_of<T>(me(), i, 3);
  ops.iput(strided, sparse.data(), 3, 2, kElems, right());
  shoal_barrier_all();
  for (size_t j = 0; j < 3 * kCount; ++j) {
    bool written = j % 3 == 0 && j / 3 < kElems;
    T want = written ? value_of<T>(left(), j / 3, 3) : sentinel<T>();
    EXPECT_EQ(strided[j], want) << "iput, slot " << j << (written ? " (written)" : " (gap)");
  }
  // iget: every 3rd element of the right PE's strided buffer into every 2nd local slot
  std::vector<T> gathered(2 * kElems + 1, sentinel<T>());
  ops.iget(gathered.data(), strided, 2, 3, kElems, right());
  for (size_t j = 0; j < gathered.size(); ++j) {
    bool written = j % 2 == 0 && j / 2 < kElems;
    T want = written ? value_of<T>(me(), j / 2, 3) : sentinel<T>();
    EXPECT_EQ(gathered[j], want) << "iget, slot " << j << (written ? " (written)" : " (gap)");
  }
  shoal_barrier_all();
  shoal_free(strided);
  shoal_free(scalar);
  shoal_free(buf);
}

TEST(Rma, TypedFloatingTypes) {
  check_typed(SHOAL_TEST_TYPED_RMA(float, float));
  check_typed(SHOAL_TEST_TYPED_RMA(double, double));
  check_typed(SHOAL_TEST_TYPED_RMA(long double, longdouble));
}

TEST(Rma, TypedCharAndStandardIntegers) {
  check_typed(SHOAL_TEST_TYPED_RMA(char, char));
  check_typed(SHOAL_TEST_TYPED_RMA(signed char, schar));
  check_typed(SHOAL_TEST_TYPED_RMA(short, short));
  check_typed(SHOAL_TEST_TYPED_RMA(int, int));
  check_typed(SHOAL_TEST_TYPED_RMA(long, long));
  check_typed(SHOAL_TEST_TYPED_RMA(long long, longlong));
  check_typed(SHOAL_TEST_TYPED_RMA(unsigned char, uchar));
  check_typed(SHOAL_TEST_TYPED_RMA(unsigned short, ushort));
  check_typed(SHOAL_TEST_TYPED_RMA(unsigned int, uint));
  check_typed(SHOAL_TEST_TYPED_RMA(unsigned long, ulong));
  check_typed(SHOAL_TEST_TYPED_RMA(unsigned long long, ulonglong));
}

TEST(Rma, TypedFixedWidthSizeAndPtrdiff) {
  check_typed(SHOAL_TEST_TYPED_RMA(int8_t, int8));
  check_typed(SHOAL_TEST_TYPED_RMA(int16_t, int16));
  check_typed(SHOAL_TEST_TYPED_RMA(int32_t, int32));
  check_typed(SHOAL_TEST_TYPED_RMA(int64_t, int64));
  check_typed(SHOAL_TEST_TYPED_RMA(uint8_t, uint8));
  check_typed(SHOAL_TEST_TYPED_RMA(uint16_t, uint16));
  check_typed(SHOAL_TEST_TYPED_RMA(uint32_t, uint32));
  check_typed(SHOAL_TEST_TYPED_RMA(uint64_t, uint64));
  check_typed(SHOAL_TEST_TYPED_RMA(size_t, size));
  check_typed(SHOAL_TEST_TYPED_RMA(ptrdiff_t, ptrdiff));
}

TEST(Rma, TypedFullRangeValuesRoundTrip) {
  // Extremes that a narrowing or sign-extending copy would damage.
  auto* buf = static_cast<uint64_t*>(shoal_malloc(8 * sizeof(uint64_t)));
  shoal_barrier_all();
  shoal_int64_p(reinterpret_cast<int64_t*>(buf), INT64_MIN, right());
  shoal_uint64_p(buf + 1, UINT64_MAX - me(), right());
  shoal_int8_p(reinterpret_cast<int8_t*>(buf + 2), INT8_MIN, right());
  shoal_uint16_p(reinterpret_cast<uint16_t*>(buf + 3), 0xBEEF, right());
  shoal_double_p(reinterpret_cast<double*>(buf + 4), -0.0, right());
  shoal_float_p(reinterpret_cast<float*>(buf + 5), 1e-38f, right());
  shoal_ptrdiff_p(reinterpret_cast<ptrdiff_t*>(buf + 6), PTRDIFF_MIN, right());
  shoal_size_p(reinterpret_cast<size_t*>(buf + 7), SIZE_MAX - 1, right());
  shoal_barrier_all();
  EXPECT_EQ(*reinterpret_cast<int64_t*>(buf), INT64_MIN);
  EXPECT_EQ(buf[1], UINT64_MAX - left());
  EXPECT_EQ(*reinterpret_cast<int8_t*>(buf + 2), INT8_MIN);
  EXPECT_EQ(*reinterpret_cast<uint16_t*>(buf + 3), 0xBEEF);
  EXPECT_TRUE(std::signbit(*reinterpret_cast<double*>(buf + 4)));
  EXPECT_EQ(*reinterpret_cast<float*>(buf + 5), 1e-38f);
  EXPECT_EQ(*reinterpret_cast<ptrdiff_t*>(buf + 6), PTRDIFF_MIN);
  EXPECT_EQ(*reinterpret_cast<size_t*>(buf + 7), SIZE_MAX - 1);
  EXPECT_EQ(shoal_uint64_g(buf + 1, right()), UINT64_MAX - me());
  shoal_barrier_all();
  shoal_free(buf);
}

// One sized family (putN/getN/_nbi/iputN/igetN): element of `bits` bits.
struct sized_rma {
  int bits;
  void (*put)(void*, const void*, size_t, int);
  void (*get)(void*, const void*, size_t, int);
  void (*put_nbi)(void*, const void*, size_t, int);
  void (*get_nbi)(void*, const void*, size_t, int);
  void (*iput)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*iget)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
};

TEST(Rma, SizedPutGetAndStrided) {
  const sized_rma families[] = {
      {8, shoal_put8, shoal_get8, shoal_put8_nbi, shoal_get8_nbi, shoal_iput8, shoal_iget8},
      {16, shoal_put16, shoal_get16, shoal_put16_nbi, shoal_get16_nbi, shoal_iput16, shoal_iget16},
      {32, shoal_put32, shoal_get32, shoal_put32_nbi, shoal_get32_nbi, shoal_iput32, shoal_iget32},
      {64, shoal_put64, shoal_get64, shoal_put64_nbi, shoal_get64_nbi, shoal_iput64, shoal_iget64},
      {128, shoal_put128, shoal_get128, shoal_put128_nbi, shoal_get128_nbi, shoal_iput128, shoal_iget128},
  };
  constexpr size_t kElems = 21;
  for (const auto& fam : families) {
    SCOPED_TRACE(testing::Message() << "put" << fam.bits);
    const size_t eb = fam.bits / 8;
    const size_t bytes = kElems * eb;
    auto* buf = static_cast<unsigned char*>(shoal_malloc(3 * bytes));
    ASSERT_NE(buf, nullptr);
    std::memset(buf, 0xEE, 3 * bytes);
    std::vector<unsigned char> src(bytes), got(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(me() * 13 + i * 3 + fam.bits);
    shoal_barrier_all();

    // contiguous: exactly kElems*eb bytes land, the byte after stays 0xEE
    fam.put(buf, src.data(), kElems, right());
    shoal_barrier_all();
    for (size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(buf[i], static_cast<unsigned char>(left() * 13 + i * 3 + fam.bits)) << "byte " << i;
    EXPECT_EQ(buf[bytes], 0xEE) << "put wrote past nelems";
    fam.get(got.data(), buf, kElems, right());
    EXPECT_EQ(got, src);
    shoal_barrier_all();

    // nbi: the other direction, completed by quiet
    fam.put_nbi(buf + bytes, src.data(), kElems, left());
    shoal_quiet();
    shoal_barrier_all();
    for (size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(buf[bytes + i], static_cast<unsigned char>(right() * 13 + i * 3 + fam.bits)) << "nbi byte " << i;
    std::fill(got.begin(), got.end(), 0);
    fam.get_nbi(got.data(), buf + bytes, kElems, left());
    shoal_quiet();
    EXPECT_EQ(got, src);
    shoal_barrier_all();

    // strided: 4 elements, destination stride 2 (elements), source stride 3, into the third part
    unsigned char* region = buf + 2 * bytes;
    fam.iput(region, src.data(), 2, 3, 4, right());
    shoal_barrier_all();
    for (size_t e = 0; e < kElems; ++e) {
      bool written = e % 2 == 0 && e / 2 < 4;
      for (size_t b = 0; b < eb; ++b) {
        unsigned char want =
            written ? static_cast<unsigned char>(left() * 13 + ((e / 2) * 3 * eb + b) * 3 + fam.bits) : 0xEE;
        ASSERT_EQ(region[e * eb + b], want) << "iput element " << e << " byte " << b;
      }
    }
    std::vector<unsigned char> sparse(8 * eb, 0x11);
    fam.iget(sparse.data(), region, 2, 2, 4, right());  // my own values, back into every 2nd slot
    for (size_t e = 0; e < 8; ++e) {
      for (size_t b = 0; b < eb; ++b) {
        unsigned char want =
            e % 2 == 0 ? static_cast<unsigned char>(me() * 13 + ((e / 2) * 3 * eb + b) * 3 + fam.bits) : 0x11;
        ASSERT_EQ(sparse[e * eb + b], want) << "iget element " << e << " byte " << b;
      }
    }
    shoal_barrier_all();
    shoal_free(buf);
  }
}

TEST(Rma, PutmemGetmemOddSizesAndOffsets) {
  const size_t sizes[] = {1, 3, 7, 64, 255, 4097, 40000, 70001, (1u << 20) + 3};
  for (size_t size : sizes) {
    SCOPED_TRACE(testing::Message() << "size " << size);
    auto* buf = static_cast<unsigned char*>(shoal_malloc(size + 2));
    ASSERT_NE(buf, nullptr);
    buf[0] = 0xA5;
    buf[size + 1] = 0x5A;
    std::vector<unsigned char> src(size);
    for (size_t i = 0; i < size; ++i) src[i] = static_cast<unsigned char>((i * 7 + me() * 29) ^ (i >> 8));
    shoal_barrier_all();
    shoal_putmem(buf + 1, src.data(), size, right());  // odd offset
    shoal_barrier_all();
    EXPECT_EQ(buf[0], 0xA5) << "byte before the destination changed";
    EXPECT_EQ(buf[size + 1], 0x5A) << "byte after the destination changed";
    size_t bad = 0;
    for (size_t i = 0; i < size; ++i) bad += buf[1 + i] != static_cast<unsigned char>((i * 7 + left() * 29) ^ (i >> 8));
    EXPECT_EQ(bad, 0u);
    std::vector<unsigned char> got(size + 1, 0xCC);
    shoal_getmem(got.data(), buf + 1, size, right());
    EXPECT_EQ(std::memcmp(got.data(), src.data(), size), 0);
    EXPECT_EQ(got[size], 0xCC) << "getmem wrote past num_bytes";
    std::fill(got.begin(), got.end(), 0xCC);
    shoal_getmem_nbi(got.data(), buf + 1, size, right());
    shoal_quiet();
    EXPECT_EQ(std::memcmp(got.data(), src.data(), size), 0);
    shoal_barrier_all();
    shoal_free(buf);
  }
}

TEST(Rma, AllToAllPutmemNbi) {
  // Every PE writes its own slot on every PE (itself included), then reads every PE's slot back.
  constexpr size_t kSlot = 1000;
  auto* buf = static_cast<unsigned char*>(shoal_calloc(npes(), kSlot));
  std::vector<unsigned char> src(kSlot);
  for (size_t i = 0; i < kSlot; ++i) src[i] = static_cast<unsigned char>(me() + 1 + i);
  shoal_barrier_all();
  for (int pe = 0; pe < npes(); ++pe) shoal_putmem_nbi(buf + me() * kSlot, src.data(), kSlot, pe);
  shoal_quiet();
  shoal_barrier_all();
  for (int from = 0; from < npes(); ++from)
    for (size_t i = 0; i < kSlot; ++i)
      ASSERT_EQ(buf[from * kSlot + i], static_cast<unsigned char>(from + 1 + i)) << "from PE " << from << " i=" << i;
  std::vector<unsigned char> got(kSlot);
  for (int pe = 0; pe < npes(); ++pe) {
    shoal_getmem(got.data(), buf + pe * kSlot, kSlot, (pe + 1) % npes());
    for (size_t i = 0; i < kSlot; ++i)
      ASSERT_EQ(got[i], static_cast<unsigned char>(pe + 1 + i)) << "slot of PE " << pe << " i=" << i;
  }
  shoal_barrier_all();
  shoal_free(buf);
}

TEST(Rma, ZeroElementsIsANoOp) {
  auto* buf = static_cast<int*>(shoal_malloc(4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) buf[i] = 100 + i;
  int src[4] = {1, 2, 3, 4};
  shoal_barrier_all();
  shoal_int_put(buf, src, 0, right());
  shoal_putmem(buf, src, 0, right());
  shoal_int_iput(buf, src, 1, 1, 0, right());
  shoal_barrier_all();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(buf[i], 100 + i);
  shoal_barrier_all();
  shoal_free(buf);
}

}  // namespace
