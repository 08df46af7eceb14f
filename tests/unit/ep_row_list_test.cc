// The EP layer's row_list (ep/normal/row_list.hpp): the order in which a channel handles the rows of several
// ranks. Every position maps to one row and every row to one position, each rank's rows keep their order,
// count_before agrees with at(), shift 0 is rank after rank, and with parts every rank's share of any prefix
// stays within one part of its share of the whole.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "normal/row_list.hpp"

namespace {

using shoal::ep::detail::kInterleaveShift;
using shoal::ep::detail::row_list;

template <int R>
row_list<R> make(const std::vector<int>& n, int shift) {
  row_list<R> l{};
  for (int r = 0; r < R; ++r) l.n[r] = r < static_cast<int>(n.size()) ? n[r] : 0;
  l.shift = shift;
  return l;
}

// Every property, for one list.
template <int R>
void check(const row_list<R>& l) {
  const int total = l.total();
  std::vector<int> next(R, 0);         // the next row expected of each rank
  std::vector<int> seen_before(R, 0);  // rows of each rank at positions [0, i)
  std::set<std::pair<int, int>> rows;
  for (int i = 0; i < total; ++i) {
    for (int r = 0; r < R; ++r) ASSERT_EQ(l.count_before(r, i), seen_before[r]) << "rank " << r << " position " << i;
    int r = -1, j = -1;
    l.at(i, r, j);
    ASSERT_GE(r, 0);
    ASSERT_LT(r, R);
    ASSERT_EQ(j, next[r]) << "rank " << r << "'s rows out of order at position " << i;
    ASSERT_LT(j, l.n[r]);
    ASSERT_TRUE(rows.insert({r, j}).second);
    ++next[r];
    ++seen_before[r];
    // Each rank's share of positions [0, i] is within one part (plus rounding: a row of it, a row of every
    // rank) of the share of the whole list.
    const int parts = 1 << l.shift;
    if (l.shift > 0)
      for (int k = 0; k < R; ++k) {
        const double share = static_cast<double>(seen_before[k]) / (l.n[k] ? l.n[k] : 1);
        const double done = static_cast<double>(i + 1) / total;
        if (l.n[k] > 0) {
          EXPECT_LE(std::abs(share - done), 1.0 / parts + 1.0 / l.n[k] + static_cast<double>(R) / total + 1e-9)
              << "rank " << k << " at " << i;
        }
      }
  }
  for (int r = 0; r < R; ++r) {
    EXPECT_EQ(next[r], l.n[r]);
    EXPECT_EQ(l.count_before(r, total), l.n[r]);
    EXPECT_EQ(l.count_before(r, total + 5), l.n[r]);
    EXPECT_EQ(l.count_before(r, 0), 0);
  }
}

TEST(EpRowList, RankAfterRankWithoutParts) {
  const auto l = make<4>({3, 0, 2, 1}, 0);
  const std::vector<std::pair<int, int>> want{{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1}, {3, 0}};
  ASSERT_EQ(l.total(), 6);
  for (int i = 0; i < 6; ++i) {
    int r, j;
    l.at(i, r, j);
    EXPECT_EQ(std::make_pair(r, j), want[i]) << "position " << i;
  }
  check(l);
}

TEST(EpRowList, PartsAlternateEqualRanks) {
  // Two ranks of 64 rows, 64 parts: one row of each in turn.
  const auto l = make<2>({64, 64}, kInterleaveShift);
  for (int i = 0; i < 128; ++i) {
    int r, j;
    l.at(i, r, j);
    EXPECT_EQ(r, i % 2);
    EXPECT_EQ(j, i / 2);
  }
  check(l);
}

TEST(EpRowList, EdgeCases) {
  check(make<2>({0, 0}, kInterleaveShift));
  check(make<2>({1, 0}, kInterleaveShift));
  check(make<2>({0, 1}, kInterleaveShift));
  check(make<8>({1, 1, 1, 1, 1, 1, 1, 1}, kInterleaveShift));
  check(make<8>({0, 0, 0, 0, 0, 0, 0, 1000}, kInterleaveShift));
  check(make<4>({5000, 1, 0, 37}, kInterleaveShift));
}

TEST(EpRowList, RandomCounts) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::uniform_int_distribution<int> count(0, trial % 3 == 0 ? 20 : 700);
    std::vector<int> n(8);
    for (int& v : n) v = count(rng);
    const int shift = trial % 2 == 0 ? kInterleaveShift : trial % 7;
    check(make<8>(n, shift));
    check(make<4>({n[0], n[1], n[2], n[3]}, shift));
    check(make<2>({n[4], n[5]}, shift));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
