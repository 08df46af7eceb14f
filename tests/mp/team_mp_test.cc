// Teams on N host PEs through the C API: the predefined teams; split_strided (evens, odds,
// stride 3, one PE, the whole world, reversed) and split_2d (xrange 1, 2, 3, > n_pes) checked
// against the formulas, with translate_pe both ways and the device handle; splits of splits called
// by the parent's members only, while the other PEs split, reduce, put and sleep on their own;
// concurrent and back-to-back splits of disjoint parents; destroy and re-create reusing handles
// identically on every PE; bad and mismatched splits each failing with the right code and a message
// naming the call and the argument, on the whole world and on a sub-team, the job still usable.
// Also run with every peer behind the proxy (_proxy), on two "nodes" (two_nodes.sh) and with
// SHOAL_TEAM_SPLIT_EXCHANGE=bootstrap (_bootstrap_split): the split exchange goes through the
// bootstrap there, among the parent's members only all the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "expect_error.hpp"
#include "shoal/device_team.hpp"
#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }

// Under SHOAL_DISABLE_P2P=1 every peer is a proxy peer (SHOAL_TEAM_SHARED is this PE alone).
bool proxy() {
  const char* no_p2p = std::getenv("SHOAL_DISABLE_P2P");
  return no_p2p != nullptr && std::string(no_p2p) == "1";
}
int npes() { return shoal_n_pes(); }

// Every PE's value of v, in PE order (collective).
std::vector<int> gather(int v) {
  int n = npes();
  auto* buf = static_cast<int*>(shoal_calloc(n, sizeof(int)));
  for (int pe = 0; pe < n; ++pe) shoal_int_p(&buf[me()], v, pe);
  shoal_barrier_all();
  std::vector<int> all(buf, buf + n);
  shoal_barrier_all();
  shoal_free(buf);
  return all;
}

// Every member got the same handle; every non-member got SHOAL_TEAM_INVALID.
void expect_same_handle_on_members(shoal_team_t team, bool member) {
  EXPECT_EQ(team != SHOAL_TEAM_INVALID, member) << "PE " << me() << " handle " << team;
  std::vector<int> all = gather(member ? team : -2);
  std::vector<int> handles;
  for (int v : all)
    if (v != -2) handles.push_back(v);
  ASSERT_FALSE(handles.empty());
  for (int h : handles) EXPECT_EQ(h, handles[0]) << "members disagree on the handle";
}

// The team's world PEs are exactly world(r) for r in [0, size).
template <class F>
void expect_layout(shoal_team_t team, int size, F world_of) {
  ASSERT_NE(team, SHOAL_TEAM_INVALID);
  EXPECT_EQ(shoal_team_n_pes(team), size);
  int mine = -1;
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(shoal_team_translate_pe(team, r, SHOAL_TEAM_WORLD), world_of(r)) << "team PE " << r;
    EXPECT_EQ(shoal_team_translate_pe(SHOAL_TEAM_WORLD, world_of(r), team), r) << "world PE " << world_of(r);
    EXPECT_EQ(shoal_team_translate_pe(team, r, team), r);
    if (world_of(r) == me()) mine = r;
  }
  EXPECT_EQ(shoal_team_my_pe(team), mine);
  for (int pe = 0; pe < npes(); ++pe) {
    bool in = false;
    for (int r = 0; r < size; ++r) in |= world_of(r) == pe;
    if (!in) {
      EXPECT_EQ(shoal_team_translate_pe(SHOAL_TEAM_WORLD, pe, team), -1) << "world PE " << pe;
    }
  }
  EXPECT_EQ(shoal_team_translate_pe(team, -1, SHOAL_TEAM_WORLD), -1);
  EXPECT_EQ(shoal_team_translate_pe(team, size, SHOAL_TEAM_WORLD), -1);
  EXPECT_EQ(shoal_team_translate_pe(team, 0, SHOAL_TEAM_INVALID), -1);
}

