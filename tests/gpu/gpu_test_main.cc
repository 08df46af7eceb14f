// main() of every GPU test program (see gpu_test.hpp): picks this PE's GPU, joins the job, runs
// the registered tests in registration order on every PE, reduces the failures across PEs after
// each test, and exits 0 (all passed), 1 (a failure on some PE) or 77 (no usable GPU: skipped).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "shoal/detail/device_registry.h"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

struct test_case {
  const char* name;
  test_fn fn;
};

std::vector<test_case>& registry() {
  static std::vector<test_case> tests;
  return tests;
}

const char* current_test = "setup";
long failures_ = 0;
long printed_in_test_ = 0;
constexpr long kMaxPrintedPerTest = 24;
int me_ = -1;
int npes_ = 0;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// Exit before shoal_init, identically on every PE of this node (all see the same GPUs).
[[noreturn]] void skip(const std::string& why) {
  std::printf("SKIP: no usable GPU (%s)\n", why.c_str());
  std::fflush(stdout);
  std::exit(77);
}

}  // namespace

[[noreturn]] void cuda_fail(const char* expr, cudaError_t err, const char* file, int line) {
  std::printf("PE %d FATAL [%s] %s failed: %s (%s) at %s:%d\n", me_, current_test, expr, cudaGetErrorName(err),
              cudaGetErrorString(err), file, line);
  std::fflush(stdout);
  std::fflush(stderr);
  // No shoal_finalize: the GPU context may be gone and the other PEs may be stuck; shoalrun stops them.
  std::_Exit(1);
}

void launch_check(const char* what, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::printf("PE %d FATAL [%s] launching kernel '%s': %s (%s) at %s:%d\n", me_, current_test, what,
                cudaGetErrorName(err), cudaGetErrorString(err), file, line);
    std::fflush(stdout);
    std::_Exit(1);
  }
  err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("PE %d FATAL [%s] kernel '%s' failed while running: %s (%s) at %s:%d\n", me_, current_test, what,
                cudaGetErrorName(err), cudaGetErrorString(err), file, line);
    std::fflush(stdout);
    std::_Exit(1);
  }
}

// The default world's handle, as the runtime publishes it to every registered device facade.
// TODO(gpu tests): switch to the public host call once the runtime exports one.
shoal::device_world g_handle{};
void capture_handle(const void* world, size_t bytes) {
  if (bytes == sizeof(g_handle)) std::memcpy(&g_handle, world, bytes);
}

// SHOAL_GPU_TEST_DIRECT_RUN (the *_cold variants): the handle with a shorter direct run (device_world::direct_first,
// direct_count, direct_local, direct_offset), so that the handle API's device calls reach load/store peers outside it
// through their cold path (the table lookup, peer_miss) as a job whose nodes interleave PEs would: "none" leaves every
// PE outside it, "upper" keeps PEs n/2 .. n-1 in it (PE 0 outside). Only a world whose local index is the PE (no table)
// is shortened; any other is used as published.
shoal::device_world device_handle() {
  shoal::device_world w = g_handle;
  const char* mode = std::getenv("SHOAL_GPU_TEST_DIRECT_RUN");
  if (mode == nullptr || *mode == '\0' || w.local_of_pe != nullptr) return w;
  if (std::strcmp(mode, "none") == 0) {
    w.direct_count = 0;
  } else if (std::strcmp(mode, "upper") == 0) {
    w.direct_first = w.n_pes / 2;
    w.direct_count = w.n_pes - w.n_pes / 2;
    w.direct_local = w.n_pes / 2;
    w.direct_offset += w.n_pes / 2;  // entry k of the shorter run is entry n/2 + k of the published one
  }
  return w;
}

int me() { return me_; }
int npes() { return npes_; }
int peer() { return (me_ + 1) % npes_; }

void sync_all_pes() {
  GT_CUDA(cudaDeviceSynchronize());
  shoal_barrier_all();
}

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

