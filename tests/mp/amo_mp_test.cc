// Atomics on N PEs: every operation on every AMO type (standard, bitwise, float/double), with all
// PEs updating the same words at once and exact expected results; and the host API used from 4
// threads per PE at SHOAL_THREAD_MULTIPLE.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }

// The standard AMO family of one type.
template <class T>
struct std_amo {
  const char* name;
  T (*fetch)(const T*, int);
  void (*set)(T*, T, int);
  T (*swap)(T*, T, int);
  T (*compare_swap)(T*, T, T, int);
  T (*fetch_inc)(T*, int);
  void (*inc)(T*, int);
  T (*fetch_add)(T*, T, int);
  void (*add)(T*, T, int);
};
#define SHOAL_TEST_STD_AMO(T, N)                                                                                    \
  std_amo<T> {                                                                                                      \
#N, shoal_##N##_atomic_fetch, shoal_##N##_atomic_set, shoal_##N##_atomic_swap, shoal_##N##_atomic_compare_swap, \
        shoal_##N##_atomic_fetch_inc, shoal_##N##_atomic_inc, shoal_##N##_atomic_fetch_add, shoal_##N##_atomic_add  \
  }

// The bitwise family of one type.
template <class T>
struct bit_amo {
  const char* name;
  T (*fetch_and)(T*, T, int);
  void (*and_)(T*, T, int);
  T (*fetch_or)(T*, T, int);
  void (*or_)(T*, T, int);
  T (*fetch_xor)(T*, T, int);
  void (*xor_)(T*, T, int);
};
#define SHOAL_TEST_BIT_AMO(T, N)                                                                                  \
  bit_amo<T> {                                                                                                    \
#N, shoal_##N##_atomic_fetch_and, shoal_##N##_atomic_and, shoal_##N##_atomic_fetch_or, shoal_##N##_atomic_or, \
        shoal_##N##_atomic_fetch_xor, shoal_##N##_atomic_xor                                                      \
  }

// Sums a value over all PEs (through an atomic on PE 0), collectively.
uint64_t sum_over_pes(uint64_t mine) {
  auto* acc = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  shoal_uint64_atomic_add(acc, mine, 0);
  shoal_barrier_all();
  uint64_t total = shoal_uint64_atomic_fetch(acc, 0);
  shoal_barrier_all();
  shoal_free(acc);
  return total;
}

template <class T>
void check_std(const std_amo<T>& ops) {
  SCOPED_TRACE(ops.name);
  const int n = npes();
  constexpr int kRounds = 60;
  // words[0]: add/inc target; [1]: fetch_inc ticket; [2]: swap chain; [3]: CAS counter;
  // [4 + pe]: PE pe's slot for set/fetch
  auto* words = static_cast<T*>(shoal_calloc(4 + n, sizeof(T)));
  ASSERT_NE(words, nullptr);
  words[2] = T(1000);
  shoal_barrier_all();

  // add and inc from every PE to every PE at once
  for (int r = 0; r < kRounds; ++r) {
    for (int k = 0; k < n; ++k) {
      int pe = (me() + k) % n;
      ops.add(&words[0], T(me() + 1), pe);
      ops.inc(&words[0], pe);
    }
  }
  // fetch_add: my sequence of fetched values on PE 0's word must grow; each PE's total fetched is summed
  uint64_t fetched_sum = 0;
  T prev = T(0);
  bool increasing = true;
  for (int r = 0; r < kRounds; ++r) {
    T old = ops.fetch_inc(&words[1], 0);
    if (r > 0 && !(old > prev)) increasing = false;
    prev = old;
    fetched_sum += static_cast<uint64_t>(old);
    T old2 = ops.fetch_add(&words[1], T(0), 0);  // adding 0 reads without changing
    if (old2 < old + T(1)) increasing = false;
  }
  EXPECT_TRUE(increasing) << "fetch_inc values on one PE must increase";
  // swap chain on PE n-1: every token swapped in comes out exactly once (or stays at the end)
  uint64_t swapped_out = 0;
  for (int r = 0; r < kRounds; ++r)
    swapped_out += static_cast<uint64_t>(ops.swap(&words[2], T(me() * 100 + r + 1), n - 1));
  // CAS increment loop on PE 0
  int cas_failures = 0;
  for (int r = 0; r < kRounds; ++r) {
    T seen = ops.fetch(&words[3], 0);
    while (true) {
      T old = ops.compare_swap(&words[3], seen, T(seen + 1), 0);
      if (old == seen) break;
      ++cas_failures;
      seen = old;
    }
  }
  // set my slot on every PE, fetch it back from every PE
  for (int pe = 0; pe < n; ++pe) ops.set(&words[4 + me()], T(me() + 7), pe);
  shoal_barrier_all();

  const uint64_t nr = static_cast<uint64_t>(n) * kRounds;
  EXPECT_EQ(static_cast<uint64_t>(words[0]), kRounds * (uint64_t(n) * (n + 1) / 2 + n)) << "add+inc";
  EXPECT_EQ(static_cast<uint64_t>(ops.fetch(&words[1], 0)), nr) << "fetch_inc";
  EXPECT_EQ(sum_over_pes(fetched_sum), nr * (nr - 1) / 2) << "fetch_inc tickets must be 0..N*R-1, each once";
  uint64_t tokens = 0;
  for (int pe = 0; pe < n; ++pe)
    for (int r = 0; r < kRounds; ++r) tokens += pe * 100 + r + 1;
  uint64_t final_token = static_cast<uint64_t>(ops.fetch(&words[2], n - 1));
  EXPECT_EQ(sum_over_pes(swapped_out) + final_token, 1000 + tokens) << "swap lost or duplicated a value";
  EXPECT_EQ(static_cast<uint64_t>(ops.fetch(&words[3], 0)), nr) << "compare_swap increments";
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(words[4 + pe], T(pe + 7)) << "set slot of PE " << pe;
    EXPECT_EQ(ops.fetch(&words[4 + pe], (me() + 1) % n), T(pe + 7));
  }
  // compare_swap that must fail leaves the value alone and returns it
  EXPECT_EQ(ops.compare_swap(&words[4 + me()], T(99), T(5), me()), T(me() + 7));
  EXPECT_EQ(words[4 + me()], T(me() + 7));
  shoal_barrier_all();
  (void)cas_failures;  // contention is expected, not an error
  shoal_free(words);
}

