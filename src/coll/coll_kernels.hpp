// Kernels behind the on-stream team collectives (coll_stream.cc): the device collectives of
// <shoal/device/coll.cuh> run by one CTA per channel on the world's and team's handles. Plain C++
// interface (no fmt through nvcc); errors come back as cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "coll/coll.hpp"
#include "shoal/device_team.hpp"
#include "shoal/device_world.hpp"
#include "transport/scalar.hpp"

namespace shoal::detail::coll {

/// ll: one CTA, LL messages through the workspace, no barrier. direct: `channels` CTAs, a team
/// barrier per channel before and after the loads/stores. ce (moves only): a team barrier kernel,
/// the copy engines (cudaMemcpyAsync over the peer mappings, on side streams forked from and joined
/// back to the caller's), a team barrier kernel. proxy (teams with proxy members): one CTA runs the
/// device API's proxy path (move_proxy, reduce_sym_proxy, collect_proxy: routed puts through the
/// proxy ring to proxy members, stores to the others, team barriers on channel 0).
enum class algo : int { ll = 0, direct = 1, ce = 2, proxy = 3 };
const char* to_string(algo a);

enum class move : int { broadcast = 0, fcollect = 1, alltoall = 2 };

/// The most threads an on-stream collective kernel is launched with; every such kernel carries it as its
/// __launch_bounds__, so the compiler keeps it within 65536 / kMaxThreads = 128 registers and a launch cannot fail
/// for want of registers when the device API's inlined paths grow (at 134 registers a 512-thread launch fails).
inline constexpr uint32_t kMaxThreads = 512;

struct launch_config {
  algo how = algo::direct;
  uint32_t channels = 1;  // CTAs (direct); 1 for ll
  uint32_t threads = kMaxThreads;
  cudaStream_t stream = nullptr;
};

/// quiet + team barrier (one CTA, channel 0).
cudaError_t launch_team_sync(const device_world& w, const device_team& t, cudaStream_t stream);
/// broadcast (root = team PE), fcollect, alltoall of `bytes` per PE block.
cudaError_t launch_move(const device_world& w, const device_team& t, move kind, void* dest, const void* source,
                        size_t bytes, int root, const launch_config& cfg);
/// collect: members' sizes by LL, then one CTA pushes this PE's block at its offset (device collectmem).
cudaError_t launch_collect(const device_world& w, const device_team& t, void* dest, const void* source, size_t bytes,
                           const launch_config& cfg);
/// reduce (scatter false) or reducescatter (true) of nreduce elements of `type` with `op`.
/// cudaErrorInvalidValue for a type/op pair that has no kernel (and/or/xor on floating types).
cudaError_t launch_reduce(const device_world& w, const device_team& t, bool scatter, scalar type, reduce_op op,
                          void* dest, const void* source, size_t nreduce, const launch_config& cfg);

}  // namespace shoal::detail::coll
