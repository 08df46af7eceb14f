// Bootstrap jobs of thread PEs: rendezvous (secrets, sizes, ranks, timeouts) and the collective
// relay (the bytes of each collective, mismatches, finalize against another call, collective timeout).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/net.hpp"
#include "bootstrap/wire.hpp"
#include "bootstrap_job.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

using namespace testing_job;

class BootstrapJob : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapJob, CollectivesDeliverTheRightBytes) {
  const int n = GetParam();
  test_job job(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank);
    ASSERT_EQ(boot->rank(), rank);
    ASSERT_EQ(boot->size(), n);

    struct entry {
      int32_t rank;
      int32_t twice;
    };
    entry mine{rank, 2 * rank + 1};
    std::vector<entry> all(static_cast<size_t>(n), entry{-1, -1});
    boot->allgather(&mine, all.data(), sizeof(entry), "test_allgather");
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(all[r].rank, r);
      EXPECT_EQ(all[r].twice, 2 * r + 1);
    }

    // Large enough to need many partial reads and writes on every connection.
    const size_t big = 256 * 1024;
    std::vector<uint8_t> big_mine(big), big_all(big * n);
    for (size_t i = 0; i < big; ++i) big_mine[i] = static_cast<uint8_t>(i * 31 + rank);
    boot->allgather(big_mine.data(), big_all.data(), big, "test_big_allgather");
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < big; i += 997) ASSERT_EQ(big_all[r * big + i], static_cast<uint8_t>(i * 31 + r));

    boot->allgather(nullptr, nullptr, 0, "test_empty_allgather");

    for (int root = 0; root < n; ++root) {
      std::array<uint64_t, 3> data{};
      if (rank == root) data = {uint64_t(root) + 100, uint64_t(root) * 7, ~uint64_t(root)};
      boot->broadcast(data.data(), sizeof(data), root, "test_broadcast");
      EXPECT_EQ(data[0], uint64_t(root) + 100);
      EXPECT_EQ(data[1], uint64_t(root) * 7);
      EXPECT_EQ(data[2], ~uint64_t(root));
    }
    for (int i = 0; i < 100; ++i) boot->barrier("test_barrier");
    boot->finalize();
    EXPECT_THROW(boot->barrier("after_finalize"), shoal::error);
  });
  expect_no_errors(errors);
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.logs[r].count(), 0) << "PE " << r << ": " << job.logs[r].why;
}

INSTANTIATE_TEST_SUITE_P(Sizes, BootstrapJob, ::testing::Values(1, 2, 4, 8));

TEST(Bootstrap, RejectsBadRankAndSizeLocally) {
  test_job job(2);
  for (auto [rank, size] : {std::pair{2, 2}, {-1, 2}, {0, 0}}) {
    bootstrap_options o = job.options(1);
    o.rank = rank;
    o.size = size;
    try {
      bootstrap::connect(o, {});
      ADD_FAILURE() << "accepted rank " << rank << " size " << size;
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
    }
  }
}

TEST(Bootstrap, WrongSecretIsRefusedAndTheRightPeerStillJoins) {
  test_job job(2);
  std::exception_ptr root_error;
  std::thread root([&] {
    try {
      auto boot = job.connect(0);
      boot->barrier("test_barrier");
      boot->finalize();
    } catch (...) {
      root_error = std::current_exception();
    }
  });
  bootstrap_options intruder = job.options(1);
  intruder.uid.secret[5] ^= 1;
  auto start = clock_type::now();
  try {
    bootstrap::connect(intruder, {});
    ADD_FAILURE() << "a PE with the wrong secret joined";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(e.message().find("secret"), std::string::npos) << e.what();
  }
  EXPECT_LT(clock_type::now() - start, 2s);  // refused, not timed out
  auto errors = run_threads({1}, [&](int rank) {
    auto boot = job.connect(rank);
    boot->barrier("test_barrier");
    boot->finalize();
  });
  root.join();
  expect_no_errors(errors);
  if (auto e = error_of(root_error)) ADD_FAILURE() << "PE 0: " << e->what();
}

TEST(Bootstrap, TimeoutNamesTheRanksThatNeverArrived) {
  test_job job(5);
  auto start = clock_type::now();
  auto errors = run_threads({0, 1, 3}, [&](int rank) { job.connect(rank, 300ms); });
  EXPECT_LT(clock_type::now() - start, 3s);
  expect_errors(errors, {0, 1, 3}, errc::timeout, "PEs 2, 4 never arrived");
}

TEST(Bootstrap, PeerTimesOutWhenRootIsAbsent) {
  test_job job(2);
  ::close(std::exchange(job.listen_fd, -1));  // nobody listens on uid's port any more
  auto start = clock_type::now();
  try {
    job.connect(1, 300ms);
    ADD_FAILURE() << "connected to nobody";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), errc::timeout);
    EXPECT_NE(e.message().find("could not reach PE 0"), std::string::npos) << e.what();
  }
  auto took = clock_type::now() - start;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 2s);
}