TEST(Amo, StandardOpsOnEveryStandardType) {
  check_std(SHOAL_TEST_STD_AMO(int, int));
  check_std(SHOAL_TEST_STD_AMO(long, long));
  check_std(SHOAL_TEST_STD_AMO(long long, longlong));
  check_std(SHOAL_TEST_STD_AMO(unsigned int, uint));
  check_std(SHOAL_TEST_STD_AMO(unsigned long, ulong));
  check_std(SHOAL_TEST_STD_AMO(unsigned long long, ulonglong));
  check_std(SHOAL_TEST_STD_AMO(int32_t, int32));
  check_std(SHOAL_TEST_STD_AMO(int64_t, int64));
  check_std(SHOAL_TEST_STD_AMO(uint32_t, uint32));
  check_std(SHOAL_TEST_STD_AMO(uint64_t, uint64));
  check_std(SHOAL_TEST_STD_AMO(size_t, size));
  check_std(SHOAL_TEST_STD_AMO(ptrdiff_t, ptrdiff));
}

TEST(Amo, SignedAddWrapsAndNegativeValues) {
  auto* w = static_cast<int64_t*>(shoal_calloc(2, sizeof(int64_t)));
  shoal_barrier_all();
  shoal_int64_atomic_add(&w[0], -3 * (me() + 1), 0);
  shoal_int_atomic_add(reinterpret_cast<int*>(&w[1]), -1, 0);
  shoal_barrier_all();
  EXPECT_EQ(shoal_int64_atomic_fetch(&w[0], 0), -3 * int64_t(npes()) * (npes() + 1) / 2);
  EXPECT_EQ(shoal_int_atomic_fetch(reinterpret_cast<int*>(&w[1]), 0), -npes());
  shoal_barrier_all();
  shoal_free(w);
}

