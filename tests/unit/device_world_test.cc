// The device handle's direct run (include/shoal/device_world.hpp): longest_direct_run picks the longest run of PEs
// with consecutive node-local indices, and direct_local_of agrees with the table (local_of) on every PE of the run
// and returns -1 everywhere else, out-of-range PEs included; checked against a brute-force search over every table
// of up to 6 PEs with local indices in {-1, 0, 1, 2, 3}. direct_offsets gives each run PE's heap as the arithmetic of
// local_peer_ptr does (region + local * stride), heaps below this PE's included (the offset wraps modulo 2^64).
#include "shoal/device_world.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using shoal::device_world;
using shoal::detail::direct_run;
using shoal::detail::longest_direct_run;

device_world world_of(const std::vector<int32_t>& table) {
  device_world w;
  w.n_pes = static_cast<int32_t>(table.size());
  w.local_of_pe = table.data();
  const direct_run run = longest_direct_run(table.data(), w.n_pes);
  w.direct_first = run.first;
  w.direct_count = run.count;
  w.direct_local = run.local;
  return w;
}

/// The length of the longest run by brute force: every start, every length.
int32_t brute_longest(const std::vector<int32_t>& t) {
  const auto n = static_cast<int32_t>(t.size());
  int32_t best = 0;
  for (int32_t a = 0; a < n; ++a) {
    for (int32_t b = a; b < n; ++b) {
      bool ok = true;
      for (int32_t k = a; k <= b; ++k) ok = ok && t[k] >= 0 && t[k] == t[a] + (k - a);
      if (ok && b - a + 1 > best) best = b - a + 1;
    }
  }
  return best;
}

TEST(DirectRun, SingleNodeIsEveryPe) {
  const std::vector<int32_t> table{0, 1, 2, 3};
  const direct_run run = longest_direct_run(table.data(), 4);
  EXPECT_EQ(run.first, 0);
  EXPECT_EQ(run.count, 4);
  EXPECT_EQ(run.local, 0);
}

TEST(DirectRun, BlockedNodesPickThisNode) {
  // PEs 4..7 on this node (local 0..3), the others behind the proxy.
  const std::vector<int32_t> table{-1, -1, -1, -1, 0, 1, 2, 3, -1, -1};
  const device_world w = world_of(table);
  EXPECT_EQ(w.direct_first, 4);
  EXPECT_EQ(w.direct_count, 4);
  EXPECT_EQ(w.direct_local, 0);
  for (int32_t pe = -3; pe < 13; ++pe) {
    const int32_t want = pe >= 0 && pe < 10 ? table[pe] : -1;
    EXPECT_EQ(w.direct_local_of(pe), want) << "pe " << pe;
  }
}

TEST(DirectRun, OnlySelfReachable) {
  // SHOAL_DISABLE_P2P: PE 2 reaches only itself, its local index 2 on a node of 4.
  const std::vector<int32_t> table{-1, -1, 2, -1};
  const device_world w = world_of(table);
  EXPECT_EQ(w.direct_first, 2);
  EXPECT_EQ(w.direct_count, 1);
  EXPECT_EQ(w.direct_local_of(2), 2);
  EXPECT_EQ(w.direct_local_of(1), -1);
  EXPECT_EQ(w.direct_local_of(3), -1);
}

TEST(DirectRun, NoReachablePe) {
  const std::vector<int32_t> table{-1, -1, -1};
  const device_world w = world_of(table);
  EXPECT_EQ(w.direct_count, 0);
  for (int32_t pe = -1; pe < 4; ++pe) EXPECT_EQ(w.direct_local_of(pe), -1) << "pe " << pe;
}

TEST(DirectRun, DefaultWorldHasNoRun) {
  const device_world w;
  for (int32_t pe : {INT32_MIN, -1, 0, 1, INT32_MAX}) EXPECT_EQ(w.direct_local_of(pe), -1) << "pe " << pe;
}

TEST(DirectRun, EveryTableUpToSixPes) {
  for (int32_t n = 1; n <= 6; ++n) {
    std::vector<int32_t> table(static_cast<size_t>(n), -1);
    int64_t combos = 1;
    for (int32_t k = 0; k < n; ++k) combos *= 5;
    for (int64_t c = 0; c < combos; ++c) {
      int64_t v = c;
      for (int32_t k = 0; k < n; ++k, v /= 5) table[k] = static_cast<int32_t>(v % 5) - 1;
      const device_world w = world_of(table);
      ASSERT_EQ(w.direct_count, brute_longest(table)) << "n " << n << " combo " << c;
      int32_t in_run = 0;
      for (int32_t pe = -2; pe < n + 2; ++pe) {
        const int32_t got = w.direct_local_of(pe);
        if (got < 0) continue;
        ++in_run;
        ASSERT_TRUE(pe >= 0 && pe < n) << "pe " << pe << " out of range but in the run";
        ASSERT_EQ(got, table[pe]) << "n " << n << " combo " << c << " pe " << pe;
      }
      ASSERT_EQ(in_run, w.direct_count) << "n " << n << " combo " << c;
    }
  }
}

TEST(DirectOffsets, TakeThisHeapToEachRunPeersHeap) {
  const uint64_t region = 0x7f0000000000ULL;
  const uint64_t stride = 1ULL << 36;
  for (const direct_run run : {direct_run{0, 4, 0}, direct_run{4, 3, 1}, direct_run{2, 1, 2}}) {
    for (int32_t mine = 0; mine < 4; ++mine) {  // this PE's own local index: the run's heaps lie on either side
      const uint64_t heap_base = region + static_cast<uint64_t>(mine) * stride;
      std::vector<uint64_t> offsets(static_cast<size_t>(run.count) + 1, 0xdeadULL);
      shoal::detail::direct_offsets(run, region, stride, heap_base, offsets.data());
      for (int32_t k = 0; k < run.count; ++k) {
        const uint64_t p = heap_base + 4096 + 8 * static_cast<uint64_t>(k);  // a symmetric word in this PE's heap
        const uint64_t want = region + static_cast<uint64_t>(run.local + k) * stride + (p - heap_base);
        EXPECT_EQ(p + offsets[k], want) << "run at " << run.first << " k " << k << " mine " << mine;
      }
      EXPECT_EQ(offsets[run.count], 0xdeadULL) << "wrote past the run's " << run.count << " entries";
    }
  }
}

}  // namespace
