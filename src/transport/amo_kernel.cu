// The one-thread atomic kernel behind host-issued atomics on GPU memory (cuda_memory_ops.cc).
// Kept apart from the host code so no host-only header (fmt) passes through nvcc.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cuda/atomic>

#include "transport/amo_kernel.hpp"

namespace shoal::detail {

namespace {

template <class T>
__device__ T from_bits(unsigned long long bits) {
  T v;
  memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
__device__ void amo_typed(void* target, amo_args a, unsigned long long* fetched) {
  cuda::atomic_ref<T, cuda::thread_scope_system> ref(*static_cast<T*>(target));
  T value = from_bits<T>(a.operand);
  T old{};
  if constexpr (std::is_floating_point_v<T>) {
    switch (a.op) {
      case amo_op::fetch:
        old = ref.load();
        break;
      case amo_op::set:
        ref.store(value);
        break;
      case amo_op::swap:
        old = ref.exchange(value);
        break;
      case amo_op::fetch_add:
      case amo_op::add:
        old = ref.fetch_add(value);
        break;
      default:
        break;
    }
  } else {
    switch (a.op) {
      case amo_op::fetch:
        old = ref.load();
        break;
      case amo_op::set:
        ref.store(value);
        break;
      case amo_op::swap:
        old = ref.exchange(value);
        break;
      case amo_op::compare_swap: {
        T expected = from_bits<T>(a.compare);
        ref.compare_exchange_strong(expected, value);
        old = expected;
        break;
      }
      case amo_op::fetch_add:
      case amo_op::add:
        old = ref.fetch_add(value);
        break;
      case amo_op::fetch_inc:
      case amo_op::inc:
        old = ref.fetch_add(T{1});
        break;
      case amo_op::fetch_and:
      case amo_op::and_:
        old = ref.fetch_and(value);
        break;
      case amo_op::fetch_or:
      case amo_op::or_:
        old = ref.fetch_or(value);
        break;
      case amo_op::fetch_xor:
      case amo_op::xor_:
        old = ref.fetch_xor(value);
        break;
    }
  }
  unsigned long long bits = 0;
  memcpy(&bits, &old, sizeof(T));
  *fetched = bits;
}

// IEEE half: a compare-and-swap loop on the aligned 4-byte word that holds it (the device API's
// fetch/set/swap do the same), the add in float rounded to nearest even (__hadd's result).
__device__ void amo_half(void* target, amo_args a, unsigned long long* fetched) {
  const auto addr = reinterpret_cast<uintptr_t>(target);
  const unsigned shift = (addr & 2u) * 8u;
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> word(*reinterpret_cast<uint32_t*>(addr & ~uintptr_t{3}));
  const auto value = static_cast<unsigned short>(a.operand);
  uint32_t old = word.load(cuda::memory_order_relaxed);
  for (;;) {
    const auto cur = static_cast<unsigned short>(old >> shift);
    unsigned short next = cur;
    if (a.op == amo_op::set || a.op == amo_op::swap) {
      next = value;
    } else if (a.op == amo_op::add || a.op == amo_op::fetch_add) {
      next = __half_as_ushort(__hadd(__ushort_as_half(cur), __ushort_as_half(value)));
    }
    if (next == cur && a.op == amo_op::fetch) {
      *fetched = cur;
      return;
    }
    const uint32_t want = (old & ~(0xffffu << shift)) | (static_cast<uint32_t>(next) << shift);
    if (word.compare_exchange_weak(old, want)) {
      *fetched = cur;
      return;
    }
  }
}

// 1-byte and 2-byte integer atomics do not exist on the GPU: the host API's integer AMO types are 4 and 8 bytes.
__global__ void __launch_bounds__(1) amo_kernel(scalar type, void* target, amo_args a, unsigned long long* fetched) {
  switch (type.kind) {
    case scalar_kind::signed_int:
      if (type.bytes == 4)
        amo_typed<int32_t>(target, a, fetched);
      else
        amo_typed<long long>(target, a, fetched);
      break;
    case scalar_kind::unsigned_int:
      if (type.bytes == 4)
        amo_typed<uint32_t>(target, a, fetched);
      else
        amo_typed<unsigned long long>(target, a, fetched);
      break;
    case scalar_kind::floating:
      if (type.bytes == 2)
        amo_half(target, a, fetched);
      else if (type.bytes == 4)
        amo_typed<float>(target, a, fetched);
      else
        amo_typed<double>(target, a, fetched);
      break;
  }
}

}  // namespace

cudaError_t launch_amo_kernel(scalar type, void* target, amo_args args, unsigned long long* fetched,
                              cudaStream_t stream) {
  amo_kernel<<<1, 1, 0, stream>>>(type, target, args, fetched);
  return cudaGetLastError();
}

cudaError_t preload_amo_kernel(unsigned long long* fetched, cudaStream_t stream) {
  const scalar type{scalar_kind::unsigned_int, 8};
  if (cudaError_t err = launch_amo_kernel(type, fetched, amo_args{amo_op::fetch, 0, 0}, fetched, stream);
      err != cudaSuccess)
    return err;
  return cudaStreamSynchronize(stream);
}

}  // namespace shoal::detail
