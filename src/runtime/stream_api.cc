// The *_on_stream family: host calls that enqueue work on a CUDA stream. Arguments are validated
// now, on the host, with the same checks as the blocking calls; the work runs in stream order.
#include <cstring>

#include "common/check.hpp"
#include "runtime/facade.hpp"
#include "runtime/world_impl.hpp"
#include "shoal/shoal.h"

#ifdef SHOAL_HAVE_CUDA
#include "common/cuda_check.hpp"
#include "transport/stream_kernels.hpp"
#endif

namespace shoal::detail {

void world_impl::check_gpu_heap(std::string_view call) const {
  if (transport_->direct() || device_.heap_base == nullptr)
    SHOAL_THROW(errc::unsupported, call,
                "on-stream operations need GPU symmetric memory (backend cuda); this "
                "world's backend is {}",
                backend_name());
}

#ifdef SHOAL_HAVE_CUDA

namespace {
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }
}  // namespace

void world_impl::put_on_stream(std::string_view call, void* dest, const void* source, size_t num_bytes, int pe,
                               void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe);
  if (num_bytes == 0) return;
  SHOAL_CHECK_ARG(source != nullptr, call, "source is null");
  uint64_t off = check_symmetric(call, "dest", dest, num_bytes, 1);
  SHOAL_CUDA_CHECK(
      cudaMemcpyAsync(transport_->address(call, pe, off), source, num_bytes, cudaMemcpyDefault, as_stream(stream)),
      call);
}

void world_impl::get_on_stream(std::string_view call, void* dest, const void* source, size_t num_bytes, int pe,
                               void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe);
  if (num_bytes == 0) return;
  SHOAL_CHECK_ARG(dest != nullptr, call, "dest is null");
  uint64_t off = check_symmetric(call, "source", source, num_bytes, 1);
  SHOAL_CUDA_CHECK(
      cudaMemcpyAsync(dest, transport_->address(call, pe, off), num_bytes, cudaMemcpyDefault, as_stream(stream)), call);
}

void world_impl::p_on_stream(std::string_view call, void* dest, uint64_t value_bits, size_t value_bytes, int pe,
                             void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe);
  SHOAL_CHECK_ARG(value_bytes == 1 || value_bytes == 2 || value_bytes == 4 || value_bytes == 8, call,
                  "value_bytes={} is not 1, 2, 4 or 8", value_bytes);
  check_symmetric(call, "dest", dest, value_bytes, value_bytes);
  SHOAL_CUDA_CHECK(launch_p(device_, dest, value_bits, value_bytes, pe, as_stream(stream)), call);
}

void world_impl::signal_op_on_stream(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                     void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe);
  check_sig_op(call, sig_op);
  check_symmetric(call, "sig_addr", sig_addr, sizeof(uint64_t), alignof(uint64_t));
  SHOAL_CUDA_CHECK(launch_signal_op(device_, sig_addr, signal, sig_op, pe, as_stream(stream)), call);
}

void world_impl::wait_until_on_stream(std::string_view call, void* ivar, scalar type, int cmp, uint64_t value_bits,
                                      void* stream) {
  check_gpu_heap(call);
  SHOAL_CHECK_ARG(cmp >= SHOAL_CMP_EQ && cmp <= SHOAL_CMP_GE, call, "cmp={} is not a SHOAL_CMP_* value", cmp);
  check_symmetric(call, "ivar", ivar, type.bytes, type.bytes);
  SHOAL_CUDA_CHECK(launch_wait_until(device_, ivar, type, cmp, value_bits, as_stream(stream)), call);
}

void world_impl::quiet_on_stream(std::string_view call, void* stream) {
  check_gpu_heap(call);
  SHOAL_CUDA_CHECK(launch_quiet(device_, as_stream(stream)), call);
}

void world_impl::barrier_all_on_stream(std::string_view call, void* stream) {
  check_gpu_heap(call);
  SHOAL_CUDA_CHECK(launch_barrier_all(device_, as_stream(stream)), call);
}

#else  // no CUDA in this build: check_gpu_heap always throws

void world_impl::put_on_stream(std::string_view call, void*, const void*, size_t, int, void*) { check_gpu_heap(call); }
void world_impl::get_on_stream(std::string_view call, void*, const void*, size_t, int, void*) { check_gpu_heap(call); }
void world_impl::p_on_stream(std::string_view call, void*, uint64_t, size_t, int, void*) { check_gpu_heap(call); }
void world_impl::signal_op_on_stream(std::string_view call, uint64_t*, uint64_t, int, int, void*) {
  check_gpu_heap(call);
}
void world_impl::wait_until_on_stream(std::string_view call, void*, scalar, int, uint64_t, void*) {
  check_gpu_heap(call);
}
void world_impl::quiet_on_stream(std::string_view call, void*) { check_gpu_heap(call); }
void world_impl::barrier_all_on_stream(std::string_view call, void*) { check_gpu_heap(call); }

#endif

}  // namespace shoal::detail

namespace f = shoal::detail::facade;

extern "C" {

void shoalx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_putmem_on_stream";
  f::guarded_void(call, [&] { f::current(call).put_on_stream(call, dest, source, nelems, pe, stream); });
}
void shoalx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_getmem_on_stream";
  f::guarded_void(call, [&] { f::current(call).get_on_stream(call, dest, source, nelems, pe, stream); });
}
void shoalx_p_on_stream(void* dest, uint64_t value_bits, size_t value_bytes, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_p_on_stream";
  f::guarded_void(call, [&] { f::current(call).p_on_stream(call, dest, value_bits, value_bytes, pe, stream); });
}
void shoalx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_signal_op_on_stream";
  f::guarded_void(call, [&] { f::current(call).signal_op_on_stream(call, sig_addr, signal, sig_op, pe, stream); });
}
void shoalx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value, struct CUstream_st* stream) {
  const char* call = "shoalx_signal_wait_until_on_stream";
  f::guarded_void(call, [&] {
    f::current(call).wait_until_on_stream(call, sig_addr, shoal::detail::scalar_of<uint64_t>(), cmp, cmp_value, stream);
  });
}
void shoalx_quiet_on_stream(struct CUstream_st* stream) {
  const char* call = "shoalx_quiet_on_stream";
  f::guarded_void(call, [&] { f::current(call).quiet_on_stream(call, stream); });
}
void shoalx_barrier_all_on_stream(struct CUstream_st* stream) {
  const char* call = "shoalx_barrier_all_on_stream";
  f::guarded_void(call, [&] { f::current(call).barrier_all_on_stream(call, stream); });
}

}  // extern "C"
