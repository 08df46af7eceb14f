#include <algorithm>
#include <cstdint>
#include <cstring>

#include "shoal/device/device.cuh"
#include "transport/stream_kernels.hpp"

namespace shoal::detail {

namespace {

__global__ void __launch_bounds__(1)
    p_kernel(device_world w, void* dest, uint64_t value_bits, size_t num_bytes, int pe) {
  switch (num_bytes) {
    case 1:
      shoal::device::p(w, static_cast<uint8_t*>(dest), static_cast<uint8_t>(value_bits), pe);
      break;
    case 2:
      shoal::device::p(w, static_cast<uint16_t*>(dest), static_cast<uint16_t>(value_bits), pe);
      break;
    case 4:
      shoal::device::p(w, static_cast<uint32_t*>(dest), static_cast<uint32_t>(value_bits), pe);
      break;
    default:
      shoal::device::p(w, static_cast<uint64_t*>(dest), value_bits, pe);
      break;
  }
}

__global__ void __launch_bounds__(1)
    signal_op_kernel(device_world w, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  // Everything earlier on the stream has finished (kernel boundary); the fence makes those writes
  // visible at system scope before the signal's release.
  shoal::device::fence(w);
  shoal::device::signal_op(w, sig_addr, signal, sig_op, pe);
}

template <class T>
__device__ void wait_typed(const device_world& w, void* ivar, int cmp, uint64_t value_bits) {
  T value;
  memcpy(&value, &value_bits, sizeof(T));
  shoal::device::wait_until(w, static_cast<T*>(ivar), cmp, value);
}

__global__ void __launch_bounds__(1)
    wait_until_kernel(device_world w, void* ivar, scalar type, int cmp, uint64_t value_bits) {
  bool is_signed = type.kind == scalar_kind::signed_int;
  switch (type.bytes) {
    case 2:
      if (is_signed)
        wait_typed<int16_t>(w, ivar, cmp, value_bits);
      else
        wait_typed<uint16_t>(w, ivar, cmp, value_bits);
      break;
    case 4:
      if (is_signed)
        wait_typed<int32_t>(w, ivar, cmp, value_bits);
      else
        wait_typed<uint32_t>(w, ivar, cmp, value_bits);
      break;
    default:
      if (is_signed)
        wait_typed<int64_t>(w, ivar, cmp, value_bits);
      else
        wait_typed<uint64_t>(w, ivar, cmp, value_bits);
      break;
  }
}

__global__ void __launch_bounds__(1) quiet_kernel(device_world w) { shoal::device::quiet(w); }

constexpr unsigned kRmaThreads = 512;
constexpr size_t kRmaBytesPerBlock = size_t{64} << 10;
constexpr size_t kRmaMaxBlocks = 32;

/// The device API's block-scope put (get) of one slice per block, 16-byte aligned slices; a quiet at the end, so
/// the data is visible before anything later on the stream.
__global__ void __launch_bounds__(kRmaThreads)
    rma_kernel(device_world w, char* dest, const char* source, size_t nbytes, int pe, bool get) {
  const size_t slice = ((nbytes + gridDim.x - 1) / gridDim.x + 15) & ~size_t{15};
  const size_t off = static_cast<size_t>(blockIdx.x) * slice;
  if (off < nbytes) {  // the whole block takes the same branch
    const size_t len = nbytes - off < slice ? nbytes - off : slice;
    if (get)
      shoal::device::getmem_nbi(shoal::block, w, dest + off, source + off, len, pe);
    else
      shoal::device::putmem_nbi(shoal::block, w, dest + off, source + off, len, pe);
  }
  shoal::device::quiet(w);
}

__global__ void __launch_bounds__(1) barrier_all_kernel(device_world w) {
  shoal::device::barrier_all(shoal::thread, w);
}

}  // namespace

cudaError_t launch_rma(const device_world& w, void* dest, const void* source, size_t nbytes, int pe, bool get,
                       cudaStream_t stream) {
  const size_t blocks = std::clamp<size_t>((nbytes + kRmaBytesPerBlock - 1) / kRmaBytesPerBlock, 1, kRmaMaxBlocks);
  rma_kernel<<<static_cast<unsigned>(blocks), kRmaThreads, 0, stream>>>(
      w, static_cast<char*>(dest), static_cast<const char*>(source), nbytes, pe, get);
  return cudaGetLastError();
}

cudaError_t launch_p(const device_world& w, void* dest, uint64_t value_bits, size_t num_bytes, int pe,
                     cudaStream_t stream) {
  p_kernel<<<1, 1, 0, stream>>>(w, dest, value_bits, num_bytes, pe);
  return cudaGetLastError();
}

cudaError_t launch_signal_op(const device_world& w, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                             cudaStream_t stream) {
  signal_op_kernel<<<1, 1, 0, stream>>>(w, sig_addr, signal, sig_op, pe);
  return cudaGetLastError();
}

cudaError_t launch_wait_until(const device_world& w, void* ivar, scalar type, int cmp, uint64_t value_bits,
                              cudaStream_t stream) {
  wait_until_kernel<<<1, 1, 0, stream>>>(w, ivar, type, cmp, value_bits);
  return cudaGetLastError();
}

cudaError_t launch_quiet(const device_world& w, cudaStream_t stream) {
  quiet_kernel<<<1, 1, 0, stream>>>(w);
  return cudaGetLastError();
}

cudaError_t launch_barrier_all(const device_world& w, cudaStream_t stream) {
  barrier_all_kernel<<<1, 1, 0, stream>>>(w);
  return cudaGetLastError();
}

}  // namespace shoal::detail