// The device handle says the same as the host calls (strided teams).
void expect_device_handle(shoal_team_t team) {
  shoal::device_team d;
  ASSERT_EQ(shoalx_team_device_handle(team, &d, sizeof d), 0);
  EXPECT_EQ(d.my_pe_in_team, shoal_team_my_pe(team));
  EXPECT_EQ(d.n_pes, shoal_team_n_pes(team));
  for (int r = 0; r < d.n_pes; ++r) EXPECT_EQ(d.world_pe(r), shoal_team_translate_pe(team, r, SHOAL_TEAM_WORLD));
  for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(d.team_pe_of(pe), shoal_team_translate_pe(SHOAL_TEAM_WORLD, pe, team));
}

TEST(Teams, Predefined) {
  int n = npes();
  EXPECT_EQ(shoal_team_my_pe(SHOAL_TEAM_WORLD), me());
  EXPECT_EQ(shoal_team_n_pes(SHOAL_TEAM_WORLD), n);
  // shoalrun starts every PE on this host, and host heaps are all mapped: SHARED == NODE == WORLD;
  // under SHOAL_DISABLE_P2P=1 every peer is a proxy peer, so SHARED is this PE alone; under
  // two_nodes.sh (MP_TWO_NODES=1) the PEs of each parity are one node, and SHARED == NODE.
  const bool proxy = ::proxy();
  const char* two = std::getenv("MP_TWO_NODES");
  const int step = two != nullptr && std::string(two) == "1" ? 2 : 1;
  const int first = me() % step, node_size = (n - first + step - 1) / step;
  EXPECT_EQ(shoal_team_my_pe(SHOALX_TEAM_NODE), me() / step);
  expect_layout(SHOALX_TEAM_NODE, node_size, [&](int r) { return first + r * step; });
  expect_device_handle(SHOALX_TEAM_NODE);
  EXPECT_EQ(shoal_team_my_pe(SHOAL_TEAM_SHARED), proxy ? 0 : me() / step);
  expect_layout(SHOAL_TEAM_SHARED, proxy ? 1 : node_size, [&](int r) { return proxy ? me() : first + r * step; });
  expect_device_handle(SHOAL_TEAM_SHARED);
  expect_device_handle(SHOAL_TEAM_WORLD);
  EXPECT_EQ(shoal_team_my_pe(SHOAL_TEAM_INVALID), -1);
  EXPECT_EQ(shoal_team_n_pes(SHOAL_TEAM_INVALID), -1);
  shoal_team_config_t config{-7};
  EXPECT_EQ(shoal_team_get_config(SHOAL_TEAM_WORLD, SHOAL_TEAM_NUM_CONTEXTS, &config), 0);
  EXPECT_EQ(config.num_contexts, 0);
}

struct strided_case {
  const char* name;
  int start, stride, size;
};

