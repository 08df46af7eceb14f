// Device team collectives on the explicit handle: team_sync / team_barrier, broadcastmem,
// fcollectmem, alltoallmem and reduce over a strided team (shoal::device_team, by value), at thread,
// warp and block scope. One-shot push algorithms: every PE stores its contribution straight into the
// members' symmetric buffers over load/store, then one team barrier completes the collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/device/copy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device_team.hpp"
#include "shoal/device_world.hpp"

namespace shoal::device {

// --- reduction operators (the Op of reduce*) ----------------------------------------------------

/// a + b (integers wrap: computed unsigned).
struct sum_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};
/// a * b (integers wrap: computed unsigned).
struct prod_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};
/// The smaller of a and b (b < a ? b : a).
struct min_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    return b < a ? b : a;
  }
};
/// The larger of a and b (a < b ? b : a).
struct max_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    return a < b ? b : a;
  }
};
/// Bitwise and (integers only).
struct and_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    static_assert(std::is_integral_v<T>, "and_op reduces integer types only");
    return static_cast<T>(a & b);
  }
};
/// Bitwise or (integers only).
struct or_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    static_assert(std::is_integral_v<T>, "or_op reduces integer types only");
    return static_cast<T>(a | b);
  }
};
/// Bitwise xor (integers only).
struct xor_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    static_assert(std::is_integral_v<T>, "xor_op reduces integer types only");
    return static_cast<T>(a ^ b);
  }
};

/// Bytes of the symmetric scratch buffer that reduce* needs for a team of n_pes PEs reducing nreduce
/// elements of T: one slot of nreduce elements per team PE.
template <class T>
__host__ __device__ constexpr size_t reduce_scratch_bytes(int n_pes, size_t nreduce) {
  return static_cast<size_t>(n_pes < 0 ? 0 : n_pes) * nreduce * sizeof(T);
}

}  // namespace shoal::device

