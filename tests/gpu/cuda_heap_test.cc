// The cuda chunk backend on a real GPU, in one process: reserve, create + map (zero-filled), export the
// chunk's fd and import + map it at a second address (both views are one memory), errors, context
// hygiene, two GPUs mapping each other's chunks, the footprint/timing figures of issue 3, and (fake driver
// only) a silent teardown after the driver was deinitialized.
// Exits 77 (ctest: skipped) when no GPU is usable.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "heap/cuda_backend.hpp"
#include "shoal/error.hpp"

#ifdef SHOAL_HAVE_CUDA
#include "heap/cuda_driver.hpp"

namespace shoal::detail {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

const cuda_driver& drv() { return *load_cuda_driver(); }

#define CU_OK(expr)                                                                               \
  do {                                                                                            \
    const CUresult cu_ok_result_ = (expr);                                                        \
    ASSERT_EQ(cu_ok_result_, CUDA_SUCCESS) << #expr << ": " << describe_cu_result(cu_ok_result_); \
  } while (0)

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// The copies below run in the current context; make the backend's current first when it matters.
void use_context_of(const chunk_backend& backend) {
  ASSERT_NE(cuda_info(backend), nullptr);
  CU_OK(drv().cuCtxSetCurrent(static_cast<CUcontext>(cuda_info(backend)->primary_context())));
}

void fill(void* addr, uint8_t value, size_t num_bytes) {
  CU_OK(drv().cuMemsetD8(dptr(addr), value, num_bytes));
  CU_OK(drv().cuCtxSynchronize());
}

std::vector<uint8_t> read(const void* addr, size_t num_bytes) {
  std::vector<uint8_t> out(num_bytes, 0xEE);
  CUresult r = drv().cuMemcpyDtoH(out.data(), dptr(addr), num_bytes);
  EXPECT_EQ(r, CUDA_SUCCESS) << describe_cu_result(r);
  return out;
}

void write(void* addr, const std::vector<uint8_t>& bytes) {
  CU_OK(drv().cuMemcpyHtoD(dptr(addr), bytes.data(), bytes.size()));
}

std::vector<uint8_t> pattern(size_t num_bytes, uint8_t seed) {
  std::vector<uint8_t> out(num_bytes);
  for (size_t i = 0; i < num_bytes; ++i) out[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 12));
  return out;
}

bool all_equal(const std::vector<uint8_t>& bytes, uint8_t value) {
  for (uint8_t b : bytes)
    if (b != value) return false;
  return true;
}

std::unique_ptr<chunk_backend> backend_on(int ordinal) {
  setenv("SHOAL_DEVICE", std::to_string(ordinal).c_str(), 1);
  auto b = make_cuda_backend("cuda_heap_test");
  unsetenv("SHOAL_DEVICE");
  return b;
}

int device_count() {
  int count = 0;
  EXPECT_EQ(drv().cuDeviceGetCount(&count), CUDA_SUCCESS);
  return count;
}

TEST(cuda_heap, backend_reports_its_gpu) {
  auto backend = make_cuda_backend("cuda_heap_test");
  EXPECT_STREQ(backend->name(), "cuda");
  EXPECT_FALSE(backend->host_accessible());
  const size_t g = backend->granularity();
  EXPECT_GT(g, 0u);
  EXPECT_EQ(g & (g - 1), 0u) << "granularity " << g << " is not a power of two";
  const cuda_backend_info* info = cuda_info(*backend);
  ASSERT_NE(info, nullptr);
  EXPECT_GE(info->device_ordinal(), 0);
  EXPECT_LT(info->device_ordinal(), device_count());
  EXPECT_NE(info->primary_context(), nullptr);
  const std::string bus = info->pci_bus_id();
  EXPECT_GE(bus.size(), 12u) << bus;  // dddd:bb:dd.f
  EXPECT_EQ(bus.find_first_of("ABCDEF"), std::string::npos) << bus << " should be lower case";
  EXPECT_EQ(cuda_device_of_pci_bus_id(bus), info->device_ordinal());
  EXPECT_TRUE(can_access_peer(info->device_ordinal(), info->device_ordinal()));
  CUdevice dev = 0;
  int sms = 0;
  ASSERT_EQ(drv().cuDeviceGet(&dev, info->device_ordinal()), CUDA_SUCCESS);
  ASSERT_EQ(drv().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), CUDA_SUCCESS);
  EXPECT_EQ(info->multiprocessor_count(), sms);
  std::printf("GPU %d, PCI %s, %d SMs, granularity %zu KiB; %s\n", info->device_ordinal(), bus.c_str(), sms, g >> 10,
              cuda_status().c_str());
}

