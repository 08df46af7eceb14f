// Bodies of the device RMA calls (<shoal/device/rma.cuh>): scoped putmem/getmem/iput/iget over the
// copy engines, p/g as single strong accesses. Every entry takes the scope object first and the name
// of the public call last (for messages). Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_copy.cuh"
#include "shoal/detail/device_proxy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"

namespace shoal::detail {

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

/// putmem by the vector copy: peer lookup, then copy_to_remote (any alignment, any source space), then
/// the scope's sync. kNbi: the _nbi form (differs only for proxy peers, where it does not wait for
/// completion). Thread- and warp-scope putmem; the cold path of the wide scopes (rma_cold).
template <bool kNbi = false, class Scope>
__device__ __forceinline__ void putmem_generic(Scope, const device_world& w, void* dest, const void* source,
                                               size_t nbytes, int pe, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_rma<Scope>(w, proxy_op::put, kNbi, dest, source, nbytes, pe, call);
  copy_to_remote<Scope>(local_peer_ptr(w, dest, local), source, nbytes);
  Scope::sync();
}

/// getmem by the vector copy (putmem_generic's twin): thread- and warp-scope getmem, and the cold path of the
/// wide scopes (rma_cold).
template <bool kNbi = false, class Scope>
__device__ __forceinline__ void getmem_generic(Scope, const device_world& w, void* dest, const void* source,
                                               size_t nbytes, int pe, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_rma<Scope>(w, proxy_op::get, kNbi, source, dest, nbytes, pe, call);
  copy_from_remote<Scope>(dest, local_peer_ptr(w, source, local), nbytes);
  Scope::sync();
}

/// What a cold RMA call needs, laid out by its caller in the caller's local memory on the cold branch only: the world
/// and the call's arguments. The out-of-line function gets their address (two argument registers) and reads them back
/// after each call it makes, so that it keeps almost nothing live across those calls. `World`: device_world (the
/// explicit API: a copy of the caller's world) or the facade's facade_world_tag (empty: the callee reads the
/// __constant__ world itself, so the caller loads none of the world's fields for it).
template <class World>
struct rma_args {
  World w;
  void* dest;
  const void* source;
  size_t nbytes;
  int pe;
  const char* call;
};

/// rma_cold's out-of-line body (see rma_cold).
template <bool kNbi, bool kGet, class Scope, class World>
__device__ __noinline__ void rma_cold_at(const rma_args<World>* a) {
  // Behind an opaque address even when it is the facade's __constant__ world: the compiler then reads its fields
  // again after each call instead of keeping them live across the calls below (what it does with a world it knows
  // no call can write).
  const device_world& w = *opaque_addr(world_ref(a->w));
  const int32_t local = peer_route(w, a->pe, a->call);
  if (local < 0) {
    if constexpr (kGet)
      return proxy_rma<Scope>(w, proxy_op::get, kNbi, a->source, a->dest, a->nbytes, a->pe, a->call);
    else
      return proxy_rma<Scope>(w, proxy_op::put, kNbi, a->dest, a->source, a->nbytes, a->pe, a->call);
  }
  if constexpr (kGet)
    copy_from_remote<Scope, kCopyLean>(a->dest, local_peer_ptr(w, a->source, local), a->nbytes);
  else
    copy_to_remote<Scope, kCopyLean>(local_peer_ptr(w, a->dest, local), a->source, a->nbytes);
  Scope::sync();
}

/// The cold part of putmem/getmem: what the hot path does not take (a peer outside the world's direct run, a proxy
/// peer, a bad pe; at the wide scopes also buffers that are not 16-byte multiples in global memory). One call out of
/// line (rma_cold_at) with the arguments, and for the explicit API a copy of the world, in this branch's local memory:
/// a kernel's loop around a put keeps none of this path's code, registers or argument set-up, which inline cost a
/// 2 KiB block put 0.32 us per call (the probe rows of docs/results/gpu-1xh200/protocol/README.md), and the world's
/// address is never taken on the hot path (a kernel that holds its world as a parameter would copy it to local memory
/// at its start and read it from there). Its copy is the lean one (2 loads in flight per thread, kCopyLean).
template <bool kNbi, bool kGet, class Scope, class World>
__device__ __forceinline__ void rma_cold(const World& w, void* dest, const void* source, size_t nbytes, int pe,
                                         const char* call) {
  rma_args<World> a;
  if constexpr (std::is_same_v<World, device_world>) copy_world_cold(&a.w, w);
  a.dest = dest, a.source = source, a.nbytes = nbytes, a.pe = pe, a.call = call;
  rma_cold_at<kNbi, kGet, Scope>(opaque_addr(a));
}

/// kNbi: the _nbi form (differs only for proxy peers, where it does not wait for completion). `world`: a device_world
/// or the facade's facade_world_tag (world_ref). A peer of the world's direct run takes the inline copy: copy_vec16 at
/// the wide scopes (block, warps<N>; 4 loads in flight per thread) for vec16_ok buffers, copy_to_remote at thread and
/// warp scope; everything else goes through rma_cold.
template <bool kNbi = false, class Scope, class World>
__device__ __forceinline__ void putmem(Scope, const World& world, void* dest, const void* source, size_t nbytes, int pe,
                                       const char* call) {
  const device_world& w = world_ref(world);
  const int32_t local = peer_local_or_cold(w, pe);
  if constexpr (Scope::kWide) {
    if (local >= 0 && vec16_ok<Scope>(dest, source, nbytes)) {
      copy_vec16<Scope, kPutLeadLoads>(local_peer_ptr(w, dest, local), source, nbytes);
      Scope::sync();
      return;
    }
  } else {
    if (local >= 0 && co16_ok(dest, source) && __isGlobal(source)) {
      copy_width<Scope, 16, true, true>(static_cast<char*>(local_peer_ptr(w, dest, local)),
                                        static_cast<const char*>(source), nbytes);
      Scope::sync();
      return;
    }
  }
  rma_cold<kNbi, false, Scope>(world, dest, source, nbytes, pe, call);
}

/// getmem: as putmem, the local buffer being the destination (vec16_ok with the roles swapped).
template <bool kNbi = false, class Scope, class World>
__device__ __forceinline__ void getmem(Scope, const World& world, void* dest, const void* source, size_t nbytes, int pe,
                                       const char* call) {
  const device_world& w = world_ref(world);
  const int32_t local = peer_local_or_cold(w, pe);
  if constexpr (Scope::kWide) {
    if (local >= 0 && vec16_ok<Scope>(source, dest, nbytes)) {
      copy_vec16<Scope, kPutLeadLoads>(dest, local_peer_ptr(w, source, local), nbytes);
      Scope::sync();
      return;
    }
  } else {
    if (local >= 0 && co16_ok(dest, source) && __isGlobal(dest)) {
      copy_width<Scope, 16, true, true>(static_cast<char*>(dest),
                                        static_cast<const char*>(local_peer_ptr(w, source, local)), nbytes);
      Scope::sync();
      return;
    }
  }
  rma_cold<kNbi, true, Scope>(world, dest, source, nbytes, pe, call);
}

/// Block put through the TMA ring (device/rma.cuh putmem_tma); a proxy peer gets one blocking put.
template <int kStages, int kStageBytes>
__device__ __forceinline__ void putmem_tma(const device_world& w, void* dest, const void* source, size_t nbytes, int pe,
                                           void* smem, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_rma<block_scope>(w, proxy_op::put, false, dest, source, nbytes, pe, call);
  copy_to_remote_block_tma<kStages, kStageBytes>(local_peer_ptr(w, dest, local), source, nbytes, smem);
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
__device__ __forceinline__ void iput(Scope, const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0)
    return proxy_strided<Scope>(w, proxy_op::put, reinterpret_cast<const char*>(dest),
                                reinterpret_cast<const char*>(source), dst_stride * sizeof(T), src_stride * sizeof(T),
                                nelems, sizeof(T), pe, call);
  strided_copy<Scope>(local_peer_ptr(w, dest, local), source, dst_stride, src_stride, nelems);
  Scope::sync();
}

template <class Scope, class T>
__device__ __forceinline__ void iget(Scope, const device_world& w, T* dest, const T* source, ptrdiff_t dst_stride,
                                     ptrdiff_t src_stride, size_t nelems, int pe, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0)
    return proxy_strided<Scope>(w, proxy_op::get, reinterpret_cast<const char*>(source),
                                reinterpret_cast<const char*>(dest), src_stride * sizeof(T), dst_stride * sizeof(T),
                                nelems, sizeof(T), pe, call);
  strided_copy<Scope>(dest, local_peer_ptr(w, source, local), dst_stride, src_stride, nelems);
  Scope::sync();
}