namespace shoal::detail {

/// The node-local index of world PE `pe` as a team-barrier word index (checked builds trap when the PE
/// is unreachable or beyond device_sync::kMaxTeamPeers).
__device__ __forceinline__ int team_word(const device_world& w, int pe, const char* call) {
  const int32_t local = checked_local_of(w, pe, call);
#if SHOAL_DEVICE_CHECKS
  if (local >= device_sync::kMaxTeamPeers) device_fail_arg(call, w.my_pe, "node-local PE index (max 127)", local);
#endif
  return local;
}

/// Checked builds: `t` must be a team this PE belongs to (as shoalx_team_device_handle gives it).
__device__ __forceinline__ void check_team(const device_world& w, const device_team& t, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (t.n_pes < 1 || t.my_pe_in_team < 0 || t.my_pe_in_team >= t.n_pes || t.world_pe(t.my_pe_in_team) != w.my_pe) {
    device_fail_arg(call, w.my_pe, "team (this PE is not its member my_pe_in_team)", t.my_pe_in_team);
  }
#else
  (void)w, (void)t, (void)call;
#endif
}

/// The dissemination barrier over a team, run by ONE thread per PE. Round r (step 2^r < n): signal
/// team PE (me + step) % n, then wait for the signal of team PE (me - step) % n. A signal is a count
/// per pair of PEs (device_sync::team_arrived/team_sent/team_consumed, indexed by node-local PE), so
/// the words need no per-team state: within one barrier a PE signals each peer at most once (the
/// steps differ mod n), and members run a team's collectives in the same order, so the n-th signal
/// from a peer is the one this PE awaits n-th. Ordering as barrier_thread: a fence.acq_rel.sys
/// releases this PE's earlier accesses before round 0's relaxed store, later rounds' stores are
/// st.release.sys (passing on what earlier rounds acquired), waits poll ld.acquire.sys; so every
/// member's accesses before the barrier happen before every member's accesses after it.
__device__ __forceinline__ void team_barrier_thread(const device_world& w, const device_team& t, const char* call) {
  check_team(w, t, call);
  device_sync* sync = local_sync(w);
  ptx::fence_acq_rel_sys();  // release: this PE's earlier puts/stores before its first signal
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  if (n <= 1) return;
  const int my_word = team_word(w, w.my_pe, call);
  for (int r = 0, step = 1; step < n; ++r, step <<= 1) {
    const int to = t.world_pe((me + step) % n);
    const int from = t.world_pe((me - step + n) % n);
    const int to_word = team_word(w, to, call);
    const int from_word = team_word(w, from, call);
    const uint64_t sent = sync->team_sent[to_word] + 1;
    sync->team_sent[to_word] = sent;
    uint64_t* remote_flag = peer_ptr(w, &sync->team_arrived[my_word], to, call);
    if (r == 0) {
      ptx::st_relaxed_sys(remote_flag, sent);  // released by the fence above
    } else {
      ptx::st_release_sys(remote_flag, sent);  // passes on what earlier rounds acquired
    }
    const uint64_t want = sync->team_consumed[from_word] + 1;
    sync->team_consumed[from_word] = want;
    const uint64_t* mine = &sync->team_arrived[from_word];
    wait_clock clock(w.wait_timeout_ns);
    for (;;) {
      const uint64_t seen = ptx::ld_acquire_sys(mine);
      if (seen >= want) break;
      if (clock.expired()) wait_timed_out(call, w.my_pe, clock.elapsed_ns(), mine, from, SHOAL_CMP_GE, want, seen);
    }
  }
}

/// team_barrier_thread by rank 0 of the scope, with the scope's barrier before and after.
template <class Scope>
__device__ __forceinline__ void team_barrier(const device_world& w, const device_team& t, const char* call) {
  Scope::sync();
  if (Scope::rank() == 0) team_barrier_thread(w, t, call);
  Scope::sync();
}

/// Team PE `k`-th after this one (k = 1 .. n): spreads the pushes of different PEs over different
/// targets first; k = n is this PE itself.
__device__ __forceinline__ int team_target(const device_team& t, int k) {
  return t.world_pe((t.my_pe_in_team + k) % t.n_pes);
}

template <class Scope>
__device__ __forceinline__ void broadcastmem(const device_world& w, const device_team& t, void* dest,
                                             const void* source, size_t num_bytes, int root, const char* call) {
  check_team(w, t, call);
  Scope::sync();  // the scope's writes to source happen before any of its threads reads it
#if SHOAL_DEVICE_CHECKS
  if (root < 0 || root >= t.n_pes) device_fail_arg(call, w.my_pe, "root (a team PE number)", root);
#endif
  if (t.my_pe_in_team == root && num_bytes > 0) {
    for (int k = 1; k <= t.n_pes; ++k) {
      copy_to_remote<Scope>(peer_ptr(w, dest, team_target(t, k), call), source, num_bytes);
    }
  }
  team_barrier<Scope>(w, t, call);
}

template <class Scope>
__device__ __forceinline__ void fcollectmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t num_bytes_per_pe, const char* call) {
  check_team(w, t, call);
  Scope::sync();
  if (num_bytes_per_pe > 0) {
    char* my_block = static_cast<char*>(dest) + static_cast<size_t>(t.my_pe_in_team) * num_bytes_per_pe;
    for (int k = 1; k <= t.n_pes; ++k) {
      copy_to_remote<Scope>(peer_ptr(w, my_block, team_target(t, k), call), source, num_bytes_per_pe);
    }
  }
  team_barrier<Scope>(w, t, call);
}

template <class Scope>
__device__ __forceinline__ void alltoallmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t num_bytes_per_pe, const char* call) {
  check_team(w, t, call);
  Scope::sync();
  if (num_bytes_per_pe > 0) {
    char* my_block = static_cast<char*>(dest) + static_cast<size_t>(t.my_pe_in_team) * num_bytes_per_pe;
    for (int k = 1; k <= t.n_pes; ++k) {
      const int j = (t.my_pe_in_team + k) % t.n_pes;
      copy_to_remote<Scope>(peer_ptr(w, my_block, t.world_pe(j), call),
                            static_cast<const char*>(source) + static_cast<size_t>(j) * num_bytes_per_pe,
                            num_bytes_per_pe);
    }
  }
  team_barrier<Scope>(w, t, call);
}

