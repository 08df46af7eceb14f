// shoal's block-put paths measured beside its default one in put_bw (bench/rma/rma.cuh), as API adapters derived
// from shoal_api (bench/common/shoal_api.cuh): the TMA bulk-copy ring ("shoal-tma" rows), the generic vector copy
// ("shoal-generic") and the bisection of the block put's per-call cost (the "probe-*" rows, SHOAL_BENCH_PROBE=1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/shoal_api.cuh"
#include "shoal/device/scope.cuh"

namespace shoal::bench::dev {

/// Shared-memory workspace of the TMA block put (4 stages of 16 KiB, the library's default).
inline constexpr int kTmaStages = 4;
inline constexpr int kTmaStageBytes = 16384;

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
  static constexpr bool kProbe = requires { Path::kProbe; };

  template <class S>
  static __device__ void putmem_nbi(S scope, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::block_scope>)
      Path::put(scope, shoal::device::facade_world(), d, s, n, pe);
    else
      shoal_api::putmem_nbi(scope, d, s, n, pe);
  }
};

/// The block put through the generic vector copy (detail::putmem_generic, the wide scopes' cold path): "shoal-generic"
/// rows.
struct generic_put_path {
  static constexpr const char* kName = "shoal-generic";
  static __device__ void put(shoal::block_scope scope, const shoal::device_world& w, void* d, const void* s, size_t n,
                             int pe) {
    shoal::detail::putmem_generic<true>(scope, w, d, s, n, pe, "shoal::detail::putmem_generic");
  }
};

/// Bisection of the block put's per-call cost (only with SHOAL_BENCH_PROBE=1; docs/results/gpu-1xh200/protocol):
/// raw_block_put_kernel's body moved into rma_bw_kernel's loop, then one of shoal's ingredients at a time.
///   0 "probe-raw":   raw_block's copy (C++ int4 loads and stores, one vector per thread, interleaved), the peer
///                    address from the world (region + pe * stride, no check), one sync: rma_bw_kernel's shell
///   1 "probe-asm":   0 with the library's loads and stores (ptx::ld_global_v4 / st_global_v4: asm volatile)
///   2 "probe-w0":    the library's copy_vec16 at 4 loads per thread (warp 0 takes 128 vectors), same address
///   3 "probe-route": 0 behind the library's checks: vec16_ok, peer_route, local_peer_ptr
///   4 "probe-copy":  the generic path's copy (copy_to_remote: widths, head and tail, 4 loads per round), same address
///   5 "probe-ok":    0 behind vec16_ok alone (the other case: putmem_generic inline)
///   6 "probe-rt":    0 with the address from peer_route (its cold call inline), no vec16_ok
///   7 "probe-table": the default block put (detail::putmem) with the lookup the direct run replaced in place of
///                    the direct run's: a range check, then the local-index table when the world has one
///                    (table_local_or_cold)
template <int kVariant>
struct probe_put_path {
  static constexpr const char* kName = kVariant == 0   ? "probe-raw"
                                       : kVariant == 1 ? "probe-asm"
                                       : kVariant == 2 ? "probe-w0"
                                       : kVariant == 3 ? "probe-route"
                                       : kVariant == 4 ? "probe-copy"
                                       : kVariant == 5 ? "probe-ok"
                                       : kVariant == 6 ? "probe-rt"
                                                       : "probe-table";
  static constexpr bool kProbe = true;
  static __device__ void put(shoal::block_scope scope, const shoal::device_world& w, void* d, const void* s, size_t n,
                             int pe) {
    const uint32_t rank = shoal::block_scope::rank();
    const uint32_t size = shoal::block_scope::size();
    int4* to = nullptr;
    if constexpr (kVariant == 7) {
      const int32_t local = table_local_or_cold(w, pe);
      if (local >= 0 && shoal::detail::vec16_ok<shoal::block_scope>(d, s, n)) {
        shoal::detail::copy_vec16<shoal::block_scope, shoal::detail::kPutLeadLoads>(
            shoal::detail::local_peer_ptr(w, d, local), s, n);
        shoal::block_scope::sync();
        return;
      }
      shoal::detail::rma_cold<true, false, shoal::block_scope>(w, d, s, n, pe, "probe");
      return;
    } else if constexpr (kVariant == 3) {
      if (!shoal::detail::vec16_ok<shoal::block_scope>(d, s, n)) {
        shoal::detail::putmem_generic<true>(scope, w, d, s, n, pe, "probe");
        return;
      }
      const int32_t local = shoal::detail::peer_route(w, pe, "probe");
      if (local < 0) {
        shoal::detail::putmem_generic<true>(scope, w, d, s, n, pe, "probe");
        return;
      }
      to = shoal::detail::local_peer_ptr(w, static_cast<int4*>(d), local);
    } else if constexpr (kVariant == 5) {
      if (!shoal::detail::vec16_ok<shoal::block_scope>(d, s, n)) {
        shoal::detail::putmem_generic<true>(scope, w, d, s, n, pe, "probe");
        return;
      }
      to = shoal::detail::local_peer_ptr(w, static_cast<int4*>(d), w.local_of(pe));
    } else if constexpr (kVariant == 6) {
      to = shoal::detail::local_peer_ptr(w, static_cast<int4*>(d), shoal::detail::peer_route(w, pe, "probe"));
    } else {
      to = shoal::detail::local_peer_ptr(w, static_cast<int4*>(d), w.local_of(pe));
    }
    const auto* from = static_cast<const int4*>(s);
    const size_t vecs = n / 16;
    if constexpr (kVariant == 4) {
      shoal::detail::copy_to_remote<shoal::block_scope>(to, from, n);
    } else if constexpr (kVariant == 2) {
      shoal::detail::copy_vec16<shoal::block_scope, shoal::detail::kPutLeadLoads>(to, from, n);
    } else if constexpr (kVariant == 1) {
      for (size_t v = rank; v < vecs; v += size)
        shoal::ptx::st_global_v4(reinterpret_cast<uint4*>(to) + v,
                                 shoal::ptx::ld_global_v4(reinterpret_cast<const uint4*>(from) + v));
    } else {
      for (size_t v = rank; v < vecs; v += size) to[v] = from[v];
    }
    shoal::block_scope::sync();
  }
};

}  // namespace shoal::bench::dev
