// shoal's device API on an explicit handle: everything a kernel needs to reach the symmetric heap,
// given the world's device_world by value (no global state; several worlds per process; NVRTC-
// friendly). Header-only, no -rdc. The OpenSHMEM-style global facade is <shoal/device/facade.cuh>.
//
//   __global__ void k(shoal::device_world w, int* dst, const int* src, size_t n) {
//     shoal::device::put(shoal::block, w, dst, src, n, (w.my_pe + 1) % w.n_pes);
//   }
//
// Scoped calls take the cooperation scope first (shoal::thread, shoal::warp, shoal::block,
// shoal::warps<N>: <shoal/device/scope.cuh>). Public headers declare each call with its contract;
// the bodies live in <shoal/detail/device_*.cuh>.
#pragma once

#include "shoal/device/amo.cuh"
#include "shoal/device/coll.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/rma.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device/signal.cuh"
#include "shoal/device/sync.cuh"
#include "shoal/device/team.cuh"
#include "shoal/device_world.hpp"

namespace shoal::device {

/// This PE's number in w, in [0, n_pes).
__device__ __forceinline__ int my_pe(const device_world& w) { return w.my_pe; }
/// The number of PEs in w.
__device__ __forceinline__ int n_pes(const device_world& w) { return w.n_pes; }

}  // namespace shoal::device
