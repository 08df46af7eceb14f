// What the three parts of the bootstrap (rendezvous, collective relay, liveness monitor) share:
// whole messages read from and written to one TCP connection, the error and status bodies they
// carry, and the job's "broken" state that wakes every blocked wait after the first failure.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/net.hpp"
#include "bootstrap/wire.hpp"
#include "shoal/error.hpp"

namespace shoal::detail::link {

using net::clock;
using std::chrono::milliseconds;

/// Errors of the rendezvous are reported as failures of the public call that runs it.
inline constexpr std::string_view init_call = "shoal_init";
inline constexpr std::string_view finalize_call = "shoal_finalize";
/// How long a PE spends telling the others about a failure before it gives up on a stuck one.
inline constexpr milliseconds notify_budget{500};
/// Monitor messages are tiny, except mail (one contribution to, or the result of, an allgather_among);
/// anything bigger means the stream is corrupt.
inline constexpr uint64_t max_monitor_payload = uint64_t{64} << 20;
/// A stop reason is cut to this many bytes.
inline constexpr size_t max_reason_bytes = 64 * 1024;

inline int64_t count_ms(clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

/// "1, 4-6, 9": rank lists stay readable at 1000 PEs.
std::string rank_list(const std::vector<int>& ranks);

/// A non-blocking eventfd (counter), raised by signal_fd and emptied by drain_fd.
net::unique_fd make_eventfd();
void signal_fd(int fd);
void drain_fd(int fd);

struct message {
  wire::header head;
  std::string call;
  std::vector<uint8_t> payload;
};

/// Reads one whole message. `corrupt` is set (and status ok) when the bytes are not our protocol.
net::io_status read_message(int fd, message* m, clock::time_point deadline, int wake_fd, bool* corrupt);

/// An error reply: the shoal::error code, whether it breaks the bootstrap, and the text.
struct error_reply {
  errc code = errc::internal;
  bool fatal = true;
  std::string text;
};
std::vector<uint8_t> error_message(errc code, bool fatal, std::string_view text);
std::optional<error_reply> parse_error(const message& m);

/// A job-stopping notice (abort, failure, departure): exit status and reason.
std::vector<uint8_t> status_message(wire::msg type, int status, std::string_view why);
std::pair<int, std::string> parse_status(const message& m);

/// Monitor connections are read without blocking: bytes are appended to an inbox and whole
/// messages taken from its front.
enum class pump_result { ok, closed, corrupt };
pump_result pump(int fd, std::vector<uint8_t>& inbox, std::vector<message>& out);

/// The first failure of the job, shared by the relay and the monitor. Once broken, broken_fd()
/// stays readable (written once, never drained), so that any wait in poll() wakes up and reports
/// the cause instead of waiting for a PE that will never answer.
class job_state {
 public:
  job_state();
  /// Records the first cause; later calls keep it.
  void mark_broken(const std::string& why);
  bool broken() const noexcept { return broken_.load(); }
  std::string broken_reason();
  int broken_fd() const noexcept { return broken_fd_.get(); }

 private:
  net::unique_fd broken_fd_;
  std::atomic<bool> broken_{false};
  std::mutex mutex_;
  std::string why_;  // under mutex_
};

}  // namespace shoal::detail::link