template <class T>
void check_bitwise(const bit_amo<T>& ops) {
  SCOPED_TRACE(ops.name);
  const int n = npes();
  // Bit pe, pe+8 and pe+16 belong to PE pe; only it touches them, so its fetched values are exact
  // in those bits although every PE updates the same word at once.
  auto* word = static_cast<T*>(shoal_malloc(sizeof(T)));
  *word = T(0);
  shoal_barrier_all();
  const T a = T(T(1) << me()), b = T(T(1) << (me() + 8)), c = T(T(1) << (me() + 16));
  const T mine = T(a | b | c);
  bool exact = true;
  for (int target = 0; target < n; ++target) {
    T old = ops.fetch_or(word, T(a | b), target);
    exact &= (old & mine) == T(0);
    ops.or_(word, c, target);
    old = ops.fetch_xor(word, b, target);  // clears b
    exact &= (old & mine) == mine;
    ops.xor_(word, b, target);                 // sets b again
    old = ops.fetch_and(word, T(~a), target);  // clears a
    exact &= (old & mine) == mine;
    ops.and_(word, T(~c), target);  // clears c
    old = ops.fetch_or(word, T(0), target);
    exact &= (old & mine) == b;
  }
  EXPECT_TRUE(exact) << "a fetched value showed this PE's bits in the wrong state";
  shoal_barrier_all();
  T want = T(0);
  for (int pe = 0; pe < n; ++pe) want = T(want | (T(1) << (pe + 8)));
  EXPECT_EQ(*word, want) << "final word";
  shoal_barrier_all();
  shoal_free(word);
}

TEST(Amo, BitwiseOpsOnEveryBitwiseType) {
  check_bitwise(SHOAL_TEST_BIT_AMO(unsigned int, uint));
  check_bitwise(SHOAL_TEST_BIT_AMO(unsigned long, ulong));
  check_bitwise(SHOAL_TEST_BIT_AMO(unsigned long long, ulonglong));
  check_bitwise(SHOAL_TEST_BIT_AMO(int32_t, int32));
  check_bitwise(SHOAL_TEST_BIT_AMO(int64_t, int64));
  check_bitwise(SHOAL_TEST_BIT_AMO(uint32_t, uint32));
  check_bitwise(SHOAL_TEST_BIT_AMO(uint64_t, uint64));
}

TEST(Amo, BitwiseHighBitOf64BitTypes) {
  auto* w = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  shoal_barrier_all();
  if (me() == 0) shoal_uint64_atomic_or(w, uint64_t(1) << 63, npes() - 1);
  shoal_barrier_all();
  EXPECT_EQ(shoal_uint64_atomic_fetch_xor(w, 0, npes() - 1), uint64_t(1) << 63) << "bit 63 must survive";
  shoal_barrier_all();
  shoal_free(w);
}

template <class T>
struct float_amo {
  const char* name;
  T (*fetch)(const T*, int);
  void (*set)(T*, T, int);
  T (*swap)(T*, T, int);
  T (*fetch_add)(T*, T, int);
  void (*add)(T*, T, int);
};

template <class T>
void check_float(const float_amo<T>& ops) {
  SCOPED_TRACE(ops.name);
  const int n = npes();
  constexpr int kRounds = 100;
  auto* w = static_cast<T*>(shoal_calloc(2 + n, sizeof(T)));
  shoal_barrier_all();
  // Sums of multiples of 0.5 well below 2^24 are exact in float and double, in any order.
  T fetched_sum = 0;
  bool monotone = true;
  T prev = -1;
  for (int r = 0; r < kRounds; ++r) {
    ops.add(&w[0], T(0.5) * T(me() + 1), 0);
    T old = ops.fetch_add(&w[1], T(0.5), n - 1);
    monotone &= old > prev;
    prev = old;
    fetched_sum += old;
  }
  for (int pe = 0; pe < n; ++pe) ops.set(&w[2 + me()], T(me()) + T(0.25), pe);
  T swapped = ops.swap(&w[2 + me()], T(-1.5), (me() + 1) % n);
  EXPECT_EQ(swapped, T(me()) + T(0.25));  // nobody else touches my slot on the neighbour
  EXPECT_TRUE(monotone);
  shoal_barrier_all();
  EXPECT_EQ(ops.fetch(&w[0], 0), T(0.5) * T(kRounds) * T(n * (n + 1) / 2));
  EXPECT_EQ(ops.fetch(&w[1], n - 1), T(0.5) * T(kRounds * n));
  for (int pe = 0; pe < n; ++pe) {
    // PE pe set slot pe on every PE to pe+0.25; then my left neighbour swapped -1.5 into its slot here.
    T want = pe == (me() + n - 1) % n ? T(-1.5) : T(pe) + T(0.25);
    EXPECT_EQ(w[2 + pe], want) << "slot " << pe;
  }
  // The fetched values of all PEs from w[1] are 0, 0.5, ..., 0.5*(nR-1), each once.
  auto* acc = static_cast<double*>(shoal_calloc(1, sizeof(double)));
  shoal_double_atomic_add(acc, double(fetched_sum), 0);
  shoal_barrier_all();
  double nr = double(kRounds) * n;
  EXPECT_EQ(shoal_double_atomic_fetch(acc, 0), 0.5 * nr * (nr - 1) / 2);
  shoal_barrier_all();
  shoal_free(acc);
  shoal_free(w);
}

