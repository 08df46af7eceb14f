#include "bootstrap/mailbox.hpp"

#include <algorithm>
#include <chrono>

#include "common/check.hpp"

namespace shoal::detail {

void mailbox::deliver(int from, uint64_t tag, std::vector<uint8_t> data) {
  {
    std::lock_guard lock(mutex_);
    box_[{tag, from}].push_back(std::move(data));
  }
  cv_.notify_all();
}

void mailbox::wake() {
  { std::lock_guard lock(mutex_); }
  cv_.notify_all();
}

bool mailbox::has(int from, uint64_t tag) {
  std::lock_guard lock(mutex_);
  auto it = box_.find({tag, from});
  return it != box_.end() && !it->second.empty();
}

std::optional<std::vector<uint8_t>> mailbox::take(int from, uint64_t tag, link::clock::time_point deadline,
                                                  std::string_view call) {
  // The relay marks the state broken without waking us: poll it at least this often.
  constexpr std::chrono::milliseconds kRecheck{20};
  std::unique_lock lock(mutex_);
  for (;;) {
    auto it = box_.find({tag, from});
    if (it != box_.end() && !it->second.empty()) {
      std::vector<uint8_t> data = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) box_.erase(it);
      return data;
    }
    if (state_.broken()) {
      lock.unlock();
      SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", state_.broken_reason());
    }
    auto now = link::clock::now();
    if (now >= deadline) return std::nullopt;
    cv_.wait_until(lock, std::min(deadline, now + kRecheck));
  }
}

}  // namespace shoal::detail
