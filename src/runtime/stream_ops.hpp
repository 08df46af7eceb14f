// The *_on_stream family (GPU heaps only; `stream` is a cudaStream_t): host calls that enqueue work
// on a CUDA stream. Arguments are validated now, on the host, with the same checks as the blocking
// calls; the work runs in stream order (copies, or one-thread kernels on the device handle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/memory.hpp"
#include "shoal/device_world.hpp"
#include "transport/scalar.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

class stream_ops {
 public:
  /// `device` is the world's device handle (filled at init, after this object is made).
  stream_ops(symmetric_memory& memory, peer_transport& transport, const device_world& device)
      : memory_(memory), transport_(transport), device_(device) {}

  void put_on_stream(std::string_view call, void* dest, const void* source, size_t nbytes, int pe, void* stream);
  void get_on_stream(std::string_view call, void* dest, const void* source, size_t nbytes, int pe, void* stream);
  /// iput (put = true: dest symmetric on pe) or iget (source symmetric on pe): strides in elements (>= 1), as one
  /// 2D copy.
  void strided_on_stream(std::string_view call, bool put, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                         size_t nelems, size_t elem_bytes, int pe, void* stream);
  void p_on_stream(std::string_view call, void* dest, uint64_t value_bits, size_t value_bytes, int pe, void* stream);
  /// Reads value_bytes of symmetric `source` on pe into host `value` once earlier work on stream is done; waits
  /// for the stream.
  void g_on_stream(std::string_view call, void* value, const void* source, size_t value_bytes, int pe, void* stream);
  void signal_op_on_stream(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                           void* stream);
  void wait_until_on_stream(std::string_view call, void* ivar, scalar type, int cmp, uint64_t value_bits, void* stream);
  void quiet_on_stream(std::string_view call, void* stream);
  void barrier_all_on_stream(std::string_view call, void* stream);
  /// Copies nbytes of `src` (host or device memory) to host `dst` now (the status and cmp_values arrays of the
  /// vector on-stream waits).
  void read_array(std::string_view call, void* dst, const void* src, size_t nbytes);

 private:
  /// Throws errc::unsupported naming `call` unless the world's heap is GPU memory.
  void check_gpu_heap(std::string_view call) const;
  /// Whether an on-stream put/get of nbytes whose local side is `local` takes the SM copy kernel rather than the
  /// copy engine: up to SHOAL_STREAM_KERNEL_BYTES when set, else up to the measured crossover for this PE count
  /// (common/tuning.hpp), and only when `local` is memory of this GPU (a kernel cannot read pageable host memory).
  bool copy_by_kernel(size_t nbytes, const void* local) const;

  symmetric_memory& memory_;
  peer_transport& transport_;
  const device_world& device_;
};

}  // namespace shoal::detail
