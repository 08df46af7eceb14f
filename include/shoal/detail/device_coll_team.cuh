// Bodies of the device team collectives, part 1 (<shoal/device/coll.cuh>): team barrier words and
// channels, the team dissemination barrier, the scratch-buffer reduce, and the proxy path's common
// parts (worlds with proxy peers). Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/coll_ws.hpp"
#include "shoal/detail/device_coll_ops.cuh"
#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_copy.cuh"
#include "shoal/detail/device_proxy.cuh"
#include "shoal/detail/device_rma.cuh"
#include "shoal/detail/device_sync.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_team.hpp"
#include "shoal/device_world.hpp"

namespace shoal::detail {

/// The team-barrier word index of world PE `pe` on channel `chan`: its node-local index, or on channel
/// 0 (device_sync's words) of a world with proxy peers (device_world::proxy_ring) its world PE
/// number, which every PE of such a world uses alike; the workspace's channels (on-stream
/// collectives, no proxy route) keep node-local indices. Checked builds trap when the PE is
/// unreachable or the index is beyond device_sync::kMaxTeamPeers.
__device__ __forceinline__ int team_word(const device_world& w, int pe, uint32_t chan, const char* call) {
  const int32_t local = chan == 0 && w.proxy_ring != nullptr ? pe : peer_local(w, pe, call);
#if SHOAL_DEVICE_CHECKS
  if (local >= device_sync::kMaxTeamPeers)
    device_fail_arg(w.report_box, call, w.my_pe, "node-local PE index (max 127)", local);
#endif
  return local;
}

/// Checked builds: `t` must be a team this PE belongs to (as shoalx_team_device_handle gives it).
__device__ __forceinline__ void check_team(const device_world& w, const device_team& t, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (t.n_pes < 1 || t.my_pe_in_team < 0 || t.my_pe_in_team >= t.n_pes || t.world_pe(t.my_pe_in_team) != w.my_pe) {
    device_fail_arg(w.report_box, call, w.my_pe, "team (this PE is not its member my_pe_in_team)", t.my_pe_in_team);
  }
#else
  (void)w, (void)t, (void)call;
#endif
}

/// The per-pair signal counts of one channel's team barrier: channel 0 is device_sync's team words
/// (the device API's collectives), channels 1.. live in the collective workspace (on-stream
/// collectives run one CTA per channel, each with its own barrier).
struct channel_words {
  uint64_t* arrived;   // word k: written by node-local PE k (its sent count for this PE)
  uint64_t* sent;      // word k: signals this PE sent to node-local PE k on this channel (private)
  uint64_t* consumed;  // word k: signals from node-local PE k this PE has consumed (private)
};
__device__ __forceinline__ channel_words channel_of(const device_world& w, uint32_t chan) {
  if (chan == 0) {
    device_sync* sync = local_sync(w);
    return {sync->team_arrived, sync->team_sent, sync->team_consumed};
  }
  auto* words = reinterpret_cast<uint64_t*>(w.heap_base + w.coll_offset + coll_ws::channel_offset(w.n_local, chan));
  return {words, words + w.n_local, words + 2 * w.n_local};
}

/// The dissemination barrier over a team, run by ONE thread per PE (per channel). Round r (step 2^r
/// < n): signal team PE (me + step) % n, then wait for the signal of team PE (me - step) % n. A
/// signal is a count per pair of PEs (channel_words, indexed by node-local PE), so the words need no
/// per-team state: members run a team's collectives in the same order (with the same channel count),
/// so the n-th signal from a peer on a channel is the one this PE awaits n-th there. Without
/// kFlagBarrierEpochs a signal is red.add(1) on the peer's word and the wait consumes one from this
/// PE's (count_signal, count_wait: no private count is loaded first). With it, the sender stores its
/// running count of signals to that peer (a p through the ring to a proxy peer) and this PE waits for
/// its word to reach its own count of signals consumed from the sender (within one barrier a PE then
/// signals each peer at most once: the steps differ mod n). Ordering as barrier_thread: a
/// fence.acq_rel.sys releases this PE's earlier accesses before round 0's signal, later rounds'
/// signals are releases (passing on what earlier rounds acquired), waits poll ld.acquire.sys; so
/// every member's accesses before the barrier happen before every member's accesses after it.
__device__ __forceinline__ void team_barrier_thread(const device_world& w, const device_team& t, const char* call,
                                                    uint32_t chan = 0) {
  // Nothing branches ahead of the fence, as in barrier_thread (where this order is the faster one): the team's
  // checks and lookups come after it.
  ptx::fence_acq_rel_sys();  // release: this PE's earlier puts/stores before its first signal
  check_team(w, t, call);
  const channel_words cw = channel_of(w, chan);
  if (w.proxy_ring != nullptr) proxy_quiet(w, call);  // and its proxy operations complete
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  if (n <= 1) return;
  const int my_word = team_word(w, w.my_pe, chan, call);
  const bool counts = (w.flags & kFlagBarrierEpochs) == 0;
  for (int r = 0, step = 1; step < n; ++r, step <<= 1) {
    const int to = t.world_pe(ring_after(me, step, n));
    const int from = t.world_pe(ring_before(me, step, n));
    const int from_word = team_word(w, from, chan, call);
    uint64_t* mine = &cw.arrived[from_word];
    if (counts) {
      // Round 0: released by the fence above; later rounds pass on what earlier rounds acquired.
      count_signal(peer_ptr(w, &cw.arrived[my_word], to, call), r != 0);
      count_wait(
          w, mine, [&] { return from; }, call);
      continue;
    }
    const int to_word = team_word(w, to, chan, call);
    const uint64_t sent = cw.sent[to_word] + 1;
    cw.sent[to_word] = sent;
    barrier_flag(w, &cw.arrived[my_word], peer_route(w, to, call), to, sent, r != 0, call);
    const uint64_t want = cw.consumed[from_word] + 1;
    cw.consumed[from_word] = want;
    wait_clock clock(w.wait_timeout_ns);
    for (;;) {
      const uint64_t seen = ptx::ld_acquire_sys(mine);
      if (seen >= want) break;
      if (clock.expired())
        wait_timed_out(w.report_box, call, w.my_pe, clock.elapsed_ns(), mine, from, SHOAL_CMP_GE, want, seen);
    }
  }
}

/// team_barrier_thread by rank 0 of the scope, with the scope's barrier before and after.
template <class Scope>
__device__ __forceinline__ void team_barrier(const device_world& w, const device_team& t, const char* call,
                                             uint32_t chan = 0) {
  Scope::sync();
  if (Scope::rank() == 0) team_barrier_thread(w, t, call, chan);
  Scope::sync();
}

/// Team PE `k`-th after this one (k = 1 .. n): spreads the pushes of different PEs over different
/// targets first; k = n is this PE itself.
__device__ __forceinline__ int team_target(const device_team& t, int k) {
  return t.world_pe((t.my_pe_in_team + k) % t.n_pes);
}

// --- the proxy path --------------------------------------------------------------------------------
// Worlds with proxy peers (device_world::proxy_ring != nullptr) run every team collective through
// one cold, not inlined function per call, chosen once on entry: the members' data moves by the
// routed device RMA (putmem: NVLink stores for load/store members, ring descriptors for proxy ones),
// completed and published by the team barrier (which quiets the ring first). The load/store paths
// of worlds without a ring are untouched.

/// Copies of the world and team handles, made inside the branch that calls a proxy-path function:
/// passing the caller's own (often a kernel parameter) by reference to a function that is not
/// inlined would make the kernel copy it to local memory on entry, on every call, proxy or not.
struct cold_args {
  device_world w;
  device_team t;
};

/// This PE's proxy slots in the collective workspace (coll_ws: one slot per team PE, of
/// coll_ws::proxy_slot_bytes(w.n_pes)); checked builds trap when the world has none.
__device__ __forceinline__ char* proxy_slots(const device_world& w, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (w.coll_offset == 0)
    device_fail_arg(w.report_box, call, w.my_pe, "world (no collective workspace for the proxy path)", 0);
#else
  (void)call;
#endif
  return w.heap_base + w.coll_offset + coll_ws::proxy_slots_offset(w.n_local, w.coll_channels, w.coll_ll_bytes);
}

/// The proxy path's copy (any memory spaces): 16-byte vectors when both ends allow them, one per
/// thread per step, then bytes. Not the unrolled copy of the load/store paths (device_copy.cuh): its
/// loads in flight cost registers that every kernel containing the proxy path would pay.
template <class Scope>
__device__ __forceinline__ void cold_copy(void* dst, const void* src, size_t nbytes) {
  char* to = static_cast<char*>(dst);
  const char* from = static_cast<const char*>(src);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from)) & 15) == 0) {
    done = nbytes / 16 * 16;
#pragma unroll 1
    for (size_t v = Scope::rank(); v < nbytes / 16; v += Scope::size())
      reinterpret_cast<uint4*>(to)[v] = reinterpret_cast<const uint4*>(from)[v];
  }