TEST(Teams, SplitStrided) {
  int n = npes();
  std::vector<strided_case> cases = {
      {"evens", 0, 2, (n + 1) / 2},    {"odds", 1, 2, n / 2},
      {"stride 3", 0, 3, (n + 2) / 3}, {"one PE", n - 1, 1, 1},
      {"one PE, stride 0", 1, 0, 1},   {"world", 0, 1, n},
      {"reversed", n - 1, -1, n},      {"odds from the top", n - 1, -2, n / 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    shoal_team_config_t config{3};
    shoal_team_t team = 12345;
    ASSERT_EQ(
        shoal_team_split_strided(SHOAL_TEAM_WORLD, c.start, c.stride, c.size, &config, SHOAL_TEAM_NUM_CONTEXTS, &team),
        0);
    int step = c.size == 1 ? 0 : c.stride;
    auto world_of = [&](int r) { return c.start + r * step; };
    bool member = false;
    for (int r = 0; r < c.size; ++r) member |= world_of(r) == me();
    expect_same_handle_on_members(team, member);
    if (member) {
      // Only the predefined teams are live: the lowest free handle.
      EXPECT_EQ(team, 3);
      expect_layout(team, c.size, world_of);
      expect_device_handle(team);
      shoal_team_config_t got{-1};
      EXPECT_EQ(shoal_team_get_config(team, SHOAL_TEAM_NUM_CONTEXTS, &got), 0);
      EXPECT_EQ(got.num_contexts, 3);
      shoal_team_destroy(team);
    }
  }
}

TEST(Teams, Split2d) {
  int n = npes();
  for (int xrange : {1, 2, 3, n + 1}) {
    SCOPED_TRACE("xrange " + std::to_string(xrange));
    shoal_team_t xteam = 12345, yteam = 12345;
    ASSERT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, xrange, nullptr, 0, &xteam, nullptr, 0, &yteam), 0);
    int xr = std::min(xrange, n);
    int x = me() % xr, y = me() / xr;
    expect_same_handle_on_members(xteam, true);
    expect_same_handle_on_members(yteam, true);
    EXPECT_NE(xteam, yteam);
    int row = std::min(xr, n - y * xr), column = (n - x + xr - 1) / xr;
    expect_layout(xteam, row, [&](int r) { return y * xr + r; });
    expect_layout(yteam, column, [&](int r) { return x + r * xr; });
    EXPECT_EQ(shoal_team_my_pe(xteam), x);
    EXPECT_EQ(shoal_team_my_pe(yteam), y);
    // x-axis team PE -> y-axis team PE: only this PE is in both.
    EXPECT_EQ(shoal_team_translate_pe(xteam, x, yteam), y);
    expect_device_handle(xteam);
    expect_device_handle(yteam);

    // Each row splits its own x-axis team at once (same handle, different teams): every other PE of the row.
    shoal_team_t half = 12345;
    ASSERT_EQ(shoal_team_split_strided(xteam, 0, 2, (row + 1) / 2, nullptr, 0, &half), 0);
    EXPECT_EQ(half != SHOAL_TEAM_INVALID, x % 2 == 0);
    expect_same_handle_on_members(half, x % 2 == 0);
    if (half != SHOAL_TEAM_INVALID) {
      expect_layout(half, (row + 1) / 2, [&](int r) { return y * xr + 2 * r; });
      EXPECT_EQ(shoal_team_translate_pe(half, shoal_team_my_pe(half), xteam), x);
      shoal_team_destroy(half);
    }
    shoal_team_destroy(xteam);
    shoal_team_destroy(yteam);
  }
}

TEST(Teams, SplitOfSplit) {
  int n = npes();
  shoal_team_t evens = SHOAL_TEAM_INVALID, quarter = SHOAL_TEAM_INVALID, single = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &evens), 0);
  int evens_n = (n + 1) / 2;
  int quarter_n = (evens_n + 1) / 2;
  // Only the members of the parent call (OpenSHMEM 1.5); the odd PEs go straight on.
  if (evens != SHOAL_TEAM_INVALID) {
    ASSERT_EQ(shoal_team_split_strided(evens, 0, 2, quarter_n, nullptr, 0, &quarter), 0);
  }
  bool in_quarter = me() % 4 == 0;
  expect_same_handle_on_members(quarter, in_quarter);
  if (in_quarter) {
    expect_layout(quarter, quarter_n, [](int r) { return 4 * r; });
    for (int r = 0; r < shoal_team_n_pes(quarter); ++r) EXPECT_EQ(shoal_team_translate_pe(quarter, r, evens), 2 * r);
    expect_device_handle(quarter);
    // A third level: the last PE of the quarter team alone.
    ASSERT_EQ(shoal_team_split_strided(quarter, quarter_n - 1, 1, 1, nullptr, 0, &single), 0);
  }
  // A non-member may still pass SHOAL_TEAM_INVALID: no team, no communication, a nonzero return (OpenSHMEM's),
  // and the job goes on in abort mode too.
  shoal_team_t none = 12345;
  if (!in_quarter) {
    EXPECT_EQ(shoal_team_split_strided(SHOAL_TEAM_INVALID, 0, 1, 1, nullptr, 0, &none), SHOAL_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(none, SHOAL_TEAM_INVALID);
    shoal_clear_error();
  }
  bool alone = me() == 4 * (quarter_n - 1);
  expect_same_handle_on_members(single, alone);
  if (alone) {
    expect_layout(single, 1, [&](int) { return me(); });
    EXPECT_EQ(shoal_team_translate_pe(single, 0, evens), 2 * (quarter_n - 1));
  }
  shoal_team_destroy(single);
  shoal_team_destroy(quarter);
  shoal_team_destroy(evens);
}

