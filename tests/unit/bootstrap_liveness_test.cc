// Bootstrap jobs of thread PEs: the liveness monitor (dead and silent PEs, PE 0 included),
// abort_job reaching every PE, and the orderly end after finalize.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <latch>
#include <span>
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

TEST(Bootstrap, PeerDeathReachesEveryOtherPe) {
  const int n = 4;
  const auto peer_timeout = 1s;
  test_job job(n);
  std::latch ready(n);  // every PE is past the first barrier before PE 2 dies
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank, 5s, peer_timeout);
    boot->barrier("test_barrier");
    ready.arrive_and_wait();
    if (rank == 2) {
      boot.reset();  // dies: no finalize
      return;
    }
    ASSERT_TRUE(job.logs[rank].wait(peer_timeout)) << "PE " << rank << " was not told";
    // The bootstrap is broken now: collectives fail at once instead of waiting for PE 2.
    EXPECT_THROW(boot->barrier("test_barrier"), shoal::error);
  });
  expect_no_errors(errors);
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(job.logs[r].status, peer_failure_status);
    EXPECT_NE(job.logs[r].why.find("PE 2 died"), std::string::npos) << job.logs[r].why;
    EXPECT_EQ(job.logs[r].count(), 1);
  }
  EXPECT_EQ(job.logs[2].count(), 0);
}

TEST(Bootstrap, RootDeathReachesEveryOtherPe) {
  const int n = 3;
  test_job job(n);
  auto errors = run_connected(job, 5s, 1s, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    if (rank == 0) return;  // destroyed without finalize
    ASSERT_TRUE(job.logs[rank].wait(1s)) << "PE " << rank << " was not told";
  });
  expect_no_errors(errors);
  for (int r : {1, 2}) EXPECT_NE(job.logs[r].why.find("PE 0 died"), std::string::npos) << job.logs[r].why;
}

TEST(Bootstrap, PeerDeathDuringACollectiveFailsIt) {
  const int n = 3;
  test_job job(n);
  auto errors = run_connected(job, 5s, 10s, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    if (rank == 2) {
      std::this_thread::sleep_for(100ms);  // let the others block in the barrier first
      return;
    }
    try {
      boot->barrier("test_barrier");
      ADD_FAILURE() << "PE " << rank << ": barrier passed without PE 2";
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::peer_failure) << e.what();
    }
  });
  expect_no_errors(errors);
}

class BootstrapAbort : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapAbort, ReachesEveryPeIncludingTheCaller) {
  const int n = 4, caller = GetParam();
  test_job job(n);
  auto errors = run_connected(job, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    if (rank == caller) boot->abort_job(7, "PE " + std::to_string(rank) + " gave up");
    ASSERT_TRUE(job.logs[rank].wait(2s)) << "PE " << rank << " was not told";
  });
  expect_no_errors(errors);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(job.logs[r].status, 7);
    EXPECT_EQ(job.logs[r].why, "PE " + std::to_string(caller) + " gave up");
    EXPECT_EQ(job.logs[r].count(), 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, BootstrapAbort, ::testing::Values(0, 3));

// A PE that stops on an error announces it and leaves (closes its connections) right after
// abort_job returns: the others must report its reason, never "PE k died".
TEST_P(BootstrapAbort, CallerThatLeavesAtOnceIsReportedByItsReason) {
  const int n = 4, caller = GetParam();
  test_job job(n);
  auto errors = run_connected(job, [&](int rank, std::unique_ptr<bootstrap>& boot) {
    if (rank == caller) {
      boot->abort_job(1, "PE " + std::to_string(rank) + " stopped: bad input");
      // Returned: PE 0 has taken the reason and the handler ran here too.
      EXPECT_EQ(job.logs[rank].count(), 1) << "abort_job returned before the handler ran";
      return;  // destroyed at once, without finalize
    }
    ASSERT_TRUE(job.logs[rank].wait(2s)) << "PE " << rank << " was not told";
  });
  expect_no_errors(errors);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(job.logs[r].why, "PE " + std::to_string(caller) + " stopped: bad input") << "PE " << r;
}

TEST(Bootstrap, AbortOnASinglePeRunsTheHandler) {
  test_job job(1);
  auto boot = job.connect(0);
  boot->abort_job(3, "alone");
  ASSERT_TRUE(job.logs[0].wait(1s));
  EXPECT_EQ(job.logs[0].status, 3);
}

