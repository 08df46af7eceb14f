// Device RMA on the explicit handle: ptr, putmem/getmem (bytes) and typed put/get (elements) at
// thread, warp and block scope, blocking and _nbi; p/g; iput/iget. Every call takes the world's
// device_world first. Over load/store transports a put is complete for the source when it returns
// and becomes visible at the target without further action; ordering needs fence/quiet/put_signal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/device/copy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device_world.hpp"

namespace shoal::detail {

template <class To, class From>
__device__ __forceinline__ To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &v, sizeof(To));
  return t;
}

/// The unsigned integer of sizeof(T) bytes, or void when there is none.
template <size_t kBytes>
struct uint_of {
  using type = void;
};
template <>
struct uint_of<1> {
  using type = uint8_t;
};
template <>
struct uint_of<2> {
  using type = uint16_t;
};
template <>
struct uint_of<4> {
  using type = uint32_t;
};
template <>
struct uint_of<8> {
  using type = uint64_t;
};

/// One element of `sized` RMA (putN/iputN) with N/8 bytes.
template <int kBits>
struct sized_elem {
  using type = typename uint_of<kBits / 8>::type;
};
template <>
struct sized_elem<128> {
  struct alignas(8) type {
    uint64_t lo, hi;
  };
};

template <class Scope>
__device__ __forceinline__ void putmem(const device_world& w, void* dest, const void* source, size_t num_bytes, int pe,
                                       const char* call) {
  copy_to_remote<Scope>(peer_ptr(w, dest, pe, call), source, num_bytes);
  Scope::sync();
}

template <class Scope>
__device__ __forceinline__ void getmem(const device_world& w, void* dest, const void* source, size_t num_bytes, int pe,
                                       const char* call) {
  copy_from_remote<Scope>(dest, peer_ptr(w, source, pe, call), num_bytes);
  Scope::sync();
}

/// Strided copy of nelems elements of type T (1, 2, 4, 8 or 16 bytes), element i of the scope's
/// rank r: i = r, r + size, ...
template <class Scope, class T>
__device__ __forceinline__ void strided_copy(T* dest, const T* source, ptrdiff_t dst_stride, ptrdiff_t src_stride,
                                             size_t nelems) {
  for (size_t i = Scope::rank(); i < nelems; i += Scope::size()) {
    dest[static_cast<ptrdiff_t>(i) * dst_stride] = source[static_cast<ptrdiff_t>(i) * src_stride];
  }
}

template <class Scope, class T>
__device__ __forceinline__ void iput(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe, const char* call) {
  strided_copy<Scope>(peer_ptr(w, dest, pe, call), source, dst_stride, src_stride, nelems);
  Scope::sync();
}

template <class Scope, class T>
__device__ __forceinline__ void iget(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe, const char* call) {
  strided_copy<Scope>(dest, peer_ptr(w, source, pe, call), dst_stride, src_stride, nelems);
  Scope::sync();
}

/// p: one strong (st.relaxed.sys) store for 1/2/4/8-byte T, so a p may serve as a flag.
template <class T>
__device__ __forceinline__ void p(const device_world& w, T* dest, T value, int pe, const char* call) {
  T* remote = peer_ptr(w, dest, pe, call);
  using U = typename uint_of<sizeof(T)>::type;
  if constexpr (!std::is_void_v<U>) {
    ptx::st_relaxed_sys(reinterpret_cast<U*>(remote), bits_as<U>(value));
  } else {
    *remote = value;
  }
}

/// g: one strong (ld.relaxed.sys) load for 1/2/4/8-byte T (never a stale L1 line).
template <class T>
__device__ __forceinline__ T g(const device_world& w, const T* source, int pe, const char* call) {
  const T* remote = peer_ptr(w, source, pe, call);
  using U = typename uint_of<sizeof(T)>::type;
  if constexpr (!std::is_void_v<U>) {
    return bits_as<T>(ptx::ld_relaxed_sys(reinterpret_cast<const U*>(remote)));
  } else {
    return *remote;
  }
}

}  // namespace shoal::detail

