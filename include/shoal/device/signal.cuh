// Device signals on the explicit handle: put-with-signal (putmem_signal / typed put_signal, thread,
// warp and block scope, blocking and _nbi), signal_op, signal_fetch and signal_wait_until. A signal
// is a symmetric uint64_t; sig_op is SHOAL_SIGNAL_SET or SHOAL_SIGNAL_ADD.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_common.cuh"
#include "shoal/device/copy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/rma.cuh"
#include "shoal/device/sync.cuh"
#include "shoal/device_world.hpp"
#include "shoal/types.h"

namespace shoal::detail {

__device__ __forceinline__ void check_sig_op(const device_world& w, int sig_op, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (sig_op != SHOAL_SIGNAL_SET && sig_op != SHOAL_SIGNAL_ADD) device_fail_arg(call, w.my_pe, "sig_op", sig_op);
#else
  (void)w, (void)sig_op, (void)call;
#endif
}

/// Release-signal: st.release.sys (SET) or red.release.sys.add (ADD) on the peer's signal word.
__device__ __forceinline__ void signal_release(uint64_t* remote_sig, uint64_t signal, int sig_op) {
  if (sig_op == SHOAL_SIGNAL_ADD) {
    ptx::red_add_release_sys(remote_sig, signal);
  } else {
    ptx::st_release_sys(remote_sig, signal);
  }
}

/// Data (spread over the scope, weak stores) -> scope barrier -> rank 0 releases the signal.
template <class Scope>
__device__ __forceinline__ void putmem_signal(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                              uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                              const char* call) {
  check_sig_op(w, sig_op, call);
  copy_to_remote<Scope>(peer_ptr(w, dest, pe, call), source, num_bytes);
  Scope::sync();  // every rank's stores happen before rank 0's release (causality through the barrier)
  if (Scope::rank() == 0) signal_release(peer_ptr(w, sig_addr, pe, call), signal, sig_op);
}

}  // namespace shoal::detail

