// Bootstrap: unique id forms, wire format, and whole jobs of PEs run as threads of this process
// (rendezvous, collectives, mismatches, timeouts, dead and silent PEs, abort).
#include "bootstrap/bootstrap.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "bootstrap/net.hpp"
#include "bootstrap/wire.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

sockaddr_storage addr_of(const char* host, uint16_t port) {
  sockaddr_storage a{};
  EXPECT_TRUE(net::parse_numeric(host, port, &a));
  return a;
}

// ---- unique id ----

TEST(UniqueId, TextRoundTripIpv4) {
  unique_id id = unique_id::generate(addr_of("127.0.0.1", 4242));
  std::string text = id.to_string();
  EXPECT_TRUE(text.starts_with("shoal-uid-v1:127.0.0.1:4242:")) << text;
  EXPECT_EQ(text.size(), std::string("shoal-uid-v1:127.0.0.1:4242:").size() + 32);
  EXPECT_EQ(id.address_string(), "127.0.0.1:4242");
  unique_id back = unique_id::parse(text);
  EXPECT_EQ(back.secret, id.secret);
  EXPECT_EQ(back.to_string(), text);
}

TEST(UniqueId, TextRoundTripIpv6) {
  unique_id id = unique_id::generate(addr_of("::1", 65535));
  std::string text = id.to_string();
  EXPECT_TRUE(text.starts_with("shoal-uid-v1:[::1]:65535:")) << text;
  unique_id back = unique_id::parse(text);
  EXPECT_EQ(back.addr.ss_family, AF_INET6);
  EXPECT_EQ(back.secret, id.secret);
  EXPECT_EQ(back.to_string(), text);
}

TEST(UniqueId, SecretsAreRandom) {
  auto a = unique_id::generate(addr_of("127.0.0.1", 1));
  auto b = unique_id::generate(addr_of("127.0.0.1", 1));
  EXPECT_NE(a.secret, b.secret);
  EXPECT_NE(a.secret, (std::array<uint8_t, 16>{}));
}

TEST(UniqueId, RejectsMalformedText) {
  const std::string hex = "00112233445566778899aabbccddeeff";
  const std::vector<std::string> bad = {
      "",
      "shoal-uid-v2:127.0.0.1:80:" + hex,
      "shoal-uid-v1:127.0.0.1:" + hex,
      "shoal-uid-v1:127.0.0.1:0:" + hex,
      "shoal-uid-v1:127.0.0.1:65536:" + hex,
      "shoal-uid-v1:127.0.0.1:8x:" + hex,
      "shoal-uid-v1:127.0.0.1:80:" + hex.substr(1),
      "shoal-uid-v1:127.0.0.1:80:" + hex + "0",
      "shoal-uid-v1:127.0.0.1:80:g0112233445566778899aabbccddeeff",
      "shoal-uid-v1:localhost:80:" + hex,
      "shoal-uid-v1:::1:80:" + hex,
      "shoal-uid-v1:[127.0.0.1]:80:" + hex,
      "shoal-uid-v1:300.0.0.1:80:" + hex,
  };
  for (const auto& text : bad) {
    try {
      unique_id::parse(text, "TEST_VAR");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << text;
      EXPECT_EQ(e.call(), "TEST_VAR") << text;
    }
  }
  EXPECT_NO_THROW(unique_id::parse("shoal-uid-v1:10.1.2.3:80:" + hex));
}

TEST(UniqueId, BinaryRoundTrip) {
  for (const char* host : {"10.20.30.40", "fe80::1"}) {
    unique_id id = unique_id::generate(addr_of(host, 31337));
    uint8_t bytes[128];
    id.to_bytes(bytes);
    unique_id back = unique_id::from_bytes(bytes, "uid");
    EXPECT_EQ(back.to_string(), id.to_string()) << host;
  }
}

