// The proxy transport (run with SHOAL_DISABLE_P2P=1 UCX_TLS=tcp UCX_NET_DEVICES=lo): fence orders a
// stream of puts and signals (the target checks, while they arrive, that every slot below the
// signal is written); a target sleeping, or computing, outside shoal still serves gets and
// fetch-adds (its proxy thread progresses); a fetch-add storm from every PE to one word loses and
// duplicates nothing (the fetched values are 0..N-1, each once); a block allocated after init (heap
// growth, new registration) is reachable at its last byte.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
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

// put_signal orders this PE's earlier puts to the target before its signal, as put-then-AMO does
// (docs/memory-model.md): a bulk put (a direct active message from SHOAL_PROXY_AM_BYTES, by rendezvous
// when large, whose data may land after later messages are handled) followed by a small put_signal
// (one eager message) without a fence; the bulk puts are nbi, so nothing but that order makes them land.
// Every other round the bulk is the put_signal's own data (one large message), which its signal must
// follow. Each round writes its own block: puts of different rounds to one block would be unordered
// with each other (no fence between them), so an older round's data could legally land last. Each
// signal adds 1: two put_signals without a fence may be applied in either order, but a count of k
// means some signal of round k or later was applied, so rounds 1..k have landed, and the count ends
// at the number of rounds. The target checks the blocks of rounds 1..k once the count reaches k.
TEST(Proxy, PutSignalLandsAfterEarlierBulkPuts) {
  constexpr size_t kWords = 32 * 1024;  // 256 KiB a round
  constexpr uint64_t kRounds = 20;
  auto* bulk = static_cast<uint64_t*>(shoal_calloc(kRounds * kWords, sizeof(uint64_t)));
  auto* words = static_cast<uint64_t*>(shoal_calloc(2, sizeof(uint64_t)));                 // [0] signal, [1] tag
  std::vector<std::vector<uint64_t>> sources(kRounds + 1, std::vector<uint64_t>(kWords));  // unchanged till quiet
  shoal_barrier_all();
  const int to = (me() + 1) % npes();
  auto block = [&](uint64_t k) { return bulk + (k - 1) * kWords; };
  std::thread writer([&] {
    for (uint64_t k = 1; k <= kRounds; ++k) {
      for (size_t i = 0; i < kWords; ++i) sources[k][i] = k * kWords + i;
      if (k % 2 == 1) {  // a bulk put, then a small put_signal
        shoal_putmem_nbi(block(k), sources[k].data(), kWords * sizeof(uint64_t), to);
        shoal_putmem_signal(&words[1], &k, sizeof(k), &words[0], 1, SHOAL_SIGNAL_ADD, to);
      } else {  // the bulk itself with the signal (one direct message by rendezvous)
        shoal_putmem_signal_nbi(block(k), sources[k].data(), kWords * sizeof(uint64_t), &words[0], 1, SHOAL_SIGNAL_ADD,
                                to);
      }
    }
    shoal_quiet();
  });
  uint64_t violations = 0, rounds_checked = 0, seen = 0, verified = 0;  // rounds 1..verified checked whole
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (verified < kRounds && std::chrono::steady_clock::now() < deadline) {
    seen = load(&words[0]);
    if (seen <= verified) continue;
    ++rounds_checked;
    // `seen` signals applied: the blocks of rounds 1..seen are in place (each is written once).
    for (; verified < seen; ++verified)
      for (size_t i = 0; i < kWords; ++i)
        if (load(&block(verified + 1)[i]) != (verified + 1) * kWords + i) ++violations;
  }
  writer.join();
  EXPECT_EQ(verified, kRounds) << "the last signal did not arrive within 60 s";
  EXPECT_EQ(violations, 0u) << "bulk words missing below the signal's round, over " << rounds_checked
                            << " signals seen";
  shoal_barrier_all();
  shoal_free(words);
  shoal_free(bulk);
}

