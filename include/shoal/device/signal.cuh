// Device signals on the explicit handle: put-with-signal (putmem_signal / typed put_signal at any
// scope, blocking and _nbi; putmem_signal_tma at block scope), signal_op, signal_fetch,
// signal_counted_reset and signal_wait_until (one thread). A signal is a symmetric uint64_t; sig_op is
// SHOAL_SIGNAL_SET or SHOAL_SIGNAL_ADD. Bodies: <shoal/detail/device_signal.cuh>.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_signal.cuh"
#include "shoal/detail/device_sync.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"

namespace shoal::device {

// Common contract of put-with-signal (the "put_signal contract"):
//  - As putmem (RMA contract) for dest/source/nbytes/pe/scope; then sig_op (SHOAL_SIGNAL_SET:
//    store; SHOAL_SIGNAL_ADD: atomic add) with `signal` on symmetric uint64 sig_addr at pe.
//  - Ordering: the data is visible to anyone who observes the signal with an acquire
//    (signal_wait_until, wait_until, test): thread scope releases with st.release.sys /
//    red.release.sys.add; wider scopes: all threads store -> the scope's sync() -> rank 0 releases.
//    Nothing orders it with this PE's other puts (use fence/quiet).
//  - Blocking and _nbi are the same over load/store paths: on return the source may be reused and the
//    signal is issued. To a proxy peer, _nbi only posts (source reusable after quiet).

/// Puts nbytes, then applies sig_op with `signal` to sig_addr on pe. put_signal contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void putmem_signal(Scope s, const device_world& w, void* dest, const void* source,
                                              size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal(s, w, dest, source, nbytes, sig_addr, signal, sig_op, pe, "shoal::device::putmem_signal");
}
/// Same as putmem_signal. put_signal contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void putmem_signal_nbi(Scope s, const device_world& w, void* dest, const void* source,
                                                  size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                  int pe) {
  detail::putmem_signal<true>(s, w, dest, source, nbytes, sig_addr, signal, sig_op, pe,
                              "shoal::device::putmem_signal_nbi");
}
/// Block put-with-signal through the TMA ring (see putmem_tma; same `smem` workspace), then thread 0
/// releases the signal. put_signal contract; block scope only.
template <int kStages = 4, int kStageBytes = 16384>
__device__ __forceinline__ void putmem_signal_tma(block_scope, const device_world& w, void* dest, const void* source,
                                                  size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                  int pe, void* smem) {
  detail::putmem_signal_tma<kStages, kStageBytes>(w, dest, source, nbytes, sig_addr, signal, sig_op, pe, smem,
                                                  "shoal::device::putmem_signal_tma");
}
/// Typed put-with-signal: nelems elements of T. put_signal contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void put_signal(Scope s, const device_world& w, T* dest, const T* source, size_t nelems,
                                           uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal(s, w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                        "shoal::device::put_signal");
}
/// Same as put_signal. put_signal contract.
template <SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void put_signal_nbi(Scope s, const device_world& w, T* dest, const T* source, size_t nelems,
                                               uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<true>(s, w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                              "shoal::device::put_signal_nbi");
}

/// Applies sig_op with `signal` to sig_addr on pe: st.relaxed.sys (SET) or red.relaxed.sys.add
/// (ADD). Atomic, relaxed: NOT ordered after this PE's earlier puts unless a fence comes between
/// (put -> fence -> signal_op is the ordered pattern; put_signal does both in one call). One thread.
__device__ __forceinline__ void signal_op(const device_world& w, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                          int pe) {
  detail::signal_op(w, sig_addr, signal, sig_op, pe, "shoal::device::signal_op");
}
/// Reads the local signal word sig_addr with ld.acquire.sys: data released before the value read
/// is visible after it. One thread. (To poll, use signal_wait_until: it acquires only once.)
__device__ __forceinline__ uint64_t signal_fetch(const device_world& w, const uint64_t* sig_addr) {
  return (void)w, ptx::ld_acquire_sys(sig_addr);
}
/// Resets the local counted signal word sig_addr to 0 (st.relaxed.sys), NVSHMEM 3.8's
/// signal_counted_reset: the receiver re-arms a signal that senders count up with SHOAL_SIGNAL_ADD.
/// No ordering: senders must not add to it until the receiver tells them (after a fence) that it is
/// reset. One thread.
__device__ __forceinline__ void signal_counted_reset(const device_world& w, uint64_t* sig_addr) {
  return (void)w, ptx::st_relaxed_sys(sig_addr, uint64_t{0});
}
/// Waits until the local signal word compares true with cmp_value (SHOAL_CMP_*); returns the value
/// seen. Relaxed polls, one acquire when satisfied (wait contract in sync.cuh); bounded. One thread.
__device__ __forceinline__ uint64_t signal_wait_until(const device_world& w, uint64_t* sig_addr, int cmp,
                                                      uint64_t cmp_value) {
  return detail::wait_until(w, sig_addr, cmp, cmp_value, "shoal::device::signal_wait_until");
}

}  // namespace shoal::device
