// Helpers of the device atomics (<shoal/device/amo.cuh>). Not a public header.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda/atomic>

#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_proxy.cuh"
#include "shoal/device/ptx.cuh"

namespace shoal::detail {

template <class T>
using sys_atomic = cuda::atomic_ref<T, cuda::thread_scope_system>;

/// The unsigned integer red.* works on for integer T (same size).
template <class T>
using red_word = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <class T>
__device__ __forceinline__ void check_amo_type() {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shoal atomics work on 4- and 8-byte types");
}

/// The fetching AMOs, as .global atom.relaxed.sys on the peer's word (ptx.cuh says why .global).
enum class fetch_op { add, and_, or_, xor_, exch };

/// Old value of `remote` after `kOp` with value (integers on their same-size unsigned bits: add is
/// the same for signed and unsigned; float and double add natively).
template <fetch_op kOp, class T>
__device__ __forceinline__ T atom_fetch(T* remote, T value) {
  if constexpr (std::is_floating_point_v<T> && kOp == fetch_op::add) {
    return ptx::atom_add_relaxed_sys(remote, value);
  } else {
    using U = red_word<T>;
    U* word = reinterpret_cast<U*>(remote);
    const U bits = bits_as<U>(value);
    U old;
    if constexpr (kOp == fetch_op::add) {
      old = ptx::atom_add_relaxed_sys(word, bits);
    } else if constexpr (kOp == fetch_op::and_) {
      old = ptx::atom_and_relaxed_sys(word, bits);
    } else if constexpr (kOp == fetch_op::or_) {
      old = ptx::atom_or_relaxed_sys(word, bits);
    } else if constexpr (kOp == fetch_op::xor_) {
      old = ptx::atom_xor_relaxed_sys(word, bits);
    } else {
      old = ptx::atom_exch_relaxed_sys(word, bits);
    }
    return bits_as<T>(old);
  }
}

/// Old value of `remote`; value written when it equals cond (compare on the bits).
template <class T>
__device__ __forceinline__ T atom_compare_swap(T* remote, T cond, T value) {
  using U = red_word<T>;
  return bits_as<T>(ptx::atom_cas_relaxed_sys(reinterpret_cast<U*>(remote), bits_as<U>(cond), bits_as<U>(value)));
}

/// The AMO `code` (proxy_amo: the ring's names) on a load/store peer's word `remote`: the old value.
template <class T>
__device__ __forceinline__ T atom_by_code(T* remote, proxy_amo code, T value, T cond) {
  switch (code) {
    case proxy_amo::add:
      return atom_fetch<fetch_op::add>(remote, value);
    case proxy_amo::swap:
      return atom_fetch<fetch_op::exch>(remote, value);
    case proxy_amo::cswap:
      return atom_compare_swap(remote, cond, value);
    case proxy_amo::and_:
      return atom_fetch<fetch_op::and_>(remote, value);
    case proxy_amo::or_:
      return atom_fetch<fetch_op::or_>(remote, value);
    default:
      return atom_fetch<fetch_op::xor_>(remote, value);
  }
}

/// What a cold AMO needs, laid out by its caller in its local memory on the cold branch only (rma_args' twin).
template <class T>
struct amo_args {
  device_world w;
  T* dest;
  T value;
  T cond;
  proxy_amo code;
  bool fetch;
  int pe;
  const char* call;
};

/// amo_cold's out-of-line body: the arguments read through `a` after each call it makes, so that it keeps almost
/// nothing live across them.
template <class T>
__device__ __noinline__ T amo_cold_at(const amo_args<T>* a) {
  const int32_t local = peer_route(a->w, a->pe, a->call);
  if (local >= 0) return atom_by_code(local_peer_ptr(a->w, a->dest, local), a->code, a->value, a->cond);
  return proxy_amo_typed(a->w, a->dest, a->code, a->value, a->cond, a->fetch, a->pe, a->call);
}

/// The cold part of the typed AMOs (shoal/device/amo.cuh): a pe outside the world's direct run. A load/store peer
/// outside the run gets the AMO as `code` (atom_by_code: fetches and sets as the matching atom); a proxy peer of a
/// world with a ring gets it from its proxy; anything else reports and traps (peer_route's checks). One call out of
/// line (amo_cold_at) with the world and the arguments in this branch's local memory (copy_world_cold): an AMO in a
/// kernel's loop keeps none of this path's code, registers or argument set-up.
template <class T>
__device__ __forceinline__ T amo_cold(const device_world& w, T* dest, proxy_amo code, T value, T cond, bool fetch,
                                      int pe, const char* call) {
  amo_args<T> a;
  copy_world_cold(&a.w, w);
  a.dest = dest, a.value = value, a.cond = cond, a.code = code, a.fetch = fetch, a.pe = pe, a.call = call;
  return amo_cold_at<T>(opaque_addr(a));
}

/// Where a fetching AMO issues its atom: `p`'s copy on the direct run's PE direct_first + k when `in_run` (k =
/// device_world::direct_index(pe) < direct_count), else this PE's device_sync::amo_scratch, whose result the caller
/// then replaces with its cold path's (amo_cold). The atom thus comes before the run check's branch, which ptxas
/// otherwise places between a fetched value and the next call's atom: fetch_add 0.2231 against 0.2288 us per call in
/// a dependent chain, where the atom on a known-good pointer takes 0.2106 (the fetch_add probes of
/// docs/results/gpu-1xh200/protocol/README.md). A cold call pays one relaxed atom on a local word that nothing reads.
template <class T>
__device__ __forceinline__ T* amo_target(const device_world& w, T* p, uint32_t k, bool in_run) {
  return in_run ? run_peer_ptr(w, p, k) : reinterpret_cast<T*>(&local_sync(w)->amo_scratch);
}

/// A fetching AMO of <shoal/device/amo.cuh> on `dest`'s copy on `pe`: `atom(target)` issues the atom on
/// amo_target's address (the run peer's copy, or the scratch word), then a PE outside the run gets its value from
/// amo_cold (`code`, `value`, `cond`: the operation as the cold path applies it, locally or through the proxy).
template <class T, class Atom>
__device__ __forceinline__ T fetch_amo(const device_world& w, T* dest, int pe, Atom atom, proxy_amo code, T value,
                                       T cond, const char* call) {
  check_amo_type<T>();
  const uint32_t k = w.direct_index(pe);
  const bool in_run = k < static_cast<uint32_t>(w.direct_count);
  T old = atom(amo_target(w, dest, k, in_run));
  if (!in_run) old = amo_cold(w, dest, code, value, cond, true, pe, call);
  return old;
}

/// red.add.relaxed.sys of `value` into `remote` (integers on their same-size unsigned bits; float and
/// double natively).
template <class T>
__device__ __forceinline__ void red_add(T* remote, T value) {
  if constexpr (std::is_floating_point_v<T>) {
    ptx::red_add_relaxed_sys(remote, value);
  } else {
    using U = red_word<T>;
    ptx::red_add_relaxed_sys(reinterpret_cast<U*>(remote), static_cast<U>(value));
  }
}

enum class bitwise_op { and_, or_, xor_ };

/// red.{and,or,xor}.relaxed.sys of `value` into `dest`'s copy on `pe` (no ordering; fence first).
template <bitwise_op kOp, class T>
__device__ __forceinline__ void red_bitwise(const device_world& w, T* dest, T value, int pe, const char* call) {
  check_amo_type<T>();
  using U = red_word<T>;
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) {
    constexpr proxy_amo kCode =
        kOp == bitwise_op::and_ ? proxy_amo::and_ : (kOp == bitwise_op::or_ ? proxy_amo::or_ : proxy_amo::xor_);
    proxy_amo_typed(w, dest, kCode, value, T{}, false, pe, call);
    return;
  }
  U* remote = reinterpret_cast<U*>(local_peer_ptr(w, dest, local));
  if constexpr (kOp == bitwise_op::and_) {
    ptx::red_and_relaxed_sys(remote, static_cast<U>(value));
  } else if constexpr (kOp == bitwise_op::or_) {
    ptx::red_or_relaxed_sys(remote, static_cast<U>(value));
  } else {
    ptx::red_xor_relaxed_sys(remote, static_cast<U>(value));
  }
}