TEST(Bootstrap, SilentPeerIsDeclaredDead) {
  // PE 1 is played by hand: it joins correctly, then never sends a heartbeat.
  test_job job(2);
  const auto peer_timeout = 300ms;
  std::unique_ptr<bootstrap> root;
  // Read before the root exists, so that the silence clock cannot have started earlier: a delayed main thread
  // only makes the measured time longer, never shorter than the timeout it checks.
  auto start = clock_type::now();
  std::thread root_thread([&] { root = job.connect(0, 5s, peer_timeout); });
  auto join = [&](wire::channel chan) {
    net::unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    for (int i = 0; i < 100 && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&job.uid.addr),
                                         net::length_of(job.uid.addr)) != 0;
         ++i)
      std::this_thread::sleep_for(10ms);
    wire::hello_body hello;
    hello.chan = chan;
    hello.rank = 1;
    hello.size = 2;
    hello.secret = job.uid.secret;
    std::array<uint8_t, wire::hello_bytes> body{};
    wire::encode(hello, body);
    auto msg = wire::build(wire::msg::hello, 0, {}, {body});
    EXPECT_EQ(::send(fd.get(), msg.data(), msg.size(), MSG_NOSIGNAL), static_cast<ssize_t>(msg.size()));
    return fd;
  };
  auto coll = join(wire::channel::collective);
  auto mon = join(wire::channel::monitor);
  root_thread.join();
  ASSERT_TRUE(root);
  ASSERT_TRUE(job.logs[0].wait(5 * peer_timeout));
  EXPECT_GE(clock_type::now() - start, peer_timeout - 50ms);
  EXPECT_NE(job.logs[0].why.find("PE 1 went silent"), std::string::npos) << job.logs[0].why;
  EXPECT_EQ(job.logs[0].status, peer_failure_status);
}

TEST(Bootstrap, SilentRootIsDeclaredDead) {
  // PE 0 is played by hand: it accepts PE 1, welcomes it, then never sends a heartbeat.
  test_job job(2);
  const auto peer_timeout = 300ms;
  std::vector<net::unique_fd> conns;
  std::thread fake_root([&] {
    // Welcomed only once both connections are in, as the real PE 0 does: an early answer on the
    // collective connection reads to the joining PE as a refusal, and it would not open the second.
    int collective = -1;
    for (int i = 0; i < 2; ++i) {
      net::unique_fd fd(::accept(job.listen_fd, nullptr, nullptr));
      ASSERT_TRUE(fd.valid());
      std::array<uint8_t, wire::header_bytes + wire::hello_bytes> raw{};
      ASSERT_EQ(net::recv_all(fd.get(), raw.data(), raw.size(), net::forever, -1), net::io_status::ok);
      auto hello = wire::decode_hello(
          std::span<const uint8_t, wire::hello_bytes>(raw.data() + wire::header_bytes, wire::hello_bytes));
      EXPECT_EQ(hello.secret, job.uid.secret);
      if (hello.chan == wire::channel::collective) collective = fd.get();
      conns.push_back(std::move(fd));
    }
    auto welcome = wire::build(wire::msg::welcome, 0, {}, {});
    ASSERT_EQ(net::send_all(collective, welcome.data(), welcome.size(), net::forever, -1), net::io_status::ok);
  });
  auto start = clock_type::now();  // before PE 1 exists (see SilentPeerIsDeclaredDead)
  auto boot = job.connect(1, 5s, peer_timeout);
  fake_root.join();
  ASSERT_TRUE(job.logs[1].wait(5 * peer_timeout));
  EXPECT_GE(clock_type::now() - start, peer_timeout - 50ms);
  EXPECT_NE(job.logs[1].why.find("PE 0 went silent"), std::string::npos) << job.logs[1].why;
}

TEST(Bootstrap, FinalizedPesMayLeaveAtAnyTime) {
  const int n = 4;
  test_job job(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank, 5s, 500ms);
    boot->barrier("test_barrier");
    boot->finalize();
    // Leave at different times, longer than the peer timeout apart: nobody may call it a death. (A timeout
    // of 500 ms, not less: a monitor thread that a loaded machine holds back must not see silence.)
    std::this_thread::sleep_for(rank * 600ms);
  });
  expect_no_errors(errors);
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.logs[r].count(), 0) << "PE " << r << ": " << job.logs[r].why;
}

}  // namespace
}  // namespace shoal::detail
