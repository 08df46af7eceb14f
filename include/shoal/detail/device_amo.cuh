// Helpers of the device atomics (<shoal/device/amo.cuh>). Not a public header.
#pragma once

#include <cstdint>
#include <type_traits>

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

}  // namespace shoal::detail
