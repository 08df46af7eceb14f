#include "runtime/device_reports.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace shoal::detail {

namespace {

std::string_view text_of(const char (&field)[device_report_box::kTextBytes]) {
  return {field, strnlen(field, device_report_box::kTextBytes)};
}

constexpr uint32_t kReady = 2;
constexpr uint32_t kPrinted = 3;

}  // namespace

std::string format_device_report(const device_report_box& r) {
  const std::string_view call = text_of(r.call);
  const std::string_view what = text_of(r.what);
  switch (static_cast<device_report_kind>(r.kind)) {
    case device_report_kind::wait_timeout:
      return fmt::format("shoal: PE {}: {} timed out after {} ns waiting on {:#x} (PE {}): expected {} {}, seen {}",
                         r.my_pe, call, r.elapsed_ns, r.addr, r.pe, cmp_text(r.cmp), r.expected, r.seen);
    case device_report_kind::pe_out_of_range:
      return fmt::format("shoal: PE {}: {}: pe {} out of range [0, {})", r.my_pe, call, r.pe, r.n_pes);
    case device_report_kind::pe_behind_proxy:
      return fmt::format(
          "shoal: PE {}: {}: PE {} is reached through the proxy path, which this call does not go through yet", r.my_pe,
          call, r.pe);
    case device_report_kind::pe_unreachable:
      return fmt::format("shoal: PE {}: {}: PE {} is not load/store-reachable from this GPU (no P2P mapping)", r.my_pe,
                         call, r.pe);
    case device_report_kind::bad_argument:
      return fmt::format("shoal: PE {}: {}: bad {} {}", r.my_pe, call, what, r.value);
    case device_report_kind::proxy_failed:
      if (r.pe >= 0)
        return fmt::format("shoal: PE {}: {} to PE {} over the proxy: {} (status {})", r.my_pe, call, r.pe, what,
                           r.value);
      return fmt::format("shoal: PE {}: {} over the proxy: {} (status {})", r.my_pe, call, what, r.value);
    case device_report_kind::global_exit:
      return fmt::format("shoal_global_exit({}) called in a kernel on PE {}", r.value, r.my_pe);
    case device_report_kind::peer_stalled: {
      const std::string channel = r.value >= 0 ? fmt::format(" (channel {})", r.value) : std::string();
      return fmt::format("shoal: PE {}: {}: no progress from PE {}{} for {} ms on {:#x}: have {:#x}, want {:#x}",
                         r.my_pe, call, r.pe, channel, r.elapsed_ns / 1000000, r.addr, r.seen, r.expected);
    }
  }
  return fmt::format("shoal: PE {}: {}: a kernel failed (report kind {})", r.my_pe, call, r.kind);
}

device_report_watch::device_report_watch(device_report_box* box) : box_(box) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(10));
      lock.unlock();
      look();
      lock.lock();
    }
  });
}

device_report_watch::~device_report_watch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  look();
}

bool device_report_watch::look() {
  static std::mutex print_mutex;  // the thread and a world stopping on an error may look at once
  std::lock_guard lock(print_mutex);
  std::atomic_ref<uint32_t> state(box_->state);
  const uint32_t seen = state.load(std::memory_order_acquire);
  if (seen == kPrinted) return true;
  if (seen != kReady) return false;
  const std::string line = format_device_report(*box_);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  state.store(kPrinted, std::memory_order_release);
  return true;
}

}  // namespace shoal::detail