// --- half (IEEE binary16) AMOs --------------------------------------------------------------------
// A 2-byte word has no atom.cas or atom.exch: fetch, set and swap run on the aligned 4-byte word that
// holds the half (a relaxed 4-byte load, then atom.cas on it, the other half written back as read),
// add and fetch_add natively (atom/red.add.noftz.f16, a 2-byte atomic of its own). A proxy peer's word
// goes through the ring as a 4-byte fetch (or 0) and compare-and-swap loop, add included.

/// The aligned 4-byte word holding the half at `p`, and the half's bit position in it (little-endian).
struct half_slot {
  uint32_t* word;
  uint32_t shift;
};
__device__ __forceinline__ half_slot half_slot_of(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  return {reinterpret_cast<uint32_t*>(addr & ~uintptr_t{3}), static_cast<uint32_t>(addr & 2u) * 8u};
}
/// `word` with its half at `shift` replaced by `bits`.
__device__ __forceinline__ uint32_t half_replace(uint32_t word, uint32_t shift, uint16_t bits) {
  return (word & ~(0xffffu << shift)) | (static_cast<uint32_t>(bits) << shift);
}

/// Replaces the half at `remote` (a load/store address) by next(old bits); returns the old bits.
template <class F>
__device__ __forceinline__ uint16_t half_cas_loop(uint16_t* remote, F next) {
  const half_slot s = half_slot_of(remote);
  uint32_t old = ptx::ld_relaxed_sys(s.word);
  for (;;) {
    const auto cur = static_cast<uint16_t>(old >> s.shift);
    const uint32_t seen = ptx::atom_cas_relaxed_sys(s.word, old, half_replace(old, s.shift, next(cur)));
    if (seen == old) return cur;
    old = seen;
  }
}