TEST(Bootstrap, SizeDisagreementFailsBothSides) {
  test_job job(2);
  auto errors = run_threads({0, 1}, [&](int rank) {
    bootstrap_options o = job.options(rank, 2s);
    if (rank == 1) o.size = 3;
    bootstrap::connect(o, {});
  });
  expect_errors(errors, {0, 1}, errc::mismatch, "3 PEs");
}

TEST(Bootstrap, DuplicateRankFailsEveryone) {
  test_job job(3);
  auto start = clock_type::now();
  // Thread "2" plays a second PE 1.
  auto errors = run_threads({0, 1, 2}, [&](int rank) { job.connect(rank == 2 ? 1 : rank, 2s); });
  EXPECT_LT(clock_type::now() - start, 2s);  // reported at once, not at the timeout
  expect_errors(errors, {0, 1, 2}, errc::invalid_argument, "two PEs claim rank 1");
}

TEST(Bootstrap, MismatchedCollectivesFailEveryPeAndLeaveItUsable) {
  const int n = 4;
  test_job job(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank);
    auto expect_mismatch = [&](auto&& call, std::initializer_list<const char*> words) {
      try {
        call();
        ADD_FAILURE() << "PE " << rank << ": no mismatch reported";
      } catch (const shoal::error& e) {
        EXPECT_EQ(e.code(), errc::mismatch) << e.what();
        for (const char* w : words) EXPECT_NE(e.message().find(w), std::string::npos) << w << " in " << e.what();
      }
    };
    uint64_t mine = rank, all[n] = {};
    // Different calls.
    expect_mismatch(
        [&] {
          if (rank == 2)
            boot->barrier("shoal_barrier_all");
          else
            boot->allgather(&mine, all, sizeof(mine), "shoal_malloc");
        },
        {"PE 2 called shoal_barrier_all", "while PE 0 called shoal_malloc"});
    // Same operation and size, different calls.
    expect_mismatch([&] { boot->allgather(&mine, all, sizeof(mine), rank == 1 ? "shoal_calloc" : "shoal_malloc"); },
                    {"PE 1 called shoal_calloc", "while PE 0 called shoal_malloc"});
    // Same call, different byte counts.
    uint64_t wide[2 * n] = {};
    expect_mismatch(
        [&] {
          if (rank == 3)
            boot->allgather(wide, wide, 2 * sizeof(uint64_t), "shoal_malloc");
          else
            boot->allgather(&mine, all, sizeof(mine), "shoal_malloc");
        },
        {"PE 3 called shoal_malloc (allgather of 16 bytes per PE)", "PE 0 called shoal_malloc (allgather of 8"});
    // Different broadcast roots.
    expect_mismatch([&] { boot->broadcast(&mine, sizeof(mine), rank == 1 ? 1 : 0, "shoal_broadcast"); },
                    {"PE 1 called shoal_broadcast (broadcast of 8 bytes from PE 1)"});
    // A root that is no PE, on every PE: invalid argument, also still usable.
    try {
      boot->broadcast(&mine, sizeof(mine), n + 5, "shoal_broadcast");
      ADD_FAILURE() << "bad root accepted";
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
    // Still in step: a correct round works.
    boot->allgather(&mine, all, sizeof(mine), "shoal_malloc");
    for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], uint64_t(r));
    boot->finalize();
  });
  expect_no_errors(errors);
}

TEST(Bootstrap, FinalizeAgainstAnotherCallBreaksEveryone) {
  const int n = 3;
  test_job job(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank);
    try {
      if (rank == 1)
        boot->finalize();
      else
        boot->barrier("shoal_barrier_all");
      ADD_FAILURE() << "PE " << rank << ": no mismatch";
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::mismatch) << e.what();
      EXPECT_NE(e.message().find("shoal_finalize"), std::string::npos) << e.what();
    }
    if (rank != 1) {
      EXPECT_THROW(boot->barrier("shoal_barrier_all"), shoal::error);
    }
  });
  expect_no_errors(errors);
}

TEST(Bootstrap, CollectiveTimeoutReportsTheLatePe) {
  const int n = 3;
  test_job job(n);
  std::latch done(n);  // nobody leaves (which the others would see as a death) before all are done
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    bootstrap_options o = job.options(rank);
    o.collective_timeout = 500ms;
    auto boot = bootstrap::connect(o, job.logs[rank].handler());
    if (rank == 1) std::this_thread::sleep_for(1500ms);  // late by three timeouts, so a slow machine stays clear
    try {
      boot->barrier("shoal_barrier_all");
      ADD_FAILURE() << "PE " << rank << ": no timeout";
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::timeout) << e.what();
      EXPECT_NE(e.message().find("PE 1 did not enter shoal_barrier_all"), std::string::npos) << e.what();
    }
    done.arrive_and_wait();
  });
  expect_no_errors(errors);
}

}  // namespace
}  // namespace shoal::detail
