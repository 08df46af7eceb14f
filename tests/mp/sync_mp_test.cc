// Signals and point-to-point synchronization on N PEs, data checked: put-with-signal (typed,
// sized, mem; SET and ADD; blocking and _nbi), shoalx_signal_op, shoal_signal_fetch,
// shoal_signal_wait_until, wait_until/test with every comparison and the _all/_any/_some and
// _vector forms with status masks, on every wait type; fence/quiet ordering; barrier_all and
// sync_all repeated many times.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }

// ---------------------------------------------------------------------------------------------
// put-with-signal

template <class T>
struct typed_put_signal {
  const char* name;
  void (*blocking)(T*, const T*, size_t, uint64_t*, uint64_t, int, int);
  void (*nbi)(T*, const T*, size_t, uint64_t*, uint64_t, int, int);
};
#define SHOAL_TEST_PUT_SIGNAL(T, N) \
  typed_put_signal<T> { #N, shoal_##N##_put_signal, shoal_##N##_put_signal_nbi }

// Every PE sends kCount elements to each PE's slot for it (slot = sender), once with SET (value
// round) to a per-sender signal word and once with ADD 1 to a shared counter; every PE waits for
// all and checks all.
template <class T>
void check_put_signal(const typed_put_signal<T>& ops) {
  SCOPED_TRACE(ops.name);
  const int n = npes();
  constexpr size_t kCount = 19;
  auto* data = static_cast<T*>(shoal_calloc(size_t(n) * kCount * 2, sizeof(T)));
  auto* sig_set = static_cast<uint64_t*>(shoal_calloc(n, sizeof(uint64_t)));
  auto* sig_add = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(data, nullptr);
  std::vector<T> src(kCount);
  for (size_t i = 0; i < kCount; ++i) src[i] = static_cast<T>(me() * 3 + i + 1);
  shoal_barrier_all();
  for (int k = 0; k < n; ++k) {
    int pe = (me() + k) % n;
    ops.blocking(data + me() * kCount, src.data(), kCount, &sig_set[me()], 40 + me(), SHOAL_SIGNAL_SET, pe);
    ops.nbi(data + (n + me()) * kCount, src.data(), kCount, sig_add, 1, SHOAL_SIGNAL_ADD, pe);
  }
  shoal_quiet();
  EXPECT_EQ(shoal_signal_wait_until(sig_add, SHOAL_CMP_EQ, uint64_t(n)), uint64_t(n));
  for (int from = 0; from < n; ++from) {
    EXPECT_EQ(shoal_signal_wait_until(&sig_set[from], SHOAL_CMP_EQ, 40 + from), uint64_t(40 + from));
    for (size_t i = 0; i < kCount; ++i) {
      EXPECT_EQ(data[from * kCount + i], static_cast<T>(from * 3 + i + 1)) << "SET data from PE " << from;
      EXPECT_EQ(data[(n + from) * kCount + i], static_cast<T>(from * 3 + i + 1)) << "ADD data from PE " << from;
    }
  }
  shoal_barrier_all();
  shoal_free(sig_add);
  shoal_free(sig_set);
  shoal_free(data);
}

TEST(Signal, TypedPutSignalSetAndAddBlockingAndNbi) {
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(float, float));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(double, double));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(long double, longdouble));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(char, char));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(signed char, schar));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(short, short));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(int, int));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(long, long));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(long long, longlong));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(unsigned char, uchar));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(unsigned short, ushort));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(unsigned int, uint));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(unsigned long, ulong));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(unsigned long long, ulonglong));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(int8_t, int8));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(int16_t, int16));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(int32_t, int32));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(int64_t, int64));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(uint8_t, uint8));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(uint16_t, uint16));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(uint32_t, uint32));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(uint64_t, uint64));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(size_t, size));
  check_put_signal(SHOAL_TEST_PUT_SIGNAL(ptrdiff_t, ptrdiff));
}

struct sized_put_signal {
  size_t elem_bytes;
  void (*blocking)(void*, const void*, size_t, uint64_t*, uint64_t, int, int);
  void (*nbi)(void*, const void*, size_t, uint64_t*, uint64_t, int, int);
};

