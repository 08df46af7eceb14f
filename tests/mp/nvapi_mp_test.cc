// NVSHMEM 3.8's extras in shoal's names, on N host PEs: half atomics (every PE on the same words at once, a
// neighbouring half in the same 4-byte word left intact, round-to-nearest-even adds), counted-signal reset,
// SHOALX_TEAM_SAME_MYPE_NODE against the node team's numbering, and shoalx_team_init over PE sets that are not
// strided (the id's maker in and out of the team), with its bad and mismatched calls failing with the right code
// and a message naming the call and the argument.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }

shoal_half_t half_bits(uint16_t bits) {
  shoal_half_t h;
  h.bits = bits;
  return h;
}
// Small integers and their halves, exactly: 0 .. 2048.
shoal_half_t half_of(int v) {
  if (v == 0) return half_bits(0);
  int e = 0;
  while ((v >> (e + 1)) != 0) ++e;  // 2^e <= v < 2^(e+1)
  const int mant = (v << (10 - e)) & 0x3ff;
  return half_bits(static_cast<uint16_t>(((e + 15) << 10) | mant));
}
int int_of(shoal_half_t h) {
  const int e = (h.bits >> 10) & 0x1f;
  if (e == 0) return 0;
  return ((h.bits & 0x3ff) | 0x400) >> (25 - e);
}

// Every PE's value of v, in PE order (collective).
std::vector<int64_t> gather(int64_t v) {
  const int n = npes();
  auto* buf = static_cast<int64_t*>(shoal_calloc(n, sizeof(int64_t)));
  for (int pe = 0; pe < n; ++pe) shoal_int64_p(&buf[me()], v, pe);
  shoal_barrier_all();
  std::vector<int64_t> all(buf, buf + n);
  shoal_barrier_all();
  shoal_free(buf);
  return all;
}

TEST(HalfAtomics, EveryPeOnTheSameWords) {
  const int n = npes();
  constexpr int kRounds = 20;
  // h[0]: fetch_add/add target, h[1]: swap chain (same 4-byte word as h[0]), h[2]: set target, h[3]: left alone.
  auto* h = static_cast<shoal_half_t*>(shoal_calloc(4, sizeof(shoal_half_t)));
  ASSERT_NE(h, nullptr);
  h[1] = half_of(1000);
  h[3] = half_of(7);
  shoal_barrier_all();
  int64_t fetched_sum = 0, swapped_sum = 0, swapped_in = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (int k = 0; k < n; ++k) {
      const int pe = (me() + k) % n;
      const shoal_half_t old = shoal_half_atomic_fetch_add(&h[0], half_of(1), pe);
      EXPECT_LT(int_of(old), n * kRounds * 2);
      fetched_sum += int_of(old);
      shoal_half_atomic_add(&h[0], half_of(1), pe);
      const int mine = 1 + (me() * kRounds + r) % 900;
      swapped_in += mine;
      swapped_sum += int_of(shoal_half_atomic_swap(&h[1], half_of(mine), pe));
    }
  }
  shoal_barrier_all();
  // Each PE's word got 2 * n * kRounds additions of 1; fetch sees it from everywhere.
  for (int pe = 0; pe < n; ++pe) EXPECT_EQ(int_of(shoal_half_atomic_fetch(&h[0], pe)), 2 * n * kRounds) << pe;
  // The swap chain lost nothing: what came out plus what stayed is what went in plus the starting value.
  int64_t totals[3] = {0, 0, 0};
  for (int64_t v : gather(swapped_sum)) totals[0] += v;
  for (int64_t v : gather(swapped_in)) totals[1] += v;
  for (int64_t v : gather(int_of(h[1]))) totals[2] += v;
  EXPECT_EQ(totals[0] + totals[2], totals[1] + 1000 * n);
  // fetch_add handed out each old value on a word once per addition in between: every PE's word saw its
  // fetch_add olds sum to at most the sum of 0 .. 2nR-1 (adds without fetch fill the gaps).
  int64_t fetched_total = 0;
  for (int64_t v : gather(fetched_sum)) fetched_total += v;
  const int64_t per_word = static_cast<int64_t>(2 * n * kRounds) * (2 * n * kRounds - 1) / 2;
  EXPECT_LE(fetched_total, per_word * n);
  // set on the next PE; the neighbouring half stays as it was.
  shoal_half_atomic_set(&h[2], half_of(me() + 1), (me() + 1) % n);
  shoal_barrier_all();
  EXPECT_EQ(int_of(h[2]), (me() + n - 1) % n + 1);
  EXPECT_EQ(h[3].bits, half_of(7).bits);
  shoal_barrier_all();
  shoal_free(h);
}

