// Host-side waiting that neither hangs forever nor starves other PEs when there are more PEs
// than cores: spin briefly, then yield, then sleep with growing pauses (capped at 100 us), and
// report once the deadline passes -- or at once when the job has failed (job_failure).
#pragma once

#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "common/progress.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {

/// The job's first failure (a PE died or went silent) once this process outlives it: under
/// SHOAL_ERRORS_RETURN the liveness handler records it instead of ending the process, and every host
/// wait then ends with errc::peer_failure naming the cause.
class job_failure {
 public:
  /// Records `why` unless a cause is recorded already. The text lives as long as the process.
  static void record(const std::string& why) {
    auto* text = new std::string(why);
    const std::string* expected = nullptr;
    if (!cause_.compare_exchange_strong(expected, text)) delete text;
  }
  /// The recorded cause, or nullptr.
  static const std::string* cause() noexcept { return cause_.load(std::memory_order_acquire); }
  /// A new job in this process starts clean (the old text is kept: a reader may still hold it).
  static void reset() noexcept { cause_.store(nullptr); }

 private:
  static inline std::atomic<const std::string*> cause_{nullptr};
};

class backoff {
 public:
  /// timeout 0 means no deadline; `call` names the waiting call in a job-failure error.
  explicit backoff(std::chrono::milliseconds timeout, std::string_view call = "shoal wait")
      : deadline_(timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout
                                      : std::chrono::steady_clock::time_point::max()),
        call_(call) {}

  /// Pauses once; returns false when the deadline has passed. Throws errc::peer_failure once the job
  /// has failed (job_failure).
  bool pause() {
    ++rounds_;
    // Progress of engines this thread can help (progress_hooks): for kHotWindow after the last
    // progress the wait polls without yielding or sleeping, since a peer may be waiting for this
    // PE's answers and the engine's thread relies on this one meanwhile (it yields only every 2nd
    // round: a yield on a core busy with an unrelated thread gives the CPU away for a time slice).
    bool hot = false;
    if (progress_hooks::run()) {
      rounds_ = 1, sleep_ns_ = 1000;
      hot_until_ = std::chrono::steady_clock::now() + progress_hooks::kHotWindow;
      hot = true;
    } else if (rounds_ >= 64 && hot_until_ != std::chrono::steady_clock::time_point{}) {
      hot = std::chrono::steady_clock::now() < hot_until_;
    }
    if (hot && (++hot_rounds_ & 1) == 0) {
      // Hot, yet every 2nd round yields: the thread whose answer this one waits for (a peer PE's, or
      // this PE's proxy thread) may share this core, and a poll that never yields keeps it off the
      // core for the whole hot window -- on a 2-core machine a self-sustaining ~250 us per round trip.
      // With nothing else runnable here a yield returns at once.
      sched_yield();
    } else if (rounds_ < 64 || hot) {
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
    if ((++checks_ & 15) == 0) {
      if (const std::string* why = job_failure::cause())
        throw shoal::error(errc::peer_failure, std::string(call_), "the job failed while waiting: " + *why);
      return std::chrono::steady_clock::now() < deadline_;
    }
    return true;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::string_view call_;
  unsigned rounds_ = 0;
  unsigned checks_ = 0;
  unsigned hot_rounds_ = 0;
  std::chrono::steady_clock::time_point hot_until_{};
  long sleep_ns_ = 1000;
};

}  // namespace shoal::detail
