// The *_on_stream family: host calls that enqueue work on a CUDA stream. Arguments are validated
// now, on the host, with the same checks as the blocking calls; the work runs in stream order.
#include <cstring>

#include "common/check.hpp"
#include "runtime/facade.hpp"
#include "runtime/rma.hpp"
#include "runtime/stream_ops.hpp"
#include "shoal/shoal.h"

#ifdef SHOAL_HAVE_CUDA
#include "common/cuda_check.hpp"
#include "transport/stream_kernels.hpp"
#endif

namespace shoal::detail {

void stream_ops::check_gpu_heap(std::string_view call) const {
  if (transport_.direct() || device_.heap_base == nullptr)
    SHOAL_THROW(errc::unsupported, call,
                "on-stream operations need GPU symmetric memory (backend cuda); this "
                "world's backend is {}",
                memory_.heap().backend().name());
}

#ifdef SHOAL_HAVE_CUDA

namespace {
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }
}  // namespace

void stream_ops::put_on_stream(std::string_view call, void* dest, const void* source, size_t nbytes, int pe,
                               void* stream) {
  check_gpu_heap(call);
  auto off = check_contiguous(memory_, transport_, call, pe, nbytes, 1, {source, "source"}, {dest, "dest"});
  if (!off) return;
  SHOAL_CUDA_CHECK(
      cudaMemcpyAsync(transport_.address(call, pe, *off), source, nbytes, cudaMemcpyDefault, as_stream(stream)), call);
}

void stream_ops::get_on_stream(std::string_view call, void* dest, const void* source, size_t nbytes, int pe,
                               void* stream) {
  check_gpu_heap(call);
  auto off = check_contiguous(memory_, transport_, call, pe, nbytes, 1, {dest, "dest"}, {source, "source"});
  if (!off) return;
  SHOAL_CUDA_CHECK(
      cudaMemcpyAsync(dest, transport_.address(call, pe, *off), nbytes, cudaMemcpyDefault, as_stream(stream)), call);
}

void stream_ops::p_on_stream(std::string_view call, void* dest, uint64_t value_bits, size_t value_bytes, int pe,
                             void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe, transport_.n_pes());
  SHOAL_CHECK_ARG(value_bytes == 1 || value_bytes == 2 || value_bytes == 4 || value_bytes == 8, call,
                  "value_bytes={} is not 1, 2, 4 or 8", value_bytes);
  memory_.check(call, "dest", dest, value_bytes, value_bytes);
  SHOAL_CUDA_CHECK(launch_p(device_, dest, value_bits, value_bytes, pe, as_stream(stream)), call);
}

void stream_ops::signal_op_on_stream(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                     void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe, transport_.n_pes());
  check_sig_op(call, sig_op);
  memory_.check(call, "sig_addr", sig_addr, sizeof(uint64_t), alignof(uint64_t));
  SHOAL_CUDA_CHECK(launch_signal_op(device_, sig_addr, signal, sig_op, pe, as_stream(stream)), call);
}

void stream_ops::wait_until_on_stream(std::string_view call, void* ivar, scalar type, int cmp, uint64_t value_bits,
                                      void* stream) {
  check_gpu_heap(call);
  SHOAL_CHECK_ARG(cmp >= SHOAL_CMP_EQ && cmp <= SHOAL_CMP_GE, call, "cmp={} is not a SHOAL_CMP_* value", cmp);
  memory_.check(call, "ivar", ivar, type.bytes, type.bytes);
  SHOAL_CUDA_CHECK(launch_wait_until(device_, ivar, type, cmp, value_bits, as_stream(stream)), call);
}

void stream_ops::quiet_on_stream(std::string_view call, void* stream) {
  check_gpu_heap(call);
  SHOAL_CUDA_CHECK(launch_quiet(device_, as_stream(stream)), call);
}

void stream_ops::barrier_all_on_stream(std::string_view call, void* stream) {
  check_gpu_heap(call);
  SHOAL_CUDA_CHECK(launch_barrier_all(device_, as_stream(stream)), call);
}

#else  // no CUDA in this build: check_gpu_heap always throws

void stream_ops::put_on_stream(std::string_view call, void*, const void*, size_t, int, void*) { check_gpu_heap(call); }
void stream_ops::get_on_stream(std::string_view call, void*, const void*, size_t, int, void*) { check_gpu_heap(call); }
void stream_ops::p_on_stream(std::string_view call, void*, uint64_t, size_t, int, void*) { check_gpu_heap(call); }
void stream_ops::signal_op_on_stream(std::string_view call, uint64_t*, uint64_t, int, int, void*) {
  check_gpu_heap(call);
}
void stream_ops::wait_until_on_stream(std::string_view call, void*, scalar, int, uint64_t, void*) {
  check_gpu_heap(call);
}
void stream_ops::quiet_on_stream(std::string_view call, void*) { check_gpu_heap(call); }
void stream_ops::barrier_all_on_stream(std::string_view call, void*) { check_gpu_heap(call); }

#endif

}  // namespace shoal::detail

namespace f = shoal::detail::facade;

extern "C" {

void shoalx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_putmem_on_stream";
  f::guarded_void(call, [&] { f::current(call).streams().put_on_stream(call, dest, source, nelems, pe, stream); });
}
void shoalx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_getmem_on_stream";
  f::guarded_void(call, [&] { f::current(call).streams().get_on_stream(call, dest, source, nelems, pe, stream); });
}
void shoalx_p_on_stream(void* dest, uint64_t value_bits, size_t value_bytes, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_p_on_stream";
  f::guarded_void(call,
                  [&] { f::current(call).streams().p_on_stream(call, dest, value_bits, value_bytes, pe, stream); });
}
void shoalx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_signal_op_on_stream";
  f::guarded_void(call,
                  [&] { f::current(call).streams().signal_op_on_stream(call, sig_addr, signal, sig_op, pe, stream); });
}
void shoalx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value, struct CUstream_st* stream) {
  const char* call = "shoalx_signal_wait_until_on_stream";
  f::guarded_void(call, [&] {
    f::current(call).streams().wait_until_on_stream(call, sig_addr, shoal::detail::scalar_of<uint64_t>(), cmp,
                                                    cmp_value, stream);
  });
}
void shoalx_quiet_on_stream(struct CUstream_st* stream) {
  const char* call = "shoalx_quiet_on_stream";
  f::guarded_void(call, [&] { f::current(call).streams().quiet_on_stream(call, stream); });
}
void shoalx_barrier_all_on_stream(struct CUstream_st* stream) {
  const char* call = "shoalx_barrier_all_on_stream";
  f::guarded_void(call, [&] { f::current(call).streams().barrier_all_on_stream(call, stream); });
}

}  // extern "C"
