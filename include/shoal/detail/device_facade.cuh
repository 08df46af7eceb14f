// The untyped facade calls whose host entry points <shoal/shoal.h> declares by their own names
// (shoal_my_pe, shoal_fence, shoal_barrier_all, shoal_signal_wait_until, ...). Included by
// <shoal/device/facade.cuh> after shoal_detail_world_c; not a public header.
//
// How one name serves host and device without -rdc: shoal.h declared each as a host function. Here
// each is redeclared __host__ __device__ (nvcc warning 20040, expected and silenced), and defined
// only in the device compilation pass (__CUDA_ARCH__), as an inline function. The host pass sees a
// declaration only, so host calls bind to libshoal's symbol; device calls inline the code below.
#ifndef SHOAL_DETAIL_DEVICE_FACADE_CUH_
#define SHOAL_DETAIL_DEVICE_FACADE_CUH_

#include <cstddef>
#include <cstdint>

// Declares shoal_detail_world_c, then includes this file (a no-op when this file came first).
#include "shoal/device/device.cuh"
#include "shoal/device/facade.cuh"
#include "shoal/types.h"

#pragma nv_diag_push
#pragma nv_diag_suppress 20040
SHOAL_EXTERN_C_BEGIN
__host__ __device__ int shoal_my_pe(void);
__host__ __device__ int shoal_n_pes(void);
__host__ __device__ void* shoal_ptr(const void* dest, int pe);
__host__ __device__ void shoal_fence(void);
__host__ __device__ void shoal_quiet(void);
__host__ __device__ void shoal_barrier_all(void);
__host__ __device__ void shoal_sync_all(void);
__host__ __device__ uint64_t shoal_signal_fetch(const uint64_t* sig_addr);
__host__ __device__ uint64_t shoal_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
__host__ __device__ void shoalx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
SHOAL_EXTERN_C_END
#pragma nv_diag_pop

#if defined(__CUDA_ARCH__)
SHOAL_EXTERN_C_BEGIN

/// This PE's number in the default world.
__host__ __device__ inline int shoal_my_pe(void) { return shoal_detail_world_c.my_pe; }
/// The number of PEs in the default world.
__host__ __device__ inline int shoal_n_pes(void) { return shoal_detail_world_c.n_pes; }
/// dest's copy on pe that this thread may load/store, or NULL (shoal::device::ptr).
__host__ __device__ inline void* shoal_ptr(const void* dest, int pe) {
  return const_cast<void*>(shoal::device::ptr(shoal_detail_world_c, dest, pe));
}
/// fence.acq_rel.sys: orders this thread's earlier puts/AMOs/signals before its later ones.
__host__ __device__ inline void shoal_fence(void) { shoal::device::fence(shoal_detail_world_c); }
/// fence.sc.sys: completes this thread's earlier puts/AMOs/signals.
__host__ __device__ inline void shoal_quiet(void) { shoal::device::quiet(shoal_detail_world_c); }
/// Device barrier over all PEs, ONE thread per PE (shoalx_barrier_all_warp/_block for groups).
__host__ __device__ inline void shoal_barrier_all(void) {
  shoal::detail::barrier<shoal::device::thread_scope>(shoal_detail_world_c, "shoal_barrier_all");
}
/// As shoal_barrier_all (same release/acquire chain), one thread per PE.
__host__ __device__ inline void shoal_sync_all(void) {
  shoal::detail::barrier<shoal::device::thread_scope>(shoal_detail_world_c, "shoal_sync_all");
}
/// ld.acquire.sys of the local signal word.
__host__ __device__ inline uint64_t shoal_signal_fetch(const uint64_t* sig_addr) {
  return shoal::device::signal_fetch(shoal_detail_world_c, sig_addr);
}
/// Relaxed polls, one acquire; bounded by the world's wait timeout.
__host__ __device__ inline uint64_t shoal_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  return shoal::detail::wait_until(shoal_detail_world_c, sig_addr, cmp, cmp_value, "shoal_signal_wait_until");
}
/// SET: st.relaxed.sys; ADD: red.relaxed.sys.add on the peer's signal (no ordering; fence first).
__host__ __device__ inline void shoalx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  shoal::device::signal_op(shoal_detail_world_c, sig_addr, signal, sig_op, pe);
}

SHOAL_EXTERN_C_END
#endif  // __CUDA_ARCH__

#endif  // SHOAL_DETAIL_DEVICE_FACADE_CUH_
