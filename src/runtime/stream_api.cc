// The *_on_stream family: host calls that enqueue work on a CUDA stream. Arguments are validated
// now, on the host, with the same checks as the blocking calls; the work runs in stream order.
#include <cstring>
#include <vector>

#include "common/check.hpp"
#include "common/env.hpp"
#include "common/tuning.hpp"
#include "runtime/c_api.hpp"
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

bool stream_ops::copy_by_kernel(size_t nbytes, const void* local) const {
  static const bool set = env::raw("SHOAL_STREAM_KERNEL_BYTES").has_value();
  static const uint64_t from_env = env::get_size("SHOAL_STREAM_KERNEL_BYTES");
  const uint64_t limit = set ? from_env : tuning::stream_kernel_max_bytes(device_.n_pes);
  if (nbytes == 0 || nbytes > limit) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, local) != cudaSuccess) {
    (void)cudaGetLastError();  // not a CUDA pointer: the copy engine handles it
    return false;
  }
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  return (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) && a.device == device;
}

void stream_ops::put_on_stream(std::string_view call, void* dest, const void* source, size_t nbytes, int pe,
                               void* stream) {
  check_gpu_heap(call);
  auto off = check_contiguous(memory_, transport_, call, pe, nbytes, 1, {source, "source"}, {dest, "dest"});
  if (!off) return;
  char* remote = transport_.address(call, pe, *off);  // a PE on the proxy path fails here, either way
  if (copy_by_kernel(nbytes, source))
    SHOAL_CUDA_CHECK(launch_rma(device_, dest, source, nbytes, pe, false, as_stream(stream)), call);
  else
    SHOAL_CUDA_CHECK(cudaMemcpyAsync(remote, source, nbytes, cudaMemcpyDefault, as_stream(stream)), call);
}

void stream_ops::get_on_stream(std::string_view call, void* dest, const void* source, size_t nbytes, int pe,
                               void* stream) {
  check_gpu_heap(call);
  auto off = check_contiguous(memory_, transport_, call, pe, nbytes, 1, {dest, "dest"}, {source, "source"});
  if (!off) return;
  const char* remote = transport_.address(call, pe, *off);  // a PE on the proxy path fails here, either way
  if (copy_by_kernel(nbytes, dest))
    SHOAL_CUDA_CHECK(launch_rma(device_, dest, source, nbytes, pe, true, as_stream(stream)), call);
  else
    SHOAL_CUDA_CHECK(cudaMemcpyAsync(dest, remote, nbytes, cudaMemcpyDefault, as_stream(stream)), call);
}

namespace {
// Extent in bytes of nelems elements spaced `stride` elements apart (stride >= 1, nelems >= 1).
size_t strided_nbytes(std::string_view call, ptrdiff_t stride, size_t nelems, size_t elem_bytes) {
  size_t span = 0, nbytes = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(nelems - 1, static_cast<size_t>(stride), &span) &&
                      !__builtin_mul_overflow(span + 1, elem_bytes, &nbytes),
                  call, "nelems={} with stride {} overflows", nelems, stride);
  return nbytes;
}
}  // namespace

void stream_ops::strided_on_stream(std::string_view call, bool put, void* dest, const void* source, ptrdiff_t dst,
                                   ptrdiff_t sst, size_t nelems, size_t elem_bytes, int pe, void* stream) {
  check_gpu_heap(call);
  check_pe(call, pe, transport_.n_pes());
  SHOAL_CHECK_ARG(dst >= 1 && sst >= 1, call, "dst={} and sst={} must be at least 1", dst, sst);
  if (nelems == 0) return;
  SHOAL_CHECK_ARG((put ? source : dest) != nullptr, call, "{} is null", put ? "source" : "dest");
  // The symmetric side (dest of a put, source of a get) is spread over its stride on `pe`.
  const void* symmetric = put ? static_cast<const void*>(dest) : source;
  uint64_t off = memory_.check(call, put ? "dest" : "source", symmetric,
                               strided_nbytes(call, put ? dst : sst, nelems, elem_bytes), 1);
  void* remote = transport_.address(call, pe, off);
  SHOAL_CUDA_CHECK(cudaMemcpy2DAsync(put ? remote : dest, dst * elem_bytes, put ? source : remote, sst * elem_bytes,
                                     elem_bytes, nelems, cudaMemcpyDefault, as_stream(stream)),
                   call);
}

void stream_ops::g_on_stream(std::string_view call, void* value, const void* source, size_t value_bytes, int pe,
                             void* stream) {
  get_on_stream(call, value, source, value_bytes, pe, stream);
  SHOAL_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)), call);
}

void stream_ops::read_array(std::string_view call, void* dst, const void* src, size_t nbytes) {
  SHOAL_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault), call);
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
void stream_ops::strided_on_stream(std::string_view call, bool, void*, const void*, ptrdiff_t, ptrdiff_t, size_t,
                                   size_t, int, void*) {
  check_gpu_heap(call);
}
void stream_ops::g_on_stream(std::string_view call, void*, const void*, size_t, int, void*) { check_gpu_heap(call); }
void stream_ops::read_array(std::string_view call, void*, const void*, size_t) { check_gpu_heap(call); }
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

