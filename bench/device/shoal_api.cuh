// The API adapter of bench/device/kernels.cuh and driver.cuh for shoal: the OpenSHMEM/NVSHMEM-style
// facade (shoal_* / shoalx_*, header-only, no -rdc), i.e. the calls an NVSHMEM program renamed to
// shoal makes; `tma` is the same with block puts through shoal's TMA bulk-copy ring.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/device/facade.cuh"
#include "shoal/shoal.h"

namespace shoal::bench::dev {

/// Shared-memory workspace of the TMA block put (4 stages of 16 KiB, the library's default).
inline constexpr int kTmaStages = 4;
inline constexpr int kTmaStageBytes = 16384;

struct shoal_tma_api;

struct shoal_api {
  static constexpr const char* kName = "shoal";
  static constexpr const char* kTmaName = "shoal-tma";
  static constexpr size_t kBlockSmemBytes = 0;
  using tma = shoal_tma_api;

  // --- host (the C facade's default world) ---
  static void* host_malloc(size_t num_bytes) { return shoal_malloc(num_bytes); }
  static void* host_calloc(size_t num_bytes) { return shoal_calloc(1, num_bytes); }
  static void host_free(void* p) { shoal_free(p); }
  static void host_barrier() { shoal_barrier_all(); }
  static void* host_ptr(void* p, int pe) { return shoal_ptr(p, pe); }
  static int my_pe() { return shoal_my_pe(); }
  static int n_pes() { return shoal_n_pes(); }

  // --- device ---
  static __device__ void putmem(void* d, const void* s, size_t n, int pe) { shoal_putmem(d, s, n, pe); }
  static __device__ void putmem_nbi(void* d, const void* s, size_t n, int pe) { shoal_putmem_nbi(d, s, n, pe); }
  static __device__ void putmem_nbi_warp(void* d, const void* s, size_t n, int pe) {
    shoalx_putmem_nbi_warp(d, s, n, pe);
  }
  static __device__ void putmem_nbi_block(void* d, const void* s, size_t n, int pe) {
    shoalx_putmem_nbi_block(d, s, n, pe);
  }
  static __device__ void getmem_nbi(void* d, const void* s, size_t n, int pe) { shoal_getmem_nbi(d, s, n, pe); }
  static __device__ void getmem_nbi_warp(void* d, const void* s, size_t n, int pe) {
    shoalx_getmem_nbi_warp(d, s, n, pe);
  }
  static __device__ void getmem_nbi_block(void* d, const void* s, size_t n, int pe) {
    shoalx_getmem_nbi_block(d, s, n, pe);
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

/// shoal with block puts through the TMA ring (shoal::device::putmem_block_tma on the facade's
/// world); the workspace is the kernel's dynamic shared memory (kBlockSmemBytes).
struct shoal_tma_api : shoal_api {
  static constexpr const char* kName = "shoal-tma";
  static constexpr size_t kBlockSmemBytes = shoal::device::tma_workspace_bytes<kTmaStages, kTmaStageBytes>;

  static __device__ void putmem_nbi_block(void* d, const void* s, size_t n, int pe) {
    extern __shared__ __align__(16) unsigned char tma_smem[];
    shoal::device::putmem_block_tma<kTmaStages, kTmaStageBytes>(shoal_detail_world_c, d, s, n, pe, tma_smem);
  }
};

}  // namespace shoal::bench::dev