TEST(Amo, FloatAndDoubleAddFetchAddSwapSet) {
  check_float(float_amo<float>{"float", shoal_float_atomic_fetch, shoal_float_atomic_set, shoal_float_atomic_swap,
                               shoal_float_atomic_fetch_add, shoal_float_atomic_add});
  check_float(float_amo<double>{"double", shoal_double_atomic_fetch, shoal_double_atomic_set, shoal_double_atomic_swap,
                                shoal_double_atomic_fetch_add, shoal_double_atomic_add});
}

TEST(Threads, QueryThreadIsMultiple) {
  int provided = -1;
  shoal_query_thread(&provided);
  EXPECT_EQ(provided, SHOAL_THREAD_MULTIPLE);
}

TEST(Threads, FourThreadsPerPeUseTheHostApiAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  constexpr size_t kSlot = 64;
  const int n = npes();
  // counters[t]: every thread t of every PE adds to it on every PE; ticket: fetch_inc on PE 0;
  // slots: thread t of PE p owns slot (p*kThreads + t) on every PE.
  auto* counters = static_cast<uint64_t*>(shoal_calloc(kThreads, sizeof(uint64_t)));
  auto* ticket = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  auto* slots = static_cast<unsigned char*>(shoal_calloc(size_t(n) * kThreads, kSlot));
  auto* words = static_cast<int*>(shoal_calloc(size_t(n) * kThreads, sizeof(int)));
  std::vector<uint64_t> tickets_sum(kThreads, 0);
  std::vector<int> bad_get(kThreads, 0);
  auto work = [&](int t) {
    std::vector<unsigned char> src(kSlot), got(kSlot);
    size_t slot = size_t(me()) * kThreads + t;
    for (int r = 0; r < kRounds; ++r) {
      int pe = (me() + r) % n;
      shoal_uint64_atomic_add(&counters[t], 1, pe);
      tickets_sum[t] += shoal_uint64_atomic_fetch_inc(ticket, 0);
      for (size_t i = 0; i < kSlot; ++i) src[i] = static_cast<unsigned char>(r + t + i);
      shoal_putmem(slots + slot * kSlot, src.data(), kSlot, pe);
      shoal_quiet();
      shoal_getmem(got.data(), slots + slot * kSlot, kSlot, pe);
      bad_get[t] += got != src;
      shoal_int_p(&words[slot], r, pe);
      shoal_fence();
      shoal_quiet();
      bad_get[t] += shoal_int_g(&words[slot], pe) != r;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  shoal_barrier_all();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(bad_get[t], 0) << "thread " << t << " read back something else than it wrote";
    // each round r of thread t on PE p hits PE (p + r) % n: over all p, every PE gets one add per round
    EXPECT_EQ(counters[t], uint64_t(kRounds)) << "counter " << t;
  }
  for (int p = 0; p < n; ++p) {
    int last = kRounds - 1;
    while ((p + last) % n != me()) --last;  // the last round in which PE p's threads wrote here
    for (int t = 0; t < kThreads; ++t) {
      size_t slot = size_t(p) * kThreads + t;
      EXPECT_EQ(words[slot], last) << "word of PE " << p << " thread " << t;
      for (size_t i = 0; i < kSlot; ++i)
        ASSERT_EQ(slots[slot * kSlot + i], static_cast<unsigned char>(last + t + i))
            << "slot of PE " << p << " thread " << t << " byte " << i;
    }
  }
  uint64_t total = uint64_t(n) * kThreads * kRounds;
  EXPECT_EQ(shoal_uint64_atomic_fetch(ticket, 0), total);
  uint64_t mine = 0;
  for (auto s : tickets_sum) mine += s;
  EXPECT_EQ(sum_over_pes(mine), total * (total - 1) / 2) << "fetch_inc from threads handed out a ticket twice";
  shoal_barrier_all();
  shoal_free(words);
  shoal_free(slots);
  shoal_free(ticket);
  shoal_free(counters);
}

}  // namespace
