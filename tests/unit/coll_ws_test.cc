// The collective workspace layout (include/shoal/detail/coll_ws.hpp): every region of every
// configuration lies inside the total, regions never overlap, remote-written words keep their
// alignment, and the LL slots of both parities and all senders are distinct.
#include "shoal/detail/coll_ws.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ws = shoal::detail::coll_ws;

namespace {

struct region {
  uint64_t begin, end;
};

void expect_disjoint(std::vector<region> regions, uint64_t total) {
  std::sort(regions.begin(), regions.end(), [](const region& a, const region& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_LE(regions[i].begin, regions[i].end);
    EXPECT_LE(regions[i].end, total);
    if (i > 0) {
      EXPECT_LE(regions[i - 1].end, regions[i].begin) << "regions " << i - 1 << " and " << i << " overlap";
    }
  }
}

TEST(CollWorkspace, RegionsAreDisjointAndInside) {
  for (int32_t n_local : {1, 2, 3, 8, 72, 128}) {
    for (uint32_t channels : {1u, 2u, 64u, 132u, 1024u}) {
      for (uint32_t ll_bytes : {0u, 8u, 16384u, 65536u}) {
        SCOPED_TRACE(testing::Message() << "n_local " << n_local << " channels " << channels << " ll " << ll_bytes);
        const uint64_t total = ws::total_bytes(n_local, channels, ll_bytes);
        std::vector<region> regions;
        for (uint32_t c = 1; c < channels; ++c) {
          const uint64_t at = ws::channel_offset(n_local, c);
          EXPECT_EQ(at % 128, 0u);  // a channel's words start on their own line
          regions.push_back({at, at + 3ull * 8 * static_cast<uint64_t>(n_local)});
        }
        const uint64_t counters = ws::ll_counters_offset(n_local, channels);
        regions.push_back({counters, counters + 16ull * static_cast<uint64_t>(n_local)});
        for (uint32_t parity : {0u, 1u}) {
          for (int32_t s = 0; s < n_local; ++s) {
            const uint64_t at = ws::ll_slot_offset(n_local, channels, ll_bytes, parity, s);
            EXPECT_EQ(at % 16, 0u);  // 16-byte LL lines
            EXPECT_GE(at, ws::ll_slots_offset(n_local, channels));
            regions.push_back({at, at + ws::ll_slot_bytes(ll_bytes)});
          }
        }
        expect_disjoint(regions, total);
      }
    }
  }
}

TEST(CollWorkspace, SlotHoldsTwiceThePayload) {
  // An LL line carries 8 payload bytes in 16: a slot for ll_bytes of payload is 2 * ll_bytes.
  EXPECT_EQ(ws::ll_slot_bytes(16384), 32768u);
  EXPECT_EQ(ws::ll_slot_bytes(8), 16u);
  // Footprint of the defaults on 2 and 8 GPUs (64 channels, 16 KiB): well under a MiB.
  EXPECT_LT(ws::total_bytes(2, 64, 16384), 1u << 20);
  EXPECT_LT(ws::total_bytes(8, 64, 16384), 1u << 20);
}

TEST(CollWorkspace, ProxySlotsFollowTheRestInWorldsWithProxyPeers) {
  // The proxy slots (device collectives' proxy path): one slot per PE after everything else,
  // 256-byte aligned, 64 KiB each up to 16 PEs, then shrinking so that all slots stay near 1 MiB,
  // never below 256 bytes; worlds without proxy peers do not pay for them.
  EXPECT_EQ(ws::proxy_slot_bytes(1), 65536u);
  EXPECT_EQ(ws::proxy_slot_bytes(2), 65536u);
  EXPECT_EQ(ws::proxy_slot_bytes(16), 65536u);
  EXPECT_EQ(ws::proxy_slot_bytes(32), 32768u);
  EXPECT_EQ(ws::proxy_slot_bytes(3), 65536u);
  EXPECT_EQ(ws::proxy_slot_bytes(100000), 256u);
  for (int32_t n_pes : {1, 2, 3, 8, 17, 100, 128, 5000}) {
    const uint64_t slot = ws::proxy_slot_bytes(n_pes);
    EXPECT_EQ(slot % 256, 0u) << n_pes;
    EXPECT_LE(static_cast<uint64_t>(n_pes) * slot, n_pes * 256ull > (1u << 20) ? n_pes * 256ull : (1ull << 20))
        << n_pes;
    for (int32_t n_local : {1, 2, 8}) {
      for (uint32_t channels : {1u, 64u}) {
        for (uint32_t ll_bytes : {0u, 8u, 16384u}) {
          SCOPED_TRACE(testing::Message() << "n_pes " << n_pes << " n_local " << n_local << " channels " << channels
                                          << " ll " << ll_bytes);
          const uint64_t base = ws::total_bytes(n_local, channels, ll_bytes);
          const uint64_t at = ws::proxy_slots_offset(n_local, channels, ll_bytes);
          EXPECT_EQ(base, ws::base_bytes(n_local, channels, ll_bytes));
          EXPECT_EQ(at % 256, 0u);
          EXPECT_GE(at, base);  // after the LL slots of every parity and sender
          EXPECT_EQ(ws::total_bytes(n_local, channels, ll_bytes, n_pes), at + static_cast<uint64_t>(n_pes) * slot);
        }
      }
    }
  }
}

}  // namespace