TEST(cuda_heap, new_chunk_reads_zero_and_keeps_writes) {
  auto backend = make_cuda_backend("cuda_heap_test");
  use_context_of(*backend);
  const size_t g = backend->granularity();
  char* base = static_cast<char*>(backend->reserve(4 * g));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % g, 0u);
  chunk c = backend->create(2 * g);
  EXPECT_GE(c.fd, 0);
  EXPECT_NE(c.handle, 0u);
  EXPECT_EQ(c.bytes, 2 * g);
  backend->map(base + g, c);
  EXPECT_TRUE(all_equal(read(base + g, 2 * g), 0)) << "a new chunk must read as zero";
  fill(base + g, 0x5a, 2 * g);
  EXPECT_TRUE(all_equal(read(base + g, 2 * g), 0x5a));
  const auto bytes = pattern(2 * g, 7);
  write(base + g, bytes);
  EXPECT_EQ(read(base + g, 2 * g), bytes);
  backend->unmap(base + g, 2 * g);
  backend->destroy(c);
  EXPECT_EQ(c.fd, -1);
  EXPECT_EQ(c.handle, 0u);
  backend->destroy(c);  // a destroyed chunk is empty: destroying it again does nothing
  backend->release(base, 4 * g);
}

TEST(cuda_heap, recycled_memory_is_zeroed_again) {
  auto backend = make_cuda_backend("cuda_heap_test");
  use_context_of(*backend);
  const size_t g = backend->granularity();
  const size_t num_bytes = 16 * g;
  char* base = static_cast<char*>(backend->reserve(num_bytes));
  for (int round = 0; round < 4; ++round) {
    chunk c = backend->create(num_bytes);
    backend->map(base, c);
    EXPECT_TRUE(all_equal(read(base, num_bytes), 0)) << "round " << round;
    fill(base, 0xff, num_bytes);
    backend->unmap(base, num_bytes);
    backend->destroy(c);
  }
  backend->release(base, num_bytes);
}

TEST(cuda_heap, exported_fd_maps_the_same_memory_at_a_second_address) {
  auto backend = make_cuda_backend("cuda_heap_test");
  use_context_of(*backend);
  const size_t g = backend->granularity();
  const size_t stride = 4 * g;
  const size_t num_bytes = 2 * g;
  char* base = static_cast<char*>(backend->reserve(2 * stride));
  chunk own = backend->create(num_bytes);
  backend->map(base, own);
  const auto first = pattern(num_bytes, 3);
  write(base, first);

  // What symmetric_heap does between processes, within one: pass a copy of the fd, import it, map it
  // at the second slot.
  const int copy = fcntl(own.fd, F_DUPFD_CLOEXEC, 0);
  ASSERT_GE(copy, 0) << std::strerror(errno);
  chunk peer = backend->import(copy, num_bytes);
  EXPECT_EQ(peer.fd, -1) << "import closes the fd it was given";
  EXPECT_EQ(fcntl(copy, F_GETFD), -1) << "the imported fd should be closed";
  EXPECT_NE(peer.handle, 0u);
  backend->map(base + stride, peer);
  EXPECT_EQ(read(base + stride, num_bytes), first) << "the imported view must see the owner's bytes";

  const auto second = pattern(num_bytes, 99);
  write(base + stride, second);
  EXPECT_EQ(read(base, num_bytes), second) << "the owner's view must see writes through the imported view";
  // Mapping an imported chunk must not clear it (only chunks created here are zero-filled).
  backend->unmap(base + stride, num_bytes);
  backend->map(base + stride, peer);
  EXPECT_EQ(read(base + stride, num_bytes), second);

  backend->unmap(base + stride, num_bytes);
  backend->unmap(base, num_bytes);
  if (peer.handle == own.handle) {
    std::printf("note: the driver returned the exporter's own handle on import\n");
    peer.handle = 0;
  }
  backend->destroy(peer);
  backend->destroy(own);
  backend->release(base, 2 * stride);
}

