// Device atomics (AMO) on the explicit handle: the OpenSHMEM set (fetch, set, swap, compare_swap,
// fetch_inc, inc, fetch_add, add, fetch_and/or/xor, and/or/xor) plus float/double add/fetch_add, and
// NVSHMEM's half (__half) fetch, set, swap, fetch_add and add.
// One thread (no scope argument). System-scope atomics on the peer's address: atom.relaxed.sys.global.<op>
// when a value comes back, red.relaxed.sys otherwise; fetch and set through cuda::atomic_ref.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda/atomic>

#include "shoal/detail/device_amo.cuh"
#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_proxy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device_world.hpp"

namespace shoal::device {

// Common contract of every call below (the "AMO contract"):
//  - dest/source: a symmetric T, naturally aligned, on pe (checked builds trap on a bad pe). A proxy
//    peer's word is updated by its PE's proxy (docs/design.md, "The proxy ring").
//  - Atomic at system scope with respect to every other shoal AMO on the same word (any PE, any
//    GPU thread). Relaxed: no ordering with this PE's puts or other AMOs to other words; order with
//    fence (before/after) or complete with quiet. Fetching forms block until the old value is back.
//  - One thread (no warp/block forms).

/// Atomically reads source on pe (ld.relaxed.sys).
template <class T>
__device__ __forceinline__ T atomic_fetch(const device_world& w, const T* source, int pe) {
  return detail::fetch_amo(
      w, const_cast<T*>(source), pe, [](T* t) { return detail::sys_atomic<T>(*t).load(cuda::memory_order_relaxed); },
      detail::proxy_amo::or_, T(0), T{}, "shoal::device::atomic_fetch");
}
/// Atomically writes value to dest on pe (st.relaxed.sys).
template <class T>
__device__ __forceinline__ void atomic_set(const device_world& w, T* dest, T value, int pe) {
  detail::check_amo_type<T>();
  const uint32_t k = w.direct_index(pe);
  if (k >= static_cast<uint32_t>(w.direct_count))
    return (void)detail::amo_cold(w, dest, detail::proxy_amo::swap, value, T{}, false, pe, "shoal::device::atomic_set");
  T* remote = detail::run_peer_ptr(w, dest, k);
  detail::sys_atomic<T>(*remote).store(value, cuda::memory_order_relaxed);
}
/// Writes value, returns the old value (atom.exch).
template <class T>
__device__ __forceinline__ T atomic_swap(const device_world& w, T* dest, T value, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [=](T* t) { return detail::atom_fetch<detail::fetch_op::exch>(t, value); }, detail::proxy_amo::swap,
      value, T{}, "shoal::device::atomic_swap");
}
/// If dest == cond, writes value; returns the old value either way (atom.cas).
template <class T>
__device__ __forceinline__ T atomic_compare_swap(const device_world& w, T* dest, T cond, T value, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [=](T* t) { return detail::atom_compare_swap(t, cond, value); }, detail::proxy_amo::cswap, value,
      cond, "shoal::device::atomic_compare_swap");
}
/// Adds value, returns the old value (atom.add; integers, float, double).
template <class T>
__device__ __forceinline__ T atomic_fetch_add(const device_world& w, T* dest, T value, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [=](T* t) { return detail::atom_fetch<detail::fetch_op::add>(t, value); }, detail::proxy_amo::add,
      value, T{}, "shoal::device::atomic_fetch_add");
}
/// Adds value (red.add; integers, float, double).
template <class T>
__device__ __forceinline__ void atomic_add(const device_world& w, T* dest, T value, int pe) {
  detail::check_amo_type<T>();
  const uint32_t k = w.direct_index(pe);
  if (k >= static_cast<uint32_t>(w.direct_count))
    return (void)detail::amo_cold(w, dest, detail::proxy_amo::add, value, T{}, false, pe, "shoal::device::atomic_add");
  detail::red_add(detail::run_peer_ptr(w, dest, k), value);
}
/// Adds 1, returns the old value.
template <class T>
__device__ __forceinline__ T atomic_fetch_inc(const device_world& w, T* dest, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [](T* t) { return detail::atom_fetch<detail::fetch_op::add>(t, T(1)); }, detail::proxy_amo::add,
      T(1), T{}, "shoal::device::atomic_fetch_inc");
}
/// Adds 1.
template <class T>
__device__ __forceinline__ void atomic_inc(const device_world& w, T* dest, int pe) {
  detail::check_amo_type<T>();
  using U = detail::red_word<T>;
  const uint32_t k = w.direct_index(pe);
  if (k >= static_cast<uint32_t>(w.direct_count))
    return (void)detail::amo_cold(w, dest, detail::proxy_amo::add, T(1), T{}, false, pe, "shoal::device::atomic_inc");
  T* remote = detail::run_peer_ptr(w, dest, k);
  ptx::red_add_relaxed_sys(reinterpret_cast<U*>(remote), U(1));
}
/// Bitwise and/or/xor with value, returning the old value (atom.and/or/xor; integer T).
template <class T>
__device__ __forceinline__ T atomic_fetch_and(const device_world& w, T* dest, T value, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [=](T* t) { return detail::atom_fetch<detail::fetch_op::and_>(t, value); }, detail::proxy_amo::and_,
      value, T{}, "shoal::device::atomic_fetch_and");
}
template <class T>
__device__ __forceinline__ T atomic_fetch_or(const device_world& w, T* dest, T value, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [=](T* t) { return detail::atom_fetch<detail::fetch_op::or_>(t, value); }, detail::proxy_amo::or_,
      value, T{}, "shoal::device::atomic_fetch_or");
}
template <class T>
__device__ __forceinline__ T atomic_fetch_xor(const device_world& w, T* dest, T value, int pe) {
  return detail::fetch_amo(
      w, dest, pe, [=](T* t) { return detail::atom_fetch<detail::fetch_op::xor_>(t, value); }, detail::proxy_amo::xor_,
      value, T{}, "shoal::device::atomic_fetch_xor");
}
/// Bitwise and/or/xor with value (red.and/or/xor; integer T).
template <class T>
__device__ __forceinline__ void atomic_and(const device_world& w, T* dest, T value, int pe) {
  detail::red_bitwise<detail::bitwise_op::and_>(w, dest, value, pe, "shoal::device::atomic_and");
}
template <class T>
__device__ __forceinline__ void atomic_or(const device_world& w, T* dest, T value, int pe) {
  detail::red_bitwise<detail::bitwise_op::or_>(w, dest, value, pe, "shoal::device::atomic_or");
}
template <class T>
__device__ __forceinline__ void atomic_xor(const device_world& w, T* dest, T value, int pe) {
  detail::red_bitwise<detail::bitwise_op::xor_>(w, dest, value, pe, "shoal::device::atomic_xor");
}