TEST(Signal, SizedAndMemPutSignal) {
  const sized_put_signal families[] = {
      {1, shoal_put8_signal, shoal_put8_signal_nbi},      {2, shoal_put16_signal, shoal_put16_signal_nbi},
      {4, shoal_put32_signal, shoal_put32_signal_nbi},    {8, shoal_put64_signal, shoal_put64_signal_nbi},
      {16, shoal_put128_signal, shoal_put128_signal_nbi}, {1, shoal_putmem_signal, shoal_putmem_signal_nbi},
  };
  constexpr size_t kElems = 13;
  int round = 0;
  for (const auto& fam : families) {
    ++round;
    SCOPED_TRACE(testing::Message() << "family " << round << " (" << fam.elem_bytes << "-byte elements)");
    const size_t bytes = kElems * fam.elem_bytes;
    auto* buf = static_cast<unsigned char*>(shoal_malloc(2 * bytes + 1));
    auto* sig = static_cast<uint64_t*>(shoal_calloc(2, sizeof(uint64_t)));
    std::memset(buf, 0xEE, 2 * bytes + 1);
    std::vector<unsigned char> src(bytes);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(me() + 5 * i + round);
    shoal_barrier_all();
    fam.blocking(buf, src.data(), kElems, &sig[0], 7, SHOAL_SIGNAL_SET, right());
    fam.nbi(buf + bytes, src.data(), kElems, &sig[1], 3, SHOAL_SIGNAL_ADD, right());
    shoal_quiet();
    EXPECT_EQ(shoal_signal_wait_until(&sig[0], SHOAL_CMP_EQ, 7), 7u);
    EXPECT_EQ(shoal_signal_wait_until(&sig[1], SHOAL_CMP_GE, 3), 3u);
    for (size_t i = 0; i < 2 * bytes; ++i)
      ASSERT_EQ(buf[i], static_cast<unsigned char>(left() + 5 * (i % bytes) + round)) << "byte " << i;
    EXPECT_EQ(buf[2 * bytes], 0xEE) << "put_signal wrote past nelems";
    shoal_barrier_all();
    shoal_free(sig);
    shoal_free(buf);
  }
}

TEST(Signal, SignalOpSetAddAndFetch) {
  const int n = npes();
  auto* sig = static_cast<uint64_t*>(shoal_calloc(2, sizeof(uint64_t)));
  shoal_barrier_all();
  for (int pe = 0; pe < n; ++pe) shoalx_signal_op(&sig[0], uint64_t(1) << me(), SHOAL_SIGNAL_ADD, pe);
  shoalx_signal_op(&sig[1], 1000 + me(), SHOAL_SIGNAL_SET, right());
  EXPECT_EQ(shoal_signal_wait_until(&sig[0], SHOAL_CMP_EQ, (uint64_t(1) << n) - 1), (uint64_t(1) << n) - 1);
  EXPECT_EQ(shoal_signal_wait_until(&sig[1], SHOAL_CMP_NE, 0), uint64_t(1000 + left()));
  EXPECT_EQ(shoal_signal_fetch(&sig[0]), (uint64_t(1) << n) - 1);
  EXPECT_EQ(shoal_signal_fetch(&sig[1]), uint64_t(1000 + left()));
  shoal_barrier_all();
  // SET overwrites, ADD wraps modulo 2^64
  shoalx_signal_op(&sig[1], UINT64_MAX, SHOAL_SIGNAL_SET, right());
  shoalx_signal_op(&sig[1], 2, SHOAL_SIGNAL_ADD, right());
  shoal_barrier_all();
  EXPECT_EQ(shoal_signal_fetch(&sig[1]), 1u);
  shoal_barrier_all();
  shoal_free(sig);
}