/// The same on a proxy peer: `dest` is this PE's symmetric address, the loop runs through the ring.
template <class F>
__device__ __forceinline__ uint16_t half_cas_loop_proxy(const device_world& w, const __half* dest, F next, int pe,
                                                        const char* call) {
  const half_slot s = half_slot_of(dest);
  auto old = static_cast<uint32_t>(proxy_atomic(w, s.word, proxy_amo::or_, 4, 0, 0, true, pe, call));
  for (;;) {
    const auto cur = static_cast<uint16_t>(old >> s.shift);
    const auto seen = static_cast<uint32_t>(
        proxy_atomic(w, s.word, proxy_amo::cswap, 4, old, half_replace(old, s.shift, next(cur)), true, pe, call));
    if (seen == old) return cur;
    old = seen;
  }
}

/// The half AMO `next` (old bits -> new bits) on dest's copy on pe; returns the old value.
template <class F>
__device__ __forceinline__ __half half_rmw(const device_world& w, __half* dest, int pe, F next, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return __ushort_as_half(half_cas_loop_proxy(w, dest, next, pe, call));
  return __ushort_as_half(half_cas_loop(reinterpret_cast<uint16_t*>(local_peer_ptr(w, dest, local)), next));
}

/// IEEE half sum of two halves' bits, rounded to nearest even (the proxy path's add).
__device__ __forceinline__ uint16_t half_add_bits(uint16_t a, uint16_t b) {
  return __half_as_ushort(__hadd(__ushort_as_half(a), __ushort_as_half(b)));
}

}  // namespace shoal::detail
