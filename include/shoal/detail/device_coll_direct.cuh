// Bodies of the device team collectives, part 3: the direct algorithms (team barrier + loads/stores
// over NVLink, channel-parallel), their proxy paths (routed puts, worlds with proxy peers) and the
// symmetric reduce's choice between LL, direct and proxy. Used by
// <shoal/device/coll.cuh> and by libshoal's on-stream collective kernels. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_coll_ll.cuh"
#include "shoal/detail/device_coll_team.cuh"

namespace shoal::detail {

// --- direct (barrier + load/store over NVLink), channel-parallel -----------------------------------

/// [lo, hi) of part `part` of `count` items split into `parts` parts of whole multiples of `quantum`.
struct span {
  size_t lo, hi;
};
__device__ __forceinline__ span split(size_t count, uint32_t parts, uint32_t part, size_t quantum) {
  size_t per = (count + parts - 1) / parts;
  per = (per + quantum - 1) / quantum * quantum;
  const size_t lo = static_cast<size_t>(part) * per < count ? static_cast<size_t>(part) * per : count;
  const size_t hi = lo + per < count ? lo + per : count;
  return {lo, hi};
}

/// Moves one channel's share of a broadcast / fcollect / alltoall by storing into the members' dest
/// (direct algorithm). Barriers are the caller's. kDeep: copy_to_remote_deep (8 loads in flight per
/// thread) instead of copy_to_remote.
template <class Scope, move_kind kKind, bool kDeep = false>
__device__ __forceinline__ void move_direct(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t bytes, int root, uint32_t chan, uint32_t nchan, const char* call) {
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  const span part = split(bytes, nchan, chan, 16);
  if (part.hi <= part.lo) return;
  const char* src = static_cast<const char*>(source);
  char* dst = static_cast<char*>(dest);
  for (int k = 1; k <= n; ++k) {  // k == n: this PE itself, last
    const int j = (me + k) % n;
    const int pe = t.world_pe(j);
    const char* from;
    char* to;
    if constexpr (kKind == move_kind::broadcast) {
      if (me != root) return;
      from = src;
      to = dst;
    } else if constexpr (kKind == move_kind::fcollect) {
      from = src;
      to = dst + static_cast<size_t>(me) * bytes;
    } else {
      from = src + static_cast<size_t>(j) * bytes;
      to = dst + static_cast<size_t>(me) * bytes;
    }
    if (j == me && to == from) continue;
    if constexpr (kDeep) {
      copy_to_remote_deep<Scope>(peer_ptr(w, to + part.lo, pe, call), from + part.lo, part.hi - part.lo);
    } else {
      copy_to_remote<Scope>(peer_ptr(w, to + part.lo, pe, call), from + part.lo, part.hi - part.lo);
    }
  }
}

/// move_team's proxy path (worlds with proxy peers): the same targets and blocks as move_direct, each
/// a routed putmem_nbi (NVLink stores or a ring descriptor; for a proxy member the source must be
/// global memory, or at most kProxyInlineBytes), then the team barrier, which quiets the ring before
/// it signals: every member's blocks are in every dest when it returns.
template <class Scope, move_kind kKind>
__device__ __noinline__ void move_proxy(const device_world& w, const device_team& t, void* dest, const void* source,
                                        size_t bytes, int root, const char* call) {
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  const char* src = static_cast<const char*>(source);
  char* dst = static_cast<char*>(dest);
  for (int k = 1; k <= n && bytes > 0; ++k) {  // k == n: this PE itself, last
    const int j = (me + k) % n;
    const char* from = src;
    char* to = dst;
    if constexpr (kKind == move_kind::broadcast) {
      if (me != root) break;
    } else if constexpr (kKind == move_kind::fcollect) {
      to = dst + static_cast<size_t>(me) * bytes;
    } else {
      from = src + static_cast<size_t>(j) * bytes;
      to = dst + static_cast<size_t>(me) * bytes;
    }
    if (j == me && to == from) continue;
    cold_put<Scope>(w, to, from, bytes, t.world_pe(j), call);
  }
  team_barrier<Scope>(w, t, call);
}

/// broadcastmem / fcollectmem / alltoallmem of the device API: the whole scope pushes every byte
/// (move_direct as channel 0 of 1), then a team barrier; worlds with proxy peers: move_proxy. The copy is
/// copy_to_remote, 4 loads in flight per thread at wide scopes, which keeps a user's kernel small: with copy_vec16 at
/// 8 loads in flight a block-scope alltoall kernel takes 108 registers instead of 82 (nvcc 13.0, sm_90) and is 1.4%
/// faster at 1 MiB on one H200 (docs/results/gpu-1xh200/protocol/README.md).
template <class Scope, move_kind kKind>
__device__ __forceinline__ void move_team(const device_world& w, const device_team& t, void* dest, const void* source,
                                          size_t bytes, int root, const char* call) {
  check_team(w, t, call);
  Scope::sync();  // the scope's writes to source happen before any of its threads reads it
#if SHOAL_DEVICE_CHECKS
  if (kKind == move_kind::broadcast && (root < 0 || root >= t.n_pes))
    device_fail_arg(w.report_box, call, w.my_pe, "root (a team PE number)", root);
#endif
#if SHOAL_DEVICE_COLL_PROXY
  if (w.proxy_ring != nullptr) {
    const cold_args a{w, t};
    return move_proxy<Scope, kKind>(a.w, a.t, dest, source, bytes, root, call);
  }
#endif
  move_direct<Scope, kKind>(w, t, dest, source, bytes, root, 0, 1, call);
  team_barrier<Scope>(w, t, call);
}

/// One channel's share of a two-shot all-reduce (kScatter false) or of a reduce-scatter (true), by
/// direct loads/stores; barriers are the caller's. Chunk k of the result (reduce: nreduce split into
/// n chunks; reducescatter: block k) is computed by team PE k from every member's source, in team
/// order, and stored into every member's dest (reduce) or this PE's dest (reducescatter).
template <class Scope, class Op, class T, bool kScatter, int kIter = 2>
__device__ __forceinline__ void reduce_direct(const device_world& w, const device_team& t, T* dest, const T* source,
                                              size_t nreduce, uint32_t chan, uint32_t nchan, const char* call) {
  constexpr size_t kVec = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  const span chunk =
      kScatter ? span{0, nreduce} : split(nreduce, static_cast<uint32_t>(n), static_cast<uint32_t>(me), kVec);
  const size_t base = kScatter ? static_cast<size_t>(me) * nreduce : 0;  // offset of this PE's block in source
  const span part = split(chunk.hi - chunk.lo, nchan, chan, kVec);
  const size_t lo = chunk.lo + part.lo;
  const size_t hi = chunk.lo + part.hi;
  if (hi <= lo) return;
  const bool vec = ((reinterpret_cast<uintptr_t>(dest) | reinterpret_cast<uintptr_t>(source + base)) & 15) == 0;
  const size_t vec_hi = vec ? lo + (hi - lo) / kVec * kVec : lo;
  // kIter vectors per thread per round, all of one member's loads issued together, to cover the
  // NVLink round trip: 2 in the device API (register budget of a user's 1024-thread block), 4 in
  // shoal's own on-stream kernels (512 threads).
  const size_t step = static_cast<size_t>(Scope::size()) * kVec;
  size_t i = lo + Scope::rank() * kVec;
  for (; i + (kIter - 1) * step < vec_hi; i += kIter * step) {
    uint4 acc[kIter];
    for (int j = 0; j < n; ++j) {
      const T* p = peer_ptr(w, source + base + i, t.world_pe(j), call);
      uint4 v[kIter];
#pragma unroll
      for (int u = 0; u < kIter; ++u) v[u] = ptx::ld_global_v4(reinterpret_cast<const uint4*>(p + u * step));
#pragma unroll
      for (int u = 0; u < kIter; ++u) {
        if (j == 0) {
          acc[u] = v[u];
        } else {
          T* a = reinterpret_cast<T*>(&acc[u]);
          const T* b = reinterpret_cast<const T*>(&v[u]);
#pragma unroll
          for (size_t e = 0; e < kVec; ++e) a[e] = Op::apply(a[e], b[e]);
        }
      }
    }
    if constexpr (kScatter) {
#pragma unroll
      for (int u = 0; u < kIter; ++u)
        ptx::st_global_v4(reinterpret_cast<uint4*>(dest + (i + u * step - chunk.lo)), acc[u]);
    } else {
      for (int k = 1; k <= n; ++k) {
        T* p = peer_ptr(w, dest + i, t.world_pe((me + k) % n), call);
#pragma unroll
        for (int u = 0; u < kIter; ++u) ptx::st_global_v4(reinterpret_cast<uint4*>(p + u * step), acc[u]);
      }
    }
  }
  for (; i < vec_hi; i += step) {  // the last partial round, one vector at a time
    uint4 acc;
    for (int j = 0; j < n; ++j) {
      const uint4 v =
          ptx::ld_global_v4(reinterpret_cast<const uint4*>(peer_ptr(w, source + base + i, t.world_pe(j), call)));
      if (j == 0) {
        acc = v;
      } else {
        T* a = reinterpret_cast<T*>(&acc);
        const T* b = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (size_t e = 0; e < kVec; ++e) a[e] = Op::apply(a[e], b[e]);
      }
    }
    if constexpr (kScatter) {
      ptx::st_global_v4(reinterpret_cast<uint4*>(dest + (i - chunk.lo)), acc);
    } else {
      for (int k = 1; k <= n; ++k)
        ptx::st_global_v4(reinterpret_cast<uint4*>(peer_ptr(w, dest + i, t.world_pe((me + k) % n), call)), acc);
    }
  }
  for (size_t i = vec_hi + Scope::rank(); i < hi; i += Scope::size()) {  // unaligned buffers, the tail
    T acc = *peer_ptr(w, source + base + i, t.world_pe(0), call);
    for (int j = 1; j < n; ++j) acc = Op::apply(acc, *peer_ptr(w, source + base + i, t.world_pe(j), call));
    if constexpr (kScatter) {
      dest[i - chunk.lo] = acc;
    } else {
      for (int k = 1; k <= n; ++k) *peer_ptr(w, dest + i, t.world_pe((me + k) % n), call) = acc;
    }
  }
}

/// The two paths of reduce_sym / reducescatter_sym, each its own (not inlined) function: inlined
/// together they need more registers than a user's 1024-thread block has (64 per thread).
template <class Scope, class T>
__device__ __noinline__ void reduce_sym_alone(T* dest, const T* source, size_t nelems) {  // a 1-PE team
  Scope::sync();
  if (dest != source)
    for (size_t i = Scope::rank(); i < nelems; i += Scope::size()) dest[i] = source[i];
  Scope::sync();
}
template <class Scope, class Op, class T, bool kScatter>
__device__ __noinline__ void reduce_sym_ll(const device_world& w, const device_team& t, T* dest, const T* source,
                                           size_t nreduce, const char* call) {
  reduce_ll<Scope, Op, T, kScatter>(w, t, dest, source, nreduce, call);
}
template <class Scope, class Op, class T, bool kScatter>
__device__ __noinline__ void reduce_sym_direct(const device_world& w, const device_team& t, T* dest, const T* source,
                                               size_t nreduce, const char* call) {
  team_barrier<Scope>(w, t, call);  // every member's source is ready, every dest free
  reduce_direct<Scope, Op, T, kScatter>(w, t, dest, source, nreduce, 0, 1, call);
  team_barrier<Scope>(w, t, call);  // every chunk is in every dest; nobody reads a source any more
}

/// reduce_sym's proxy path (worlds with proxy peers), one-shot through the proxy slots (coll_ws), in
/// pieces of one slot: for each piece, every member puts its source piece (reducescatter: of block j
/// for team PE j) into slot my_pe_in_team of every member (routed putmem_nbi from the symmetric
/// source, global memory), team barrier (the ring is quiet, every slot filled), each member folds its
/// slots in team order into its dest piece, team barrier (the slots are free for the next piece or
/// call). dest may be source: piece p of dest is written after every member has put piece p, and
/// later pieces read only later elements.
template <class Scope, class Op, class T, bool kScatter>
__device__ __noinline__ void reduce_sym_proxy(const device_world& w, const device_team& t, T* dest, const T* source,
                                              size_t nreduce, const char* call) {
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  const size_t per = coll_ws::proxy_slot_bytes(w.n_pes) / sizeof(T);  // elements of one slot
  T* slots = reinterpret_cast<T*>(proxy_slots(w, call));
  Scope::sync();  // the scope's writes to source are made
  for (size_t lo = 0; lo < nreduce; lo += per) {
    const size_t count = nreduce - lo < per ? nreduce - lo : per;
    for (int k = 1; k <= n; ++k) {  // k == n: this PE's own slot, last
      const int j = (me + k) % n;
      const T* from = source + (kScatter ? static_cast<size_t>(j) * nreduce : 0) + lo;
      cold_put<Scope>(w, slots + static_cast<size_t>(me) * per, from, count * sizeof(T), t.world_pe(j), call);
    }
    team_barrier<Scope>(w, t, call);  // every member's piece is in every member's slots
    for (size_t i = Scope::rank(); i < count; i += Scope::size()) {
      T acc = slots[i];
#pragma unroll 1
      for (int j = 1; j < n; ++j) acc = Op::apply(acc, slots[static_cast<size_t>(j) * per + i]);
      dest[lo + i] = acc;
    }
    team_barrier<Scope>(w, t, call);  // every member has read its slots
  }
}

/// Symmetric-buffer all-reduce (kScatter false: dest and source symmetric, may be the same buffer)
/// or reduce-scatter (true: source holds n_pes blocks of nreduce; dest gets block my_pe_in_team of
/// the reduced vector): LL when the message fits the workspace, else two-shot direct between two
/// team barriers; worlds with proxy peers: reduce_sym_proxy.
template <class Scope, class Op, class T, bool kScatter>
__device__ __forceinline__ void reduce_sym(const device_world& w, const device_team& t, T* dest, const T* source,
                                           size_t nreduce, const char* call) {
  static_assert(is_reduce_type_v<T>, "reduce: T must be an integer, floating-point, half or bfloat16 type");
  check_team(w, t, call);
  if (t.n_pes == 1) {
    reduce_sym_alone<Scope>(dest, source, nreduce);
    return;
  }
#if SHOAL_DEVICE_COLL_PROXY
  if (w.proxy_ring != nullptr) {
    const cold_args a{w, t};
    reduce_sym_proxy<Scope, Op, T, kScatter>(a.w, a.t, dest, source, nreduce, call);
    return;
  }
#endif
  const cold_args a{w, t};  // not the caller's world: see cold_args
  if (ll_fits(w, nreduce * sizeof(T))) {
    reduce_sym_ll<Scope, Op, T, kScatter>(a.w, a.t, dest, source, nreduce, call);
  } else {
    reduce_sym_direct<Scope, Op, T, kScatter>(a.w, a.t, dest, source, nreduce, call);
  }
}

/// maxloc all-reduce of (value, index) double2 pairs (symmetric dest and source): two-shot direct
/// between two team barriers (a 16-byte element does not fit LL's 4-byte halves).
template <class Scope>
__device__ __forceinline__ void maxloc_reduce_sym(const device_world& w, const device_team& t, double2* dest,
                                                  const double2* source, size_t nreduce, const char* call) {
  check_team(w, t, call);
  if (t.n_pes == 1) {
    reduce_sym_alone<Scope>(dest, source, nreduce);
    return;
  }
  const cold_args a{w, t};  // not the caller's world: see cold_args
  reduce_sym_direct<Scope, maxloc_op, double2, false>(a.w, a.t, dest, source, nreduce, call);
}

}  // namespace shoal::detail
