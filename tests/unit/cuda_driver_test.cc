// The cuda backend where no GPU is usable (CPU CI has no libcuda.so.1): the heap layer links and runs
// without libcuda, cuda_usable() says no, and asking for the cuda backend is a clear
// errc::unsupported. On a GPU machine the no-GPU expectations are skipped, the rest still hold.
#include "heap/cuda_backend.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "shoal/error.hpp"

#ifdef SHOAL_HAVE_CUDA
#include "heap/cuda_driver.hpp"
#endif

namespace shoal::detail {
namespace {

bool libcuda_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcuda.so") != std::string::npos) return true;
  return false;
}

// Sampled during static initialization, before any test asks for CUDA: what the dynamic loader
// brought in for this binary (which links the heap layer) by itself.
const bool g_libcuda_mapped_at_start = libcuda_mapped();

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(cuda_driver, heap_layer_does_not_link_libcuda) {
  EXPECT_FALSE(g_libcuda_mapped_at_start) << "libcuda was loaded before any CUDA use: something links it";
}

TEST(cuda_driver, usable_is_cached_and_consistent_with_status) {
  const bool usable = cuda_usable();
  EXPECT_EQ(usable, cuda_usable());
  const std::string status = cuda_status();
  EXPECT_FALSE(status.empty());
  EXPECT_EQ(usable, !contains(status, "not usable")) << status;
#ifndef SHOAL_HAVE_CUDA
  EXPECT_FALSE(usable);
  EXPECT_TRUE(contains(status, "without CUDA")) << status;
#endif
}

TEST(cuda_driver, cuda_backend_is_unsupported_without_a_gpu) {
  if (cuda_usable()) GTEST_SKIP() << "a GPU is usable here (" << cuda_status() << ")";
  try {
    auto backend = make_cuda_backend("shoal_init");
    FAIL() << "make_cuda_backend returned a backend although cuda_usable() is false";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unsupported) << e.what();
    EXPECT_EQ(e.call(), "shoal_init");
    EXPECT_TRUE(contains(e.message(), "SHOAL_BACKEND=host")) << e.message();
    // The message carries the reason that cuda_status() reports.
    const std::string status = cuda_status();
    const std::string reason = status.substr(status.find(':') + 2);
    EXPECT_TRUE(contains(e.message(), reason)) << e.message() << " | " << status;
#ifdef SHOAL_HAVE_CUDA
    // After the probe, libcuda.so.1 is loaded iff it exists; when it does not, say so by name.
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) {
      EXPECT_TRUE(contains(e.message(), "libcuda.so.1")) << e.message();
      EXPECT_FALSE(libcuda_mapped());
    } else {
      dlclose(lib);
    }
#else
    EXPECT_TRUE(contains(e.message(), "without CUDA")) << e.message();
#endif
  }
}

TEST(cuda_driver, peer_queries_answer_no_without_a_gpu) {
  if (cuda_usable()) GTEST_SKIP() << "a GPU is usable here (" << cuda_status() << ")";
  EXPECT_FALSE(can_access_peer(0, 0));
  EXPECT_FALSE(can_access_peer(0, 1));
  const cuda_peer_link link = cuda_peer_link_between(0, 1);
  EXPECT_FALSE(link.access);
  EXPECT_FALSE(link.native_atomics);
  EXPECT_EQ(cuda_device_of_pci_bus_id("0000:19:00.0"), -1);
}

TEST(cuda_driver, peer_queries_reject_bad_ordinals) {
  EXPECT_FALSE(can_access_peer(-1, 0));
  EXPECT_FALSE(can_access_peer(0, 1 << 20));
  EXPECT_EQ(cuda_device_of_pci_bus_id(""), -1);
  EXPECT_EQ(cuda_device_of_pci_bus_id("not a bus id"), -1);
}

TEST(cuda_driver, host_backend_has_no_cuda_info) {
  auto host = make_host_backend();
  EXPECT_EQ(cuda_info(*host), nullptr);
}

#ifdef SHOAL_HAVE_CUDA

TEST(cuda_driver, call_text_drops_the_table_name) {
  EXPECT_EQ(cu_call_text("drv_->cuMemMap(ptr, bytes, 0, handle, 0)"), "cuMemMap(ptr, bytes, 0, handle, 0)");
  EXPECT_EQ(cu_call_text("drv.cuInit(0)"), "cuInit(0)");
  EXPECT_EQ(cu_call_text("cuInit(0)"), "cuInit(0)");
  EXPECT_EQ(cu_call_text("fail(x.cuda)"), "fail(x.cuda)");  // only the callee is looked at
}

TEST(cuda_driver, describe_names_the_result) {
  const std::string text = describe_cu_result(CUDA_ERROR_OUT_OF_MEMORY);
  if (load_cuda_driver() == nullptr) {
    EXPECT_EQ(text, "CUresult 2");
    EXPECT_FALSE(cuda_driver_load_error().empty());
  } else {
    EXPECT_EQ(text.rfind("CUDA_ERROR_OUT_OF_MEMORY (2): ", 0), 0u) << text;
    EXPECT_TRUE(cuda_driver_load_error().empty());
  }
}

TEST(cuda_driver, check_macro_throws_a_cuda_error) {
  auto fake_call = [](int) { return CUDA_ERROR_INVALID_VALUE; };
  try {
    SHOAL_CU_CHECK("shoal_malloc", fake_call(42));
    FAIL() << "SHOAL_CU_CHECK did not throw";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::cuda);
    EXPECT_EQ(e.call(), "shoal_malloc");
    EXPECT_EQ(e.message().rfind("fake_call(42) failed: ", 0), 0u) << e.message();
    EXPECT_TRUE(contains(e.message(), "1")) << e.message();  // CUDA_ERROR_INVALID_VALUE's number
    EXPECT_GT(e.line(), 0);
  }
  auto ok_call = [] { return CUDA_SUCCESS; };
  EXPECT_NO_THROW(SHOAL_CU_CHECK("shoal_malloc", ok_call()));
  try {
    SHOAL_CU_CHECK_MSG("shoal_malloc", fake_call(1), "cuMemCreate({} bytes on GPU {})", 4096, 3);
    FAIL() << "SHOAL_CU_CHECK_MSG did not throw";
  } catch (const error& e) {
    EXPECT_EQ(e.message().rfind("cuMemCreate(4096 bytes on GPU 3) failed: ", 0), 0u) << e.message();
  }
}

#endif  // SHOAL_HAVE_CUDA

}  // namespace
}  // namespace shoal::detail