// The evens split a sub-team of their sub-team, use it and destroy it, while the odds at the same
// time split their own team in two dimensions and run collectives on it: no PE waits for the other half.
TEST(Teams, SplitsOfSubTeamsWhileOthersWork) {
  int n = npes();
  int* buf = static_cast<int*>(shoal_calloc(2, sizeof(int)));  // [0]: source, [1]: dest of the reductions
  shoal_team_t row = SHOAL_TEAM_INVALID, half = SHOAL_TEAM_INVALID;
  // The y-axis teams of an xrange-2 grid: the even PEs, and the odd PEs.
  ASSERT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &half), 0);
  const bool even = me() % 2 == 0;
  const int size = shoal_team_n_pes(half);
  ASSERT_EQ(size, even ? (n + 1) / 2 : n / 2);
  if (even) {
    // A sub-team of the evens, then a sub-team of that one (reversed), used, then destroyed.
    shoal_team_t sub = SHOAL_TEAM_INVALID, subsub = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoal_team_split_strided(half, 0, 1, size, nullptr, 0, &sub), 0);
    ASSERT_EQ(shoal_team_split_strided(sub, size - 1, -1, size, nullptr, 0, &subsub), 0);
    EXPECT_EQ(sub, 5);  // the lowest handles free on every even PE (3 and 4 hold the grid)
    EXPECT_EQ(subsub, 6);
    expect_layout(subsub, size, [&](int r) { return 2 * (size - 1 - r); });
    buf[0] = me() + 1;
    ASSERT_EQ(shoal_int_sum_reduce(subsub, &buf[1], &buf[0], 1), 0);
    EXPECT_EQ(buf[1], size * size);  // 1 + 3 + 5 + ... (the even PEs plus one)
    shoal_team_destroy(subsub);
    shoal_team_destroy(sub);
  } else {
    // Meanwhile the odds split their own team in two dimensions (same handles: the teams are disjoint
    // from the evens' ones), reduce on it and destroy it.
    shoal_team_t x = SHOAL_TEAM_INVALID, y = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoal_team_split_2d(half, 1, nullptr, 0, &x, nullptr, 0, &y), 0);
    EXPECT_EQ(x, 5);
    EXPECT_EQ(y, 6);
    EXPECT_EQ(shoal_team_n_pes(x), 1);
    expect_layout(y, size, [](int r) { return 2 * r + 1; });
    buf[0] = me();
    ASSERT_EQ(shoal_int_max_reduce(y, &buf[1], &buf[0], 1), 0);
    EXPECT_EQ(buf[1], 2 * size - 1);
    shoal_team_destroy(x);
    shoal_team_destroy(y);
  }
  shoal_team_destroy(row);
  shoal_team_destroy(half);
  shoal_barrier_all();
  // Everything destroyed everywhere: a world split takes the lowest handle again.
  shoal_team_t again = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &again), 0);
  EXPECT_EQ(again, 3);
  shoal_team_destroy(again);
  shoal_free(buf);
}

// The odd PEs (PE 0, which relays the bootstrap's mail, is not one of them) split a sub-team of a
// sub-team and use it, while the even PEs put to each other and run barriers on their own team, PE 0
// sleeping first: a split needs nothing from the parent's non-members.
TEST(Teams, SubSubTeamOfTheOddsWhileTheEvensPutAndWait) {
  int* buf = static_cast<int*>(shoal_calloc(4, sizeof(int)));
  shoal_team_t row = SHOAL_TEAM_INVALID, half = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &half), 0);
  const int size = shoal_team_n_pes(half), rank = shoal_team_my_pe(half);
  if (me() % 2 == 1) {
    shoal_team_t sub = SHOAL_TEAM_INVALID, subsub = SHOAL_TEAM_INVALID, last = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoal_team_split_strided(half, 0, 1, size, nullptr, 0, &sub), 0);
    ASSERT_EQ(shoal_team_split_strided(sub, size - 1, -1, size, nullptr, 0, &subsub), 0);
    expect_layout(subsub, size, [&](int r) { return 2 * (size - 1 - r) + 1; });
    // A third level: the first PE of the reversed team alone (the other members get no team).
    ASSERT_EQ(shoal_team_split_strided(subsub, 0, 1, 1, nullptr, 0, &last), 0);
    EXPECT_EQ(last != SHOAL_TEAM_INVALID, me() == 2 * size - 1);
    EXPECT_EQ(shoal_team_sync(subsub), 0);
    buf[0] = me();
    ASSERT_EQ(shoal_int_max_reduce(subsub, &buf[1], &buf[0], 1), 0);
    EXPECT_EQ(buf[1], 2 * size - 1);
    shoal_team_destroy(last);
    shoal_team_destroy(subsub);
    shoal_team_destroy(sub);
  } else {
    if (me() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // Ten rounds of a put to the next even PE and a barrier of the evens' team.
    const int next = shoal_team_translate_pe(half, (rank + 1) % size, SHOAL_TEAM_WORLD);
    for (int round = 1; round <= 10; ++round) {
      shoal_int_p(&buf[2 + round % 2], 100 * round + me(), next);
      ASSERT_EQ(shoal_barrier(half), 0);
      const int prev = shoal_team_translate_pe(half, (rank + size - 1) % size, SHOAL_TEAM_WORLD);
      EXPECT_EQ(buf[2 + round % 2], 100 * round + prev) << "round " << round;
    }
  }
  shoal_team_destroy(row);
  shoal_team_destroy(half);
  shoal_barrier_all();
  shoal_free(buf);
}