TEST(cuda_heap, bad_requests_are_clear_errors) {
  auto backend = make_cuda_backend("cuda_heap_test");
  const size_t g = backend->granularity();
  char* base = static_cast<char*>(backend->reserve(4 * g));
  try {
    backend->create(g + 1);
    ADD_FAILURE() << "create(granularity + 1) succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
  }
  chunk c = backend->create(g);
  try {
    backend->map(base + 4096, c);
    ADD_FAILURE() << "a misaligned map succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::internal) << e.what();
  }
  // An fd that is not a CUDA allocation: the driver refuses it, and the message names the call.
  const int not_cuda = memfd_create("not-cuda", MFD_CLOEXEC);
  ASSERT_GE(not_cuda, 0);
  ASSERT_EQ(ftruncate(not_cuda, static_cast<off_t>(g)), 0);
  try {
    chunk bogus = backend->import(not_cuda, g);
    ADD_FAILURE() << "importing a memfd succeeded";
    backend->destroy(bogus);
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::cuda) << e.what();
    EXPECT_NE(e.message().find("cuMemImportFromShareableHandle"), std::string::npos) << e.message();
    std::printf("importing a memfd: %s\n", e.what());
  }
  EXPECT_EQ(fcntl(not_cuda, F_GETFD), -1) << "import must close the fd even when it fails";
  // More than the GPU has: out_of_memory, not a generic CUDA error.
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  ASSERT_EQ(drv().cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  const size_t too_much = (total_bytes / g + 2) * g;
  try {
    chunk huge = backend->create(too_much);
    ADD_FAILURE() << "create(" << too_much << ") succeeded on a GPU of " << total_bytes << " bytes";
    backend->destroy(huge);
  } catch (const error& e) {
    // cuMemCreate is expected to say CUDA_ERROR_OUT_OF_MEMORY (-> out_of_memory); some drivers reject
    // a size beyond the GPU's memory as an invalid value instead. Either way: a clear error.
    EXPECT_TRUE(e.code() == errc::out_of_memory || e.code() == errc::cuda) << e.what();
    EXPECT_NE(e.message().find("cuMemCreate"), std::string::npos) << e.message();
    std::printf("oversized chunk: %s\n", e.what());
  }
  backend->destroy(c);
  backend->release(base, 4 * g);
}