namespace shoal::detail::c_api {

namespace {
stream_ops& streams(const char* call) { return current(call).streams(); }
}  // namespace

void put_on_stream(const char* call, void* dest, const void* source, size_t nbytes, int pe, void* stream) noexcept {
  guarded_void(call, [&] { streams(call).put_on_stream(call, dest, source, nbytes, pe, stream); });
}
void get_on_stream(const char* call, void* dest, const void* source, size_t nbytes, int pe, void* stream) noexcept {
  guarded_void(call, [&] { streams(call).get_on_stream(call, dest, source, nbytes, pe, stream); });
}
void iput_on_stream(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                    size_t elem_bytes, int pe, void* stream) noexcept {
  guarded_void(call, [&] {
    streams(call).strided_on_stream(call, true, dest, source, dst, sst, nelems, elem_bytes, pe, stream);
  });
}
void iget_on_stream(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                    size_t elem_bytes, int pe, void* stream) noexcept {
  guarded_void(call, [&] {
    streams(call).strided_on_stream(call, false, dest, source, dst, sst, nelems, elem_bytes, pe, stream);
  });
}
void p_on_stream(const char* call, void* dest, const void* value, size_t value_bytes, int pe, void* stream) noexcept {
  guarded_void(call, [&] {
    uint64_t bits = 0;
    std::memcpy(&bits, value, value_bytes < sizeof(bits) ? value_bytes : sizeof(bits));
    streams(call).p_on_stream(call, dest, bits, value_bytes, pe, stream);
  });
}
void g_on_stream(const char* call, void* value, const void* source, size_t value_bytes, int pe, void* stream) noexcept {
  guarded_void(call, [&] { streams(call).g_on_stream(call, value, source, value_bytes, pe, stream); });
}
void put_signal_on_stream(const char* call, void* dest, const void* source, size_t nbytes, uint64_t* sig_addr,
                          uint64_t signal, int sig_op, int pe, void* stream) noexcept {
  guarded_void(call, [&] {
    auto& s = streams(call);
    check_sig_op(call, sig_op);
    s.put_on_stream(call, dest, source, nbytes, pe, stream);
    s.signal_op_on_stream(call, sig_addr, signal, sig_op, pe, stream);  // ordered after (and releasing) the data
  });
}
void wait_until_on_stream(const char* call, scalar type, void* ivars, size_t nelems, const int* status, int cmp,
                          const void* values, bool vector, void* stream) noexcept {
  guarded_void(call, [&] {
    auto& s = streams(call);
    if (nelems == 0) return;
    SHOAL_CHECK_ARG(ivars != nullptr && values != nullptr, call, "ivars or the comparison value is null");
    std::vector<int> skip(nelems, 0);
    if (status != nullptr) s.read_array(call, skip.data(), status, nelems * sizeof(int));
    std::vector<unsigned char> vals(vector ? nelems * type.bytes : type.bytes);
    if (vector)
      s.read_array(call, vals.data(), values, vals.size());
    else
      std::memcpy(vals.data(), values, type.bytes);
    for (size_t i = 0; i < nelems; ++i) {
      if (skip[i] != 0) continue;
      uint64_t bits = 0;
      std::memcpy(&bits, vals.data() + (vector ? i * type.bytes : 0), type.bytes);
      s.wait_until_on_stream(call, static_cast<unsigned char*>(ivars) + i * type.bytes, type, cmp, bits, stream);
    }
  });
}

}  // namespace shoal::detail::c_api

namespace capi = shoal::detail::c_api;

extern "C" {

void shoalx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_putmem_on_stream";
  capi::guarded_void(call,
                     [&] { capi::current(call).streams().put_on_stream(call, dest, source, nelems, pe, stream); });
}
void shoalx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_getmem_on_stream";
  capi::guarded_void(call,
                     [&] { capi::current(call).streams().get_on_stream(call, dest, source, nelems, pe, stream); });
}
void shoalx_p_on_stream(void* dest, uint64_t value_bits, size_t value_bytes, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_p_on_stream";
  capi::guarded_void(
      call, [&] { capi::current(call).streams().p_on_stream(call, dest, value_bits, value_bytes, pe, stream); });
}
void shoalx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe, struct CUstream_st* stream) {
  const char* call = "shoalx_signal_op_on_stream";
  capi::guarded_void(
      call, [&] { capi::current(call).streams().signal_op_on_stream(call, sig_addr, signal, sig_op, pe, stream); });
}
void shoalx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value, struct CUstream_st* stream) {
  const char* call = "shoalx_signal_wait_until_on_stream";
  capi::guarded_void(call, [&] {
    capi::current(call).streams().wait_until_on_stream(call, sig_addr, shoal::detail::scalar_of<uint64_t>(), cmp,
                                                       cmp_value, stream);
  });
}
void shoalx_quiet_on_stream(struct CUstream_st* stream) {
  const char* call = "shoalx_quiet_on_stream";
  capi::guarded_void(call, [&] { capi::current(call).streams().quiet_on_stream(call, stream); });
}
void shoalx_barrier_all_on_stream(struct CUstream_st* stream) {
  const char* call = "shoalx_barrier_all_on_stream";
  capi::guarded_void(call, [&] { capi::current(call).streams().barrier_all_on_stream(call, stream); });
}

int shoalx_sync_all_on_stream(struct CUstream_st* stream) {
  return shoalx_team_sync_on_stream(SHOAL_TEAM_WORLD, stream);
}

}  // extern "C"
