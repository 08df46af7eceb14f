#include "coll/coll_kernels.hpp"
#include "coll/coll_reduce_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "shoal/device/coll.cuh"

namespace shoal::detail::coll {

const char* to_string(algo a) {
  switch (a) {
    case algo::ll:
      return "ll";
    case algo::direct:
      return "direct";
    case algo::ce:
      return "ce";
    case algo::proxy:
      return "proxy";
  }
  return "?";
}

namespace {

// The names device-side reports print (kernel arguments cannot carry host strings).
__device__ const char kSyncName[] = "shoalx_team_sync_on_stream";
__device__ const char kBroadcastName[] = "shoalx_broadcast_on_stream";
__device__ const char kFcollectName[] = "shoalx_fcollect_on_stream";
__device__ const char kAlltoallName[] = "shoalx_alltoall_on_stream";
__device__ const char kCollectName[] = "shoalx_collectmem_on_stream";

__global__ void __launch_bounds__(32) team_sync_kernel(device_world w, device_team t) {
  if (threadIdx.x == 0) team_barrier_thread(w, t, kSyncName, 0);
}

__global__ void __launch_bounds__(kMaxThreads, 1)
    collect_kernel(device_world w, device_team t, void* dest, const void* source, size_t bytes) {
  collectmem<block_scope>(w, t, dest, source, bytes, kCollectName);
}

template <move_kind kKind>
__device__ __forceinline__ const char* move_name() {
  if constexpr (kKind == move_kind::broadcast) return kBroadcastName;
  if constexpr (kKind == move_kind::fcollect) return kFcollectName;
  return kAlltoallName;
}

template <move_kind kKind>
__global__ void __launch_bounds__(kMaxThreads, 1)
    move_kernel(device_world w, device_team t, void* dest, const void* source, size_t bytes, int root, int ll) {
  const char* call = move_name<kKind>();
  if (ll) {
    move_ll<block_scope, kKind>(w, t, dest, source, bytes, root, call);
    return;
  }
  team_barrier<block_scope>(w, t, call, blockIdx.x);  // every source ready, every dest free
  move_direct<block_scope, kKind, true>(w, t, dest, source, bytes, root, blockIdx.x, gridDim.x, call);
  team_barrier<block_scope>(w, t, call, blockIdx.x);  // this channel's share is in every dest
}

/// The proxy algorithm (teams with proxy members): the device API's proxy paths, called directly (this unit is
/// built with SHOAL_DEVICE_COLL_PROXY=0, which only leaves them out of the dispatch of the kernels above).
template <move_kind kKind>
__global__ void __launch_bounds__(kMaxThreads, 1)
    move_proxy_kernel(device_world w, device_team t, void* dest, const void* source, size_t bytes, int root) {
  check_team(w, t, move_name<kKind>());
  move_proxy<block_scope, kKind>(w, t, dest, source, bytes, root, move_name<kKind>());
}

__global__ void __launch_bounds__(kMaxThreads, 1)
    collect_proxy_kernel(device_world w, device_team t, void* dest, const void* source, size_t bytes) {
  check_team(w, t, kCollectName);
  collect_proxy<block_scope>(w, t, dest, source, bytes, kCollectName);
}

template <move_kind kKind>
void launch_move_as(const device_world& w, const device_team& t, void* dest, const void* source, size_t bytes, int root,
                    const launch_config& cfg) {
  if (cfg.how == algo::proxy) {
    move_proxy_kernel<kKind><<<1, cfg.threads, 0, cfg.stream>>>(w, t, dest, source, bytes, root);
    return;
  }
  const int ll = cfg.how == algo::ll;
  move_kernel<kKind><<<dim3(ll ? 1 : cfg.channels), cfg.threads, 0, cfg.stream>>>(w, t, dest, source, bytes, root, ll);
}

}  // namespace

cudaError_t launch_team_sync(const device_world& w, const device_team& t, cudaStream_t stream) {
  team_sync_kernel<<<1, 32, 0, stream>>>(w, t);
  return cudaGetLastError();
}

cudaError_t launch_collect(const device_world& w, const device_team& t, void* dest, const void* source, size_t bytes,
                           const launch_config& cfg) {
  if (cfg.how == algo::proxy)
    collect_proxy_kernel<<<1, cfg.threads, 0, cfg.stream>>>(w, t, dest, source, bytes);
  else
    collect_kernel<<<1, cfg.threads, 0, cfg.stream>>>(w, t, dest, source, bytes);
  return cudaGetLastError();
}

cudaError_t launch_move(const device_world& w, const device_team& t, move kind, void* dest, const void* source,
                        size_t bytes, int root, const launch_config& cfg) {
  switch (kind) {
    case move::broadcast:
      launch_move_as<move_kind::broadcast>(w, t, dest, source, bytes, root, cfg);
      break;
    case move::fcollect:
      launch_move_as<move_kind::fcollect>(w, t, dest, source, bytes, root, cfg);
      break;
    case move::alltoall:
      launch_move_as<move_kind::alltoall>(w, t, dest, source, bytes, root, cfg);
      break;
  }
  return cudaGetLastError();
}

cudaError_t launch_reduce(const device_world& w, const device_team& t, bool scatter, scalar type, reduce_op op,
                          void* dest, const void* source, size_t nreduce, const launch_config& cfg) {
  switch (type.kind) {
    case scalar_kind::signed_int:
      switch (type.bytes) {
        case 1:
          return reduce_typed<int8_t>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 2:
          return reduce_typed<int16_t>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 4:
          return reduce_typed<int32_t>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 8:
          return reduce_typed<int64_t>(w, t, scatter, op, dest, source, nreduce, cfg);
      }
      break;
    case scalar_kind::unsigned_int:
      switch (type.bytes) {
        case 1:
          return reduce_typed<uint8_t>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 2:
          return reduce_typed<uint16_t>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 4:
          return reduce_typed<uint32_t>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 8:
          return reduce_typed<uint64_t>(w, t, scatter, op, dest, source, nreduce, cfg);
      }
      break;
    case scalar_kind::floating:
      switch (type.bytes) {
        case 2:
          return reduce_typed<__half>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 4:
          return reduce_typed<float>(w, t, scatter, op, dest, source, nreduce, cfg);
        case 8:
          return reduce_typed<double>(w, t, scatter, op, dest, source, nreduce, cfg);
      }
      break;
    case scalar_kind::bfloat:
      if (type.bytes == 2) return reduce_typed<__nv_bfloat16>(w, t, scatter, op, dest, source, nreduce, cfg);
      break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace shoal::detail::coll
