// Engines that need a host thread's help to make progress (the proxy transport's UCX worker: over
// TCP, UCX applies incoming gets and atomics only while someone progresses the target's worker).
// Every host wait round (backoff::pause) runs the registered hooks, so a thread that waits on local
// memory also serves its peers' requests instead of leaving them to a proxy thread that must first
// be woken. Costs one relaxed load per round when nothing is registered.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

namespace shoal::detail {

class progress_hooks {
 public:
  /// A hook makes what progress it can without blocking (it may do nothing when another thread
  /// drives the engine) and returns at once: true when something happened (traffic is flowing).
  using hook = bool (*)(void* context);

  /// After a hook made progress, the waiting thread keeps polling (no sleeps) this long: the engine
  /// counts on it meanwhile and its own thread stops watching for traffic.
  static constexpr std::chrono::microseconds kHotWindow{200};

  /// Registers `context`'s hook; false when every slot is taken (progress is then left to the
  /// engine's own thread).
  static bool add(hook fn, void* context) {
    std::lock_guard lock(mutex());
    for (entry& e : entries_) {
      if (e.context != nullptr) continue;
      e.fn = fn, e.context = context;
      count_.fetch_add(1, std::memory_order_release);
      return true;
    }
    return false;
  }
  /// Removes `context`'s hook; once this returns no thread runs it.
  static void remove(void* context) {
    std::lock_guard lock(mutex());
    for (entry& e : entries_) {
      if (e.context != context) continue;
      e.fn = nullptr, e.context = nullptr;
      count_.fetch_sub(1, std::memory_order_release);
    }
  }
  /// Runs every hook once (skipped when another thread is adding, removing or running them); true
  /// when any made progress.
  static bool run() {
    if (count_.load(std::memory_order_relaxed) == 0) return false;
    std::unique_lock lock(mutex(), std::try_to_lock);
    if (!lock.owns_lock()) return false;
    bool any = false;
    for (const entry& e : entries_)
      if (e.context != nullptr) any |= e.fn(e.context);
    return any;
  }

 private:
  struct entry {  // static storage: zero-initialized
    hook fn;
    void* context;
  };
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static constexpr int kSlots = 16;  // live engines in one process (one per world)
  static inline entry entries_[kSlots];
  static inline std::atomic<int> count_{0};
};

}  // namespace shoal::detail