// Disjoint parents split at once, back to back without a barrier between: the rows of an xrange-2
// grid (pairs of PEs, one handle) each split their row twenty times, alternating split_strided and
// split_2d, while the columns (evens, odds; another handle) split theirs. Every split is told apart by
// its parent, the parent's first member and the parent's split count.
TEST(Teams, ConcurrentAndBackToBackSplitsOfDisjointParents) {
  int n = npes();
  shoal_team_t row = SHOAL_TEAM_INVALID, column = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &column), 0);
  const int row_n = shoal_team_n_pes(row), column_n = shoal_team_n_pes(column);
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    shoal_team_t parent = round % 3 == 2 ? column : row;
    const int psize = parent == row ? row_n : column_n;
    const int prank = shoal_team_my_pe(parent);
    if (round % 2 == 0) {
      // The parent's last PE, or its members from `round % psize` on.
      const int start = round % psize, size = psize - start;
      shoal_team_t t = 12345;
      ASSERT_EQ(shoal_team_split_strided(parent, start, 1, size, nullptr, 0, &t), 0);
      EXPECT_EQ(t != SHOAL_TEAM_INVALID, prank >= start);
      if (t != SHOAL_TEAM_INVALID) {
        EXPECT_EQ(shoal_team_n_pes(t), size);
        EXPECT_EQ(shoal_team_translate_pe(t, shoal_team_my_pe(t), parent), prank);
      }
      shoal_team_destroy(t);
    } else {
      shoal_team_t x = 12345, y = 12345;
      ASSERT_EQ(shoal_team_split_2d(parent, 1 + round / 2 % 3, nullptr, 0, &x, nullptr, 0, &y), 0);
      EXPECT_EQ(shoal_team_translate_pe(x, shoal_team_my_pe(x), parent), prank);
      EXPECT_EQ(shoal_team_translate_pe(y, shoal_team_my_pe(y), parent), prank);
      shoal_team_destroy(x);
      shoal_team_destroy(y);
    }
  }
  shoal_team_destroy(row);
  shoal_team_destroy(column);
  shoal_barrier_all();
  // Nothing is left anywhere: a world split takes the lowest handle.
  shoal_team_t again = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &again), 0);
  EXPECT_EQ(again, 3);
  shoal_team_destroy(again);
}

