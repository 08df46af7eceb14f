// The API adapter of bench/device/kernels.cuh and driver.cuh for shoal: the OpenSHMEM/NVSHMEM-style
// facade (shoal_* / shoalx_*, header-only, no -rdc), i.e. the calls an NVSHMEM program renamed to
// shoal makes (the scoped ones picked by the scope type the kernels are templated on, as the NVSHMEM
// adapter does). `tma` is the same with block puts through shoal's TMA bulk-copy ring (the explicit
// API on the facade's world, shoal::device::facade_world()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "shoal/device/facade.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/shoal.h"

namespace shoal::bench::dev {

/// Shared-memory workspace of the TMA block put (4 stages of 16 KiB, the library's default).
inline constexpr int kTmaStages = 4;
inline constexpr int kTmaStageBytes = 16384;

struct shoal_tma_api;
template <class Path>
struct shoal_block_put_api;
struct generic_put_path;
struct deep_put_path;
struct lean_put_path;
struct split_put_path;

struct shoal_api {
  static constexpr const char* kName = "shoal";
  static constexpr const char* kTmaName = "shoal-tma";
  static constexpr size_t kBlockSmemBytes = 0;
  using tma = shoal_tma_api;
  /// Other block puts measured beside this one in the same run (driver.cuh, put_bw): the previous
  /// path, a deeper first round, and a lookup-first shape for puts below one round.
  using block_put_variants = std::tuple<shoal_block_put_api<generic_put_path>, shoal_block_put_api<deep_put_path>,
                                        shoal_block_put_api<lean_put_path>, shoal_block_put_api<split_put_path>>;

  // --- host (the C facade's default world) ---
  static void* host_malloc(size_t nbytes) { return shoal_malloc(nbytes); }
  static void* host_calloc(size_t nbytes) { return shoal_calloc(1, nbytes); }
  static void host_free(void* p) { shoal_free(p); }
  static void host_barrier() { shoal_barrier_all(); }
  static void* host_ptr(void* p, int pe) { return shoal_ptr(p, pe); }
  static int my_pe() { return shoal_my_pe(); }
  static int n_pes() { return shoal_n_pes(); }
  /// Host RMA to any PE (the driver's fills and checks of a proxy peer's memory; local side: host or device).
  static void host_getmem(void* d, const void* s, size_t n, int pe) { shoal_getmem(d, s, n, pe); }
  static void host_putmem(void* d, const void* s, size_t n, int pe) { shoal_putmem(d, s, n, pe); }
  static void host_quiet() { shoal_quiet(); }

  // --- device ---
  static __device__ void putmem(void* d, const void* s, size_t n, int pe) { shoal_putmem(d, s, n, pe); }
  /// The _nbi put/get of scope S: the facade name an NVSHMEM program renamed to shoal calls.
  template <class S>
  static __device__ void putmem_nbi(S, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::thread_scope>) {
      shoal_putmem_nbi(d, s, n, pe);
    } else if constexpr (std::is_same_v<S, shoal::warp_scope>) {
      shoalx_putmem_nbi_warp(d, s, n, pe);
    } else {
      static_assert(std::is_same_v<S, shoal::block_scope>);
      shoalx_putmem_nbi_block(d, s, n, pe);
    }
  }
  template <class S>
  static __device__ void getmem_nbi(S, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::thread_scope>) {
      shoal_getmem_nbi(d, s, n, pe);
    } else if constexpr (std::is_same_v<S, shoal::warp_scope>) {
      shoalx_getmem_nbi_warp(d, s, n, pe);
    } else {
      static_assert(std::is_same_v<S, shoal::block_scope>);
      shoalx_getmem_nbi_block(d, s, n, pe);
    }
  }
  static __device__ void quiet() { shoal_quiet(); }
  static __device__ void int_p(int* d, int v, int pe) { shoal_int_p(d, v, pe); }
  static __device__ void int_wait_until_ge(int* ivar, int v) { shoal_int_wait_until(ivar, SHOAL_CMP_GE, v); }
  static __device__ void putmem_signal_block(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v, int pe) {
    shoalx_putmem_signal_block(d, s, n, sig, v, SHOAL_SIGNAL_SET, pe);
  }
  static __device__ void signal_wait_until_ge(uint64_t* sig, uint64_t v) {
    shoal_signal_wait_until(sig, SHOAL_CMP_GE, v);
  }
  static __device__ uint64_t uint64_atomic_fetch_add(uint64_t* d, uint64_t v, int pe) {
    return shoal_uint64_atomic_fetch_add(d, v, pe);
  }
  static __device__ void barrier_all() { shoal_barrier_all(); }
  static __device__ void sync_all_block() { shoalx_sync_all_block(); }
};