template <class Scope, class Op, class T>
__device__ __forceinline__ void reduce(const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce, void* scratch, const char* call) {
  static_assert(std::is_arithmetic_v<T>, "reduce: T must be an integer or floating-point type");
  check_team(w, t, call);
  Scope::sync();
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

}  // namespace shoal::detail

namespace shoal::device {

// Common contract of the collectives below (the "collective contract"):
//  - t: a team this PE belongs to (shoalx_team_device_handle), the same team on every member, which
//    all call the same collective with the same num_bytes / nreduce / root. Members call a team's
//    collectives in the same order. Every member must be load/store-reachable (one node, P2P) and its
//    node-local index below detail::device_sync::kMaxTeamPeers (checked builds trap otherwise).
//  - At most ONE team collective (or team barrier) in flight per PE at a time: a kernel that runs
//    several (e.g. in different blocks) must serialize them. barrier_all/sync_all use other words
//    and may be mixed freely with these.
//  - Scope: plain: one thread; *_warp: all 32 lanes of a warp, same arguments; *_block: every thread
//    of the block, same arguments. Each call synchronizes the scope on entry (so the scope's earlier
//    writes to source are seen by all its threads) and on return.
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
__device__ __forceinline__ void team_barrier(const device_world& w, const device_team& t) {
  detail::team_barrier<thread_scope>(w, t, "shoal::device::team_barrier");
}
__device__ __forceinline__ void team_barrier_warp(const device_world& w, const device_team& t) {
  detail::team_barrier<warp_scope>(w, t, "shoal::device::team_barrier_warp");
}
__device__ __forceinline__ void team_barrier_block(const device_world& w, const device_team& t) {
  detail::team_barrier<block_scope>(w, t, "shoal::device::team_barrier_block");
}
/// team_sync: the same synchronization as team_barrier (already a release/acquire chain).
__device__ __forceinline__ void team_sync(const device_world& w, const device_team& t) {
  detail::team_barrier<thread_scope>(w, t, "shoal::device::team_sync");
}
__device__ __forceinline__ void team_sync_warp(const device_world& w, const device_team& t) {
  detail::team_barrier<warp_scope>(w, t, "shoal::device::team_sync_warp");
}
__device__ __forceinline__ void team_sync_block(const device_world& w, const device_team& t) {
  detail::team_barrier<block_scope>(w, t, "shoal::device::team_sync_block");
}

/// Copies num_bytes of `source` on team PE `root` to `dest` on every member (root included; on the
/// root, source may be dest itself). Non-roots' source is not read. Algorithm: the root puts to
/// each member's dest, then a team barrier. Collective contract.
__device__ __forceinline__ void broadcastmem(const device_world& w, const device_team& t, void* dest,
                                             const void* source, size_t num_bytes, int root) {
  detail::broadcastmem<thread_scope>(w, t, dest, source, num_bytes, root, "shoal::device::broadcastmem");
}
__device__ __forceinline__ void broadcastmem_warp(const device_world& w, const device_team& t, void* dest,
                                                  const void* source, size_t num_bytes, int root) {
  detail::broadcastmem<warp_scope>(w, t, dest, source, num_bytes, root, "shoal::device::broadcastmem_warp");
}
__device__ __forceinline__ void broadcastmem_block(const device_world& w, const device_team& t, void* dest,
                                                   const void* source, size_t num_bytes, int root) {
  detail::broadcastmem<block_scope>(w, t, dest, source, num_bytes, root, "shoal::device::broadcastmem_block");
}

/// Concatenates every member's num_bytes_per_pe of `source`, in team order, into `dest` on every
/// member (dest holds n_pes * num_bytes_per_pe bytes; member r's block at r * num_bytes_per_pe).
/// Algorithm: each PE puts its block into every member's dest, then a team barrier. Collective
/// contract.
__device__ __forceinline__ void fcollectmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t num_bytes_per_pe) {
  detail::fcollectmem<thread_scope>(w, t, dest, source, num_bytes_per_pe, "shoal::device::fcollectmem");
}
__device__ __forceinline__ void fcollectmem_warp(const device_world& w, const device_team& t, void* dest,
                                                 const void* source, size_t num_bytes_per_pe) {
  detail::fcollectmem<warp_scope>(w, t, dest, source, num_bytes_per_pe, "shoal::device::fcollectmem_warp");
}
__device__ __forceinline__ void fcollectmem_block(const device_world& w, const device_team& t, void* dest,
                                                  const void* source, size_t num_bytes_per_pe) {
  detail::fcollectmem<block_scope>(w, t, dest, source, num_bytes_per_pe, "shoal::device::fcollectmem_block");
}

