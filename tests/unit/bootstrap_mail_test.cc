// Bootstrap jobs of thread PEs: allgather_among, the all-gather among some PEs only (mail through PE
// 0's monitor thread). Disjoint groups at once and back to back, PE 0 busy elsewhere or not a member,
// members in any order; a late member (timeout on every member that came, the bootstrap still usable),
// contributions of different sizes, a member that dies, and bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap_job.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

using namespace testing_job;

struct record {
  int32_t rank;
  uint32_t round;
  uint64_t check;
};

record record_of(int rank, uint32_t round) { return {rank, round, uint64_t(rank) * 1000003u + round}; }

// Runs `rounds` all-gathers among `members` (tag = base + round) and checks every result.
void gather_rounds(bootstrap& boot, const std::vector<int>& members, uint64_t base, uint32_t rounds) {
  for (uint32_t round = 0; round < rounds; ++round) {
    record mine = record_of(boot.rank(), round);
    std::vector<record> all(members.size(), record{-1, 0, 0});
    boot.allgather_among(members, base + round, &mine, all.data(), sizeof(record), "test_allgather_among");
    for (size_t i = 0; i < members.size(); ++i) {
      record want = record_of(members[i], round);
      ASSERT_EQ(all[i].rank, want.rank) << "slot " << i << " round " << round;
      ASSERT_EQ(all[i].round, want.round);
      ASSERT_EQ(all[i].check, want.check);
    }
  }
}

class BootstrapMail : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapMail, GroupsExchangeWhileTheOthersDoSomethingElse) {
  const int n = GetParam();
  test_job job(n);
  auto errors = run_connected(job, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    // Every PE but 0, last to first, while PE 0 sleeps and then waits in a world barrier: the mail
    // goes through PE 0's monitor thread, whatever PE 0's own thread does.
    std::vector<int> not_root;
    for (int r = n - 1; r >= 1; --r) not_root.push_back(r);
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else {
      gather_rounds(*boot, not_root, 1000, 30);
    }
    boot->barrier("test_barrier");

    // Evens and odds at once, back to back, under one tag sequence (the groups' first members differ).
    std::vector<int> mine;
    for (int r = rank % 2; r < n; r += 2) mine.push_back(r);
    gather_rounds(*boot, mine, 2000, 50);
    // Pairs (0, 1), (2, 3), ... with the higher rank first, bigger records; PE 0 alone when n is odd.
    int low = rank - rank % 2;
    std::vector<int> pair = low + 1 < n ? std::vector<int>{low + 1, low} : std::vector<int>{low};
    std::vector<uint64_t> big(512, uint64_t(rank) << 32), all(512 * pair.size());
    boot->allgather_among(pair, 7, big.data(), all.data(), big.size() * sizeof(uint64_t), "test_big");
    for (size_t i = 0; i < pair.size(); ++i)
      for (size_t k = 0; k < big.size(); k += 37) ASSERT_EQ(all[i * big.size() + k], uint64_t(pair[i]) << 32);
    boot->barrier("test_barrier");
    boot->finalize();
  });
  expect_no_errors(errors);
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.logs[r].count(), 0) << "PE " << r << ": " << job.logs[r].why;
}

INSTANTIATE_TEST_SUITE_P(Sizes, BootstrapMail, ::testing::Values(1, 2, 4, 8));

TEST(BootstrapMail, LateMemberTimesOutEveryMemberThatCameAndTheJobGoesOn) {
  const int n = 3;
  test_job job(n);
  std::latch done(n), failed(2);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    bootstrap_options o = job.options(rank);
    // Also bounds the barrier and the rounds after the failed exchange: room for a slow machine.
    o.collective_timeout = std::chrono::seconds(1);
    auto boot = bootstrap::connect(o, job.logs[rank].handler());
    if (rank == 2) {
      failed.wait();  // never enters the exchange
    } else {
      record mine = record_of(rank, 0);
      std::vector<record> all(3);
      try {
        boot->allgather_among({0, 1, 2}, 1, &mine, all.data(), sizeof(record), "test_split");
        ADD_FAILURE() << "PE " << rank << ": no timeout";
      } catch (const shoal::error& e) {
        EXPECT_EQ(e.code(), errc::timeout) << e.what();
        EXPECT_NE(e.message().find("PE(s) 2 did not enter test_split"), std::string::npos) << e.what();
      }
      failed.count_down();
    }
    // Still usable: a world barrier and another exchange among all three.
    boot->barrier("test_barrier");
    gather_rounds(*boot, {2, 1, 0}, 10, 3);
    boot->finalize();
    done.arrive_and_wait();
  });
  expect_no_errors(errors);
}

