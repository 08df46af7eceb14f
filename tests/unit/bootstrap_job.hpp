// Helpers for the bootstrap tests that run whole jobs of PEs as threads of one process: a job
// (PE 0's listener and unique id), a recorder for each PE's failure handler, and a thread runner.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <initializer_list>
#include <latch>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "shoal/error.hpp"

namespace shoal::detail::testing_job {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

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
inline std::vector<std::exception_ptr> run_threads(const std::vector<int>& ranks, F fn) {
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

inline std::vector<int> all_ranks(int n);

// Connects every PE of `job` on its own thread, passes a first barrier, waits until all have, then
// runs fn(rank, boot); the bootstrap is destroyed when fn returns. Returns what each PE threw.
template <class F>
std::vector<std::exception_ptr> run_connected(test_job& job, std::chrono::milliseconds connect_timeout,
                                              std::chrono::milliseconds peer_timeout, F fn) {
  std::latch ready(job.size);
  return run_threads(all_ranks(job.size), [&](int rank) {
    auto boot = job.connect(rank, connect_timeout, peer_timeout);
    boot->barrier("test_barrier");
    ready.arrive_and_wait();
    fn(rank, boot);
  });
}
template <class F>
std::vector<std::exception_ptr> run_connected(test_job& job, F fn) {
  return run_connected(job, 5s, 5s, fn);
}

inline std::vector<int> all_ranks(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

inline std::optional<shoal::error> error_of(const std::exception_ptr& p) {
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

inline void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    if (auto e = error_of(errors[r])) ADD_FAILURE() << "PE " << r << ": " << e->what();
}
// Each thread in `who` threw a shoal::error with `code` and a message containing `text`.
inline void expect_errors(const std::vector<std::exception_ptr>& errors, std::initializer_list<int> who, errc code,
                          std::string_view text) {
  for (int t : who) {
    auto e = error_of(errors[t]);
    ASSERT_TRUE(e) << "thread " << t << " did not fail";
    EXPECT_EQ(e->code(), code) << e->what();
    EXPECT_NE(e->message().find(text), std::string::npos) << e->what();
  }
}

}  // namespace shoal::detail::testing_job
