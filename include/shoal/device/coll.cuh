// Device team collectives on the explicit handle: team_sync / team_barrier, broadcastmem,
// fcollectmem, alltoallmem, reduce and reducescatter over a strided team (shoal::device_team, by
// value), at any scope (the first argument). Bodies: <shoal/detail/device_coll_*.cuh> (which also
// hold the channel-parallel forms that libshoal's on-stream collectives run with one CTA per channel).
//
// Algorithms (docs/design.md, "Collectives"):
//  - direct: a team barrier, every PE loads/stores the members' symmetric buffers over NVLink, a team
//    barrier. reduce is two-shot: team PE k reduces chunk k (pulling it from every member's source)
//    and stores the result into every member's dest.
//  - LL (low latency, messages up to device_world::coll_ll_bytes): no barrier at all. Every member
//    sends every other member one message per call into shoal's workspace as 16-byte lines of
//    {4 data bytes, 4 flag bytes} x 2, the flag being the pair's message count; an 8-byte half is
//    written and read whole, so a receiver that sees the flag sees the data, with no fence. Slots
//    alternate by the count's parity: a PE writes a peer's slot again two calls later, and by then
//    the peer has read it (it answered the call in between, which it does after reading).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_coll_direct.cuh"
#include "shoal/detail/device_coll_ll.cuh"
#include "shoal/detail/device_coll_ops.cuh"
#include "shoal/detail/device_coll_team.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_team.hpp"
#include "shoal/device_world.hpp"

namespace shoal::device {

// --- reduction operators (the Op of reduce*) ----------------------------------------------------
using detail::and_op;     ///< bitwise and (integers only)
using detail::max_op;     ///< the larger of a and b (a < b ? b : a)
using detail::maxloc_op;  ///< (value, index) double2 pairs: the larger value, ties to the smaller index
using detail::min_op;     ///< the smaller of a and b (b < a ? b : a)
using detail::or_op;      ///< bitwise or (integers only)
using detail::prod_op;    ///< a * b (integers wrap: computed unsigned)
using detail::sum_op;     ///< a + b (integers wrap: computed unsigned)
using detail::xor_op;     ///< bitwise xor (integers only)

/// Bytes of the symmetric scratch buffer that reduce* needs for a team of n_pes PEs reducing nreduce
/// elements of T: one slot of nreduce elements per team PE.
template <class T>
__host__ __device__ constexpr size_t reduce_scratch_bytes(int n_pes, size_t nreduce) {
  return static_cast<size_t>(n_pes < 0 ? 0 : n_pes) * nreduce * sizeof(T);
}

/// The device handle of team `team` (a shoal_team_t) as this PE sees it, from the world's device
/// team table. Checked builds trap when the handle is out of range or names no team of this PE.
__device__ __forceinline__ device_team team_of(const device_world& w, int32_t team) {
  return detail::team_of(w, team, "shoal::device::team_of");
}

// Common contract of the collectives below (the "collective contract"):
//  - t: a team this PE belongs to (shoalx_team_device_handle), the same team on every member, which
//    all call the same collective with the same nbytes / nreduce / root. Members call a team's
//    collectives in the same order. Members are load/store-reachable (one node, P2P) or, in a world
//    with proxy peers (w.proxy_ring != nullptr: another node, SHOAL_DISABLE_P2P=1), any reachable
//    PE; the index of the team-barrier words (node-local index; world PE in a world with proxy
//    peers) is below detail::device_sync::kMaxTeamPeers (checked builds trap otherwise).
//  - Worlds with proxy peers take the proxy path (docs/design.md, "Collectives"): same results and
//    ordering, through the proxy ring and team barriers; there the source of broadcastmem /
//    fcollectmem / alltoallmem / collectmem must be global memory when it is over 256 bytes (checked
//    builds trap otherwise), and the symmetric reduce/reducescatter also act as team barriers.
//  - At most ONE team collective (or team barrier) in flight per PE at a time: a kernel that runs
//    several (e.g. in different blocks) must serialize them. barrier_all/sync_all use other words
//    and may be mixed freely with these.
//  - Scope (first argument): every thread of the scope calls with the same arguments. Each call
//    synchronizes the scope on entry (so the scope's earlier writes to source are seen by all its
//    threads) and on return.
//  - dest (broadcastmem/fcollectmem/alltoallmem) is symmetric, the same address on every member;
//    source is local (global, shared or local memory), must not overlap any member's dest range, and
//    is free to modify again when the call returns (it is only read by this PE, before the barrier).
//  - dest may be written by other members from the moment the first of them enters the call, so no
//    member may still read (or write) its dest from before: separate a read of dest and the next
//    collective into it by a team_sync, or alternate between two dest buffers (a member cannot enter
//    collective i+2 before every member has left collective i).
//  - On return, dest is complete on THIS PE (every member's contribution visible to the whole scope)
//    and every member's accesses before the call happen before this PE's accesses after it (the team
//    barrier is a release/acquire chain at system scope). Other members' dest are complete when
//    their own call returns.
//  - Bounded: each barrier round waits at most w.wait_timeout_ns (report + trap).

/// Team barrier: returns once every member of t has called it; every member's accesses before it
/// happen before every member's accesses after it. Collective contract (no buffers).
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void team_barrier(Scope, const device_world& w, const device_team& t) {
  detail::team_barrier<Scope>(w, t, "shoal::device::team_barrier");
}
/// team_sync: the same synchronization as team_barrier (already a release/acquire chain).
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void team_sync(Scope, const device_world& w, const device_team& t) {
  detail::team_barrier<Scope>(w, t, "shoal::device::team_sync");
}

/// Copies nbytes of `source` on team PE `root` to `dest` on every member (root included; on the
/// root, source may be dest itself). Non-roots' source is not read. Algorithm: the root puts to
/// each member's dest, then a team barrier. Collective contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void broadcastmem(Scope, const device_world& w, const device_team& t, void* dest,
                                             const void* source, size_t nbytes, int root) {
  detail::move_team<Scope, detail::move_kind::broadcast>(w, t, dest, source, nbytes, root,
                                                         "shoal::device::broadcastmem");
}
/// Concatenates every member's nbytes_per_pe of `source`, in team order, into `dest` on every
/// member (dest holds n_pes * nbytes_per_pe bytes; member r's block at r * nbytes_per_pe).
/// Algorithm: each PE puts its block into every member's dest, then a team barrier. Collective
/// contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void fcollectmem(Scope, const device_world& w, const device_team& t, void* dest,
                                            const void* source, size_t nbytes_per_pe) {
  detail::move_team<Scope, detail::move_kind::fcollect>(w, t, dest, source, nbytes_per_pe, 0,
                                                        "shoal::device::fcollectmem");
}
/// Block j (nbytes_per_pe bytes at j * nbytes_per_pe) of `source` on member i lands as block i of
/// `dest` on member j; source and dest hold n_pes blocks. Algorithm: each PE puts block j to member
/// j, then a team barrier. Collective contract.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void alltoallmem(Scope, const device_world& w, const device_team& t, void* dest,
                                            const void* source, size_t nbytes_per_pe) {
  detail::move_team<Scope, detail::move_kind::alltoall>(w, t, dest, source, nbytes_per_pe, 0,
                                                        "shoal::device::alltoallmem");
}
/// collect: member r's nbytes of source (sizes may differ between members) land in every member's
/// dest at the sum of the sizes of team PEs 0..r-1. Collective contract (dest symmetric; source
/// local); needs the world's LL workspace (SHOAL_COLL_LL_BYTES >= 8).
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void collectmem(Scope, const device_world& w, const device_team& t, void* dest,
                                           const void* source, size_t nbytes) {
  detail::collectmem<Scope>(w, t, dest, source, nbytes, "shoal::device::collectmem");
}

