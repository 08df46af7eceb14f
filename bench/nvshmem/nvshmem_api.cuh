// The API adapter of bench/common/driver.cuh and the family kernels for NVSHMEM's public API: every
// measured call is the NVSHMEM call of the same name. Needs nvcc -rdc=true and libnvshmem_device.a,
// and the version macros bench/nvshmem/CMakeLists.txt defines for the NVSHMEM it builds against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <nvshmem.h>
#include <nvshmemx.h>

#include "shoal/device/scope.cuh"

#if !defined(SHOAL_NVSHMEM_IMPL) || !defined(SHOAL_NVSHMEM_LIB_DIR)
#error "bench/nvshmem/CMakeLists.txt defines SHOAL_NVSHMEM_IMPL, SHOAL_NVSHMEM_LIB_DIR and SHOAL_NVSHMEM_VERSION_*"
#endif
static_assert(SHOAL_NVSHMEM_VERSION_MAJOR == NVSHMEM_VENDOR_MAJOR_VERSION &&
                  SHOAL_NVSHMEM_VERSION_MINOR == NVSHMEM_VENDOR_MINOR_VERSION &&
                  SHOAL_NVSHMEM_VERSION_PATCH == NVSHMEM_VENDOR_PATCH_VERSION,
              "CMake read the version of another NVSHMEM than the one whose headers are included");

namespace shoal::bench::dev {

/// The rows' impl name: "nvshmem-<major>.<minor>.<patch>" of the headers (and, checked at start, of the
/// host library loaded), so that CSVs of two NVSHMEM releases can be compared side by side.
inline constexpr const char* kNvshmemImpl = SHOAL_NVSHMEM_IMPL;

struct nvshmem_api {
  static constexpr const char* kName = kNvshmemImpl;
  static constexpr size_t kBlockSmemBytes = 0;

  // --- host ---
  static void* host_malloc(size_t nbytes) { return nvshmem_malloc(nbytes); }
  static void* host_calloc(size_t nbytes) { return nvshmem_calloc(1, nbytes); }
  static void host_free(void* p) { nvshmem_free(p); }
  static void host_barrier() { nvshmem_barrier_all(); }
  static void* host_ptr(void* p, int pe) { return nvshmem_ptr(p, pe); }
  static int my_pe() { return nvshmem_my_pe(); }
  static int n_pes() { return nvshmem_n_pes(); }

  // --- device ---
  static __device__ void putmem(void* d, const void* s, size_t n, int pe) { nvshmem_putmem(d, s, n, pe); }
  /// The _nbi put/get of scope S (shoal's scope types, as bench/rma/rma_kernels.cuh runs them).
  template <class S>
  static __device__ void putmem_nbi(S, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::thread_scope>) {
      nvshmem_putmem_nbi(d, s, n, pe);
    } else if constexpr (std::is_same_v<S, shoal::warp_scope>) {
      nvshmemx_putmem_nbi_warp(d, s, n, pe);
    } else {
      static_assert(std::is_same_v<S, shoal::block_scope>);
      nvshmemx_putmem_nbi_block(d, s, n, pe);
    }
  }
  template <class S>
  static __device__ void getmem_nbi(S, void* d, const void* s, size_t n, int pe) {
    if constexpr (std::is_same_v<S, shoal::thread_scope>) {
      nvshmem_getmem_nbi(d, s, n, pe);
    } else if constexpr (std::is_same_v<S, shoal::warp_scope>) {
      nvshmemx_getmem_nbi_warp(d, s, n, pe);
    } else {
      static_assert(std::is_same_v<S, shoal::block_scope>);
      nvshmemx_getmem_nbi_block(d, s, n, pe);
    }
  }
  static __device__ void quiet() { nvshmem_quiet(); }
  static __device__ void fence() { nvshmem_fence(); }
  static __device__ void uint64_p(uint64_t* d, uint64_t v, int pe) { nvshmem_uint64_p(d, v, pe); }
  static __device__ void putmem_signal_nbi(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v, int pe) {
    nvshmem_putmem_signal_nbi(d, s, n, sig, v, NVSHMEM_SIGNAL_SET, pe);
  }
  static __device__ void int_p(int* d, int v, int pe) { nvshmem_int_p(d, v, pe); }
  static __device__ void int_wait_until_ge(int* ivar, int v) { nvshmem_int_wait_until(ivar, NVSHMEM_CMP_GE, v); }
  static __device__ void putmem_signal_block(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v, int pe) {
    nvshmemx_putmem_signal_block(d, s, n, sig, v, NVSHMEM_SIGNAL_SET, pe);
  }
  static __device__ void signal_wait_until_ge(uint64_t* sig, uint64_t v) {
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
  }
  static __device__ uint64_t uint64_atomic_fetch_add(uint64_t* d, uint64_t v, int pe) {
    return nvshmem_uint64_atomic_fetch_add(d, v, pe);
  }
  static __device__ void barrier_all() { nvshmem_barrier_all(); }
  static __device__ void sync_all_block() { nvshmemx_sync_all_block(); }
};

}  // namespace shoal::bench::dev