TEST(HalfAtomics, AddRoundsToNearestEven) {
  auto* h = static_cast<shoal_half_t*>(shoal_calloc(2, sizeof(shoal_half_t)));
  ASSERT_NE(h, nullptr);
  const int peer = (me() + 1) % npes();                   // each PE works on its neighbour's copy alone
  shoal_half_atomic_set(&h[1], half_bits(0x3c00), peer);  // 1.0
  // 1 + 2^-11: a tie between 1.0 (even) and 1 + 2^-10: stays 1.0.
  EXPECT_EQ(shoal_half_atomic_fetch_add(&h[1], half_bits(0x1000), peer).bits, 0x3c00);
  EXPECT_EQ(shoal_half_atomic_fetch(&h[1], peer).bits, 0x3c00);
  // 1 + 3 * 2^-11: a tie between 1 + 2^-10 (odd) and 1 + 2^-9 (even): 1 + 2^-9.
  shoal_half_atomic_add(&h[1], half_bits(0x1600), peer);
  EXPECT_EQ(shoal_half_atomic_fetch(&h[1], peer).bits, 0x3c02);
  // Past the largest half: inf.
  shoal_half_atomic_set(&h[1], half_bits(0x7bff), peer);  // 65504
  shoal_half_atomic_add(&h[1], half_bits(0x7bff), peer);
  EXPECT_EQ(shoal_half_atomic_swap(&h[1], half_bits(0), peer).bits, 0x7c00);
  EXPECT_EQ(h[0].bits, 0);  // the other half of the word
  shoal_barrier_all();
  shoal_free(h);
}

TEST(HalfAtomics, BadArgumentsNameTheCall) {
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_half_t local{};
  shoal_half_atomic_add(&local, half_of(1), 0);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_half_atomic_add", "dest"});
  auto* h = static_cast<shoal_half_t*>(shoal_calloc(1, sizeof(shoal_half_t)));
  (void)shoal_half_atomic_fetch(h, npes());
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_half_atomic_fetch", "pe"});
  shoal_set_error_mode(old_mode);
  shoal_barrier_all();
  shoal_free(h);
}

TEST(SignalCountedReset, RearmsACountedSignal) {
  const int n = npes();
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(sig, nullptr);
  for (int round = 0; round < 3; ++round) {
    // Every PE counts one into every PE's signal.
    for (int k = 0; k < n; ++k) shoalx_signal_op(sig, 1, SHOAL_SIGNAL_ADD, (me() + k) % n);
    EXPECT_EQ(shoal_signal_wait_until(sig, SHOAL_CMP_GE, static_cast<uint64_t>(n)), static_cast<uint64_t>(n));
    shoalx_signal_counted_reset(sig);
    EXPECT_EQ(shoal_signal_fetch(sig), 0u);
    shoal_barrier_all();  // every signal is reset before anyone counts into it again
  }
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  uint64_t local = 5;
  shoalx_signal_counted_reset(&local);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_signal_counted_reset", "sig_addr"});
  EXPECT_EQ(local, 5u);
  shoal_set_error_mode(old_mode);
  shoal_barrier_all();
  shoal_free(sig);
}

