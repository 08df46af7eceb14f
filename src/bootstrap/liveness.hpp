// Liveness monitor: a thread per PE watching the monitor connections of the star. PE 0 and every
// other PE exchange heartbeats; a PE whose connection closes before it said bye (finalize) died, one
// silent for SHOAL_PEER_TIMEOUT is declared dead, and PE 0 tells every PE to stop. The same
// connections carry abort_job (shoal_global_exit), the bye of an orderly finalize, and the mail of
// allgather_among (PE 0 forwards it to its receiver, or keeps it when it is the receiver).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/link.hpp"
#include "bootstrap/mailbox.hpp"

namespace shoal::detail {

class liveness_monitor {
 public:
  /// `mon`: the monitor connections from the rendezvous (star_links::mon; empty for one PE).
  /// `on_failure` runs at most once, on the monitor thread (see bootstrap::abort_job). Mail that
  /// arrives for this PE goes into `mail`.
  liveness_monitor(const bootstrap_options& options, std::vector<net::unique_fd> mon, link::job_state& state,
                   mailbox& mail, failure_handler on_failure);
  ~liveness_monitor() { stop(); }
  liveness_monitor(const liveness_monitor&) = delete;
  liveness_monitor& operator=(const liveness_monitor&) = delete;

  /// Starts the monitor thread (jobs of more than one PE).
  void start();
  /// See bootstrap::abort_job. Returns once the handler has run on this PE (it normally ends the
  /// process), or after a bounded wait when PE 0 does not answer.
  void abort_job(int status, const std::string& why);
  /// Finalize started: from now on this PE's (PE 0: every PE's) disconnect is orderly.
  void send_bye();
  /// Sends `data` to PE `to` (not this PE) as mail with `tag`: on PE 0 straight to `to`, elsewhere
  /// through PE 0. Blocks until the bytes are on the wire; throws errc::peer_failure when the job is
  /// broken or the connection fails, errc::timeout when PE 0 takes none of it for SHOAL_PEER_TIMEOUT.
  void send_mail(int to, uint64_t tag, std::span<const uint8_t> data, std::string_view call);
  /// Stops the thread and closes the connections. Idempotent; safe from the handler itself.
  void stop() noexcept;

 private:
  // PE 0's view of one other PE's monitor connection; all but `fd` belong to the monitor thread,
  // `fd` is written under write_mutex_.
  struct peer_link {
    net::unique_fd fd;
    std::vector<uint8_t> inbox;
    link::clock::time_point last_heard;
    bool said_bye = false;
    bool closed = false;
  };

  void main();
  void root_loop();
  void peer_loop();
  // Sends a heartbeat on every open connection when `next_beat` has come, and moves it on; not while
  // another thread writes (mail): that write may wait for the reading this thread does.
  void beat_if_due(link::clock::time_point now, link::clock::time_point& next_beat);
  // PE 0: a mail from PE `from`; false when it is malformed (the job then fails).
  bool route_mail(int from, const link::message& m);
  // PE 0: tell every live PE but `except` to stop, `last` after all others (the PE that asked: it
  // leaves as soon as it hears, and a launcher may then kill the rest), then run the local handler.
  void fail_job(int status, const std::string& why, int except, int last = -1);
  void report_failure(int status, const std::string& why);
  // abort_job's caller: waits (bounded) until the handler has run here.
  void wait_until_handled();

  const int rank_;
  const int size_;
  const std::chrono::milliseconds peer_timeout_;
  link::job_state& state_;
  mailbox& mail_;
  const failure_handler on_failure_;
  std::vector<peer_link> peers_;  // PE 0: [r] per other PE; others: [0], PE 0

  std::mutex write_mutex_;  // every write to a monitor connection; a message is written whole under it
  std::mutex mutex_;
  std::optional<std::pair<int, std::string>> pending_abort_;  // PE 0's own abort_job; under mutex_
  bool running_ = false;                                      // under mutex_
  bool handled_ = false;                                      // the failure handler has returned; under mutex_
  std::condition_variable handled_cv_;

  net::unique_fd wake_fd_;  // wakes the thread: stop requested or pending_abort_ set
  std::atomic<bool> stopping_{false};
  std::atomic<bool> failure_reported_{false};
  std::thread thread_;
};

}  // namespace shoal::detail