TEST(UniqueId, RejectsGarbageBytes) {
  uint8_t zeros[128] = {};
  EXPECT_THROW(unique_id::from_bytes(zeros, "uid"), shoal::error);
  uint8_t noise[128];
  for (int i = 0; i < 128; ++i) noise[i] = static_cast<uint8_t>(i * 37 + 11);
  EXPECT_THROW(unique_id::from_bytes(noise, "uid"), shoal::error);

  uint8_t good[128];
  unique_id::generate(addr_of("127.0.0.1", 999)).to_bytes(good);
  // Any single flipped byte anywhere (magic, address, port, secret, checksum, padding) is caught.
  for (int i = 0; i < 128; ++i) {
    uint8_t copy[128];
    std::memcpy(copy, good, sizeof(copy));
    copy[i] ^= 0x40;
    try {
      unique_id::from_bytes(copy, "my_uid");
      ADD_FAILURE() << "accepted a flip of byte " << i;
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      EXPECT_EQ(e.call(), "my_uid");
    }
  }
}

TEST(OpenListener, BindsAnyPortWithCloexec) {
  sockaddr_storage bound{};
  net::unique_fd fd(open_listener("127.0.0.1", 0, &bound));
  ASSERT_TRUE(fd.valid());
  EXPECT_NE(net::port_of(bound), 0);
  EXPECT_EQ(net::host_of(bound), "127.0.0.1");
  EXPECT_TRUE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC);
  int accepting = 0;
  socklen_t len = sizeof(accepting);
  ASSERT_EQ(::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len), 0);
  EXPECT_EQ(accepting, 1);
  EXPECT_THROW(open_listener("127.0.0.1", net::port_of(bound), nullptr), shoal::error);  // port taken
}

// ---- wire format ----

TEST(Wire, HeaderIsLittleEndian) {
  wire::header h;
  h.type = wire::msg::collective;
  h.flags = 0x0102;
  h.seq = 0x03040506;
  h.call_bytes = 12;
  h.payload_bytes = 0x0708090a0b0c0d0eull;
  std::array<uint8_t, wire::header_bytes> raw{};
  wire::encode(h, raw);
  const std::array<uint8_t, wire::header_bytes> expected = {'S',  'H',  'B',  'T',  4,    0,    0x02, 0x01,
                                                            0x06, 0x05, 0x04, 0x03, 12,   0,    0,    0,
                                                            0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07};
  EXPECT_EQ(raw, expected);
  EXPECT_FALSE(wire::decode_header(raw));  // over max_payload_bytes
  h.payload_bytes = 0xfedcba98;
  wire::encode(h, raw);
  auto back = wire::decode_header(raw);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->type, wire::msg::collective);
  EXPECT_EQ(back->flags, 0x0102);
  EXPECT_EQ(back->seq, 0x03040506u);
  EXPECT_EQ(back->call_bytes, 12u);
  EXPECT_EQ(back->payload_bytes, 0xfedcba98u);
}

TEST(Wire, DecodeRejectsForeignHeaders) {
  wire::header h;
  h.type = wire::msg::heartbeat;
  std::array<uint8_t, wire::header_bytes> raw{};
  wire::encode(h, raw);
  ASSERT_TRUE(wire::decode_header(raw));
  auto bad_magic = raw;
  bad_magic[0] ^= 1;
  EXPECT_FALSE(wire::decode_header(bad_magic));
  auto bad_type = raw;
  bad_type[4] = 0;
  EXPECT_FALSE(wire::decode_header(bad_type));
  bad_type[4] = wire::msg_max + 1;
  EXPECT_FALSE(wire::decode_header(bad_type));
  h.call_bytes = wire::max_call_bytes + 1;
  wire::encode(h, raw);
  EXPECT_FALSE(wire::decode_header(raw));
  h.call_bytes = 0;
  h.payload_bytes = wire::max_payload_bytes + 1;
  wire::encode(h, raw);
  EXPECT_FALSE(wire::decode_header(raw));
}

