// The reduce kernels of the on-stream collectives, as templates over the element type: included by
// the coll_reduce_*.cu units only, each of which instantiates reduce_typed<T> for a few types (one
// unit for all 144 kernels took minutes to compile). coll_kernels.cu calls them through
// coll_reduce_kernels.hpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "coll/coll_reduce_kernels.hpp"
#include "shoal/device/coll.cuh"

namespace shoal::detail::coll {

namespace {

// The names device-side reports print (kernel arguments cannot carry host strings).
__device__ const char kReduceName[] = "shoalx_reduce_on_stream";
__device__ const char kReducescatterName[] = "shoalx_reducescatter_on_stream";

template <class Op, class T, bool kScatter>
__global__ void __launch_bounds__(kMaxThreads, 1)
    reduce_kernel(device_world w, device_team t, T* dest, const T* source, size_t nreduce, int ll) {
  const char* call = kScatter ? kReducescatterName : kReduceName;
  if (ll) {
    reduce_ll<block_scope, Op, T, kScatter>(w, t, dest, source, nreduce, call);
    return;
  }
  team_barrier<block_scope>(w, t, call, blockIdx.x);
  reduce_direct<block_scope, Op, T, kScatter, 4>(w, t, dest, source, nreduce, blockIdx.x, gridDim.x, call);
  team_barrier<block_scope>(w, t, call, blockIdx.x);
}

/// The proxy algorithm (teams with proxy members): the device API's proxy path, called directly (these units are
/// built with SHOAL_DEVICE_COLL_PROXY=0, which only leaves it out of reduce_kernel's dispatch).
template <class Op, class T, bool kScatter>
__global__ void __launch_bounds__(kMaxThreads, 1)
    reduce_proxy_kernel(device_world w, device_team t, T* dest, const T* source, size_t nreduce) {
  const char* call = kScatter ? kReducescatterName : kReduceName;
  check_team(w, t, call);
  reduce_sym_proxy<block_scope, Op, T, kScatter>(w, t, dest, source, nreduce, call);
}

template <class Op, class T>
cudaError_t reduce_as(const device_world& w, const device_team& t, bool scatter, void* dest, const void* source,
                      size_t nreduce, const launch_config& cfg) {
  if (cfg.how == algo::proxy) {
    auto* d = static_cast<T*>(dest);
    const auto* s = static_cast<const T*>(source);
    if (scatter)
      reduce_proxy_kernel<Op, T, true><<<1, cfg.threads, 0, cfg.stream>>>(w, t, d, s, nreduce);
    else
      reduce_proxy_kernel<Op, T, false><<<1, cfg.threads, 0, cfg.stream>>>(w, t, d, s, nreduce);
    return cudaGetLastError();
  }
  const int ll = cfg.how == algo::ll;
  const dim3 grid(ll ? 1 : cfg.channels);
  if (scatter) {
    reduce_kernel<Op, T, true>
        <<<grid, cfg.threads, 0, cfg.stream>>>(w, t, static_cast<T*>(dest), static_cast<const T*>(source), nreduce, ll);
  } else {
    reduce_kernel<Op, T, false>
        <<<grid, cfg.threads, 0, cfg.stream>>>(w, t, static_cast<T*>(dest), static_cast<const T*>(source), nreduce, ll);
  }
  return cudaGetLastError();
}

}  // namespace

template <class T>
cudaError_t reduce_typed(const device_world& w, const device_team& t, bool scatter, reduce_op op, void* dest,
                         const void* source, size_t nreduce, const launch_config& cfg) {
  switch (op) {
    case reduce_op::min_:
      return reduce_as<device::min_op, T>(w, t, scatter, dest, source, nreduce, cfg);
    case reduce_op::max_:
      return reduce_as<device::max_op, T>(w, t, scatter, dest, source, nreduce, cfg);
    case reduce_op::sum_:
      return reduce_as<device::sum_op, T>(w, t, scatter, dest, source, nreduce, cfg);
    case reduce_op::prod_:
      return reduce_as<device::prod_op, T>(w, t, scatter, dest, source, nreduce, cfg);
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case reduce_op::and_:
        return reduce_as<device::and_op, T>(w, t, scatter, dest, source, nreduce, cfg);
      case reduce_op::or_:
        return reduce_as<device::or_op, T>(w, t, scatter, dest, source, nreduce, cfg);
      case reduce_op::xor_:
        return reduce_as<device::xor_op, T>(w, t, scatter, dest, source, nreduce, cfg);
      default:
        break;
    }
  }
  return cudaErrorInvalidValue;
}

}  // namespace shoal::detail::coll