#pragma unroll 1
  for (size_t i = done + Scope::rank(); i < nbytes; i += Scope::size()) to[i] = from[i];
}

/// The proxy path's routed putmem_nbi: a ring descriptor for a proxy member (device_proxy.cuh; the
/// source must then be global memory or at most kProxyInlineBytes), cold_copy into a load/store
/// member's mapped heap, then a scope sync.
template <class Scope>
__device__ __forceinline__ void cold_put(const device_world& w, void* dest, const void* source, size_t nbytes, int pe,
                                         const char* call) {
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_rma<Scope>(w, proxy_op::put, true, dest, source, nbytes, pe, call);
  cold_copy<Scope>(local_peer_ptr(w, dest, local), source, nbytes);
  Scope::sync();
}

/// The scratch reduce with proxy members: source is staged in this PE's own slot of its scratch
/// (symmetric, so global memory the proxy can read: source itself may be in any memory space), then
/// put (routed, _nbi) into the same slot of every other member's scratch; team barrier (the ring is
/// quiet and every slot filled), local fold in team order, team barrier (every member has read its
/// scratch).
template <class Scope, class Op, class T>
__device__ __noinline__ void reduce_scratch_proxy(const device_world& w, const device_team& t, T* dest, const T* source,
                                                  size_t nreduce, void* scratch, const char* call) {
  T* slots = static_cast<T*>(scratch);
  const int n = t.n_pes;
  if (nreduce > 0) {
    T* my_slot = slots + static_cast<size_t>(t.my_pe_in_team) * nreduce;
    if (my_slot != source) cold_copy<Scope>(my_slot, source, nreduce * sizeof(T));
    Scope::sync();
    for (int k = 1; k < n; ++k) cold_put<Scope>(w, my_slot, my_slot, nreduce * sizeof(T), team_target(t, k), call);
  }
  team_barrier<Scope>(w, t, call);  // every slot of this PE's scratch is filled
  for (size_t i = Scope::rank(); i < nreduce; i += Scope::size()) {
    T acc = slots[i];
#pragma unroll 1
    for (int k = 1; k < n; ++k) acc = Op::apply(acc, slots[static_cast<size_t>(k) * nreduce + i]);
    dest[i] = acc;
  }
  team_barrier<Scope>(w, t, call);  // every member has read its scratch: the next reduce may push
}