TEST(cuda_heap, works_from_a_thread_without_a_context_and_restores_it) {
  auto backend = make_cuda_backend("cuda_heap_test");
  const size_t g = backend->granularity();
  std::string failure;
  std::thread worker([&] {
    try {
      CUcontext before = reinterpret_cast<CUcontext>(1);
      if (drv().cuCtxGetCurrent(&before) != CUDA_SUCCESS || before != nullptr) {
        failure = "a new thread already had a current context";
        return;
      }
      char* base = static_cast<char*>(backend->reserve(2 * g));
      chunk c = backend->create(g);
      backend->map(base, c);
      backend->unmap(base, g);
      backend->destroy(c);
      backend->release(base, 2 * g);
      CUcontext after = reinterpret_cast<CUcontext>(1);
      if (drv().cuCtxGetCurrent(&after) != CUDA_SUCCESS || after != nullptr)
        failure = "the backend left a context current on the calling thread";
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  worker.join();
  EXPECT_EQ(failure, "");
}

TEST(cuda_heap, two_gpus_map_each_others_chunks) {
  if (device_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const cuda_peer_link link = cuda_peer_link_between(0, 1);
  std::printf("GPU 0 -> GPU 1: access %d, native atomics %d, performance rank %d\n", link.access, link.native_atomics,
              link.performance_rank);
  if (!link.access) GTEST_SKIP() << "GPU 0 cannot access GPU 1";
  auto b0 = backend_on(0);
  auto b1 = backend_on(1);
  ASSERT_EQ(cuda_info(*b0)->device_ordinal(), 0);
  ASSERT_EQ(cuda_info(*b1)->device_ordinal(), 1);
  ASSERT_NE(cuda_info(*b0)->pci_bus_id(), cuda_info(*b1)->pci_bus_id());
  const size_t g = std::max(b0->granularity(), b1->granularity());
  const size_t num_bytes = 4 * g;
  char* base0 = static_cast<char*>(b0->reserve(num_bytes));
  char* base1 = static_cast<char*>(b1->reserve(num_bytes));

  chunk on1 = b1->create(num_bytes);  // lives on GPU 1
  b1->map(base1, on1);
  use_context_of(*b1);
  fill(base1, 0x77, num_bytes);

  chunk seen_by0 = b0->import(fcntl(on1.fd, F_DUPFD_CLOEXEC, 0), num_bytes);
  b0->map(base0, seen_by0);  // GPU 0 gets read/write on GPU 1's memory: peer access
  use_context_of(*b0);
  EXPECT_TRUE(all_equal(read(base0, num_bytes), 0x77)) << "GPU 0 must read GPU 1's chunk";
  const auto bytes = pattern(num_bytes, 11);
  write(base0, bytes);
  use_context_of(*b1);
  EXPECT_EQ(read(base1, num_bytes), bytes) << "GPU 1 must see what GPU 0 wrote into its chunk";

  b0->unmap(base0, num_bytes);
  b0->destroy(seen_by0);
  b1->unmap(base1, num_bytes);
  b1->destroy(on1);
  b0->release(base0, num_bytes);
  b1->release(base1, num_bytes);
}

// Issue 3's budget: device memory beyond the user's allocations <= 64 MiB per PE, and init (from a
// ready context to the first usable chunk) fast. Measured with the default 64 GiB reservation for 2
// local PEs and one default-sized (32 MiB) chunk.
TEST(cuda_heap, footprint_and_time_to_first_chunk) {
  constexpr size_t kChunk = 32 * kMiB;
  constexpr size_t kReservePerPe = size_t{64} << 30;
  // The backend first: it makes the primary context current (an earlier test may have left this
  // thread on a context it has since released), which cuMemGetInfo needs.
  const auto start = std::chrono::steady_clock::now();
  auto backend = make_cuda_backend("cuda_heap_test");
  size_t free_before = 0;
  size_t total = 0;
  CU_OK(drv().cuMemGetInfo(&free_before, &total));
  char* base = static_cast<char*>(backend->reserve(2 * kReservePerPe));
  chunk c = backend->create(kChunk);
  backend->map(base, c);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  size_t free_after = 0;
  CU_OK(drv().cuMemGetInfo(&free_after, &total));
  const double beyond_mib =
      (static_cast<double>(free_before) - static_cast<double>(free_after) - static_cast<double>(kChunk)) / kMiB;
  std::printf(
      "backend + 128 GiB reservation + first 32 MiB chunk: %.2f ms; device memory beyond the chunk: "
      "%.1f MiB\n",
      ms, beyond_mib);
  EXPECT_LE(beyond_mib, 64.0);
  // The figure to report is the one printed; this only catches something pathologically slow (the
  // fake driver of CPU CI zero-fills host memory, so no tight bound here).
  EXPECT_LT(ms, 2000.0);

  const auto grow_start = std::chrono::steady_clock::now();
  chunk more = backend->create(kChunk);
  backend->map(base + kChunk, more);
  const double grow_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - grow_start).count();
  std::printf("one more 32 MiB chunk (create + export + map + zero): %.3f ms\n", grow_ms);

  backend->unmap(base + kChunk, kChunk);
  backend->destroy(more);
  backend->unmap(base, kChunk);
  backend->destroy(c);
  backend->release(base, 2 * kReservePerPe);
}

// At process exit the CUDA runtime's exit handler (torch's, at Python interpreter exit) may deinitialize
// the driver before shoal's teardown runs; every release step then has nothing left to free and must
// neither throw nor warn (it warned "cuCtxGetCurrent ... CUresult 4"). Only the fake driver can be shut
// down on demand (shoal_fake_cuda_shutdown, fake_libcuda.cc), so this runs in CPU CI and skips on a GPU.
TEST(cuda_heap, teardown_after_driver_deinit_is_silent) {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  auto* shutdown = lib != nullptr ? reinterpret_cast<void (*)(int)>(dlsym(lib, "shoal_fake_cuda_shutdown")) : nullptr;
  if (lib != nullptr) dlclose(lib);
  if (shutdown == nullptr) GTEST_SKIP() << "a real driver cannot be deinitialized on demand (fake driver only)";
  auto backend = make_cuda_backend("cuda_heap_test");
  const size_t g = backend->granularity();
  char* base = static_cast<char*>(backend->reserve(4 * g));
  chunk first = backend->create(g);
  chunk second = backend->create(g);
  backend->map(base, first);
  backend->map(base + g, second);
  const int first_fd = first.fd;
  ASSERT_GE(first_fd, 0);

  shutdown(1);
  testing::internal::CaptureStderr();
  std::string failure;
  try {
    backend->unmap(base, g);
    backend->destroy(first);
    backend->unmap(base + g, g);
    backend->destroy(second);
    backend->release(base, 4 * g);
    backend.reset();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const std::string printed = testing::internal::GetCapturedStderr();
  shutdown(0);
  EXPECT_EQ(failure, "") << "a release step threw after the driver was deinitialized";
  EXPECT_EQ(printed, "") << "the teardown printed after the driver was deinitialized";
  // The chunk's fd is the process's, not the driver's: it is closed all the same.
  EXPECT_EQ(fcntl(first_fd, F_GETFD), -1);
  EXPECT_EQ(first.fd, -1);

  // Other failures of a release step still throw (a range that is not a reservation); then the fake's
  // reservation, which the skipped release left behind, is freed.
  auto again = make_cuda_backend("cuda_heap_test");
  EXPECT_THROW(again->release(base + g, g), error);
  EXPECT_NO_THROW(again->release(base, 4 * g));
}

}  // namespace
}  // namespace shoal::detail

int main(int argc, char** argv) {
  using namespace shoal::detail;
  if (!cuda_usable()) {
    std::printf("SKIP: no usable GPU (%s)\n", cuda_status().c_str());
    return 77;
  }
  // Start from a ready context, as an application that called cudaSetDevice would: the tests then
  // measure shoal's work, not context creation, and backends pick this device unless told otherwise.
  const cuda_driver& d = *load_cuda_driver();
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (d.cuDeviceGet(&device, 0) != CUDA_SUCCESS || d.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      d.cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    std::printf("FAIL: cannot bring up the primary context of GPU 0\n");
    return 1;
  }
  testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  (void)d.cuDevicePrimaryCtxRelease(device);
  return status;
}

#else  // !SHOAL_HAVE_CUDA

int main() {
  std::printf("SKIP: no usable GPU (%s)\n", shoal::detail::cuda_status().c_str());
  return 77;
}

#endif  // SHOAL_HAVE_CUDA