// Puts and puts-with-signal of several payload areas (with SHOAL_TEST_PROXY_PAYLOAD=1: runs of carried pieces,
// kProxyRun, which the proxy gathers into messages of up to 64 KiB) land whole, at odd offsets, and before their
// signal: each round writes its own block with a size from one piece and a byte to a run that needs two messages,
// alternating a put followed by a small put_signal with a put_signal carrying the block itself; the target checks
// every block of rounds 1..k once k signals have been applied (as in PutSignalLandsAfterEarlierBulkPuts).
TEST(Proxy, CarriedRunsLandWholeBeforeTheirSignal) {
  const size_t sizes[] = {4097, 8192, 20000, 65536, 65537, 70001, 98304};
  constexpr size_t kBlock = 98304 + 8;
  const uint64_t rounds = std::size(sizes) * 2;
  auto* bulk = static_cast<unsigned char*>(shoal_calloc(rounds, kBlock));
  auto* words = static_cast<uint64_t*>(shoal_calloc(2, sizeof(uint64_t)));  // [0] signal, [1] tag
  ASSERT_NE(bulk, nullptr);
  const int to = (me() + 1) % npes();
  const int from = (me() + npes() - 1) % npes();
  auto size_of = [&](uint64_t k) { return sizes[(k - 1) % std::size(sizes)]; };
  auto block = [&](uint64_t k) { return bulk + (k - 1) * kBlock + 1; };  // odd offsets
  auto byte = [](int pe, uint64_t k, size_t i) { return static_cast<unsigned char>((i * 13 + k * 7 + pe) ^ (i >> 9)); };
  std::vector<std::vector<unsigned char>> sources(rounds + 1);
  shoal_barrier_all();
  for (uint64_t k = 1; k <= rounds; ++k) {
    sources[k].resize(size_of(k));
    for (size_t i = 0; i < sources[k].size(); ++i) sources[k][i] = byte(me(), k, i);
    if (k % 2 == 1) {
      shoal_putmem(block(k), sources[k].data(), sources[k].size(), to);
      shoal_putmem_signal(&words[1], &k, sizeof(k), &words[0], 1, SHOAL_SIGNAL_ADD, to);
    } else {
      shoal_putmem_signal_nbi(block(k), sources[k].data(), sources[k].size(), &words[0], 1, SHOAL_SIGNAL_ADD, to);
    }
  }
  shoal_quiet();
  EXPECT_EQ(shoal_signal_wait_until(&words[0], SHOAL_CMP_EQ, rounds), rounds);
  for (uint64_t k = 1; k <= rounds; ++k) {
    size_t bad = 0;
    for (size_t i = 0; i < size_of(k); ++i) bad += block(k)[i] != byte(from, k, i);
    EXPECT_EQ(bad, 0u) << "round " << k << ", " << size_of(k) << " bytes";
    EXPECT_EQ(block(k)[-1], 0) << "the byte before round " << k << "'s block changed";
    EXPECT_EQ(block(k)[size_of(k)], 0) << "the byte after round " << k << "'s block changed";
  }
  shoal_barrier_all();
  shoal_free(words);
  shoal_free(bulk);
}

// Three symmetric words for the idle-target tests: [0] = 0 (a counter), [1] = base + this PE, [2] = 0 (a flag).
uint64_t* target_words(uint64_t base) {
  auto* words = static_cast<uint64_t*>(shoal_calloc(3, sizeof(uint64_t)));
  words[1] = base + me();
  shoal_barrier_all();
  return words;
}

