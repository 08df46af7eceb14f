// What both device benchmark harnesses (driver.cuh, coll_harness.cuh) need from the CUDA runtime: a
// failed call as an exception naming it, and whether a kernel launches with a given block size.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace shoal::bench {

struct cuda_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw cuda_failure(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

/// The kernel's attributes (registers, the most threads per block its registers allow): a benchmark
/// leaves out a variant whose kernel cannot launch with -t threads (a launch would fail with
/// cudaErrorLaunchOutOfResources rather than run slower) and says why.
template <class Kernel>
cudaFuncAttributes kernel_attributes(Kernel* kernel) {
  cudaFuncAttributes attr{};
  cuda_check(cudaFuncGetAttributes(&attr, kernel), "cudaFuncGetAttributes");
  return attr;
}

}  // namespace shoal::bench