TEST(Signal, SignalWaitUntilEveryComparison) {
  // For each comparison, the left PE moves my signal word from a value that fails to one that passes.
  struct round {
    int cmp;
    uint64_t initial, compare_with, written;
  };
  const round rounds[] = {
      {SHOAL_CMP_EQ, 0, 10, 10}, {SHOAL_CMP_NE, 10, 10, 11}, {SHOAL_CMP_GT, 0, 5, 6},
      {SHOAL_CMP_LE, 10, 5, 5},  {SHOAL_CMP_LT, 10, 5, 4},   {SHOAL_CMP_GE, 0, 5, 5},
  };
  auto* sig = static_cast<uint64_t*>(shoal_malloc(sizeof(uint64_t)));
  for (const auto& r : rounds) {
    SCOPED_TRACE(testing::Message() << "cmp " << r.cmp);
    *sig = r.initial;
    shoal_barrier_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let the waiter actually wait
    shoalx_signal_op(sig, r.written, SHOAL_SIGNAL_SET, right());
    EXPECT_EQ(shoal_signal_wait_until(sig, r.cmp, r.compare_with), r.written);
    shoal_barrier_all();
  }
  shoal_free(sig);
}

// Many rounds of `bytes` to the right; the receiver checks every byte as soon as it sees the signal,
// then acknowledges to the left so the sender may overwrite. The sender also reads back what it put
// (a get after a put-with-signal to the same PE sees its data).
void data_visible_once_signalled(size_t bytes) {
  constexpr int kRounds = 40;
  auto* buf = static_cast<unsigned char*>(shoal_malloc(bytes));
  auto* sig = static_cast<uint64_t*>(shoal_calloc(2, sizeof(uint64_t)));  // [0] data ready, [1] ack
  std::vector<unsigned char> src(bytes), back(bytes);
  size_t bad = 0, bad_back = 0;
  shoal_barrier_all();
  for (int r = 1; r <= kRounds; ++r) {
    if (r > 1) shoal_signal_wait_until(&sig[1], SHOAL_CMP_GE, r - 1);  // right has read round r-1
    std::memset(src.data(), r, bytes);
    if (r % 2)
      shoal_putmem_signal(buf, src.data(), bytes, &sig[0], r, SHOAL_SIGNAL_SET, right());
    else
      shoal_putmem_signal_nbi(buf, src.data(), bytes, &sig[0], 1, SHOAL_SIGNAL_ADD, right());
    if (r % 4 == 1) {
      shoal_getmem(back.data(), buf, bytes, right());
      for (size_t i = 0; i < bytes; ++i) bad_back += back[i] != static_cast<unsigned char>(r);
    }
    shoal_signal_wait_until(&sig[0], SHOAL_CMP_GE, r);
    for (size_t i = 0; i < bytes; ++i) bad += buf[i] != static_cast<unsigned char>(r);
    shoalx_signal_op(&sig[1], r, SHOAL_SIGNAL_SET, left());
  }
  EXPECT_EQ(bad, 0u) << "a byte older than the signal was seen (" << bytes << " bytes)";
  EXPECT_EQ(bad_back, 0u) << "a get after a put-with-signal missed its data (" << bytes << " bytes)";
  shoal_barrier_all();
  shoal_free(sig);
  shoal_free(buf);
}

// 64 KiB, and sizes around the proxy's one-message put-with-signal limit (8 KiB, host heaps).
TEST(Signal, DataIsVisibleOnceTheSignalIs) {
  for (size_t bytes : {size_t{64} << 10, size_t{8} << 10, (size_t{8} << 10) + 1, size_t{24}}) {
    SCOPED_TRACE(bytes);
    data_visible_once_signalled(bytes);
  }
}

// ---------------------------------------------------------------------------------------------
// wait_until / test