TEST(Wire, BodiesRoundTrip) {
  wire::hello_body hello;
  hello.chan = wire::channel::monitor;
  hello.rank = 7;
  hello.size = 8;
  for (int i = 0; i < 16; ++i) hello.secret[i] = static_cast<uint8_t>(i + 1);
  std::array<uint8_t, wire::hello_bytes> raw{};
  wire::encode(hello, raw);
  EXPECT_EQ(raw[8], 7);  // rank at offset 8, little-endian
  auto h2 = wire::decode_hello(raw);
  EXPECT_EQ(h2.version, wire::protocol_version);
  EXPECT_EQ(h2.chan, wire::channel::monitor);
  EXPECT_EQ(h2.rank, 7);
  EXPECT_EQ(h2.size, 8);
  EXPECT_EQ(h2.secret, hello.secret);

  wire::coll_desc d;
  d.operation = wire::op::broadcast;
  d.root = -3;
  d.bytes = 1ull << 40;
  d.flags = wire::coll_flag_null_buffer;
  std::array<uint8_t, wire::coll_desc_bytes> draw{};
  wire::encode(d, draw);
  auto d2 = wire::decode_coll_desc(draw);
  EXPECT_EQ(d2.operation, wire::op::broadcast);
  EXPECT_EQ(d2.root, -3);
  EXPECT_EQ(d2.bytes, 1ull << 40);
  EXPECT_EQ(d2.flags, wire::coll_flag_null_buffer);

  auto msg = wire::build(wire::msg::collective, 5, "shoal_malloc", {wire::as_bytes("abc")});
  ASSERT_EQ(msg.size(), wire::header_bytes + 12 + 3);
  auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(msg.data(), wire::header_bytes));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->seq, 5u);
  EXPECT_EQ(h->call_bytes, 12u);
  EXPECT_EQ(h->payload_bytes, 3u);
  EXPECT_EQ(std::string(msg.begin() + wire::header_bytes, msg.begin() + wire::header_bytes + 12), "shoal_malloc");
}

// ---- jobs of thread PEs ----

// Records the failure handler's calls for one PE.
struct failure_log {
  std::mutex m;
  std::condition_variable cv;
  int calls = 0;
  int status = 0;
  std::string why;

  failure_handler handler() {
    return [this](int s, const std::string& w) {
      std::lock_guard lock(m);
      if (++calls == 1) {
        status = s;
        why = w;
      }
      cv.notify_all();
    };
  }
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, timeout, [&] { return calls > 0; });
  }
  int count() {
    std::lock_guard lock(m);
    return calls;
  }
};

// One job: PE 0's listener (opened up front, as shoalrun does) and the unique id.
struct test_job {
  int size;
  unique_id uid;
  int listen_fd = -1;
  std::vector<failure_log> logs;

  explicit test_job(int num_pes) : size(num_pes), logs(static_cast<size_t>(num_pes)) {
    sockaddr_storage bound{};
    listen_fd = open_listener("127.0.0.1", 0, &bound);
    uid = unique_id::generate(bound);
  }
  ~test_job() {
    if (listen_fd >= 0) ::close(listen_fd);
  }
  bootstrap_options options(int rank, std::chrono::milliseconds connect_timeout = 5s,
                            std::chrono::milliseconds peer_timeout = 5s) {
    bootstrap_options o;
    o.rank = rank;
    o.size = size;
    o.uid = uid;
    o.connect_timeout = connect_timeout;
    o.peer_timeout = peer_timeout;
    if (rank == 0) o.listen_fd = std::exchange(listen_fd, -1);  // connect() owns it
    return o;
  }
  std::unique_ptr<bootstrap> connect(int rank, std::chrono::milliseconds connect_timeout = 5s,
                                     std::chrono::milliseconds peer_timeout = 5s) {
    return bootstrap::connect(options(rank, connect_timeout, peer_timeout), logs[rank].handler());
  }
};

// Runs fn(rank) for each listed rank on its own thread; returns what each threw.
template <class F>
std::vector<std::exception_ptr> run_threads(const std::vector<int>& ranks, F fn) {
  int max_rank = ranks.empty() ? 0 : *std::max_element(ranks.begin(), ranks.end());
  std::vector<std::exception_ptr> errors(static_cast<size_t>(max_rank + 1));
  std::vector<std::thread> threads;
  for (int r : ranks)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<int> all_ranks(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::optional<shoal::error> error_of(const std::exception_ptr& p) {
  if (!p) return std::nullopt;
  try {
    std::rethrow_exception(p);
  } catch (const shoal::error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a shoal::error: " << e.what();
  }
  return std::nullopt;
}

void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    if (auto e = error_of(errors[r])) ADD_FAILURE() << "PE " << r << ": " << e->what();
}

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
  for (int rank : {0, 1, 3}) {
    auto e = error_of(errors[rank]);
    ASSERT_TRUE(e) << "PE " << rank << " did not fail";
    EXPECT_EQ(e->code(), errc::timeout) << e->what();
    EXPECT_NE(e->message().find("PEs 2, 4 never arrived"), std::string::npos) << e->what();
  }
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
  for (int rank : {0, 1}) {
    auto e = error_of(errors[rank]);
    ASSERT_TRUE(e) << "PE " << rank << " did not fail";
    EXPECT_EQ(e->code(), errc::mismatch) << e->what();
    EXPECT_NE(e->message().find("3 PEs"), std::string::npos) << e->what();
  }
}

