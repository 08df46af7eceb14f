// Init time and device-memory footprint of shoal on this PE's GPU, for the closing figures:
//   init_ms: from a ready CUDA context (cudaSetDevice + cudaFree(0) done) to the return of the
//            first shoal_malloc (1 MiB) after shoal_init;
//   extra_device_mib: device memory in use after shoal_init and 256 MiB of user allocations,
//            minus the 256 MiB (cudaMemGetInfo before shoal_init vs after the allocations).
// Prints one line per PE: "PE <me> init_ms=<ms> extra_device_mib=<MiB> ...". As a test it only
// checks that the program runs (exit 0); exit 77 without a usable GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "shoal/shoal.h"

#define CHECK(expr)                                                                                       \
  do {                                                                                                    \
    cudaError_t e_ = (expr);                                                                              \
    if (e_ != cudaSuccess) {                                                                              \
      std::printf("init_footprint: %s failed: %s at line %d\n", #expr, cudaGetErrorString(e_), __LINE__); \
      std::fflush(stdout);                                                                                \
      std::_Exit(1);                                                                                      \
    }                                                                                                     \
  } while (0)

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIP: no usable GPU\n");
    return 77;
  }
  const char* lr = std::getenv("SHOAL_LOCAL_RANK");
  const char* ls = std::getenv("SHOAL_LOCAL_SIZE");
  if (ls != nullptr && std::atoi(ls) > count) {
    std::printf("SKIP: no usable GPU for each PE (%s PEs, %d GPU(s))\n", ls, count);
    return 77;
  }
  CHECK(cudaSetDevice((lr != nullptr ? std::atoi(lr) : 0) % count));
  CHECK(cudaFree(nullptr));
  CHECK(cudaDeviceSynchronize());
  size_t free_before = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_before, &total));

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  shoal_init();
  const auto t1 = clock::now();
  constexpr size_t kMiB = size_t{1} << 20;
  void* first = shoal_malloc(kMiB);
  const auto t2 = clock::now();
  if (first == nullptr) {
    std::printf("init_footprint: the first shoal_malloc(1 MiB) returned NULL\n");
    return 1;
  }
  void* rest = shoal_malloc(255 * kMiB);  // 256 MiB of user allocations in all
  if (rest == nullptr) {
    std::printf("init_footprint: shoal_malloc(255 MiB) returned NULL\n");
    return 1;
  }
  CHECK(cudaMemset(first, 1, kMiB));  // usable: written by the GPU
  CHECK(cudaMemset(rest, 1, 255 * kMiB));
  CHECK(cudaDeviceSynchronize());
  size_t free_after = 0;
  CHECK(cudaMemGetInfo(&free_after, &total));
  const double used_mib = (static_cast<double>(free_before) - static_cast<double>(free_after)) / kMiB;
  const double ms = std::chrono::duration<double, std::milli>(t2 - t0).count();
  const double init_only = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double malloc_only = std::chrono::duration<double, std::milli>(t2 - t1).count();
  std::printf(
      "PE %d init_ms=%.1f extra_device_mib=%.1f (shoal_init %.1f ms + first shoal_malloc %.1f ms; device "
      "memory used %.1f MiB for 256 MiB of allocations; backend %s, %d PEs)\n",
      shoal_my_pe(), ms, used_mib - 256.0, init_only, malloc_only, used_mib, shoalx_backend_name(), shoal_n_pes());
  shoal_barrier_all();
  shoal_free(rest);
  shoal_free(first);
  shoal_finalize();
  return 0;
}
