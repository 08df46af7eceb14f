// The API adapter of the device-initiated benchmarks (bench/common/driver.cuh and the family kernels) for shoal:
// the OpenSHMEM/NVSHMEM-style facade (shoal_* / shoalx_*, header-only, no -rdc), i.e. the calls an NVSHMEM program
// renamed to shoal makes (the scoped ones picked by the scope type the kernels are templated on, as the NVSHMEM
// adapter does). `tma` is the same with block puts through shoal's TMA bulk-copy ring (the explicit API on the
// facade's world, shoal::device::facade_world()); it and the other block-put paths measured in put_bw are defined
// with the RMA benchmarks (bench/rma/shoal_put_paths.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "shoal/device/facade.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/shoal.h"

namespace shoal::bench::dev {

/// The peer lookup that the direct run (device_world::direct_local_of) replaced: a range check, then
/// the local-index table when the world has one (a predicated load; nullptr: the index is pe). The `probe-table` and
/// `probe-lib-table` rows (SHOAL_BENCH_PROBE=1) run it beside the library's lookup in the same binary.
__device__ __forceinline__ int32_t table_local_or_cold(const shoal::device_world& w, int pe) {
  return static_cast<uint32_t>(pe) < static_cast<uint32_t>(w.n_pes) ? w.local_of(pe) : -1;
}

// bench/rma/shoal_put_paths.cuh
struct shoal_tma_api;
template <class Path>
struct shoal_block_put_api;
struct generic_put_path;
template <int kVariant>
struct probe_put_path;

struct shoal_api {
  static constexpr const char* kName = "shoal";
  static constexpr const char* kTmaName = "shoal-tma";
  static constexpr size_t kBlockSmemBytes = 0;
  using tma = shoal_tma_api;
  /// Other block puts measured beside this one in the same run (bench/rma/rma.cuh, put_bw): the generic copy and (with
  /// SHOAL_BENCH_PROBE=1) the bisection rows of the per-call cost.
  using block_put_variants = std::tuple<shoal_block_put_api<generic_put_path>, shoal_block_put_api<probe_put_path<0>>,
                                        shoal_block_put_api<probe_put_path<1>>, shoal_block_put_api<probe_put_path<2>>,
                                        shoal_block_put_api<probe_put_path<3>>, shoal_block_put_api<probe_put_path<4>>,
                                        shoal_block_put_api<probe_put_path<5>>, shoal_block_put_api<probe_put_path<6>>,
                                        shoal_block_put_api<probe_put_path<7>>>;

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
  static __device__ void fence() { shoal_fence(); }
  static __device__ void uint64_p(uint64_t* d, uint64_t v, int pe) { shoal_uint64_p(d, v, pe); }
  static __device__ void putmem_signal_nbi(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v, int pe) {
    shoal_putmem_signal_nbi(d, s, n, sig, v, SHOAL_SIGNAL_SET, pe);
  }
  static __device__ void int_p(int* d, int v, int pe) { shoal_int_p(d, v, pe); }
  static __device__ void int_wait_until_ge(int* ivar, int v) { shoal_int_wait_until(ivar, SHOAL_CMP_GE, v); }
  static __device__ void putmem_signal_block(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v, int pe) {
    shoalx_putmem_signal_block(d, s, n, sig, v, SHOAL_SIGNAL_SET, pe);
  }
  /// SHOAL_BENCH_PROBE=1 row of put_signal_ping_pong: the block put-with-signal with its copy always the generic
  /// copy_to_remote inline (kFastCopy false), beside the default's copy_small and copy_vec16.
  static constexpr const char* kPutSignalAltName = "shoal-ps-generic";
  static __device__ void putmem_signal_block_alt(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v, int pe) {
    shoal::detail::putmem_signal<false, shoal::block_scope, false>(shoal::block, shoal::device::facade_world(), d, s, n,
                                                                   sig, v, SHOAL_SIGNAL_SET, pe, "shoal-ps-generic");
  }
  static __device__ void signal_wait_until_ge(uint64_t* sig, uint64_t v) {
    shoal_signal_wait_until(sig, SHOAL_CMP_GE, v);
  }
  static __device__ uint64_t uint64_atomic_fetch_add(uint64_t* d, uint64_t v, int pe) {
    return shoal_uint64_atomic_fetch_add(d, v, pe);
  }
  /// SHOAL_BENCH_PROBE=1 rows `probe-amo-arith` and `probe-amo-alt-arith` of atomic_latency: fetch_add as the library
  /// issued it before the direct run's offset table: the peer's address by local_peer_ptr's arithmetic on
  /// the world's fields (region + local * stride + (d - heap_base)), the same peer check and cold call.
  static __device__ uint64_t uint64_atomic_fetch_add_arith(uint64_t* d, uint64_t v, int pe) {
    const device_world& w = shoal::device::facade_world();
    const int32_t local = w.direct_local_of(pe);
    if (local < 0)
      return shoal::detail::amo_cold(w, d, shoal::detail::proxy_amo::add, v, uint64_t{0}, true, pe, "probe-amo-arith");
    return shoal::detail::atom_fetch<shoal::detail::fetch_op::add>(shoal::detail::local_peer_ptr(w, d, local), v);
  }
  /// SHOAL_BENCH_PROBE=1 row `probe-amo-nocheck`: the table's address with no run check and no cold path (the peer is
  /// known to be in the run): what the check and its branch cost.
  static __device__ uint64_t uint64_atomic_fetch_add_nocheck(uint64_t* d, uint64_t v, int pe) {
    const device_world& w = shoal::device::facade_world();
    return shoal::ptx::atom_add_relaxed_sys(shoal::detail::run_peer_ptr(w, d, w.direct_index(pe)), v);
  }
  static __device__ void barrier_all() { shoal_barrier_all(); }
  static __device__ void sync_all_block() { shoalx_sync_all_block(); }
  /// barrier_all in the epoch protocol of worlds with proxy peers (kFlagBarrierEpochs), once the default of load/store
  /// worlds too: the `shoal-epochs` row of barrier_latency, beside the count protocol in the same run.
  /// The two protocols read the same words differently: reset_barrier_words() clears them after such a row.
  static __device__ void barrier_all_epochs() {
    device_world w = shoal::device::facade_world();
    w.flags |= shoal::detail::kFlagBarrierEpochs;
    shoal::detail::barrier(shoal::thread, w, "barrier_all (epochs)");
  }
  /// barrier_all's count protocol with relaxed polls and one acquire re-read (SHOAL_WAIT_ACQUIRE_POLL=0's form): the
  /// `shoal-relaxed` row (SHOAL_BENCH_PROBE=1), beside the acquire polls of the default.
  static __device__ void barrier_all_relaxed_polls() {
    shoal::detail::barrier_thread<false>(shoal::device::facade_world(), "barrier_all (relaxed polls)");
  }
  /// SHOAL_BENCH_PROBE=1 rows `probe-lib*` of barrier_latency: the count protocol's library pieces (fence,
  /// count_signal, count_wait with its bounded-wait clock) on the bench's own words, one round, as barrier_thread runs
  /// them for 2 PEs, with the peer's word found before the fence as kMode says (the rows name the mode). The table
  /// lookup took 0.08-0.10 us of that time (`probe-lib-addr` against `probe-lib`); the direct run replaced it, and
  /// `probe-lib-table` keeps it beside the new one (docs/results/gpu-1xh200/protocol/README.md).
  static constexpr int kProbeLibNone = 0;    ///< `probe-lib`: the bench's precomputed peer word
  static constexpr int kProbeLibLookup = 1;  ///< `probe-lib-addr`: peer_ptr (the direct run, address, cold call)
  static constexpr int kProbeLibTable = 2;   ///< `probe-lib-table`: the older lookup (table_local_or_cold)
  static constexpr int kProbeLibArith = 3;   ///< `probe-lib-arith`: region + pe * stride + offset only, no check
  template <int kMode>
  static __device__ void barrier_probe_lib(uint64_t* mine, uint64_t* theirs, int peer) {
    const device_world& w = shoal::device::facade_world();
    uint64_t* to = theirs;
    if constexpr (kMode == kProbeLibLookup) to = shoal::detail::peer_ptr(w, mine, peer, "probe-lib");
    if constexpr (kMode == kProbeLibTable) {
      const int32_t local = table_local_or_cold(w, peer);
      if (local < 0) shoal::detail::device_fail_pe(w.report_box, "probe-lib", w.my_pe, peer, w.n_pes, w.path_of_pe);
      to = shoal::detail::local_peer_ptr(w, mine, local);
    }
    if constexpr (kMode == kProbeLibArith) to = shoal::detail::local_peer_ptr(w, mine, peer);
    shoal::ptx::fence_acq_rel_sys();
    shoal::detail::count_signal(to, false);
    shoal::detail::count_wait<true>(
        w, mine, [peer] { return peer; }, "probe-lib");
  }
  static __device__ void reset_barrier_words() {
    shoal::detail::device_sync* sync = shoal::detail::local_sync(shoal::device::facade_world());
    for (uint64_t& word : sync->barrier_round) word = 0;
    sync->barrier_epoch = 0;
  }
};

}  // namespace shoal::bench::dev