template <class T>
struct wait_ops {
  const char* name;
  void (*wait_until)(T*, int, T);
  void (*wait_until_all)(T*, size_t, const int*, int, T);
  void (*wait_until_all_vector)(T*, size_t, const int*, int, T*);
  size_t (*wait_until_any)(T*, size_t, const int*, int, T);
  size_t (*wait_until_any_vector)(T*, size_t, const int*, int, T*);
  size_t (*wait_until_some)(T*, size_t, size_t*, const int*, int, T);
  size_t (*wait_until_some_vector)(T*, size_t, size_t*, const int*, int, T*);
  int (*test)(T*, int, T);
  int (*test_all)(T*, size_t, const int*, int, T);
  int (*test_all_vector)(T*, size_t, const int*, int, T*);
  size_t (*test_any)(T*, size_t, const int*, int, T);
  size_t (*test_any_vector)(T*, size_t, const int*, int, T*);
  size_t (*test_some)(T*, size_t, size_t*, const int*, int, T);
  size_t (*test_some_vector)(T*, size_t, size_t*, const int*, int, T*);
  void (*p)(T*, T, int);
};
#define SHOAL_TEST_WAIT(T, N)                                                                                    \
  wait_ops<T> {                                                                                                  \
#N, shoal_##N##_wait_until, shoal_##N##_wait_until_all, shoal_##N##_wait_until_all_vector,                   \
        shoal_##N##_wait_until_any, shoal_##N##_wait_until_any_vector, shoal_##N##_wait_until_some,              \
        shoal_##N##_wait_until_some_vector, shoal_##N##_test, shoal_##N##_test_all, shoal_##N##_test_all_vector, \
        shoal_##N##_test_any, shoal_##N##_test_any_vector, shoal_##N##_test_some, shoal_##N##_test_some_vector,  \
        shoal_##N##_p                                                                                            \
  }

void pause_briefly() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