namespace shoal::device {

// Common contract of every call below (the "RMA contract"):
//  - dest (put) / source (get) is a symmetric address (in this PE's heap); the other buffer is local
//    (global, shared or local memory). pe in [0, n_pes) and load/store-reachable (checked builds
//    print and trap otherwise).
//  - Scope: *_warp: all 32 lanes of a warp call with the same arguments; *_block: every thread of
//    the block calls with the same arguments (contains __syncthreads()); plain: one thread.
//  - Ordering: puts are weak stores. Their order and visibility to other PEs is established only by
//    fence (orders this PE's puts to each PE), quiet (completes them) or put_signal (data before
//    signal). Blocking and _nbi are the same over load/store transports: a put's source may be reused
//    on return; a get's data is in dest on return (for warp/block: visible to the whole scope).

/// Address of `p`'s copy on `pe` that this thread may load/store, or nullptr if that PE's heap is
/// not mapped here (or pe is out of range). Does not trap.
template <class T>
__device__ __forceinline__ T* ptr(const device_world& w, T* p, int pe) {
  if (static_cast<uint32_t>(pe) >= static_cast<uint32_t>(w.n_pes)) return nullptr;
  const int32_t local = w.local_of(pe);
  if (local < 0) return nullptr;
  const auto offset = reinterpret_cast<const char*>(p) - w.heap_base;
  return reinterpret_cast<T*>(w.region + static_cast<uint64_t>(local) * w.stride + offset);
}

// --- putmem / getmem: bytes ---------------------------------------------------------------------

/// Copies num_bytes from local `source` to symmetric `dest` on `pe`. RMA contract; one thread.
__device__ __forceinline__ void putmem(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                       int pe) {
  detail::putmem<thread_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem");
}
/// Same as putmem (load/store transports complete puts at once); RMA contract.
__device__ __forceinline__ void putmem_nbi(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                           int pe) {
  detail::putmem<thread_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem_nbi");
}
/// Warp-wide putmem: 32 lanes x 16-byte accesses, interleaved. RMA contract.
__device__ __forceinline__ void putmem_warp(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                            int pe) {
  detail::putmem<warp_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem_warp");
}
__device__ __forceinline__ void putmem_nbi_warp(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                                int pe) {
  detail::putmem<warp_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem_nbi_warp");
}
/// Block-wide putmem, vector path (every thread, 4 x 16-byte loads in flight before its stores).
/// The default block put. RMA contract.
__device__ __forceinline__ void putmem_block_vec(const device_world& w, void* dest, const void* source,
                                                 size_t num_bytes, int pe) {
  detail::putmem<block_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem_block_vec");
}
/// Block-wide putmem through a TMA bulk-copy ring run by thread 0 (kStages x kStageBytes in
/// `smem`, which must hold tma_workspace_bytes<kStages, kStageBytes> bytes of this block's shared
/// memory, 16-byte aligned). Falls back to the vector path under kTmaMinBytes, for a non-global
/// source, or when dest and source differ in alignment mod 16. On return every byte is written and
/// ordered before thread 0's later accesses. RMA contract.
template <int kStages = 4, int kStageBytes = 16384>
__device__ __forceinline__ void putmem_block_tma(const device_world& w, void* dest, const void* source,
                                                 size_t num_bytes, int pe, void* smem) {
  detail::copy_to_remote_block_tma<kStages, kStageBytes>(
      detail::peer_ptr(w, dest, pe, "shoal::device::putmem_block_tma"), source, num_bytes, smem);
}
/// Block-wide putmem (the vector path). RMA contract.
__device__ __forceinline__ void putmem_block(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                             int pe) {
  detail::putmem<block_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem_block");
}
__device__ __forceinline__ void putmem_nbi_block(const device_world& w, void* dest, const void* source,
                                                 size_t num_bytes, int pe) {
  detail::putmem<block_scope>(w, dest, source, num_bytes, pe, "shoal::device::putmem_nbi_block");
}

/// Copies num_bytes from symmetric `source` on `pe` to local `dest`. RMA contract; one thread.
__device__ __forceinline__ void getmem(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                       int pe) {
  detail::getmem<thread_scope>(w, dest, source, num_bytes, pe, "shoal::device::getmem");
}
__device__ __forceinline__ void getmem_nbi(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                           int pe) {
  detail::getmem<thread_scope>(w, dest, source, num_bytes, pe, "shoal::device::getmem_nbi");
}
__device__ __forceinline__ void getmem_warp(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                            int pe) {
  detail::getmem<warp_scope>(w, dest, source, num_bytes, pe, "shoal::device::getmem_warp");
}
__device__ __forceinline__ void getmem_nbi_warp(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                                int pe) {
  detail::getmem<warp_scope>(w, dest, source, num_bytes, pe, "shoal::device::getmem_nbi_warp");
}
__device__ __forceinline__ void getmem_block(const device_world& w, void* dest, const void* source, size_t num_bytes,
                                             int pe) {
  detail::getmem<block_scope>(w, dest, source, num_bytes, pe, "shoal::device::getmem_block");
}
__device__ __forceinline__ void getmem_nbi_block(const device_world& w, void* dest, const void* source,
                                                 size_t num_bytes, int pe) {
  detail::getmem<block_scope>(w, dest, source, num_bytes, pe, "shoal::device::getmem_nbi_block");
}

// --- typed put / get: nelems elements of T ------------------------------------------------------

/// put of nelems elements of T (RMA contract); the _warp/_block/_nbi forms as for putmem.
template <class T>
__device__ __forceinline__ void put(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem<thread_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::put");
}
template <class T>
__device__ __forceinline__ void put_nbi(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem<thread_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::put_nbi");
}
template <class T>
__device__ __forceinline__ void put_warp(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem<warp_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::put_warp");
}
template <class T>
__device__ __forceinline__ void put_nbi_warp(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem<warp_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::put_nbi_warp");
}
template <class T>
__device__ __forceinline__ void put_block(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem<block_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::put_block");
}
template <class T>
__device__ __forceinline__ void put_nbi_block(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::putmem<block_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::put_nbi_block");
}
/// get of nelems elements of T (RMA contract); the _warp/_block/_nbi forms as for getmem.
template <class T>
__device__ __forceinline__ void get(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem<thread_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::get");
}
template <class T>
__device__ __forceinline__ void get_nbi(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem<thread_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::get_nbi");
}
template <class T>
__device__ __forceinline__ void get_warp(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem<warp_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::get_warp");
}
template <class T>
__device__ __forceinline__ void get_nbi_warp(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem<warp_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::get_nbi_warp");
}
template <class T>
__device__ __forceinline__ void get_block(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem<block_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::get_block");
}
template <class T>
__device__ __forceinline__ void get_nbi_block(const device_world& w, T* dest, const T* source, size_t nelems, int pe) {
  detail::getmem<block_scope>(w, dest, source, nelems * sizeof(T), pe, "shoal::device::get_nbi_block");
}

// --- p / g: one element ----------------------------------------------------------------------

/// Stores `value` to symmetric `dest` on `pe`: one st.relaxed.sys (strong, never merged or torn for
/// 1/2/4/8-byte T), so it may be the flag of put -> fence -> p. No ordering of its own.
template <class T>
__device__ __forceinline__ void p(const device_world& w, T* dest, T value, int pe) {
  detail::p(w, dest, value, pe, "shoal::device::p");
}
/// Loads symmetric `source` on `pe`: one ld.relaxed.sys; blocking (the value is returned).
template <class T>
__device__ __forceinline__ T g(const device_world& w, const T* source, int pe) {
  return detail::g(w, source, pe, "shoal::device::g");
}

// --- iput / iget: strided (strides in elements) ----------------------------------------------

/// dest[i*dst_stride] on pe = source[i*src_stride], i < nelems. RMA contract.
template <class T>
__device__ __forceinline__ void iput(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iput<thread_scope>(w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iput");
}
template <class T>
__device__ __forceinline__ void iput_warp(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                          ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iput<warp_scope>(w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iput_warp");
}
template <class T>
__device__ __forceinline__ void iput_block(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                           ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iput<block_scope>(w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iput_block");
}
/// dest[i*dst_stride] = source[i*src_stride] on pe, i < nelems. RMA contract.
template <class T>
__device__ __forceinline__ void iget(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iget<thread_scope>(w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iget");
}
template <class T>
__device__ __forceinline__ void iget_warp(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                          ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iget<warp_scope>(w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iget_warp");
}
template <class T>
__device__ __forceinline__ void iget_block(const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                           ptrdiff_t src_stride, size_t nelems, int pe) {
  detail::iget<block_scope>(w, dest, source, dst_stride, src_stride, nelems, pe, "shoal::device::iget_block");
}

}  // namespace shoal::device
