// The host half of kernels' failure reports (device_world::report_box, shoal/device_world.hpp): kernels write a
// report into pinned host memory before they trap, and this prints it. Reading host memory needs no CUDA call, so
// the report reaches the user after the trap too, when the failed context answers no call.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "shoal/device_world.hpp"

namespace shoal::detail {

/// The report's text, one line without a newline: the words the device prints with printf under
/// SHOAL_DEVICE_PRINTF=1 (detail/device_common.cuh), so that logs and scripts find the same line either way.
std::string format_device_report(const device_report_box& report);

/// Watches one world's report box: a thread looks every 10 ms; look() looks now (the world looks when it stops, and
/// before it ends the process on an error). A ready report is printed once, to stderr.
class device_report_watch {
 public:
  /// `box`: the host's pointer to the box (zeroed). Starts the thread.
  explicit device_report_watch(device_report_box* box);
  /// A last look, then stops the thread.
  ~device_report_watch();
  device_report_watch(const device_report_watch&) = delete;
  device_report_watch& operator=(const device_report_watch&) = delete;

  /// Prints the report if it is ready and not printed yet; true when one has been printed (now or before).
  bool look();

 private:
  device_report_box* box_;
  std::mutex mutex_;  // one printer at a time; guards stop_
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace shoal::detail