// --- half (__half, IEEE binary16): the AMO contract above, on a 2-byte aligned value ---------------
// fetch, set and swap act on the aligned 4-byte word that holds the half (a compare-and-swap loop that
// writes the other half back unchanged); fetch_add and add are native 2-byte atomics (atom/red.add.noftz
// .f16, round to nearest even, subnormals kept). A proxy peer's half goes through the ring as a 4-byte
// compare-and-swap loop, add included (with the same rounding).

/// Atomically reads source on pe.
__device__ __forceinline__ __half atomic_fetch(const device_world& w, const __half* source, int pe) {
  const int32_t local = detail::peer_route(w, pe, "shoal::device::atomic_fetch");
  if (local < 0) {  // one ring fetch (or 0) of the 4-byte word
    const detail::half_slot s = detail::half_slot_of(source);
    const uint64_t word =
        detail::proxy_atomic(w, s.word, detail::proxy_amo::or_, 4, 0, 0, true, pe, "shoal::device::atomic_fetch");
    return __ushort_as_half(static_cast<uint16_t>(word >> s.shift));
  }
  const auto* remote = detail::local_peer_ptr(w, const_cast<__half*>(source), local);
  const detail::half_slot s = detail::half_slot_of(remote);
  return __ushort_as_half(static_cast<uint16_t>(ptx::ld_relaxed_sys(s.word) >> s.shift));
}
/// Atomically writes value to dest on pe (a swap whose old value is dropped).
__device__ __forceinline__ void atomic_set(const device_world& w, __half* dest, __half value, int pe) {
  const uint16_t bits = __half_as_ushort(value);
  detail::half_rmw(
      w, dest, pe, [bits](uint16_t) { return bits; }, "shoal::device::atomic_set");
}
/// Writes value, returns the old value.
__device__ __forceinline__ __half atomic_swap(const device_world& w, __half* dest, __half value, int pe) {
  const uint16_t bits = __half_as_ushort(value);
  return detail::half_rmw(
      w, dest, pe, [bits](uint16_t) { return bits; }, "shoal::device::atomic_swap");
}
/// Adds value, returns the old value (atom.add.noftz.f16).
__device__ __forceinline__ __half atomic_fetch_add(const device_world& w, __half* dest, __half value, int pe) {
  const uint16_t bits = __half_as_ushort(value);
  const int32_t local = detail::peer_route(w, pe, "shoal::device::atomic_fetch_add");
  if (local < 0) {
    return __ushort_as_half(detail::half_cas_loop_proxy(
        w, dest, [bits](uint16_t cur) { return detail::half_add_bits(cur, bits); }, pe,
        "shoal::device::atomic_fetch_add"));
  }
  auto* remote = reinterpret_cast<uint16_t*>(detail::local_peer_ptr(w, dest, local));
  return __ushort_as_half(ptx::atom_add_f16_relaxed_sys(remote, bits));
}
/// Adds value (red.add.noftz.f16).
__device__ __forceinline__ void atomic_add(const device_world& w, __half* dest, __half value, int pe) {
  const uint16_t bits = __half_as_ushort(value);
  const int32_t local = detail::peer_route(w, pe, "shoal::device::atomic_add");
  if (local < 0) {
    detail::half_cas_loop_proxy(
        w, dest, [bits](uint16_t cur) { return detail::half_add_bits(cur, bits); }, pe, "shoal::device::atomic_add");
    return;
  }
  ptx::red_add_f16_relaxed_sys(reinterpret_cast<uint16_t*>(detail::local_peer_ptr(w, dest, local)), bits);
}

}  // namespace shoal::device