/// All-reduce through a scratch buffer: dest[i] = Op over team PEs 0, 1, ..., n-1 (in that order,
/// left to right, the same on every member, so floating-point results are identical on all members)
/// of their source[i], for i < nreduce. Op: sum_op, prod_op, min_op, max_op (any arithmetic T) or
/// and_op, or_op, xor_op (integer T). dest and source are LOCAL (any memory space) and may be the
/// same buffer; `scratch` is a symmetric buffer of reduce_scratch_bytes<T>(t.n_pes, nreduce) bytes
/// (e.g. from shoal_malloc), the same address on every member, that nothing else uses during the
/// call; it is free again on return. Algorithm: each PE puts its source into slot my_pe_in_team of
/// every member's scratch, team barrier, each PE reduces the slots locally into dest (element i by
/// the scope's rank i mod size), team barrier. Collective contract (except that dest is local: it is
/// never written by other members).
template <class Op, SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void reduce(Scope, const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce, void* scratch) {
  detail::reduce<Scope, Op>(w, t, dest, source, nreduce, scratch, "shoal::device::reduce");
}

// Symmetric-buffer reductions (the OpenSHMEM/NVSHMEM form; the facade's shoal_<T>_<op>_reduce):
// dest and source are symmetric, the same address on every member, and may be the same buffer.
// Contract as the collective contract above, except: dest is written only by this PE and by
// members in this call (nothing needs separating a read of dest from the next call), and the call
// does not act as a team barrier for other memory (a small reduction completes without one).
// Algorithm: LL (one message per pair of members into shoal's workspace, no barrier) when
// nreduce * sizeof(T) <= the world's LL size (SHOAL_COLL_LL_BYTES), else two-shot direct. Types:
// integers, float, double, __half, __nv_bfloat16 (and/or/xor: integers only).

/// All-reduce into dest on every member: dest[i] = Op over team PEs 0..n-1, in team order.
template <class Op, SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void reduce(Scope, const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce) {
  detail::reduce_sym<Scope, Op, T, false>(w, t, dest, source, nreduce, "shoal::device::reduce");
}
/// Reduce-scatter: source holds n_pes blocks of nreduce elements; dest (nreduce elements) gets block
/// my_pe_in_team of the all-reduced vector. Same contract as reduce above.
template <class Op, SHOAL_SCOPE_TYPE Scope, class T>
__device__ __forceinline__ void reducescatter(Scope, const device_world& w, const device_team& t, T* dest,
                                              const T* source, size_t nreduce) {
  detail::reduce_sym<Scope, Op, T, true>(w, t, dest, source, nreduce, "shoal::device::reducescatter");
}

/// maxloc all-reduce (NVSHMEM's double2 maxloc): source and dest hold nreduce (value, index) pairs as double2
/// (x the value, y its index); dest[i] on every member gets the pair with the largest value over the members'
/// source[i], on equal values the one with the smaller index. Contract of the symmetric-buffer reductions above;
/// always two-shot direct between two team barriers (also a team barrier for other memory).
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void maxloc_reduce(Scope, const device_world& w, const device_team& t, double2* dest,
                                              const double2* source, size_t nreduce) {
  detail::maxloc_reduce_sym<Scope>(w, t, dest, source, nreduce, "shoal::device::maxloc_reduce");
}

}  // namespace shoal::device