TEST(Bootstrap, DuplicateRankFailsEveryone) {
  test_job job(3);
  auto start = clock_type::now();
  // Thread "2" plays a second PE 1.
  auto errors = run_threads({0, 1, 2}, [&](int rank) { job.connect(rank == 2 ? 1 : rank, 2s); });
  EXPECT_LT(clock_type::now() - start, 2s);  // reported at once, not at the timeout
  for (int t : {0, 1, 2}) {
    auto e = error_of(errors[t]);
    ASSERT_TRUE(e) << "thread " << t << " did not fail";
    EXPECT_EQ(e->code(), errc::invalid_argument) << e->what();
    EXPECT_NE(e->message().find("two PEs claim rank 1"), std::string::npos) << e->what();
  }
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
    o.collective_timeout = 200ms;
    auto boot = bootstrap::connect(o, job.logs[rank].handler());
    if (rank == 1) std::this_thread::sleep_for(400ms);
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

// ---- liveness ----

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
  std::latch ready(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank, 5s, 1s);
    boot->barrier("test_barrier");
    ready.arrive_and_wait();
    if (rank == 0) return;  // destroyed without finalize
    ASSERT_TRUE(job.logs[rank].wait(1s)) << "PE " << rank << " was not told";
  });
  expect_no_errors(errors);
  for (int r : {1, 2}) EXPECT_NE(job.logs[r].why.find("PE 0 died"), std::string::npos) << job.logs[r].why;
}

TEST(Bootstrap, PeerDeathDuringACollectiveFailsIt) {
  const int n = 3;
  test_job job(n);
  std::latch ready(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank, 5s, 10s);
    boot->barrier("test_barrier");
    ready.arrive_and_wait();
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
  std::latch ready(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank);
    boot->barrier("test_barrier");
    ready.arrive_and_wait();
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
  auto start = clock_type::now();
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
    for (int i = 0; i < 2; ++i) {
      net::unique_fd fd(::accept(job.listen_fd, nullptr, nullptr));
      ASSERT_TRUE(fd.valid());
      std::array<uint8_t, wire::header_bytes + wire::hello_bytes> raw{};
      ASSERT_EQ(net::recv_all(fd.get(), raw.data(), raw.size(), net::forever, -1), net::io_status::ok);
      auto hello = wire::decode_hello(
          std::span<const uint8_t, wire::hello_bytes>(raw.data() + wire::header_bytes, wire::hello_bytes));
      EXPECT_EQ(hello.secret, job.uid.secret);
      if (hello.chan == wire::channel::collective) {
        auto welcome = wire::build(wire::msg::welcome, 0, {}, {});
        ASSERT_EQ(net::send_all(fd.get(), welcome.data(), welcome.size(), net::forever, -1), net::io_status::ok);
      }
      conns.push_back(std::move(fd));
    }
  });
  auto boot = job.connect(1, 5s, peer_timeout);
  auto start = clock_type::now();
  fake_root.join();
  ASSERT_TRUE(job.logs[1].wait(5 * peer_timeout));
  EXPECT_GE(clock_type::now() - start, peer_timeout - 50ms);
  EXPECT_NE(job.logs[1].why.find("PE 0 went silent"), std::string::npos) << job.logs[1].why;
}

TEST(Bootstrap, FinalizedPesMayLeaveAtAnyTime) {
  const int n = 4;
  test_job job(n);
  auto errors = run_threads(all_ranks(n), [&](int rank) {
    auto boot = job.connect(rank, 5s, 100ms);
    boot->barrier("test_barrier");
    boot->finalize();
    // Leave at different times, longer than the peer timeout apart: nobody may call it a death.
    std::this_thread::sleep_for(rank * 150ms);
  });
  expect_no_errors(errors);
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.logs[r].count(), 0) << "PE " << r << ": " << job.logs[r].why;
}

}  // namespace
}  // namespace shoal::detail
