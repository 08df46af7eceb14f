// Launches the one-thread kernel that performs a host-issued atomic on GPU memory.
#pragma once

#include <cuda_runtime.h>

#include "transport/scalar.hpp"

namespace shoal::detail {

struct amo_args {
  amo_op op;
  unsigned long long operand;  ///< bit pattern of the value (low type.bytes bytes)
  unsigned long long compare;  ///< compare_swap only
};

/// `fetched` must be device-accessible (pinned host); receives the old value's bits.
cudaError_t launch_amo_kernel(scalar type, void* target, amo_args args, unsigned long long* fetched,
                              cudaStream_t stream);

}  // namespace shoal::detail