TEST(Teams, SameMypeNode) {
  const int n = npes();
  // Each PE's index on its node (its number in the node team), then the PEs that share mine.
  const std::vector<int64_t> index = gather(shoal_team_my_pe(SHOALX_TEAM_NODE));
  std::vector<int> expected;
  for (int pe = 0; pe < n; ++pe)
    if (index[pe] == index[me()]) expected.push_back(pe);
  const shoal_team_t t = SHOALX_TEAM_SAME_MYPE_NODE;
  ASSERT_EQ(shoal_team_n_pes(t), static_cast<int>(expected.size()));
  for (size_t r = 0; r < expected.size(); ++r) {
    EXPECT_EQ(shoal_team_translate_pe(t, static_cast<int>(r), SHOAL_TEAM_WORLD), expected[r]);
    if (expected[r] == me()) {
      EXPECT_EQ(shoal_team_my_pe(t), static_cast<int>(r));
    }
  }
  for (int pe = 0; pe < n; ++pe) {
    if (index[pe] != index[me()]) {
      EXPECT_EQ(shoal_team_translate_pe(SHOAL_TEAM_WORLD, pe, t), SHOAL_PE_INVALID);
    }
  }
  // A team collective over it works, and it is predefined.
  EXPECT_EQ(shoal_team_sync(t), 0);
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_team_destroy(t);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_team_destroy", "predefined"});
  shoal_set_error_mode(old_mode);
  EXPECT_EQ(shoal_team_n_pes(t), static_cast<int>(expected.size()));
  shoal_barrier_all();
}

// PE `maker` makes an id and puts it to every PE (collective).
shoal_team_uniqueid_t share_id(int maker) {
  auto* slot = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  if (me() == maker) {
    shoal_team_uniqueid_t id = 0;
    EXPECT_EQ(shoalx_team_get_uniqueid(&id), 0);
    EXPECT_NE(id, 0u);
    for (int pe = 0; pe < npes(); ++pe) shoal_uint64_p(slot, id, pe);
  }
  shoal_barrier_all();
  const uint64_t id = *slot;
  shoal_barrier_all();
  shoal_free(slot);
  return id;
}

// The team of `order` (world PEs by team index) made with shoalx_team_init by its members only; checked against
// order, with a reduction over it.
void init_and_check(int maker, const std::vector<int>& order) {
  const shoal_team_uniqueid_t id = share_id(maker);
  auto* buf = static_cast<int*>(shoal_calloc(2, sizeof(int)));  // collective: before the non-members leave
  int index = -1;
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] == me()) index = static_cast<int>(i);
  if (index < 0) {
    shoal_barrier_all();
    shoal_free(buf);
    return;
  }
  shoal_team_t team = 12345;
  shoal_team_config_t config{};
  config.num_contexts = 2;
  ASSERT_EQ(shoalx_team_init(&team, id, &config, SHOAL_TEAM_NUM_CONTEXTS, static_cast<int>(order.size()), index), 0);
  ASSERT_NE(team, SHOAL_TEAM_INVALID);
  EXPECT_EQ(shoal_team_my_pe(team), index);
  EXPECT_EQ(shoal_team_n_pes(team), static_cast<int>(order.size()));
  for (size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(shoal_team_translate_pe(team, static_cast<int>(i), SHOAL_TEAM_WORLD), order[i]);
  shoal_team_config_t got{};
  EXPECT_EQ(shoal_team_get_config(team, SHOAL_TEAM_NUM_CONTEXTS, &got), 0);
  EXPECT_EQ(got.num_contexts, 2);
  // Sum of the members' world PEs, over the new team.
  buf[0] = me();
  int expected = 0;
  for (int pe : order) expected += pe;
  EXPECT_EQ(shoal_int_sum_reduce(team, &buf[1], &buf[0], 1), 0);
  EXPECT_EQ(buf[1], expected);
  EXPECT_EQ(shoal_team_sync(team), 0);
  shoal_team_destroy(team);
  shoal_barrier_all();
  shoal_free(buf);
}

// The world's PEs in the order (3 * pe + 1) % n (a permutation for n = 2, 4, 8; not strided for n >= 4).
std::vector<int> shuffled(bool without_pe1) {
  const int n = npes();
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    const int pe = (3 * i + 1) % n;
    if (!(without_pe1 && pe == 1)) order.push_back(pe);
  }
  return order;
}

