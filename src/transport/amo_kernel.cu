// The one-thread atomic kernel behind host-issued atomics on GPU memory (cuda_memory_ops.cc).
// Kept apart from the host code so no host-only header (fmt) passes through nvcc.
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

// 1- and 2-byte atomics do not exist on the GPU: the host API's AMO types are 4 and 8 bytes wide.
__global__ void amo_kernel(scalar type, void* target, amo_args a, unsigned long long* fetched) {
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
      if (type.bytes == 4)
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

}  // namespace shoal::detail