/// p: one strong (st.relaxed.sys) store for 1/2/4/8-byte T, so a p may serve as a flag.
template <class T>
__device__ __forceinline__ void p(const device_world& w, T* dest, T value, int pe, const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_p(w, dest, value, pe, call);
  T* remote = local_peer_ptr(w, dest, local);
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
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_g(w, source, pe, call);
  const T* remote = local_peer_ptr(w, source, local);
  using U = typename uint_of<sizeof(T)>::type;
  if constexpr (!std::is_void_v<U>) {
    return bits_as<T>(ptx::ld_relaxed_sys(reinterpret_cast<const U*>(remote)));
  } else {
    return *remote;
  }
}

/// device::ptr: `p`'s copy on `pe` if this GPU reaches it by load/store (local_of(pe) >= 0: proxy and
/// unreachable PEs have -1), else nullptr (no trap).
template <class T>
__device__ __forceinline__ T* ptr_or_null(const device_world& w, T* p, int pe) {
  int32_t local = w.direct_local_of(pe);  // a PE of the direct run: no table read
  if (local < 0) {
    if (static_cast<uint32_t>(pe) >= static_cast<uint32_t>(w.n_pes)) return nullptr;
    local = w.local_of(pe);
    if (local < 0) return nullptr;
  }
  const auto offset = reinterpret_cast<const char*>(p) - w.heap_base;
  return reinterpret_cast<T*>(w.region + static_cast<uint64_t>(local) * w.stride + offset);
}

}  // namespace shoal::detail
