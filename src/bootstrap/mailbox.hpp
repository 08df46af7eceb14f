// The mail of allgather_among: point-to-point messages between PEs, carried on the monitor
// connections through PE 0 (whose monitor thread forwards them) and kept here, by (sender, tag),
// until the exchange they belong to takes them. A message may arrive before its receiver enters the
// exchange; each is taken once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/link.hpp"

namespace shoal::detail {

class mailbox {
 public:
  /// A take wakes up, and fails, once `state` is broken.
  explicit mailbox(link::job_state& state) : state_(state) {}

  /// The monitor thread: `data` arrived from PE `from` with `tag`.
  void deliver(int from, uint64_t tag, std::vector<uint8_t> data);
  /// Wakes every take, so that it sees the broken state at once.
  void wake();
  /// The message from `from` with `tag`, once it has arrived; nullopt when `deadline` passes first.
  /// Throws errc::peer_failure, naming the job's first failure, once the job is broken.
  std::optional<std::vector<uint8_t>> take(int from, uint64_t tag, link::clock::time_point deadline,
                                           std::string_view call);
  /// True when a message from `from` with `tag` is waiting (for reports).
  bool has(int from, uint64_t tag);

 private:
  link::job_state& state_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::pair<uint64_t, int>, std::deque<std::vector<uint8_t>>> box_;  // (tag, sender); under mutex_
};

}  // namespace shoal::detail