template <class T>
void check_wait(const wait_ops<T>& ops) {
  SCOPED_TRACE(ops.name);
  constexpr size_t kN = 6;
  auto* iv = static_cast<T*>(shoal_calloc(kN, sizeof(T)));
  ASSERT_NE(iv, nullptr);

  // 1. test with every comparison on a local value of 5 (no waiting involved)
  *iv = T(5);
  struct expect_test {
    int cmp;
    T value;
    int result;
  };
  const expect_test tests[] = {
      {SHOAL_CMP_EQ, T(5), 1}, {SHOAL_CMP_EQ, T(6), 0}, {SHOAL_CMP_NE, T(6), 1}, {SHOAL_CMP_NE, T(5), 0},
      {SHOAL_CMP_GT, T(4), 1}, {SHOAL_CMP_GT, T(5), 0}, {SHOAL_CMP_LE, T(5), 1}, {SHOAL_CMP_LE, T(4), 0},
      {SHOAL_CMP_LT, T(6), 1}, {SHOAL_CMP_LT, T(5), 0}, {SHOAL_CMP_GE, T(5), 1}, {SHOAL_CMP_GE, T(6), 0},
  };
  for (const auto& t : tests) {
    EXPECT_EQ(ops.test(iv, t.cmp, t.value), t.result) << "test(5 cmp " << t.cmp << " " << +t.value << ")";
    if (t.result) ops.wait_until(iv, t.cmp, t.value);  // satisfied: returns at once
  }
  shoal_barrier_all();

  // 2. wait_until with every comparison, released by the left PE
  struct round {
    int cmp;
    T initial, compare_with, written;
  };
  const round rounds[] = {
      {SHOAL_CMP_EQ, T(0), T(10), T(10)}, {SHOAL_CMP_NE, T(10), T(10), T(11)}, {SHOAL_CMP_GT, T(0), T(5), T(6)},
      {SHOAL_CMP_LE, T(10), T(5), T(5)},  {SHOAL_CMP_LT, T(10), T(5), T(4)},   {SHOAL_CMP_GE, T(0), T(5), T(5)},
  };
  for (const auto& r : rounds) {
    iv[0] = r.initial;
    // checked before the barrier: nobody writes here until every PE has passed it
    EXPECT_EQ(ops.test(iv, r.cmp, r.compare_with), 0) << "cmp " << r.cmp << " before the write";
    shoal_barrier_all();
    pause_briefly();
    ops.p(iv, r.written, right());
    ops.wait_until(iv, r.cmp, r.compare_with);
    EXPECT_EQ(iv[0], r.written) << "cmp " << r.cmp;
    shoal_barrier_all();
  }

  // 3. _all with a status mask: the left PE makes the unmasked ones equal 7; masked ones stay 0
  const int mask[kN] = {0, 1, 0, 0, 1, 0};
  for (size_t i = 0; i < kN; ++i) iv[i] = T(0);
  EXPECT_EQ(ops.test_all(iv, kN, mask, SHOAL_CMP_EQ, T(7)), 0);
  shoal_barrier_all();
  pause_briefly();
  for (size_t i = 0; i < kN; ++i)
    if (!mask[i]) ops.p(&iv[i], T(7), right());
  ops.wait_until_all(iv, kN, mask, SHOAL_CMP_EQ, T(7));
  EXPECT_EQ(ops.test_all(iv, kN, mask, SHOAL_CMP_EQ, T(7)), 1);
  EXPECT_EQ(ops.test_all(iv, kN, nullptr, SHOAL_CMP_EQ, T(7)), 0) << "masked entries are still 0";
  EXPECT_EQ(iv[1], T(0));
  EXPECT_EQ(iv[4], T(0));
  shoal_barrier_all();

  // 4. _any: only element 3 is released; a mask over it makes test_any find nothing
  for (size_t i = 0; i < kN; ++i) iv[i] = T(0);
  EXPECT_EQ(ops.test_any(iv, kN, nullptr, SHOAL_CMP_NE, T(0)), SIZE_MAX);
  shoal_barrier_all();
  pause_briefly();
  ops.p(&iv[3], T(9), right());
  EXPECT_EQ(ops.wait_until_any(iv, kN, mask, SHOAL_CMP_NE, T(0)), 3u);
  EXPECT_EQ(ops.test_any(iv, kN, nullptr, SHOAL_CMP_GT, T(8)), 3u);
  const int mask3[kN] = {0, 0, 0, 1, 0, 0};
  EXPECT_EQ(ops.test_any(iv, kN, mask3, SHOAL_CMP_NE, T(0)), SIZE_MAX) << "the only match is masked";
  const int all_masked[kN] = {1, 1, 1, 1, 1, 1};
  EXPECT_EQ(ops.test_any(iv, kN, all_masked, SHOAL_CMP_NE, T(0)), SIZE_MAX);
  EXPECT_EQ(ops.wait_until_any(iv, kN, all_masked, SHOAL_CMP_NE, T(0)), SIZE_MAX) << "nothing to wait for";
  shoal_barrier_all();

  // 5. _some: elements 2 and 5 released (5 masked); indices and count exact
  for (size_t i = 0; i < kN; ++i) iv[i] = T(0);
  size_t idx[kN] = {99, 99, 99, 99, 99, 99};
  EXPECT_EQ(ops.test_some(iv, kN, idx, nullptr, SHOAL_CMP_EQ, T(3)), 0u);
  shoal_barrier_all();
  pause_briefly();
  ops.p(&iv[5], T(3), right());
  ops.p(&iv[2], T(3), right());
  const int mask5[kN] = {0, 0, 0, 0, 0, 1};
  EXPECT_EQ(ops.wait_until_some(iv, kN, idx, mask5, SHOAL_CMP_EQ, T(3)), 1u);
  EXPECT_EQ(idx[0], 2u);
  shoal_barrier_all();  // both writes done everywhere
  std::fill(idx, idx + kN, 99);
  EXPECT_EQ(ops.test_some(iv, kN, idx, nullptr, SHOAL_CMP_EQ, T(3)), 2u);
  EXPECT_EQ(idx[0], 2u);
  EXPECT_EQ(idx[1], 5u);
  EXPECT_EQ(idx[2], 99u) << "test_some wrote more indices than it found";
  std::fill(idx, idx + kN, 99);
  EXPECT_EQ(ops.test_some(iv, kN, idx, mask5, SHOAL_CMP_EQ, T(3)), 1u);
  EXPECT_EQ(idx[0], 2u);
  shoal_barrier_all();

  // 6. vector forms: a different value per element
  for (size_t i = 0; i < kN; ++i) iv[i] = T(i + 1);   // 1 2 3 4 5 6
  T want[kN] = {T(1), T(0), T(3), T(0), T(5), T(0)};  // equal at 0, 2, 4
  const int odd_masked[kN] = {0, 1, 0, 1, 0, 1};
  EXPECT_EQ(ops.test_all_vector(iv, kN, nullptr, SHOAL_CMP_EQ, want), 0);
  EXPECT_EQ(ops.test_all_vector(iv, kN, odd_masked, SHOAL_CMP_EQ, want), 1);
  ops.wait_until_all_vector(iv, kN, odd_masked, SHOAL_CMP_EQ, want);  // satisfied: returns
  const int first_masked[kN] = {1, 0, 0, 0, 0, 0};
  EXPECT_EQ(ops.test_any_vector(iv, kN, first_masked, SHOAL_CMP_EQ, want), 2u);
  EXPECT_EQ(ops.wait_until_any_vector(iv, kN, nullptr, SHOAL_CMP_EQ, want), 0u);
  std::fill(idx, idx + kN, 99);
  EXPECT_EQ(ops.test_some_vector(iv, kN, idx, nullptr, SHOAL_CMP_EQ, want), 3u);
  EXPECT_EQ(idx[0], 0u);
  EXPECT_EQ(idx[1], 2u);
  EXPECT_EQ(idx[2], 4u);
  std::fill(idx, idx + kN, 99);
  EXPECT_EQ(ops.wait_until_some_vector(iv, kN, idx, first_masked, SHOAL_CMP_EQ, want), 2u);
  EXPECT_EQ(idx[0], 2u);
  EXPECT_EQ(idx[1], 4u);
  // ... and a blocking vector wait: the left PE makes 1, 3 and 5 match too (GE per element)
  T floor[kN] = {T(1), T(20), T(3), T(40), T(5), T(60)};
  EXPECT_EQ(ops.test_all_vector(iv, kN, nullptr, SHOAL_CMP_GE, floor), 0);
  shoal_barrier_all();
  pause_briefly();
  ops.p(&iv[1], T(20), right());
  ops.p(&iv[3], T(41), right());
  ops.p(&iv[5], T(99), right());
  ops.wait_until_all_vector(iv, kN, nullptr, SHOAL_CMP_GE, floor);
  EXPECT_EQ(iv[1], T(20));
  EXPECT_EQ(iv[3], T(41));
  EXPECT_EQ(iv[5], T(99));
  shoal_barrier_all();
  shoal_free(iv);
}

