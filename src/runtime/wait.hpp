// Host-side waiting that neither hangs forever nor starves other PEs when there are more PEs
// than cores: spin briefly, then yield, then sleep with growing pauses (capped at 100 us), and
// report once the deadline passes.
#pragma once

#include <sched.h>
#include <time.h>

#include <chrono>

namespace shoal::detail {

class backoff {
 public:
  /// timeout 0 means no deadline.
  explicit backoff(std::chrono::milliseconds timeout)
      : deadline_(timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout
                                      : std::chrono::steady_clock::time_point::max()) {}

  /// Pauses once; returns false when the deadline has passed.
  bool pause() {
    ++rounds_;
    if (rounds_ < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      sched_yield();
#endif
    } else if (rounds_ < 256) {
      sched_yield();
    } else {
      timespec ts{0, sleep_ns_};
      nanosleep(&ts, nullptr);
      if (sleep_ns_ < 100'000) sleep_ns_ *= 2;
    }
    if ((rounds_ & 15) == 0) return std::chrono::steady_clock::now() < deadline_;
    return true;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  unsigned rounds_ = 0;
  long sleep_ns_ = 1000;
};

}  // namespace shoal::detail
