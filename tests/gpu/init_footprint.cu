// Init time and device-memory footprint of shoal on this PE's GPU, for the closing figures:
//   init_ms: from a ready CUDA context (cudaSetDevice + cudaFree(0) done) to the return of the
//            first shoal_malloc (1 MiB) after shoal_init;
//   extra_device_mib: device memory in use after shoal_init and 256 MiB of user allocations,
//            minus the 256 MiB (cudaMemGetInfo before shoal_init vs after the allocations).
// Prints one line per PE: "PE <me> init_ms=<ms> extra_device_mib=<MiB> ..." and where the memory went
// (after shoal_init, after the first shoal_malloc, after all allocations, after the GPU wrote them).
// Fails (exit 1) when extra_device_mib is above the bound given as the first argument (MiB; the
// issue-3 target of 64 when absent): memory, unlike time, is a figure a test may pin. Exit 77
// without a usable GPU.
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

int main(int argc, char** argv) {
  const double max_extra_mib = argc > 1 ? std::atof(argv[1]) : 64.0;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIP: no usable GPU\n");
    return 77;
  }
  const char* lr = std::getenv("SHOAL_LOCAL_RANK");
  const char* ls = std::getenv("SHOAL_LOCAL_SIZE");
  // Not when PEs share a GPU: cudaMemGetInfo counts the whole device, so another PE's context, heap and
  // allocations (made at any moment around this PE's measurement) would be charged to this PE.
  if (ls != nullptr && std::atoi(ls) > count) {
    std::printf(
        "SKIP: no GPU of its own for each PE (%s PEs, %d GPU(s)): the footprint is read per device (cudaMemGetInfo), "
        "so PEs sharing a GPU would count each other's memory\n",
        ls, count);
    return 77;
  }
  CHECK(cudaSetDevice((lr != nullptr ? std::atoi(lr) : 0) % count));
  CHECK(cudaFree(nullptr));
  CHECK(cudaDeviceSynchronize());
  size_t free_before = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_before, &total));

  using clock = std::chrono::steady_clock;
  // Device memory in use now beyond what was in use before shoal_init, in MiB.
  auto used_now = [&] {
    size_t free_now = 0, total_now = 0;
    CHECK(cudaMemGetInfo(&free_now, &total_now));
    return (static_cast<double>(free_before) - static_cast<double>(free_now)) / (1 << 20);
  };
  const auto t0 = clock::now();
  shoal_init();
  const auto t1 = clock::now();
  const double after_init = used_now();
  constexpr size_t kMiB = size_t{1} << 20;
  void* first = shoal_malloc(kMiB);
  const auto t2 = clock::now();
  if (first == nullptr) {
    std::printf("init_footprint: the first shoal_malloc(1 MiB) returned NULL\n");
    return 1;
  }
  const double after_first = used_now();
  void* rest = shoal_malloc(255 * kMiB);  // 256 MiB of user allocations in all
  if (rest == nullptr) {
    std::printf("init_footprint: shoal_malloc(255 MiB) returned NULL\n");
    return 1;
  }
  const double after_all = used_now();
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
  std::printf(
      "PE %d device memory in use (MiB): after shoal_init %.1f, after the first shoal_malloc %.1f, after "
      "256 MiB of shoal_malloc %.1f, after the GPU wrote them %.1f\n",
      shoal_my_pe(), after_init, after_first, after_all, used_mib);
  const bool over = used_mib - 256.0 > max_extra_mib;
  if (over)
    std::printf(
        "init_footprint: PE %d uses %.1f MiB of device memory beyond its 256 MiB of allocations, above the "
        "%.1f MiB bound\n",
        shoal_my_pe(), used_mib - 256.0, max_extra_mib);
  shoal_barrier_all();
  shoal_free(rest);
  shoal_free(first);
  shoal_finalize();
  return over ? 1 : 0;
}