TEST(Wait, EveryFormOnSignedWaitTypes) {
  check_wait(SHOAL_TEST_WAIT(short, short));
  check_wait(SHOAL_TEST_WAIT(int, int));
  check_wait(SHOAL_TEST_WAIT(long, long));
  check_wait(SHOAL_TEST_WAIT(long long, longlong));
  check_wait(SHOAL_TEST_WAIT(int32_t, int32));
  check_wait(SHOAL_TEST_WAIT(int64_t, int64));
  check_wait(SHOAL_TEST_WAIT(ptrdiff_t, ptrdiff));
}

TEST(Wait, EveryFormOnUnsignedWaitTypes) {
  check_wait(SHOAL_TEST_WAIT(unsigned short, ushort));
  check_wait(SHOAL_TEST_WAIT(unsigned int, uint));
  check_wait(SHOAL_TEST_WAIT(unsigned long, ulong));
  check_wait(SHOAL_TEST_WAIT(unsigned long long, ulonglong));
  check_wait(SHOAL_TEST_WAIT(uint32_t, uint32));
  check_wait(SHOAL_TEST_WAIT(uint64_t, uint64));
  check_wait(SHOAL_TEST_WAIT(size_t, size));
}

TEST(Wait, SignedComparisonsSeeNegativeValues) {
  auto* iv = static_cast<int*>(shoal_malloc(sizeof(int)));
  *iv = -5;
  EXPECT_EQ(shoal_int_test(iv, SHOAL_CMP_LT, 0), 1) << "-5 < 0 as int";
  EXPECT_EQ(shoal_int_test(iv, SHOAL_CMP_GT, -6), 1);
  auto* lv = static_cast<long*>(shoal_malloc(sizeof(long)));
  *lv = -1;
  EXPECT_EQ(shoal_long_test(lv, SHOAL_CMP_LT, 1), 1);
  EXPECT_EQ(shoal_ulong_test(reinterpret_cast<unsigned long*>(lv), SHOAL_CMP_GT, 1), 1) << "ULONG_MAX > 1";
  shoal_barrier_all();
  shoal_free(lv);
  shoal_free(iv);
}

