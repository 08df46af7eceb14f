// Cooperation scopes: which threads call a device API operation together. Every scoped call takes
// the scope object as its first argument (shoal::device::putmem(shoal::block, w, dest, source,
// nbytes, pe)); the threads of the scope call with the same arguments and share the work.
//   shoal::thread    the calling thread alone
//   shoal::warp      one full warp (all 32 lanes, converged)
//   shoal::block     one thread block (every thread; the call contains __syncthreads())
//   shoal::warps<N>  N consecutive warps of the block, the group aligned to N (warps k*N .. k*N+N-1);
//                    N in 1, 2, 4, 8, 16, 32. Synchronizes with the named barrier 1 + k (bar.sync
//                    1 + k, N*32), so N >= 2 uses barrier ids 1..15: at most 15 groups per block
//                    (warps<2>: blocks of up to 30 warps), and the kernel must not use those ids
//                    itself while a group call runs. warps<1> is shoal::warp's work (__syncwarp).
// Each scope type has rank() (this thread's index in the scope), size() and sync() (a barrier of
// the scope with __syncthreads-like memory ordering among its threads).
#pragma once

#include <cstdint>
#include <type_traits>

#include "shoal/device/ptx.cuh"

namespace shoal {

/// One thread: the calling thread alone does the whole operation.
struct thread_scope {
  static constexpr bool kWide = false;  ///< may span more than one warp
  static __device__ __forceinline__ uint32_t rank() { return 0; }
  static __device__ __forceinline__ uint32_t size() { return 1; }
  static __device__ __forceinline__ void sync() {}
};
/// One full warp (all 32 lanes call, converged, same arguments).
struct warp_scope {
  static constexpr bool kWide = false;
  static __device__ __forceinline__ uint32_t rank() { return ptx::lane_id(); }
  static __device__ __forceinline__ uint32_t size() { return 32; }
  static __device__ __forceinline__ void sync() { __syncwarp(); }
};
/// One thread block (every thread calls, same arguments; contains __syncthreads()).
struct block_scope {
  static constexpr bool kWide = true;
  static __device__ __forceinline__ uint32_t rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  static __device__ __forceinline__ uint32_t size() { return blockDim.x * blockDim.y * blockDim.z; }
  static __device__ __forceinline__ void sync() { __syncthreads(); }
};
/// N consecutive warps of the block, aligned to N (every thread of them calls, same arguments).
template <int N>
struct warps_scope {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16 || N == 32, "shoal::warps<N>: N = 1, 2, 4 ... 32");
  static constexpr bool kWide = N > 1;
  static __device__ __forceinline__ uint32_t rank() { return block_scope::rank() % (N * 32u); }
  static __device__ __forceinline__ uint32_t size() { return N * 32u; }
  /// Named barrier 1 + group (group = warp index / N) over the group's N*32 threads.
  static __device__ __forceinline__ void sync() {
    if constexpr (N == 1) {
      __syncwarp();
    } else {
      ptx::bar_sync(1u + block_scope::rank() / (N * 32u), N * 32u);
    }
  }
};

inline constexpr thread_scope thread{};
inline constexpr warp_scope warp{};
inline constexpr block_scope block{};
template <int N>
inline constexpr warps_scope<N> warps{};

/// True for shoal's scope types (the first argument of a scoped device call).
template <class S>
inline constexpr bool is_scope_v = false;
template <>
inline constexpr bool is_scope_v<thread_scope> = true;
template <>
inline constexpr bool is_scope_v<warp_scope> = true;
template <>
inline constexpr bool is_scope_v<block_scope> = true;
template <int N>
inline constexpr bool is_scope_v<warps_scope<N>> = true;

/// A scope type (shoal::thread_scope, warp_scope, block_scope, warps_scope<N>).
#if __cplusplus >= 202002L
template <class S>
concept cooperation_scope = is_scope_v<std::remove_cvref_t<S>>;
/// The kind of a template's scope parameter: the concept in C++20; any type in C++17 (the device API also builds as
/// C++17, for NVSHMEM programs compiled with nvcc's default standard through the compat headers).
#define SHOAL_SCOPE_TYPE cooperation_scope
#else
#define SHOAL_SCOPE_TYPE class
#endif

}  // namespace shoal
