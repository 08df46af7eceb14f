// Device RMA on the explicit handle: ptr, putmem/getmem (bytes) and typed put/get (elements),
// blocking and _nbi, iput/iget (strided), at any scope (shoal::thread, warp, block, warps<N>: the
// first argument); p/g (one thread). Every call takes the world's device_world after the scope.
// Bodies: <shoal/detail/device_rma.cuh>.
//
//   shoal::device::putmem(shoal::block, w, dest, source, nbytes, pe);
//   shoal::device::put(shoal::warp, w, dest, source, nelems, pe);
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_copy.cuh"
#include "shoal/detail/device_rma.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"

namespace shoal::device {

// Common contract of every call below (the "RMA contract"):
//  - dest (put) / source (get) is a symmetric address (in this PE's heap); the other buffer is local
//    (global, shared or local memory; global only towards a proxy peer). pe in [0, n_pes), reached
//    by load/store or through the proxy ring (docs/memory-model.md); checked builds print and trap
//    otherwise.
//  - Scope (first argument): every thread of the scope calls with the same arguments; the threads
//    share the copy (16-byte accesses, interleaved) and the call ends with the scope's sync().
//  - Ordering: puts are weak stores. Their order and visibility to other PEs is established only by
//    fence (orders this PE's puts to each PE), quiet (completes them) or put_signal (data before
//    signal). Blocking and _nbi are the same over load/store transports: a put's source may be reused
//    on return; a get's data is in dest on return (visible to the whole scope).

/// Address of `p`'s copy on `pe` that this thread may load/store, or nullptr if that PE's heap is
/// not mapped here (or pe is out of range, or reached through the proxy). Does not trap.
template <class T>
__device__ __forceinline__ T* ptr(const device_world& w, T* p, int pe) {
  return detail::ptr_or_null(w, p, pe);
}
/// For code that needs a load/store address (ptr returned nullptr): reports why `pe` has none (out of range, reached
/// through the proxy, or not mapped) in the words shoal's own calls use, "shoal: PE <me>: <call>: PE <pe> is ...",
/// printed by the host from the world's report box, and traps.
__device__ __forceinline__ void report_unreachable(const device_world& w, const char* call, int pe) {
  detail::device_fail_pe(w.report_box, call, w.my_pe, pe, w.n_pes, w.path_of_pe);
}

/// Copies nbytes from local `source` to symmetric `dest` on `pe`. RMA contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void putmem(Scope s, const device_world& w, void* dest, const void* source, size_t nbytes,
                                       int pe) {
  detail::putmem(s, w, dest, source, nbytes, pe, "shoal::device::putmem");
}
/// Same as putmem (load/store transports complete puts at once). RMA contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void putmem_nbi(Scope s, const device_world& w, void* dest, const void* source,
                                           size_t nbytes, int pe) {
  detail::putmem<true>(s, w, dest, source, nbytes, pe, "shoal::device::putmem_nbi");
}
/// Copies nbytes from symmetric `source` on `pe` to local `dest`. RMA contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void getmem(Scope s, const device_world& w, void* dest, const void* source, size_t nbytes,
                                       int pe) {
  detail::getmem(s, w, dest, source, nbytes, pe, "shoal::device::getmem");
}
/// Same as getmem. RMA contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void getmem_nbi(Scope s, const device_world& w, void* dest, const void* source,
                                           size_t nbytes, int pe) {
  detail::getmem<true>(s, w, dest, source, nbytes, pe, "shoal::device::getmem_nbi");
}

/// Shared-memory bytes putmem_tma needs: kStages stages of kStageBytes, then kStages mbarriers.
template <int kStages = 4, int kStageBytes = 16384>
inline constexpr size_t tma_workspace_bytes = static_cast<size_t>(kStages) * kStageBytes + 8 * kStages;
/// Smallest put (bytes) that putmem_tma sends through the TMA ring; smaller ones take the vector path.
inline constexpr size_t kTmaMinBytes = detail::kTmaMinBytes;

/// Block-wide putmem through a TMA bulk-copy ring run by thread 0 (kStages x kStageBytes in `smem`,
/// which must hold tma_workspace_bytes<kStages, kStageBytes> bytes of this block's shared memory,
/// 16-byte aligned). Falls back to the vector path under kTmaMinBytes, for a non-global source, or
/// when dest and source differ in alignment mod 16. On return every byte is written and ordered
/// before thread 0's later accesses. RMA contract; block scope only.
template <int kStages = 4, int kStageBytes = 16384>
__device__ __forceinline__ void putmem_tma(block_scope, const device_world& w, void* dest, const void* source,
                                           size_t nbytes, int pe, void* smem) {
  detail::putmem_tma<kStages, kStageBytes>(w, dest, source, nbytes, pe, smem, "shoal::device::putmem_tma");
}

/// put of nelems elements of T. RMA contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void put(Scope s, const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem(s, w, dest, source, nelems * sizeof(T), pe, "shoal::device::put");
}
/// Same as put. RMA contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void put_nbi(Scope s, const device_world& w, T* dest, const T* source, size_t nelems,
                                        int pe) {
  detail::putmem<true>(s, w, dest, source, nelems * sizeof(T), pe, "shoal::device::put_nbi");
}
/// get of nelems elements of T. RMA contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void get(Scope s, const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem(s, w, dest, source, nelems * sizeof(T), pe, "shoal::device::get");
}
/// Same as get. RMA contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void get_nbi(Scope s, const device_world& w, T* dest, const T* source, size_t nelems,
                                        int pe) {
  detail::getmem<true>(s, w, dest, source, nelems * sizeof(T), pe, "shoal::device::get_nbi");
}

/// Stores `value` to symmetric `dest` on `pe`: one st.relaxed.sys (strong, never merged or torn for
/// 1/2/4/8-byte T), so it may be the flag of put -> fence -> p. No ordering of its own. One thread.
template <class T>
__device__ __forceinline__ void p(const device_world& w, T* dest, T value, int pe) {
  detail::p(w, dest, value, pe, "shoal::device::p");
}
/// Loads symmetric `source` on `pe`: one ld.relaxed.sys; blocking (the value is returned). One thread.
template <class T>
__device__ __forceinline__ T g(const device_world& w, const T* source, int pe) {
  return detail::g(w, source, pe, "shoal::device::g");
}

/// dest[i*dst_stride] on pe = source[i*src_stride], i < nelems (strides in elements). RMA contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void iput(Scope s, const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iput(s, w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iput");
}
/// dest[i*dst_stride] = source[i*src_stride] on pe, i < nelems (strides in elements). RMA contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void iget(Scope s, const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iget(s, w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iget");
}

}  // namespace shoal::device