template <class Scope, class Op, class T>
__device__ __forceinline__ void reduce(const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce, void* scratch, const char* call) {
  static_assert(is_reduce_type_v<T>, "reduce: T must be an integer, floating-point, half or bfloat16 type");
  check_team(w, t, call);
  Scope::sync();
#if SHOAL_DEVICE_COLL_PROXY
  if (w.proxy_ring != nullptr) {
    const cold_args a{w, t};
    return reduce_scratch_proxy<Scope, Op>(a.w, a.t, dest, source, nreduce, scratch, call);
  }
#endif
  T* slots = static_cast<T*>(scratch);
  const int n = t.n_pes;
  if (nreduce > 0) {
    T* my_slot = slots + static_cast<size_t>(t.my_pe_in_team) * nreduce;
    for (int k = 1; k <= n; ++k) {
      copy_to_remote<Scope>(peer_ptr(w, my_slot, team_target(t, k), call), source, nreduce * sizeof(T));
    }
  }
  team_barrier<Scope>(w, t, call);  // every slot of this PE's scratch is filled
  for (size_t i = Scope::rank(); i < nreduce; i += Scope::size()) {
    T acc = slots[i];
    for (int k = 1; k < n; ++k) acc = Op::apply(acc, slots[static_cast<size_t>(k) * nreduce + i]);
    dest[i] = acc;
  }
  team_barrier<Scope>(w, t, call);  // every member has read its scratch: the next reduce may push
}

/// device::team_of: entry `team` of the world's device team table (checked builds trap on a handle
/// out of range or naming no team of this PE).
__device__ __forceinline__ device_team team_of(const device_world& w, int32_t team, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (w.teams == nullptr || team < 0 || team >= w.max_teams)
    device_fail_arg(w.report_box, call, w.my_pe, "team handle", team);
#endif
  const device_team t = w.teams[team];
#if SHOAL_DEVICE_CHECKS
  if (t.n_pes < 1) device_fail_arg(w.report_box, call, w.my_pe, "team handle (not a team of this PE)", team);
#endif
  return t;
}

}  // namespace shoal::detail
