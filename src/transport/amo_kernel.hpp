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

/// Runs the atomic kernel once (a fetch of `*fetched`, pinned host, into itself) on `stream` and waits
/// for it. With lazy module loading (CUDA's default since 12.2, and what PyTorch sets) the first launch
/// of a kernel loads it, and loading waits for the context's running kernels: a first launch while a
/// kernel of the process spins on a word that this atomic would set never returns. Called at init,
/// before any kernel can wait on an atomic that this kernel applies.
cudaError_t preload_amo_kernel(unsigned long long* fetched, cudaStream_t stream);

}  // namespace shoal::detail
