// The GPU tests' side of tests/mp/mp_main.cc (its hooks) and of gpu_env.hpp: before shoal_init each PE picks its
// GPU, or every PE prints "SKIP: no usable GPU (...)" and exits 77; after it, the job is checked (cuda backend, at
// least 2 PEs, the published device handle). Around each test every PE finishes its GPU work and meets the others at
// a barrier, and after it the PEs sum their failures so PE 0 can say how many the test had over all PEs.
#include "gpu_env.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mp_main.hpp"
#include "shoal/detail/device_registry.h"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

int me_ = -1;
int npes_ = 0;
int device_ = -1;
long long* table_ = nullptr;  // symmetric, npes_ slots: the per-test reduction of failures

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// "<suite>.<test>" while a test runs, for the FATAL lines (kept here rather than asked of GoogleTest, whose
// current_test_info() takes a lock that it holds while it reports a failure to the listeners).
std::string current_test_ = "setup";

// Exit before shoal_init, identically on every PE of this node (all see the same GPUs).
[[noreturn]] void skip(const std::string& why) {
  std::printf("SKIP: no usable GPU (%s)\n", why.c_str());
  std::fflush(stdout);
  std::exit(77);
}

// The default world's handle, as the runtime publishes it to every registered device facade.
// TODO(gpu tests): switch to the public host call once the runtime exports one.
shoal::device_world g_handle{};
void capture_handle(const void* world, size_t bytes) {
  if (bytes == sizeof(g_handle)) std::memcpy(&g_handle, world, bytes);
}

// Every PE's count lands in slot [pe] of every PE's table; each PE sums its own copy.
long long reduce_sum(long long mine) {
  for (int pe = 0; pe < npes_; ++pe) shoal_longlong_p(table_ + me_, mine, pe);
  shoal_barrier_all();
  long long total = 0;
  for (int pe = 0; pe < npes_; ++pe) total += shoal_longlong_g(table_ + pe, me_);
  shoal_barrier_all();  // nobody overwrites the table before every PE has read it
  return total;
}

// --filter=TEXT (or SHOAL_TEST_FILTER=TEXT): only the tests whose name contains TEXT.
void apply_filter(int argc, char** argv) {
  std::string filter;
  if (const char* f = std::getenv("SHOAL_TEST_FILTER")) filter = f;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--filter=", 9) == 0) filter = argv[i] + 9;
  if (!filter.empty()) ::testing::GTEST_FLAG(filter) = "*" + filter + "*";
}

void before_init(int argc, char** argv) {
  // Eager module loading unless the caller chose: with lazy loading, the first launch of a kernel while another
  // kernel of this process spins on a peer waits for that kernel to end (loading synchronizes the context), which
  // deadlocks the tests' wait-then-signal pairs when they run outside CTest (whose environment sets it too).
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  apply_filter(argc, argv);
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
  device_ = local_rank % count;
  for (int other = 0; !proxy && other < std::min(local_size, count); ++other) {
    int can = 0;
    if (other == device_) continue;
    GT_CUDA(cudaDeviceCanAccessPeer(&can, device_, other));
    if (can == 0) skip(format("GPU %d cannot load/store GPU %d's memory (no NVLink/PCIe P2P)", device_, other));
  }
  // A ready CUDA context on this PE's GPU before shoal_init: shoal adopts the current context.
  GT_CUDA(cudaSetDevice(device_));
  GT_CUDA(cudaFree(nullptr));
  shoal_detail_register_device_facade(capture_handle);
}