namespace shoal::device {

// Common contract of put-with-signal (the "put_signal contract"):
//  - As putmem (RMA contract) for dest/source/num_bytes/pe/scope; then sig_op (SHOAL_SIGNAL_SET:
//    store; SHOAL_SIGNAL_ADD: atomic add) with `signal` on symmetric uint64 sig_addr at pe.
//  - Ordering: the data is visible to anyone who observes the signal with an acquire
//    (signal_wait_until, wait_until, test): thread scope releases with st.release.sys /
//    red.release.sys.add; warp/block scope: all threads store -> __syncwarp/__syncthreads -> rank 0
//    releases. Nothing orders it with this PE's other puts (use fence/quiet).
//  - Blocking and _nbi are the same: on return the source may be reused and the signal is issued.

__device__ __forceinline__ void putmem_signal(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                              uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<thread_scope>(w, dest, source, num_bytes, sig_addr, signal, sig_op, pe,
                                      "shoal::device::putmem_signal");
}
__device__ __forceinline__ void putmem_signal_nbi(const device_world& w, void* dest, const void* source,
                                                  size_t num_bytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                  int pe) {
  detail::putmem_signal<thread_scope>(w, dest, source, num_bytes, sig_addr, signal, sig_op, pe,
                                      "shoal::device::putmem_signal_nbi");
}
__device__ __forceinline__ void putmem_signal_warp(const device_world& w, void* dest, const void* source,
                                                   size_t num_bytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                   int pe) {
  detail::putmem_signal<warp_scope>(w, dest, source, num_bytes, sig_addr, signal, sig_op, pe,
                                    "shoal::device::putmem_signal_warp");
}
__device__ __forceinline__ void putmem_signal_nbi_warp(const device_world& w, void* dest, const void* source,
                                                       size_t num_bytes, uint64_t* sig_addr, uint64_t signal,
                                                       int sig_op, int pe) {
  detail::putmem_signal<warp_scope>(w, dest, source, num_bytes, sig_addr, signal, sig_op, pe,
                                    "shoal::device::putmem_signal_nbi_warp");
}
__device__ __forceinline__ void putmem_signal_block(const device_world& w, void* dest, const void* source,
                                                    size_t num_bytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                    int pe) {
  detail::putmem_signal<block_scope>(w, dest, source, num_bytes, sig_addr, signal, sig_op, pe,
                                     "shoal::device::putmem_signal_block");
}
__device__ __forceinline__ void putmem_signal_nbi_block(const device_world& w, void* dest, const void* source,
                                                        size_t num_bytes, uint64_t* sig_addr, uint64_t signal,
                                                        int sig_op, int pe) {
  detail::putmem_signal<block_scope>(w, dest, source, num_bytes, sig_addr, signal, sig_op, pe,
                                     "shoal::device::putmem_signal_nbi_block");
}
/// Block put-with-signal through the TMA ring (see putmem_block_tma; same `smem` workspace), then
/// thread 0 releases the signal: the ring's wait_group 0 + proxy fence order the bulk writes
/// before thread 0's release.
template <int kStages = 4, int kStageBytes = 16384>
__device__ __forceinline__ void putmem_signal_block_tma(const device_world& w, void* dest, const void* source,
                                                        size_t num_bytes, uint64_t* sig_addr, uint64_t signal,
                                                        int sig_op, int pe, void* smem) {
  constexpr const char* kCall = "shoal::device::putmem_signal_block_tma";
  detail::check_sig_op(w, sig_op, kCall);
  detail::copy_to_remote_block_tma<kStages, kStageBytes>(detail::peer_ptr(w, dest, pe, kCall), source, num_bytes, smem);
  if (block_scope::rank() == 0) detail::signal_release(detail::peer_ptr(w, sig_addr, pe, kCall), signal, sig_op);
}

/// Typed put-with-signal: nelems elements of T (put_signal contract).
template <class T>
__device__ __forceinline__ void put_signal(const device_world& w, T* dest, const T* source, size_t nelems,
                                           uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<thread_scope>(w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                                      "shoal::device::put_signal");
}
template <class T>
__device__ __forceinline__ void put_signal_nbi(const device_world& w, T* dest, const T* source, size_t nelems,
                                               uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<thread_scope>(w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                                      "shoal::device::put_signal_nbi");
}
template <class T>
__device__ __forceinline__ void put_signal_warp(const device_world& w, T* dest, const T* source, size_t nelems,
                                                uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<warp_scope>(w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                                    "shoal::device::put_signal_warp");
}
template <class T>
__device__ __forceinline__ void put_signal_nbi_warp(const device_world& w, T* dest, const T* source, size_t nelems,
                                                    uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<warp_scope>(w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                                    "shoal::device::put_signal_nbi_warp");
}
template <class T>
__device__ __forceinline__ void put_signal_block(const device_world& w, T* dest, const T* source, size_t nelems,
                                                 uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<block_scope>(w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                                     "shoal::device::put_signal_block");
}
template <class T>
__device__ __forceinline__ void put_signal_nbi_block(const device_world& w, T* dest, const T* source, size_t nelems,
                                                     uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  detail::putmem_signal<block_scope>(w, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
                                     "shoal::device::put_signal_nbi_block");
}

/// Applies sig_op with `signal` to sig_addr on pe: st.relaxed.sys (SET) or red.relaxed.sys.add
/// (ADD). Atomic, relaxed: NOT ordered after this PE's earlier puts unless a fence comes between
/// (put -> fence -> signal_op is the ordered pattern; put_signal does both in one call). One thread.
__device__ __forceinline__ void signal_op(const device_world& w, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                          int pe) {
  constexpr const char* kCall = "shoal::device::signal_op";
  detail::check_sig_op(w, sig_op, kCall);
  uint64_t* remote = detail::peer_ptr(w, sig_addr, pe, kCall);
  if (sig_op == SHOAL_SIGNAL_ADD) {
    ptx::red_add_relaxed_sys(remote, signal);
  } else {
    ptx::st_relaxed_sys(remote, signal);
  }
}
/// Reads the local signal word sig_addr with ld.acquire.sys: data released before the value read
/// is visible after it. One thread. (To poll, use signal_wait_until: it acquires only once.)
__device__ __forceinline__ uint64_t signal_fetch(const device_world& w, const uint64_t* sig_addr) {
  (void)w;
  return ptx::ld_acquire_sys(sig_addr);
}
/// Waits until the local signal word compares true with cmp_value (SHOAL_CMP_*); returns the value
/// seen. Relaxed polls, one acquire when satisfied (wait contract in sync.cuh); bounded.
__device__ __forceinline__ uint64_t signal_wait_until(const device_world& w, uint64_t* sig_addr, int cmp,
                                                      uint64_t cmp_value) {
  return detail::wait_until(w, sig_addr, cmp, cmp_value, "shoal::device::signal_wait_until");
}

}  // namespace shoal::device
