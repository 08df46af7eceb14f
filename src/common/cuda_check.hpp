// The CUDA runtime's half of the CHECK family: a cudaError_t that is not cudaSuccess becomes
// shoal::error(errc::cuda) naming the expression, the error and the public call. Host code only
// (it uses fmt, which nvcc must not see); kernels report through their launcher's return value.
#pragma once

#include <cuda_runtime.h>

#include "common/check.hpp"

#define SHOAL_CUDA_CHECK(expr, call)                                                                        \
  do {                                                                                                      \
    cudaError_t shoal_err_ = (expr);                                                                        \
    if (shoal_err_ != cudaSuccess)                                                                          \
      SHOAL_THROW(::shoal::errc::cuda, (call), "{} failed: {} ({})", #expr, cudaGetErrorString(shoal_err_), \
                  cudaGetErrorName(shoal_err_));                                                            \
  } while (0)
