// The host half of kernels' failure reports: the text of each kind (the words device printf printed before, which
// scripts such as tests/gpu/wait_timeout_gpu_test.sh look for), and the watch that prints a ready report once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/device_reports.hpp"
#include "shoal/types.h"

namespace shoal::detail {
namespace {

device_report_box make(device_report_kind kind, const char* call, int my_pe, int pe, long long value = 0,
                       const char* what = "") {
  device_report_box r{};
  r.kind = static_cast<uint32_t>(kind);
  r.my_pe = my_pe;
  r.pe = pe;
  r.value = value;
  std::strncpy(r.call, call, sizeof r.call - 1);
  std::strncpy(r.what, what, sizeof r.what - 1);
  return r;
}

TEST(DeviceReports, EachKindSaysWhatDevicePrintfSaid) {
  device_report_box t = make(device_report_kind::wait_timeout, "shoal_signal_wait_until", 1, 1);
  t.elapsed_ns = 200000123;
  t.addr = 0x7f12345678c0;
  t.cmp = SHOAL_CMP_EQ;
  t.expected = 4242;
  t.seen = 777;
  EXPECT_EQ(format_device_report(t),
            "shoal: PE 1: shoal_signal_wait_until timed out after 200000123 ns waiting on 0x7f12345678c0 (PE 1): "
            "expected == 4242, seen 777");
  device_report_box range = make(device_report_kind::pe_out_of_range, "shoal_int_p", 0, 7);
  range.n_pes = 2;
  EXPECT_EQ(format_device_report(range), "shoal: PE 0: shoal_int_p: pe 7 out of range [0, 2)");
  EXPECT_EQ(format_device_report(make(device_report_kind::pe_behind_proxy, "shoal::device::team_barrier", 0, 1)),
            "shoal: PE 0: shoal::device::team_barrier: PE 1 is reached through the proxy path, which this call does "
            "not go through yet");
  EXPECT_EQ(format_device_report(make(device_report_kind::pe_unreachable, "shoal_putmem", 2, 3)),
            "shoal: PE 2: shoal_putmem: PE 3 is not load/store-reachable from this GPU (no P2P mapping)");
  EXPECT_EQ(format_device_report(make(device_report_kind::bad_argument, "shoal_signal_op", 0, -1, 9, "sig_op")),
            "shoal: PE 0: shoal_signal_op: bad sig_op 9");
  EXPECT_EQ(format_device_report(make(device_report_kind::proxy_failed, "shoal_getmem", 1, 0, -3, "the engine failed")),
            "shoal: PE 1: shoal_getmem to PE 0 over the proxy: the engine failed (status -3)");
  EXPECT_EQ(format_device_report(
                make(device_report_kind::proxy_failed, "shoal_quiet", 1, -1, 0, "no reply within SHOAL_WAIT_TIMEOUT")),
            "shoal: PE 1: shoal_quiet over the proxy: no reply within SHOAL_WAIT_TIMEOUT (status 0)");
  EXPECT_EQ(format_device_report(make(device_report_kind::global_exit, "shoal_global_exit", 3, -1, 5)),
            "shoal_global_exit(5) called in a kernel on PE 3");
}

TEST(DeviceReports, AStalledPeerNamesThePeerTheChannelAndBothValues) {
  device_report_box s = make(device_report_kind::peer_stalled, "shoal_ep dispatch (receive)", 0, 1, 3);
  s.elapsed_ns = 2000456789;
  s.addr = 0x7f0000001040;
  s.seen = 0x500000002;
  s.expected = 0x500000003;
  EXPECT_EQ(
      format_device_report(s),
      "shoal: PE 0: shoal_ep dispatch (receive): no progress from PE 1 (channel 3) for 2000 ms on 0x7f0000001040: "
      "have 0x500000002, want 0x500000003");
  s.value = -1;  // no channel
  s.my_pe = 2;
  EXPECT_EQ(format_device_report(s),
            "shoal: PE 2: shoal_ep dispatch (receive): no progress from PE 1 for 2000 ms on 0x7f0000001040: have "
            "0x500000002, want 0x500000003");
}

TEST(DeviceReports, TextFieldsAreReadNoFurtherThanTheirSize) {
  device_report_box r = make(device_report_kind::bad_argument, "", 0, -1, 1);
  std::memset(r.call, 'c', sizeof r.call);  // no terminator: a kernel that wrote past would be cut here
  std::memset(r.what, 'w', sizeof r.what);
  const std::string text = format_device_report(r);
  EXPECT_EQ(text,
            "shoal: PE 0: " + std::string(sizeof r.call, 'c') + ": bad " + std::string(sizeof r.what, 'w') + " 1");
}

TEST(DeviceReports, AReadyReportIsPrintedOnceAndAnUnfinishedOneNot) {
  device_report_box box{};
  device_report_watch watch(&box);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(watch.look());  // state 0: nothing to say
  box = make(device_report_kind::global_exit, "shoal_global_exit", 0, -1, 3);
  std::atomic_ref<uint32_t>(box.state).store(1, std::memory_order_release);  // a kernel still writing it
  EXPECT_FALSE(watch.look());
  std::atomic_ref<uint32_t>(box.state).store(2, std::memory_order_release);
  EXPECT_TRUE(watch.look());
  EXPECT_TRUE(watch.look());
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "shoal_global_exit(3) called in a kernel on PE 0\n");
  EXPECT_EQ(std::atomic_ref<uint32_t>(box.state).load(), 3u);
}

TEST(DeviceReports, TheWatchThreadPrintsWithoutBeingAsked) {
  device_report_box box = make(device_report_kind::bad_argument, "shoal_barrier_all", 1, -1, 4, "cmp");  // state 0
  testing::internal::CaptureStderr();
  {
    device_report_watch watch(&box);
    std::atomic_ref<uint32_t>(box.state).store(2, std::memory_order_release);  // as a kernel finishing its report
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::atomic_ref<uint32_t>(box.state).load(std::memory_order_acquire) != 3 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(std::atomic_ref<uint32_t>(box.state).load(), 3u) << "the watch thread did not print within 5 s";
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "shoal: PE 1: shoal_barrier_all: bad cmp 4\n");
}

}  // namespace
}  // namespace shoal::detail