// Bad splits of a sub-team fail on all its members alike, naming the PE, while the other PEs do not
// take part; the sub-team and the job go on.
TEST(Teams, BadSplitsOfASubTeamFailOnItsMembersOnly) {
  int n = npes();
  if (n < 4) GTEST_SKIP() << "needs an odd team of at least 2 PEs";
  // parity: the odd PEs' team on the odd PEs, the even PEs' team on the even ones (one handle).
  shoal_team_t row = SHOAL_TEAM_INVALID, parity = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &parity), 0);
  if (me() % 2 == 1) {
    const shoal_team_t odds = parity;
    int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
    const int size = shoal_team_n_pes(odds), rank = shoal_team_my_pe(odds);
    shoal_team_t t = 12345;
    // One member disagrees on size: every member fails with a mismatch naming both calls.
    EXPECT_EQ(shoal_team_split_strided(odds, 0, 1, rank == size - 1 ? 1 : size, nullptr, 0, &t), SHOAL_ERR_MISMATCH);
    EXPECT_EQ(t, SHOAL_TEAM_INVALID);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_MISMATCH,
                       {"shoal_team_split_strided", "disagree", "size=1", "size=" + std::to_string(size)});
    // A null output on world PE 3 only: every member fails, naming PE 3.
    EXPECT_EQ(shoal_team_split_strided(odds, 0, 1, size, nullptr, 0, me() == 3 ? nullptr : &t),
              SHOAL_ERR_INVALID_ARGUMENT);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_team_split_strided", "new_team is null on PE 3"});
    // Arguments that leave the parent.
    EXPECT_EQ(shoal_team_split_strided(odds, 0, 1, size + 1, nullptr, 0, &t), SHOAL_ERR_INVALID_ARGUMENT);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT,
                       {"shoal_team_split_strided", "leaves parent_team=" + std::to_string(odds)});
    shoal_team_t x = 12345, y = 12345;
    EXPECT_EQ(shoal_team_split_2d(odds, rank == 0 ? 2 : 1, nullptr, 0, &x, nullptr, 0, &y), SHOAL_ERR_MISMATCH);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_MISMATCH, {"shoal_team_split_2d", "xrange=2", "xrange=1"});
    shoal_set_error_mode(old_mode);
    // The sub-team still works, and a good split of it takes the lowest free handle.
    ASSERT_EQ(shoal_team_split_strided(odds, 0, 1, size, nullptr, 0, &t), 0);
    EXPECT_EQ(t, 5);
    EXPECT_EQ(shoal_team_sync(t), 0);
    shoal_team_destroy(t);
  } else {
    // Meanwhile the evens run barriers on their own team.
    for (int i = 0; i < 20; ++i) ASSERT_EQ(shoal_team_sync(parity), 0);
  }
  const char* msg = nullptr;
  EXPECT_EQ(shoal_last_error(&msg), SHOAL_OK) << (msg != nullptr ? msg : "");
  shoal_team_destroy(row);
  shoal_team_destroy(parity);
  shoal_barrier_all();
}

TEST(Teams, DestroyAndRecreateReuseHandles) {
  int n = npes();
  shoal_team_t a = SHOAL_TEAM_INVALID, b = SHOAL_TEAM_INVALID, c = SHOAL_TEAM_INVALID, d = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &a), 0);
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 1, 1, n - 1, nullptr, 0, &b), 0);
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, me() >= 1 ? 4 : SHOAL_TEAM_INVALID);
  // All but PE 0 destroy a: its handle stays taken while any member holds it.
  if (me() != 0) shoal_team_destroy(a);
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &c), 0);
  EXPECT_EQ(c, 5);
  expect_same_handle_on_members(c, true);
  if (me() == 0) shoal_team_destroy(a);
  // Now 3 is free on every PE: the next split takes it, on every PE alike.
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &d), 0);
  EXPECT_EQ(d, me() % 2 == 0 ? 3 : SHOAL_TEAM_INVALID);
  expect_same_handle_on_members(d, me() % 2 == 0);
  expect_layout(c, n, [](int r) { return r; });
  shoal_team_destroy(b);
  shoal_team_destroy(c);
  shoal_team_destroy(d);
  // Everything destroyed: a fresh split gets 3 again, and creating 60 teams fills the table (the last slot is
  // SHOALX_TEAM_SAME_MYPE_NODE).
  std::vector<shoal_team_t> made;
  for (int i = 0; i < SHOAL_MAX_TEAMS - 4; ++i) {
    shoal_team_t t = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &t), 0);
    EXPECT_EQ(t, 3 + i);
    made.push_back(t);
  }
  int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_team_t full = 12345;
  EXPECT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &full), SHOAL_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(full, SHOAL_TEAM_INVALID);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_OUT_OF_MEMORY, {"shoal_team_split_strided", "team table is full"});
  shoal_set_error_mode(old_mode);
  for (shoal_team_t t : made) shoal_team_destroy(t);
}

