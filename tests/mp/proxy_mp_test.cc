// The proxy transport (run with SHOAL_DISABLE_P2P=1 UCX_TLS=tcp UCX_NET_DEVICES=lo): fence orders a
// stream of puts and signals (the target checks, while they arrive, that every slot below the
// signal is written); a target sleeping outside shoal still serves gets and fetch-adds (its proxy
// thread progresses); a fetch-add storm from every PE to one word loses and duplicates nothing; a
// block allocated after init (heap growth, new registration) is reachable at its last byte.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
uint64_t load(const uint64_t* word) { return std::atomic_ref<const uint64_t>(*word).load(std::memory_order_acquire); }

TEST(Proxy, FenceOrdersPutsBeforeSignal) {
  constexpr uint64_t kSlots = 1500;
  auto* slots = static_cast<uint64_t*>(shoal_calloc(kSlots + 1, sizeof(uint64_t)));
  uint64_t* signal = slots + kSlots;
  shoal_barrier_all();
  const int to = (me() + 1) % npes();
  // Each PE writes to its right neighbour while checking what its left neighbour writes here.
  std::thread writer([&] {
    for (uint64_t i = 0; i < kSlots; ++i) {
      shoal_uint64_p(&slots[i], i + 1, to);
      shoal_fence();
      shoalx_signal_op(signal, i + 1, SHOAL_SIGNAL_SET, to);
    }
  });
  uint64_t violations = 0, checks = 0, seen = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen < kSlots && std::chrono::steady_clock::now() < deadline) {
    seen = load(signal);
    for (uint64_t j = 0; j < seen; ++j, ++checks)
      if (load(&slots[j]) != j + 1) ++violations;
  }
  writer.join();
  EXPECT_EQ(seen, kSlots) << "the last signal did not arrive within 60 s";
  EXPECT_EQ(violations, 0u) << "slots below the signal not yet written, of " << checks << " checks";
  shoal_barrier_all();
  shoal_free(slots);
}

TEST(Proxy, SleepingTargetStillServesGetsAndAmos) {
  if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
  constexpr int kOps = 100;
  constexpr auto kSleep = std::chrono::seconds(4);
  auto* words = static_cast<uint64_t*>(shoal_calloc(2, sizeof(uint64_t)));
  words[1] = 1000 + me();
  shoal_barrier_all();
  if (me() == 1) {
    std::this_thread::sleep_for(kSleep);  // outside shoal: only the proxy thread can answer
  } else if (me() == 0) {
    auto start = std::chrono::steady_clock::now();
    uint64_t fetched_sum = 0, got = 0;
    for (int i = 0; i < kOps; ++i) {
      fetched_sum += shoal_uint64_atomic_fetch_add(&words[0], 1, 1);
      got += shoal_uint64_g(&words[1], 1);
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_LT(elapsed, kSleep) << "the gets and fetch-adds waited for the target to wake";
    EXPECT_EQ(fetched_sum, uint64_t(kOps) * (kOps - 1) / 2);
    EXPECT_EQ(got, uint64_t(kOps) * 1001);
  }
  shoal_barrier_all();
  if (me() == 1) {
    EXPECT_EQ(load(&words[0]), uint64_t(kOps));
  }
  shoal_barrier_all();
  shoal_free(words);
}

TEST(Proxy, FetchAddStormFromEveryPe) {
  constexpr uint64_t kOps = 400;
  auto* words = static_cast<uint64_t*>(shoal_calloc(1 + npes(), sizeof(uint64_t)));
  shoal_barrier_all();
  uint64_t sum = 0;
  bool increasing = true;
  uint64_t prev = 0;
  for (uint64_t i = 0; i < kOps; ++i) {
    uint64_t old = shoal_uint64_atomic_fetch_add(&words[0], 1, 0);
    increasing &= i == 0 || old > prev;
    prev = old;
    sum += old;
  }
  EXPECT_TRUE(increasing);
  shoal_uint64_p(&words[1 + me()], sum, 0);
  shoal_barrier_all();
  const uint64_t total = kOps * npes();
  EXPECT_EQ(shoal_uint64_atomic_fetch(&words[0], 0), total);
  if (me() == 0) {
    uint64_t all = 0;
    for (int pe = 0; pe < npes(); ++pe) all += words[1 + pe];
    EXPECT_EQ(all, total * (total - 1) / 2) << "tickets 0..N-1 each once";
  }
  shoal_barrier_all();
  shoal_free(words);
}

TEST(Proxy, BlockFromHeapGrowthIsReachable) {
  constexpr size_t kWords = (48u << 20) / sizeof(uint64_t);  // beyond the first chunk
  auto* big = static_cast<uint64_t*>(shoal_malloc(kWords * sizeof(uint64_t)));
  ASSERT_NE(big, nullptr);
  big[kWords - 1] = 0;
  shoal_barrier_all();
  const int to = (me() + 1) % npes();
  shoal_uint64_p(&big[kWords - 1], 77 + me(), to);
  shoal_barrier_all();
  EXPECT_EQ(big[kWords - 1], uint64_t(77 + (me() + npes() - 1) % npes()));
  EXPECT_EQ(shoal_uint64_g(&big[kWords - 1], to), uint64_t(77 + me()));
  shoal_barrier_all();
  shoal_free(big);
}

}  // namespace