// ---------------------------------------------------------------------------------------------
// fence / quiet / barriers

TEST(Ordering, FenceOrdersDataBeforeFlag) {
  constexpr size_t kBytes = 4096;
  constexpr int kRounds = 50;
  auto* buf = static_cast<unsigned char*>(shoal_malloc(kBytes));
  auto* flag = static_cast<int*>(shoal_calloc(2, sizeof(int)));  // [0] data round, [1] ack
  std::vector<unsigned char> src(kBytes);
  size_t bad = 0;
  shoal_barrier_all();
  for (int r = 1; r <= kRounds; ++r) {
    if (r > 1) shoal_int_wait_until(&flag[1], SHOAL_CMP_GE, r - 1);
    std::memset(src.data(), r, kBytes);
    shoal_putmem_nbi(buf, src.data(), kBytes, right());
    shoal_fence();
    shoal_int_p(&flag[0], r, right());
    shoal_int_wait_until(&flag[0], SHOAL_CMP_GE, r);
    for (size_t i = 0; i < kBytes; ++i) bad += buf[i] != static_cast<unsigned char>(r);
    shoal_int_atomic_set(&flag[1], r, left());
  }
  EXPECT_EQ(bad, 0u);
  shoal_barrier_all();
  shoal_free(flag);
  shoal_free(buf);
}

TEST(Ordering, QuietCompletesNbiPutsToEveryPe) {
  const int n = npes();
  constexpr size_t kSlot = 512;
  auto* buf = static_cast<unsigned char*>(shoal_calloc(n, kSlot));
  auto* done = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  std::vector<unsigned char> src(kSlot, static_cast<unsigned char>(me() + 1));
  shoal_barrier_all();
  for (int pe = 0; pe < n; ++pe) shoal_putmem_nbi(buf + me() * kSlot, src.data(), kSlot, pe);
  shoal_quiet();
  for (int pe = 0; pe < n; ++pe) shoal_uint64_atomic_inc(done, pe);
  shoal_uint64_wait_until(done, SHOAL_CMP_EQ, n);  // no barrier: only quiet + the counter order this
  for (int from = 0; from < n; ++from)
    for (size_t i = 0; i < kSlot; ++i) ASSERT_EQ(buf[from * kSlot + i], from + 1) << "from " << from << " i " << i;
  shoal_barrier_all();
  shoal_free(done);
  shoal_free(buf);
}

TEST(Barrier, BarrierAllRepeatedSynchronizes) {
  constexpr int kRounds = 300;
  auto* x = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  int wrong = 0;
  shoal_barrier_all();
  for (int r = 1; r <= kRounds; ++r) {
    shoal_int_p(x, r, right());
    shoal_barrier_all();  // the left PE's write of r is complete and visible
    wrong += *x != r;
    shoal_barrier_all();  // nobody writes r+1 before I have read r
  }
  EXPECT_EQ(wrong, 0);
  shoal_barrier_all();
  shoal_free(x);
}

TEST(Barrier, SyncAllRepeatedSynchronizes) {
  constexpr int kRounds = 300;
  auto* x = static_cast<int*>(shoal_calloc(npes(), sizeof(int)));
  int wrong = 0;
  shoal_sync_all();
  for (int r = 1; r <= kRounds; ++r) {
    // skewed arrival: one PE per round is late
    if (r % npes() == me()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (int pe = 0; pe < npes(); ++pe) shoal_int_p(&x[me()], r, pe);
    shoal_quiet();  // sync_all does not complete puts; quiet does
    shoal_sync_all();
    for (int pe = 0; pe < npes(); ++pe) wrong += x[pe] != r;
    shoal_sync_all();
  }
  EXPECT_EQ(wrong, 0);
  shoal_barrier_all();
  shoal_free(x);
}

}  // namespace
