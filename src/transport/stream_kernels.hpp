// Kernels behind the host's *_on_stream calls: each is one thread (or one block) running the device
// API on the world's handle, so it is ordered on the caller's stream and can be captured in a CUDA
// graph. Plain C++ interface (no fmt through nvcc); errors come back as cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "shoal/device_world.hpp"
#include "transport/scalar.hpp"

namespace shoal::detail {

/// Stores the low `num_bytes` (1, 2, 4, 8) of `value_bits` at `dest` on `pe` (shoal_<T>_p semantics).
cudaError_t launch_p(const device_world& w, void* dest, uint64_t value_bits, size_t num_bytes, int pe,
                     cudaStream_t stream);
/// Applies sig_op (SHOAL_SIGNAL_SET/ADD) with `signal` to `sig_addr` on `pe`, release-ordered after
/// everything earlier on the stream.
cudaError_t launch_signal_op(const device_world& w, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                             cudaStream_t stream);
/// Blocks the stream until the local `ivar` (of `type`) compares true with `value_bits` (acquire).
cudaError_t launch_wait_until(const device_world& w, void* ivar, scalar type, int cmp, uint64_t value_bits,
                              cudaStream_t stream);
/// Completes every put issued on the stream before it (and by earlier kernels) at system scope.
cudaError_t launch_quiet(const device_world& w, cudaStream_t stream);
/// quiet, then a device barrier with every PE (the same sync words as the device barrier_all).
cudaError_t launch_barrier_all(const device_world& w, cudaStream_t stream);
/// The kernel form of an on-stream putmem (get = false: dest symmetric on pe) or getmem (get = true: source
/// symmetric on pe): the device API's block-scope put/get of one slice per block (one block per 64 KiB, at most 32),
/// then a quiet, in stream order.
cudaError_t launch_rma(const device_world& w, void* dest, const void* source, size_t nbytes, int pe, bool get,
                       cudaStream_t stream);

}  // namespace shoal::detail