// What OpenSHMEM answers with a nonzero return does not stop the job, in abort mode too: a triplet or xrange
// that names no team, SHOAL_TEAM_INVALID as the parent or as get_config's team.
TEST(Teams, RefusedSplitsReturnNonzeroInAbortMode) {
  const int n = npes(), kInval = SHOAL_ERR_INVALID_ARGUMENT;
  shoal_clear_error();
  shoal_team_t t = 12345;
  EXPECT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, n, 1, 0, nullptr, 0, &t), kInval);
  EXPECT_EQ(t, SHOAL_TEAM_INVALID);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "size=0"});
  EXPECT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n + 1, nullptr, 0, &t), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "leaves"});
  shoal_team_t x = 12345, y = 12345;
  EXPECT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 0, nullptr, 0, &x, nullptr, 0, &y), kInval);
  EXPECT_EQ(x, SHOAL_TEAM_INVALID);
  EXPECT_EQ(y, SHOAL_TEAM_INVALID);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_2d", "xrange=0"});
  x = y = 12345;
  EXPECT_EQ(shoal_team_split_2d(SHOAL_TEAM_INVALID, 1, nullptr, 0, &x, nullptr, 0, &y), kInval);
  EXPECT_EQ(x, SHOAL_TEAM_INVALID);
  EXPECT_EQ(y, SHOAL_TEAM_INVALID);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_2d", "parent_team is SHOAL_TEAM_INVALID"});
  shoal_team_config_t config{};
  config.num_contexts = 7;
  EXPECT_EQ(shoal_team_get_config(SHOAL_TEAM_INVALID, SHOAL_TEAM_NUM_CONTEXTS, &config), kInval);
  EXPECT_EQ(config.num_contexts, 7) << "a refused get_config writes nothing";
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_get_config", "SHOAL_TEAM_INVALID"});
  // The job goes on, and a good split after them works.
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &t), 0);
  EXPECT_EQ(shoal_team_sync(t), 0);
  shoal_team_destroy(t);
}