TEST(TeamInit, AnyPeSetMakerInOrOut) {
  const int n = npes();
  init_and_check(0, shuffled(false));
  if (n >= 3) {
    init_and_check(1, shuffled(true));  // made by PE 1, which is not in the team
    init_and_check(0, shuffled(true));
  }
  // One member: the maker alone.
  if (me() == n - 1) {
    shoal_team_uniqueid_t id = 0;
    ASSERT_EQ(shoalx_team_get_uniqueid(&id), 0);
    shoal_team_t alone = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoalx_team_init(&alone, id, nullptr, 0, 1, 0), 0);
    EXPECT_EQ(shoal_team_n_pes(alone), 1);
    EXPECT_EQ(shoal_team_translate_pe(alone, 0, SHOAL_TEAM_WORLD), me());
    shoal_team_destroy(alone);
  }
  shoal_barrier_all();
}

TEST(TeamInit, IdsAreRecycledAndBounded) {
  // Ids used by a finished team_init free their record: many more than SHOALX_TEAM_INIT_IDS in turn.
  for (int i = 0; i < 3 * SHOALX_TEAM_INIT_IDS; ++i) {
    shoal_team_uniqueid_t id = 0;
    ASSERT_EQ(shoalx_team_get_uniqueid(&id), 0);
    shoal_team_t t = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoalx_team_init(&t, id, nullptr, 0, 1, 0), 0);
    shoal_team_destroy(t);
  }
  // Pending ids are bounded.
  std::vector<shoal_team_uniqueid_t> pending(SHOALX_TEAM_INIT_IDS);
  for (auto& id : pending) ASSERT_EQ(shoalx_team_get_uniqueid(&id), 0);
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_team_uniqueid_t extra = 0;
  EXPECT_EQ(shoalx_team_get_uniqueid(&extra), SHOAL_ERR_OUT_OF_MEMORY);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_OUT_OF_MEMORY, {"shoalx_team_get_uniqueid", "pending"});
  shoal_set_error_mode(old_mode);
  for (auto id : pending) {  // used: free again
    shoal_team_t t = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoalx_team_init(&t, id, nullptr, 0, 1, 0), 0);
    shoal_team_destroy(t);
  }
  shoal_barrier_all();
}

TEST(TeamInit, BadAndMismatchedCalls) {
  const int n = npes();
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_team_t t = 12345;
  EXPECT_EQ(shoalx_team_init(&t, 0, nullptr, 0, 1, 0), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t, SHOAL_TEAM_INVALID);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_init", "uniqueid=0x0"});
  EXPECT_EQ(shoalx_team_get_uniqueid(nullptr), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_get_uniqueid", "uniqueid is null"});
  shoal_team_uniqueid_t id = 0;
  ASSERT_EQ(shoalx_team_get_uniqueid(&id), 0);
  EXPECT_EQ(shoalx_team_init(nullptr, id, nullptr, 0, 1, 0), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_init", "team is null"});
  EXPECT_EQ(shoalx_team_init(&t, id, nullptr, 0, 2, 2), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_init", "my_index=2"});
  EXPECT_EQ(shoalx_team_init(&t, id, nullptr, 0, n + 1, 0), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_init", "n_pes_in_team"});
  EXPECT_EQ(shoalx_team_init(&t, id, nullptr, 4, 1, 0), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_init", "config_mask"});
  // The id is still good after those (nothing reached its record): use it, then it is stale.
  ASSERT_EQ(shoalx_team_init(&t, id, nullptr, 0, 1, 0), 0);
  shoal_team_destroy(t);
  EXPECT_EQ(shoalx_team_init(&t, id, nullptr, 0, 1, 0), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_SHOAL_ERROR(SHOAL_ERR_INVALID_ARGUMENT, {"shoalx_team_init", "is not live"});
  shoal_barrier_all();

  // Every PE passes index 0: all fail alike, naming the mismatch; the job stays usable.
  id = share_id(0);
  EXPECT_EQ(shoalx_team_init(&t, id, nullptr, 0, n, 0), n == 1 ? 0 : SHOAL_ERR_MISMATCH);
  if (n > 1) {
    EXPECT_EQ(t, SHOAL_TEAM_INVALID);
    EXPECT_SHOAL_ERROR(SHOAL_ERR_MISMATCH, {"shoalx_team_init", "same my_index"});
  }
  shoal_barrier_all();
  shoal_set_error_mode(old_mode);
  // Still usable.
  init_and_check(n - 1, shuffled(false));
}

}  // namespace