TEST(Proxy, SleepingTargetStillServesGetsAndAmos) {
  if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
  constexpr int kOps = 100;
  // The target sleeps until PE 0 has finished (its flag put lands through the proxy too), at most kCap: ops
  // that needed the target awake would wait out the cap, however slow the machine, and show as elapsed >= kCap.
  constexpr auto kCap = std::chrono::seconds(20);
  uint64_t* words = target_words(1000);
  if (me() == 1) {
    auto until = std::chrono::steady_clock::now() + kCap;
    while (load(&words[2]) == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // outside shoal: only the proxy thread answers
    EXPECT_EQ(load(&words[2]), 1u) << "PE 0 did not finish while this PE slept";
  } else if (me() == 0) {
    auto start = std::chrono::steady_clock::now();
    uint64_t fetched_sum = 0, got = 0;
    for (int i = 0; i < kOps; ++i) {
      fetched_sum += shoal_uint64_atomic_fetch_add(&words[0], 1, 1);
      got += shoal_uint64_g(&words[1], 1);
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    shoal_uint64_p(&words[2], 1, 1);
    shoal_quiet();
    EXPECT_LT(elapsed, kCap) << "the gets and fetch-adds waited for the target to wake";
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

// A target busy in a compute loop (no shoal call, no sleep) until every other PE's fetch-adds have
// landed on its word: only its proxy thread can apply them. Bounded: a target that does not
// progress shows as the deadline reached.
TEST(Proxy, ComputingTargetStillServesGetsAndAmos) {
  if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
  constexpr int kOps = 50;
  constexpr auto kDeadline = std::chrono::seconds(15);
  uint64_t* words = target_words(5000);
  const uint64_t expected = uint64_t(kOps) * (npes() - 1);
  if (me() == 1) {
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    volatile uint64_t sink = 0;
    while (load(&words[0]) < expected && std::chrono::steady_clock::now() < deadline)
      for (int i = 0; i < 10000; ++i) sink = sink * 6364136223846793005ull + 1442695040888963407ull;
    EXPECT_EQ(load(&words[0]), expected) << "the fetch-adds did not land while the target computed";
  } else {
    uint64_t got = 0, prev = 0;
    bool increasing = true;
    for (int i = 0; i < kOps; ++i) {
      uint64_t old = shoal_uint64_atomic_fetch_add(&words[0], 1, 1);
      increasing &= i == 0 || old > prev;
      prev = old;
      got += shoal_uint64_g(&words[1], 1);
    }
    EXPECT_TRUE(increasing);
    EXPECT_EQ(got, uint64_t(kOps) * 5001);
  }
  shoal_barrier_all();
  shoal_free(words);
}

// Every PE fetch-adds one word on PE 0 (through the proxy; PE 0 itself by load/store atomics) and
// sends PE 0 every value it fetched: they must be 0..N-1, each exactly once, and the word N.
TEST(Proxy, FetchAddStormFromEveryPe) {
  constexpr uint64_t kOps = 400;
  const uint64_t total = kOps * npes();
  auto* words = static_cast<uint64_t*>(shoal_calloc(1 + total, sizeof(uint64_t)));
  uint64_t* tickets = words + 1;  // PE p's fetched values at tickets[p * kOps ...] on PE 0
  shoal_barrier_all();
  std::vector<uint64_t> fetched(kOps);
  bool increasing = true;
  for (uint64_t i = 0; i < kOps; ++i) {
    fetched[i] = shoal_uint64_atomic_fetch_add(&words[0], 1, 0);
    increasing &= i == 0 || fetched[i] > fetched[i - 1];
  }
  EXPECT_TRUE(increasing) << "one PE's fetched values must grow";
  shoal_putmem(&tickets[me() * kOps], fetched.data(), kOps * sizeof(uint64_t), 0);
  shoal_barrier_all();
  EXPECT_EQ(shoal_uint64_atomic_fetch(&words[0], 0), total);
  if (me() == 0) {
    std::vector<int> seen(total, 0);
    uint64_t out_of_range = 0, repeated = 0, missing = 0;
    for (uint64_t k = 0; k < total; ++k) {
      if (tickets[k] >= total)
        ++out_of_range;
      else if (seen[tickets[k]]++ > 0)
        ++repeated;
    }
    for (int c : seen) missing += c == 0;
    EXPECT_EQ(out_of_range, 0u);
    EXPECT_EQ(repeated, 0u) << "a value fetched twice: an increment was lost";
    EXPECT_EQ(missing, 0u);
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