/// Block j (num_bytes_per_pe bytes at j * num_bytes_per_pe) of `source` on member i lands as block i
/// of `dest` on member j; source and dest hold n_pes blocks. Algorithm: each PE puts block j to
/// member j, then a team barrier. Collective contract.
__device__ __forceinline__ void alltoallmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t num_bytes_per_pe) {
  detail::alltoallmem<thread_scope>(w, t, dest, source, num_bytes_per_pe, "shoal::device::alltoallmem");
}
__device__ __forceinline__ void alltoallmem_warp(const device_world& w, const device_team& t, void* dest,
                                                 const void* source, size_t num_bytes_per_pe) {
  detail::alltoallmem<warp_scope>(w, t, dest, source, num_bytes_per_pe, "shoal::device::alltoallmem_warp");
}
__device__ __forceinline__ void alltoallmem_block(const device_world& w, const device_team& t, void* dest,
                                                  const void* source, size_t num_bytes_per_pe) {
  detail::alltoallmem<block_scope>(w, t, dest, source, num_bytes_per_pe, "shoal::device::alltoallmem_block");
}

/// All-reduce: dest[i] = Op over team PEs 0, 1, ..., n-1 (in that order, left to right, the same on
/// every member, so floating-point results are identical on all members) of their source[i], for
/// i < nreduce. Op: sum_op, prod_op, min_op, max_op (any arithmetic T) or and_op, or_op, xor_op
/// (integer T). dest and source are LOCAL (any memory space) and may be the same buffer; `scratch`
/// is a symmetric buffer of reduce_scratch_bytes<T>(t.n_pes, nreduce) bytes (e.g. from shoal_malloc),
/// the same address on every member, that nothing else uses during the call; it is free again on
/// return. Algorithm: each PE puts its source into slot my_pe_in_team of every member's scratch,
/// team barrier, each PE reduces the slots locally into dest (element i by the scope's rank
/// i mod size), team barrier. Collective contract (except that dest is local: it is never written
/// by other members).
template <class Op, class T>
__device__ __forceinline__ void reduce(const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce, void* scratch) {
  detail::reduce<thread_scope, Op>(w, t, dest, source, nreduce, scratch, "shoal::device::reduce");
}
template <class Op, class T>
__device__ __forceinline__ void reduce_warp(const device_world& w, const device_team& t, T* dest, const T* source,
                                            size_t nreduce, void* scratch) {
  detail::reduce<warp_scope, Op>(w, t, dest, source, nreduce, scratch, "shoal::device::reduce_warp");
}
template <class Op, class T>
__device__ __forceinline__ void reduce_block(const device_world& w, const device_team& t, T* dest, const T* source,
                                             size_t nreduce, void* scratch) {
  detail::reduce<block_scope, Op>(w, t, dest, source, nreduce, scratch, "shoal::device::reduce_block");
}

}  // namespace shoal::device
