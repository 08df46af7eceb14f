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

constexpr unsigned kCopyThreads = 512;
constexpr size_t kCopyBytesPerBlock = size_t{64} << 10;
constexpr size_t kCopyMaxBlocks = 32;

/// 16-byte vectors when both ends are 16-byte aligned, bytes for the rest; every thread ends with a system-scope
/// fence, so the copy is visible to the peer before anything later on the stream.
__global__ void __launch_bounds__(kCopyThreads) copy_kernel(char* dest, const char* source, size_t nbytes) {
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(dest) | reinterpret_cast<uintptr_t>(source)) & 15) == 0) {
    const size_t vecs = nbytes / 16;
    const int4* s = reinterpret_cast<const int4*>(source);
    int4* d = reinterpret_cast<int4*>(dest);
    for (size_t i = tid; i < vecs; i += stride) d[i] = s[i];
    done = vecs * 16;
  }
  for (size_t b = done + tid; b < nbytes; b += stride) dest[b] = source[b];
  __threadfence_system();
}

__global__ void __launch_bounds__(1) barrier_all_kernel(device_world w) {
  shoal::device::barrier_all(shoal::thread, w);
}

}  // namespace

cudaError_t launch_copy(void* dest, const void* source, size_t nbytes, cudaStream_t stream) {
  const size_t blocks = std::clamp<size_t>((nbytes + kCopyBytesPerBlock - 1) / kCopyBytesPerBlock, 1, kCopyMaxBlocks);
  copy_kernel<<<static_cast<unsigned>(blocks), kCopyThreads, 0, stream>>>(static_cast<char*>(dest),
                                                                          static_cast<const char*>(source), nbytes);
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
