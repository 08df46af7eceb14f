// What the device benchmarks (common/driver.cuh, coll/coll_harness.cuh, both mains) need from the CUDA runtime: a
// failed call as an exception naming it, whether a kernel launches with a given block size, and this PE's GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
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

/// The GPU for this PE, before the library initializes: SHOAL_DEVICE if set, else the launcher's
/// local rank (shoalrun, mpirun, srun, torchrun) modulo the visible GPUs. false: no usable GPU.
inline bool select_gpu_from_env() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return false;
  }
  int ordinal = -1;
  if (const char* d = std::getenv("SHOAL_DEVICE"); d != nullptr && *d != '\0') ordinal = std::atoi(d);
  if (ordinal < 0) {
    int local = 0;
    for (const char* name :
         {"SHOAL_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
      if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
        local = std::atoi(v);
        break;
      }
    }
    ordinal = local % count;
  }
  if (ordinal >= count || cudaSetDevice(ordinal) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace shoal::bench