void fail(const char* fmt, ...) {
  ++failures_;
  if (++printed_in_test_ > kMaxPrintedPerTest) {
    if (printed_in_test_ == kMaxPrintedPerTest + 1)
      std::printf("PE %d FAIL [%s] (further failures of this test are counted, not printed)\n", me_, current_test);
    return;
  }
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::printf("PE %d FAIL [%s] %s\n", me_, current_test, buf);
  std::fflush(stdout);
}

long failures() { return failures_; }

bool quick() {
  const char* v = std::getenv("SHOAL_GPU_TEST_QUICK");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

int rounds(int full) { return quick() ? std::max(2, full / 20) : full; }

bool check_bytes(const char* what, const void* seen, const void* expected, size_t num_bytes) {
  auto* s = static_cast<const uint8_t*>(seen);
  auto* e = static_cast<const uint8_t*>(expected);
  if (std::memcmp(s, e, num_bytes) == 0) return true;
  size_t bad = 0, first = num_bytes, last = 0;
  std::string detail;
  for (size_t i = 0; i < num_bytes; ++i) {
    if (s[i] == e[i]) continue;
    if (bad < 4)
      detail += format(" [%zu] expected 0x%02x seen 0x%02x%s;", i, e[i], s[i],
                       s[i] == kPoison ? " (poison: not written)" : "");
    if (first == num_bytes) first = i;
    last = i;
    ++bad;
  }
  fail("%s: %zu of %zu bytes differ (offsets %zu..%zu):%s", what, bad, num_bytes, first, last, detail.c_str());
  return false;
}

device_report* new_device_report() {
  device_report* r = nullptr;
  GT_CUDA(cudaMalloc(&r, sizeof(device_report)));
  reset_device_report(r);
  return r;
}

void reset_device_report(device_report* report) { GT_CUDA(cudaMemset(report, 0, sizeof(device_report))); }

unsigned long long check_device_report(const char* what, const device_report* report) {
  device_report r{};
  GT_CUDA(cudaMemcpy(&r, report, sizeof(r), cudaMemcpyDeviceToHost));
  if (r.count != 0)
    fail(
        "%s: %llu failed check(s) in the kernel; first at iteration %llu, index %llu: expected %llu (%#llx), seen "
        "%llu (%#llx)",
        what, r.count, r.iteration, r.index, r.expected, r.expected, r.seen, r.seen);
  return r.count;
}

int register_test(const char* name, test_fn fn) {
  registry().push_back({name, fn});
  return static_cast<int>(registry().size());
}

namespace {

// Every PE's count lands in slot [pe] of every PE's table; each PE sums its own copy.
long long reduce_sum(long long* table, long long mine) {
  for (int pe = 0; pe < npes_; ++pe) shoal_longlong_p(table + me_, mine, pe);
  shoal_barrier_all();
  long long total = 0;
  for (int pe = 0; pe < npes_; ++pe) total += shoal_longlong_g(table + pe, me_);
  shoal_barrier_all();  // nobody overwrites the table before every PE has read it
  return total;
}

int run(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string filter;
  if (const char* f = std::getenv("SHOAL_TEST_FILTER")) filter = f;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--filter=", 9) == 0) filter = argv[i] + 9;

  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) skip(format("cudaGetDeviceCount: %s", cudaGetErrorString(err)));
  if (count == 0) skip("cudaGetDeviceCount found 0 devices");
  const int local_rank = env_int("SHOAL_LOCAL_RANK", 0);
  const int local_size = env_int("SHOAL_LOCAL_SIZE", 1);
  // SHOAL_GPU_TEST_SHARE_GPUS=1: more PEs than GPUs, PEs sharing GPUs round-robin, so that the code
  // paths of N > 2 PEs (heap mapping of N-1 peers, teams and collectives of N) run on a 2-GPU machine.
  // Kernels of PEs on one GPU are time-sliced, so spinning waits progress slowly: run a few tests.
  const bool share = env_int("SHOAL_GPU_TEST_SHARE_GPUS", 0) != 0;
  if (count < local_size && !share)
    skip(
        format("%d PEs on this node but only %d GPU(s); each PE needs its own (SHOAL_GPU_TEST_SHARE_GPUS=1 "
               "lets PEs share GPUs)",
               local_size, count));
  // SHOAL_GPU_TEST_PROXY=1: the suite's proxy variant (every peer behind the UCX proxy, ctest
  // *_proxy): needs a build with UCX, and no P2P between the GPUs.
  const bool proxy = env_int("SHOAL_GPU_TEST_PROXY", 0) != 0;
#ifndef SHOAL_GPU_TEST_HAVE_UCX
  if (proxy) skip("the proxy variant needs shoal built with UCX (SHOAL_WITH_UCX)");
#endif
  const int device = local_rank % count;
  for (int other = 0; !proxy && other < std::min(local_size, count); ++other) {
    int can = 0;
    if (other == device) continue;
    GT_CUDA(cudaDeviceCanAccessPeer(&can, device, other));
    if (can == 0) skip(format("GPU %d cannot load/store GPU %d's memory (no NVLink/PCIe P2P)", device, other));
  }
  // A ready CUDA context on this PE's GPU before shoal_init: shoal adopts the current context.
  GT_CUDA(cudaSetDevice(device));
  GT_CUDA(cudaFree(nullptr));

  shoal_detail_register_device_facade(capture_handle);
  shoal_init();
  me_ = shoal_my_pe();
  npes_ = shoal_n_pes();
  auto* table = static_cast<long long*>(shoal_calloc(npes_, sizeof(long long)));
  if (std::strcmp(shoalx_backend_name(), "cuda") != 0)
    fail("the symmetric heap's backend is '%s', not 'cuda', although GPU %d is usable", shoalx_backend_name(), device);
  if (npes_ < 2) fail("these tests need at least 2 PEs, got %d", npes_);
  if (table == nullptr) fail("shoal_calloc of the result table returned NULL");
  if (g_handle.my_pe != me_ || g_handle.n_pes != npes_ || g_handle.heap_base == nullptr)
    fail("the device handle published at shoal_init says my_pe=%d n_pes=%d heap_base=%p; expected %d, %d, non-null",
         g_handle.my_pe, g_handle.n_pes, static_cast<void*>(g_handle.heap_base), me_, npes_);
  if (me_ == 0)
    std::printf("gpu tests: %d PEs, backend %s, PE 0 on GPU %d, filter '%s'\n", npes_, shoalx_backend_name(), device,
                filter.c_str());
  if (failures_ != 0 || table == nullptr) {
    std::fflush(stdout);
    std::_Exit(1);
  }

  int ran = 0, failed_tests = 0;
  for (const test_case& t : registry()) {
    if (!filter.empty() && std::strstr(t.name, filter.c_str()) == nullptr) continue;
    current_test = t.name;
    printed_in_test_ = 0;
    long before = failures_;
    if (me_ == 0) std::printf("[ RUN      ] %s\n", t.name);
    auto start = std::chrono::steady_clock::now();
    sync_all_pes();
    t.fn();
    sync_all_pes();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    long long total = reduce_sum(table, failures_ - before);
    ++ran;
    if (total != 0) ++failed_tests;
    if (me_ == 0)
      std::printf("%s %s (%.0f ms, %lld failure(s) over all PEs)\n", total == 0 ? "[       OK ]" : "[  FAILED  ]",
                  t.name, ms, total);
  }
  current_test = "teardown";
  long long all = reduce_sum(table, failures_);
  shoal_free(table);
  if (me_ == 0)
    std::printf("gpu tests: %d run, %d failed, %lld failure(s) over all PEs -> %s\n", ran, failed_tests, all,
                all == 0 && ran > 0 ? "PASS" : "FAIL");
  shoal_finalize();
  return all == 0 && ran > 0 ? 0 : 1;
}

}  // namespace
}  // namespace shoal_test

int main(int argc, char** argv) {
  // Eager module loading unless the caller chose: with lazy loading, the first launch of a kernel while another
  // kernel of this process spins on a peer waits for that kernel to end (loading synchronizes the context), which
  // deadlocks the tests' wait-then-signal pairs when they run outside CTest (whose environment sets it too).
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  return shoal_test::run(argc, argv);
}