TEST(Teams, BadSplitsFailEverywhereAndLeaveTheJobUsable) {
  int n = npes();
  int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_clear_error();
  auto split = [](shoal_team_t parent, int start, int stride, int size) {
    shoal_team_t t = 12345;
    int rc = shoal_team_split_strided(parent, start, stride, size, nullptr, 0, &t);
    EXPECT_EQ(t, SHOAL_TEAM_INVALID) << "a failed split must give SHOAL_TEAM_INVALID";
    return rc;
  };
  const int kInval = SHOAL_ERR_INVALID_ARGUMENT;
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, 0, 0, 2), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "stride=0"});
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, n, 1, 1), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "start=" + std::to_string(n)});
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, -1, 1, 1), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "start=-1"});
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, 0, 1, 0), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "size=0"});
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, 0, 1, n + 1), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "stride=1", "leaves"});
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, 0, -1, 2), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "stride=-1", "leaves"});
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, 1, 2, n), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "stride=2"});
  EXPECT_EQ(split(99, 0, 1, 1), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "parent_team=99"});
  EXPECT_EQ(split(7, 0, 1, 1), kInval);  // never created
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "parent_team=7", "not a team"});
  // A destroyed parent.
  shoal_team_t gone = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &gone), 0);
  shoal_team_destroy(gone);
  EXPECT_EQ(split(gone, 0, 1, 1), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "parent_team=" + std::to_string(gone)});
  // Bad outputs and configs on one PE only: every PE fails, naming that PE.
  {
    shoal_team_t t = 12345;
    int rc = shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, me() == 1 ? nullptr : &t);
    EXPECT_EQ(rc, kInval);
    EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "new_team is null on PE 1"});
    rc = shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, me() == 0 ? 0x10 : 0, &t);
    EXPECT_EQ(rc, kInval);
    EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "config_mask", "PE 0"});
    rc = shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, SHOAL_TEAM_NUM_CONTEXTS, &t);
    EXPECT_EQ(rc, kInval);
    EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "config is null"});
  }
  // Mismatches: PEs disagree on the arguments, or a member of the parent does not take part.
  EXPECT_EQ(split(SHOAL_TEAM_WORLD, 0, 1, me() == n - 1 ? 1 : n), SHOAL_ERR_MISMATCH);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_MISMATCH,
                     {"shoal_team_split_strided", "disagree", "size=1", "size=" + std::to_string(n)});
  // SHOAL_TEAM_INVALID as the parent is no team and no communication, on one PE alone: nonzero.
  if (me() == 0) {
    EXPECT_EQ(split(SHOAL_TEAM_INVALID, 0, 1, 1), kInval);
    EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_strided", "parent_team is SHOAL_TEAM_INVALID"});
  }
  // split_2d
  {
    shoal_team_t x = 12345, y = 12345;
    EXPECT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 0, nullptr, 0, &x, nullptr, 0, &y), kInval);
    EXPECT_EQ(x, SHOAL_TEAM_INVALID);
    EXPECT_EQ(y, SHOAL_TEAM_INVALID);
    EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_2d", "xrange=0"});
    EXPECT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &x, nullptr, 0, me() == 0 ? nullptr : &y), kInval);
    EXPECT_SHOAL_ERROR(kInval, {"shoal_team_split_2d", "yaxis_team is null on PE 0"});
    EXPECT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, me() == 0 ? 1 : 2, nullptr, 0, &x, nullptr, 0, &y),
              SHOAL_ERR_MISMATCH);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_MISMATCH, {"shoal_team_split_2d", "xrange=1", "xrange=2"});
  }
  // One PE in split_strided while the others are in split_2d: the error names both calls.
  {
    shoal_team_t t = 12345, x = 12345, y = 12345;
    int rc = me() == 0 ? shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &t)
                       : shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &x, nullptr, 0, &y);
    EXPECT_EQ(rc, SHOAL_ERR_MISMATCH);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_MISMATCH, {"shoal_team_split_strided", "shoal_team_split_2d"});
  }
  // Handles: destroy, query and translate.
  shoal_team_destroy(SHOAL_TEAM_WORLD);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_destroy", "SHOAL_TEAM_WORLD", "predefined"});
  shoal_team_destroy(SHOALX_TEAM_NODE);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_destroy", "SHOALX_TEAM_NODE", "predefined"});
  shoal_team_destroy(gone);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_destroy", "team=" + std::to_string(gone)});
  shoal_team_destroy(SHOAL_MAX_TEAMS);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_destroy", "team=" + std::to_string(SHOAL_MAX_TEAMS)});
  EXPECT_EQ(shoal_team_my_pe(99), -1);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_my_pe", "team=99"});
  EXPECT_EQ(shoal_team_n_pes(gone), -1);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_n_pes", "team=" + std::to_string(gone)});
  EXPECT_EQ(shoal_team_translate_pe(SHOAL_TEAM_WORLD, 0, gone), -1);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_translate_pe", "dest_team=" + std::to_string(gone)});
  EXPECT_EQ(shoal_team_translate_pe(-5, 0, SHOAL_TEAM_WORLD), -1);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_translate_pe", "src_team=-5"});
  shoal_team_config_t config;
  EXPECT_EQ(shoal_team_get_config(SHOAL_TEAM_WORLD, SHOAL_TEAM_NUM_CONTEXTS, nullptr), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_get_config", "config is null"});
  EXPECT_EQ(shoal_team_get_config(SHOAL_TEAM_WORLD, 0x100, &config), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoal_team_get_config", "config_mask=0x100"});
  shoal::device_team d;
  EXPECT_EQ(shoalx_team_device_handle(SHOAL_TEAM_WORLD, &d, 3), kInval);
  EXPECT_SHOAL_ERROR(kInval, {"shoalx_team_device_handle", "num_bytes=3"});

  // The job goes on: a barrier, a put, and a good split that takes the lowest handle (no failed split took one).
  shoal_set_error_mode(old_mode);
  shoal_barrier_all();
  shoal_team_t good = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, n, nullptr, 0, &good), 0);
  EXPECT_EQ(good, 3);
  expect_layout(good, n, [](int r) { return r; });
  std::vector<int> all = gather(me() * 10);
  for (int pe = 0; pe < n; ++pe) EXPECT_EQ(all[pe], pe * 10);
  shoal_team_destroy(good);
  const char* msg = nullptr;
  EXPECT_EQ(shoal_last_error(&msg), SHOAL_OK) << (msg != nullptr ? msg : "");
}

}  // namespace
