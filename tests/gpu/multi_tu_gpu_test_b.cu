// The second translation unit of multi_tu_gpu_test: its own facade state, its own kernel.
#include <cuda_runtime.h>

#include "multi_tu_gpu_test.hpp"
#include "shoal/shoal.h"

namespace shoal_test {

namespace {

__global__ void unit_b_kernel(int* identity, uint32_t* dst, const uint32_t* src, size_t words) {
  const int pe = (shoal_my_pe() + 1) % shoal_n_pes();
  if (threadIdx.x == 0) {
    identity[0] = shoal_my_pe();
    identity[1] = shoal_n_pes();
    identity[2] = shoal_ptr(dst, pe) != nullptr ? 1 : 0;
  }
  // Four threads, a quarter each (thread-scope typed puts).
  const size_t lo = words * threadIdx.x / blockDim.x, hi = words * (threadIdx.x + 1) / blockDim.x;
  shoal_uint32_put(dst + lo, src + lo, hi - lo, pe);
  shoal_quiet();
}

}  // namespace

void run_unit_b_kernel(int* identity, uint32_t* dst, const uint32_t* src, size_t words) {
  unit_b_kernel<<<1, 4>>>(identity, dst, src, words);
}

}  // namespace shoal_test