TEST(BootstrapMail, DifferentSizesFailEveryMember) {
  const int n = 3;
  test_job job(n);
  auto errors = run_connected(job, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    if (rank != 0) {
      std::vector<uint8_t> mine(rank == 2 ? 8 : 16, 1), all(2 * mine.size());
      try {
        boot->allgather_among({1, 2}, 5, mine.data(), all.data(), mine.size(), "test_sizes");
        ADD_FAILURE() << "PE " << rank << ": no mismatch";
      } catch (const shoal::error& e) {
        EXPECT_EQ(e.code(), errc::mismatch) << e.what();
        EXPECT_NE(e.message().find("PE 2 sent 8 bytes while PE 1 sent 16"), std::string::npos) << e.what();
      }
    }
    boot->finalize();  // an orderly end: nobody's leaving is taken for a death
  });
  expect_no_errors(errors);
}

// A member dies while the others wait in the exchange: the first member (waiting for its record) and
// a member waiting for the first member's answer both fail with peer_failure, not a hang.
TEST(BootstrapMail, MemberDeathFailsTheExchange) {
  for (int first : {1, 3}) {
    SCOPED_TRACE("first member " + std::to_string(first));
    const int n = 4;
    test_job job(n);
    auto errors = run_connected(job, 5s, 1s, [&](int rank, std::unique_ptr<bootstrap>& boot) {
      std::vector<int> members = first == 1 ? std::vector<int>{1, 2, 3} : std::vector<int>{3, 2, 1};
      if (rank == 3) {
        std::this_thread::sleep_for(100ms);  // the others are waiting by now
        boot.reset();                        // dies: no finalize
        return;
      }
      if (rank == 0) {
        ASSERT_TRUE(job.logs[0].wait(5s)) << "PE 0 was not told";
        return;
      }
      record mine = record_of(rank, 0);
      std::vector<record> all(3);
      auto t0 = clock_type::now();
      try {
        boot->allgather_among(members, 3, &mine, all.data(), sizeof(record), "test_split");
        ADD_FAILURE() << "PE " << rank << ": exchange passed without PE 3";
      } catch (const shoal::error& e) {
        EXPECT_EQ(e.code(), errc::peer_failure) << e.what();
      }
      EXPECT_LT(clock_type::now() - t0, 4s);
    });
    expect_no_errors(errors);
    for (int r : {0, 1, 2}) EXPECT_NE(job.logs[r].why.find("PE 3 died"), std::string::npos) << job.logs[r].why;
  }
}

TEST(BootstrapMail, BadArgumentsFailLocally) {
  test_job job(2);
  auto errors = run_connected(job, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    uint64_t mine = 1, all[3] = {};
    auto expect_bad = [&](const std::vector<int>& members, const char* text) {
      try {
        boot->allgather_among(members, 1, &mine, all, sizeof mine, "test_bad");
        ADD_FAILURE() << "no error for " << text;
      } catch (const shoal::error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_NE(e.message().find(text), std::string::npos) << e.what();
      }
    };
    expect_bad({1 - rank}, "is not among the PEs");
    expect_bad({rank, 2}, "is PE 2, not a PE");
    expect_bad({rank, 1 - rank, rank}, "listed twice");
    boot->finalize();
  });
  expect_no_errors(errors);
}

}  // namespace
}  // namespace shoal::detail