/// shoal with block puts through the TMA ring (shoal::device::putmem_tma on the facade's world);
/// the workspace is the kernel's dynamic shared memory (kBlockSmemBytes).
struct shoal_tma_api : shoal_api {
  static constexpr const char* kName = "shoal-tma";
  static constexpr size_t kBlockSmemBytes = shoal::device::tma_workspace_bytes<kTmaStages, kTmaStageBytes>;

  template <class S>
  static __device__ void putmem_nbi(S scope, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::block_scope>) {
      extern __shared__ __align__(16) unsigned char tma_smem[];
      shoal::device::putmem_tma<kTmaStages, kTmaStageBytes>(scope, shoal::device::facade_world(), d, s, n, pe,
                                                            tma_smem);
    } else {
      shoal_api::putmem_nbi(scope, d, s, n, pe);
    }
  }
};

/// shoal with its block puts through another path of the library (Path::put; other scopes as
/// shoal_api), measured beside the default one in the same run: rows named Path::kName.
template <class Path>
struct shoal_block_put_api : shoal_api {
  static constexpr const char* kName = Path::kName;

  template <class S>
  static __device__ void putmem_nbi(S scope, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::block_scope>)
      Path::put(scope, shoal::device::facade_world(), d, s, n, pe);
    else
      shoal_api::putmem_nbi(scope, d, s, n, pe);
  }
};

/// The block put as it was before the loads-first path (put_routed_vec16): "shoal-generic" rows.
struct generic_put_path {
  static constexpr const char* kName = "shoal-generic";
  static __device__ void put(shoal::block_scope scope, const shoal::device_world& w, void* d, const void* s, size_t n,
                             int pe) {
    shoal::detail::putmem_generic<true>(scope, w, d, s, n, pe, "shoal::detail::putmem_generic");
  }
};

/// detail::putmem_vec at 8 loads per thread per round (the facade's block put: 4): "shoal-d8" rows.
struct deep_put_path {
  static constexpr const char* kName = "shoal-d8";
  static __device__ void put(shoal::block_scope scope, const shoal::device_world& w, void* d, const void* s, size_t n,
                             int pe) {
    shoal::detail::putmem_vec<true, 8>(scope, w, d, s, n, pe, "shoal::detail::putmem_vec");
  }
};

/// detail::putmem_lean: below one round of the default path (4 vectors per thread; 32 KiB per 512-thread
/// block) the lookup-first one-vector-per-thread put, the default path above: "shoal-lf1" rows.
struct lean_put_path {
  static constexpr const char* kName = "shoal-lf1";
  static __device__ void put(shoal::block_scope scope, const shoal::device_world& w, void* d, const void* s, size_t n,
                             int pe) {
    shoal::detail::putmem_lean<true>(scope, w, d, s, n, pe, "shoal::detail::putmem_lean");
  }
};

/// The default put's loads-first path behind a call that is never inlined: what split_put_path calls from 16 KiB.
__device__ __noinline__ inline void put_vec_call(const shoal::device_world& w, void* d, const void* s, size_t n,
                                                 int pe) {
  shoal::detail::putmem_vec<true, shoal::detail::kPutLeadLoads>(shoal::block, w, d, s, n, pe,
                                                                "shoal::detail::putmem_vec");
}

/// The generic path inline below 16 KiB per call (where "shoal-generic" beat the default row in sessions 14-19: 2-8
/// KiB per block), the default loads-first path from there through a call that is never inlined, so the kernel's
/// hot loop holds only the generic path and a call: "shoal-split" rows. The same two paths in one inlined function
/// (47ecfc9, reverted) ran the generic path at the default kernel's speed, not at shoal-generic's; this tests
/// whether keeping the other path out of the kernel's body is what makes the difference.
struct split_put_path {
  static constexpr const char* kName = "shoal-split";
  static __device__ void put(shoal::block_scope scope, const shoal::device_world& w, void* d, const void* s, size_t n,
                             int pe) {
    if (n < (size_t{16} << 10))
      shoal::detail::putmem_generic<true>(scope, w, d, s, n, pe, "shoal::detail::putmem_generic");
    else
      put_vec_call(w, d, s, n, pe);
  }
};

}  // namespace shoal::bench::dev