bool after_init() {
  me_ = shoal_my_pe();
  npes_ = shoal_n_pes();
  table_ = static_cast<long long*>(shoal_calloc(npes_, sizeof(long long)));
  bool ok = true;
  auto setup_fail = [&](const std::string& why) {
    std::printf("PE %d FAIL [setup] %s\n", me_, why.c_str());
    ok = false;
  };
  if (std::strcmp(shoalx_backend_name(), "cuda") != 0)
    setup_fail(format("the symmetric heap's backend is '%s', not 'cuda', although GPU %d is usable",
                      shoalx_backend_name(), device_));
  if (npes_ < 2) setup_fail(format("these tests need at least 2 PEs, got %d", npes_));
  if (table_ == nullptr) setup_fail("shoal_calloc of the result table returned NULL");
  if (g_handle.my_pe != me_ || g_handle.n_pes != npes_ || g_handle.heap_base == nullptr)
    setup_fail(format(
        "the device handle published at shoal_init says my_pe=%d n_pes=%d heap_base=%p; expected %d, %d, non-null",
        g_handle.my_pe, g_handle.n_pes, static_cast<void*>(g_handle.heap_base), me_, npes_));
  if (me_ == 0)
    std::printf("gpu tests: %d PEs, backend %s, PE 0 on GPU %d, filter '%s'\n", npes_, shoalx_backend_name(), device_,
                ::testing::GTEST_FLAG(filter).c_str());
  if (!ok) {
    // The other PEs may be stuck in a barrier: shoalrun stops them once this PE has exited.
    std::fflush(stdout);
    std::_Exit(1);
  }
  return true;
}

void test_start(const ::testing::TestInfo& test) {
  current_test_ = std::string(test.test_suite_name()) + "." + test.name();
  sync_all_pes();
}

void test_end(const ::testing::TestInfo&, int failures) {
  sync_all_pes();
  const long long total = reduce_sum(failures);
  if (me_ == 0 && total != 0)
    std::printf("[  ON PEs  ] %s: %lld failure(s) over all PEs\n", current_test_.c_str(), total);
  current_test_ = "teardown";
}

[[maybe_unused]] const bool kHooksSet = set_pe_main_hooks({before_init, after_init, test_start, test_end});

}  // namespace

[[noreturn]] void cuda_fail(const char* expr, cudaError_t err, const char* file, int line) {
  std::printf("PE %d FATAL [%s] %s failed: %s (%s) at %s:%d\n", me_, current_test_.c_str(), expr, cudaGetErrorName(err),
              cudaGetErrorString(err), file, line);
  std::fflush(stdout);
  std::fflush(stderr);
  // No shoal_finalize: the GPU context may be gone and the other PEs may be stuck; shoalrun stops them.
  std::_Exit(1);
}

void launch_check(const char* what, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::printf("PE %d FATAL [%s] launching kernel '%s': %s (%s) at %s:%d\n", me_, current_test_.c_str(), what,
                cudaGetErrorName(err), cudaGetErrorString(err), file, line);
    std::fflush(stdout);
    std::_Exit(1);
  }
  err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("PE %d FATAL [%s] kernel '%s' failed while running: %s (%s) at %s:%d\n", me_, current_test_.c_str(),
                what, cudaGetErrorName(err), cudaGetErrorString(err), file, line);
    std::fflush(stdout);
    std::_Exit(1);
  }
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
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

bool quick() {
  const char* v = std::getenv("SHOAL_GPU_TEST_QUICK");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

int rounds(int full) { return quick() ? std::max(2, full / 20) : full; }

::testing::AssertionResult bytes_equal(const char* what, const void* seen, const void* expected, size_t num_bytes) {
  auto* s = static_cast<const uint8_t*>(seen);
  auto* e = static_cast<const uint8_t*>(expected);
  if (std::memcmp(s, e, num_bytes) == 0) return ::testing::AssertionSuccess();
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
  return ::testing::AssertionFailure() << format("%s: %zu of %zu bytes differ (offsets %zu..%zu):%s", what, bad,
                                                 num_bytes, first, last, detail.c_str());
}

device_report* new_device_report() {
  device_report* r = nullptr;
  GT_CUDA(cudaMalloc(&r, sizeof(device_report)));
  reset_device_report(r);
  return r;
}

void reset_device_report(device_report* report) { GT_CUDA(cudaMemset(report, 0, sizeof(device_report))); }

::testing::AssertionResult device_report_clean(const char* what, const device_report* report,
                                               unsigned long long* count) {
  device_report r{};
  GT_CUDA(cudaMemcpy(&r, report, sizeof(r), cudaMemcpyDeviceToHost));
  if (count != nullptr) *count = r.count;
  if (r.count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << format(
             "%s: %llu failed check(s) in the kernel; first at iteration %llu, index %llu: expected %llu (%#llx), "
             "seen %llu (%#llx)",
             what, r.count, r.iteration, r.index, r.expected, r.expected, r.seen, r.seen);
}

}  // namespace shoal_test
