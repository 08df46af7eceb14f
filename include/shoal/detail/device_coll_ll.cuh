// Bodies of the device team collectives, part 2: LL (low-latency) messages -- one message per pair
// of members in shoal's workspace, no barrier -- for reduce, reducescatter, broadcast, fcollect,
// alltoall and collect's size exchange. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_coll_team.cuh"

namespace shoal::detail {

// --- LL messages ------------------------------------------------------------------------------

/// Up to 8 bytes of `src` (bytes [off, off + 8) clipped to `bytes`, zero-padded), little-endian.
__device__ __forceinline__ uint64_t load8(const char* src, size_t off, size_t bytes) {
  const char* p = src + off;
  if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0) return *reinterpret_cast<const uint64_t*>(p);
  uint64_t v = 0;
  for (size_t b = 0; b < 8 && off + b < bytes; ++b) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[b])) << (8 * b);
  return v;
}
/// Stores the bytes of v that fall inside [0, bytes) at dst + off.
__device__ __forceinline__ void store8(char* dst, size_t off, size_t bytes, uint64_t v) {
  char* p = dst + off;
  if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
    *reinterpret_cast<uint64_t*>(p) = v;
    return;
  }
  for (size_t b = 0; b < 8 && off + b < bytes; ++b) p[b] = static_cast<char>(v >> (8 * b));
}

/// Lines of an LL message of `bytes` (an empty message is one line: the flag alone).
__device__ __forceinline__ size_t ll_lines(size_t bytes) { return bytes == 0 ? 1 : (bytes + 7) / 8; }

/// This PE's LL pair counts (pointers). Threads read the counts while they send and receive; rank 0
/// of the scope updates them only in ll_finish, after a scope sync, so every thread of the scope
/// computes the same flags for the whole call.
struct ll_call {
  uint64_t* sent;  // ll_sent[n_local]
  uint64_t* recv;  // ll_recv[n_local]
  __device__ __forceinline__ explicit ll_call(const device_world& w) {
    sent = reinterpret_cast<uint64_t*>(w.heap_base + w.coll_offset +
                                       coll_ws::ll_counters_offset(w.n_local, w.coll_channels));
    recv = sent + w.n_local;
  }
};

/// Where node-local sender `s` writes the message with count `count` in the workspace at `ws`.
__device__ __forceinline__ uint64_t* ll_slot(const device_world& w, char* ws, int32_t s, uint64_t count) {
  return reinterpret_cast<uint64_t*>(
      ws + coll_ws::ll_slot_offset(w.n_local, w.coll_channels, w.coll_ll_bytes, static_cast<uint32_t>(count & 1), s));
}

/// Sends `bytes` of src (any memory space) to world PE `to` as this PE's next LL message to it.
template <class Scope>
__device__ __forceinline__ void ll_send(const device_world& w, const ll_call& ll, int to, const void* src, size_t bytes,
                                        const char* call) {
  const int32_t to_local = peer_local(w, to, call);
  const uint64_t count = ll.sent[to_local] + 1;
  const uint64_t flag = (count & 0xffffffffull) << 32;
  char* remote_ws = peer_ptr(w, w.heap_base + w.coll_offset, to, call);
  uint64_t* slot = ll_slot(w, remote_ws, w.local_of(w.my_pe), count);
  const size_t lines = ll_lines(bytes);
  for (size_t l = Scope::rank(); l < lines; l += Scope::size()) {
    const uint64_t v = load8(static_cast<const char*>(src), 8 * l, bytes);
    ptx::st_volatile_v2_b64(slot + 2 * l, flag | (v & 0xffffffffull), flag | (v >> 32));
  }
}

/// Line l of the next LL message from world PE `from` (waits for it; bounded).
__device__ __forceinline__ uint64_t ll_recv_line(const device_world& w, const ll_call& ll, int from, size_t l,
                                                 const char* call) {
  const int32_t from_local = peer_local(w, from, call);
  const uint64_t count = ll.recv[from_local] + 1;
  const uint64_t want = count & 0xffffffffull;
  const uint64_t* line = ll_slot(w, w.heap_base + w.coll_offset, from_local, count) + 2 * l;
  wait_clock clock(w.wait_timeout_ns);
  for (;;) {
    uint64_t a, b;
    ptx::ld_volatile_v2_b64(line, a, b);
    if ((a >> 32) == want && (b >> 32) == want) return (a & 0xffffffffull) | (b << 32);
    if (clock.expired())
      wait_timed_out(w.report_box, call, w.my_pe, clock.elapsed_ns(), line, from, SHOAL_CMP_EQ, want,
                     (a >> 32) != want ? a >> 32 : b >> 32);
  }
}

/// Ends an LL call: every thread of the scope is done with this call's counts, then rank 0 counts
/// one message sent to and one received from every other member of t.
template <class Scope>
__device__ __forceinline__ void ll_finish(const device_world& w, const device_team& t, const ll_call& ll) {
  Scope::sync();
  if (Scope::rank() == 0) {
    for (int k = 1; k < t.n_pes; ++k) {
      const int32_t local = w.local_of(team_target(t, k));
      ll.sent[local] += 1;
      ll.recv[local] += 1;
    }
  }
  Scope::sync();
}

/// True when the world has an LL workspace that holds a message of `bytes`.
/// SHOAL_COLL_ALGO=direct sets device_world::flags bit kFlagCollDirect: no LL for the collectives
/// that have a direct form (collect's size exchange still uses LL).
constexpr uint32_t kFlagCollDirect = 1u << 0;
__device__ __forceinline__ bool ll_fits(const device_world& w, size_t bytes) {
  return w.coll_offset != 0 && bytes <= w.coll_ll_bytes && (w.flags & kFlagCollDirect) == 0;
}

/// Combines two 8-byte lines element-wise: Op over the sizeof(T)-byte elements of a and b.
template <class Op, class T>
__device__ __forceinline__ uint64_t combine8(uint64_t a, uint64_t b) {
  constexpr int kElems = 8 / sizeof(T);
  T x[kElems], y[kElems];
  memcpy(x, &a, 8);
  memcpy(y, &b, 8);
#pragma unroll
  for (int e = 0; e < kElems; ++e) x[e] = Op::apply(x[e], y[e]);
  uint64_t r;
  memcpy(&r, x, 8);
  return r;
}

/// LL exchange for reduce (source: nreduce elements, sent to every member) and reducescatter
/// (source: n_pes blocks of nreduce, block j sent to team PE j): dest[i] = Op over team PEs 0..n-1.
template <class Scope, class Op, class T, bool kScatter>
__device__ __forceinline__ void reduce_ll(const device_world& w, const device_team& t, T* dest, const T* source,
                                          size_t nreduce, const char* call) {
  const size_t bytes = nreduce * sizeof(T);
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  const char* src = reinterpret_cast<const char*>(source);
  const ll_call ll(w);
  Scope::sync();
  for (int k = 1; k < n; ++k) {
    const int j = (me + k) % n;
    ll_send<Scope>(w, ll, t.world_pe(j), kScatter ? src + static_cast<size_t>(j) * bytes : src, bytes, call);
  }
  const char* mine = kScatter ? src + static_cast<size_t>(me) * bytes : src;
  for (size_t l = Scope::rank(); l < ll_lines(bytes) && bytes > 0; l += Scope::size()) {
    uint64_t acc = 0;
    for (int j = 0; j < n; ++j) {
      const uint64_t v = j == me ? load8(mine, 8 * l, bytes) : ll_recv_line(w, ll, t.world_pe(j), l, call);
      acc = j == 0 ? v : combine8<Op, T>(acc, v);
    }
    store8(reinterpret_cast<char*>(dest), 8 * l, bytes, acc);
  }
  if (bytes == 0) {  // still one (empty) message from every member: keeps the pair counts in step
    for (int j = Scope::rank(); j < n; j += Scope::size())
      if (j != me) (void)ll_recv_line(w, ll, t.world_pe(j), 0, call);
  }
  ll_finish<Scope>(w, t, ll);
}

/// collectmem's proxy path (worlds with proxy peers): rank 0 stores this PE's nbytes into word
/// my_pe_in_team of every member's proxy slots (routed p), team barrier (every size is here; every
/// member has entered, so dest is free), each member puts (routed putmem_nbi) its block at its offset
/// into every member's dest, team barrier (which quiets the ring first). The size words are read
/// between the two barriers, so the next collective cannot overwrite them early.
template <class Scope>
__device__ __noinline__ void collect_proxy(const device_world& w, const device_team& t, void* dest, const void* source,
                                           size_t nbytes, const char* call) {
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  auto* sizes = reinterpret_cast<uint64_t*>(proxy_slots(w, call));  // word s: team PE s's nbytes
  Scope::sync();
  if (Scope::rank() == 0)
    for (int k = 1; k <= n; ++k) p(w, sizes + me, static_cast<uint64_t>(nbytes), team_target(t, k), call);
  team_barrier<Scope>(w, t, call);
  size_t offset = 0;
  for (int j = 0; j < me; ++j) offset += sizes[j];
  if (nbytes > 0) {
    char* my_block = static_cast<char*>(dest) + offset;
    for (int k = 1; k <= n; ++k) cold_put<Scope>(w, my_block, source, nbytes, team_target(t, k), call);
  }
  team_barrier<Scope>(w, t, call);
}

/// collect (per-member sizes): each member's nbytes (may differ) of source, concatenated in team
/// order into every member's dest. Sizes travel as LL messages (which also tells each member that
/// every other has entered, so dest is free), then each member pushes its block at its offset into
/// every member's dest, then a team barrier. Worlds with proxy peers: collect_proxy.
template <class Scope>
__device__ __forceinline__ void collectmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                           size_t nbytes, const char* call) {
  check_team(w, t, call);
#if SHOAL_DEVICE_COLL_PROXY
  if (w.proxy_ring != nullptr) {
    const cold_args a{w, t};
    return collect_proxy<Scope>(a.w, a.t, dest, source, nbytes, call);
  }
#endif
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  size_t offset = 0;
  if (n > 1) {
#if SHOAL_DEVICE_CHECKS
    if (w.coll_offset == 0 || w.coll_ll_bytes < 8)
      device_fail_arg(w.report_box, call, w.my_pe, "SHOAL_COLL_LL_BYTES (collect needs >= 8)", w.coll_ll_bytes);
#endif
    const ll_call ll(w);
    const uint64_t mine = nbytes;
    Scope::sync();
    for (int k = 1; k < n; ++k) ll_send<Scope>(w, ll, team_target(t, k), &mine, sizeof mine, call);
    for (int j = 0; j < me; ++j) offset += ll_recv_line(w, ll, t.world_pe(j), 0, call);
    for (int j = me + 1; j < n; ++j) (void)ll_recv_line(w, ll, t.world_pe(j), 0, call);
    ll_finish<Scope>(w, t, ll);
  } else {
    Scope::sync();
  }
  if (nbytes > 0) {
    char* my_block = static_cast<char*>(dest) + offset;
    for (int k = 1; k <= n; ++k) copy_to_remote<Scope>(peer_ptr(w, my_block, team_target(t, k), call), source, nbytes);
  }
  team_barrier<Scope>(w, t, call);
}

enum class move_kind { broadcast, fcollect, alltoall };

/// LL exchange for broadcast (the root sends source to every member; the others send an empty
/// message to every member), fcollect (source to every member, received into block j) and alltoall
/// (block j of source to team PE j, received into block j). dest is written by this PE only.
template <class Scope, move_kind kKind>
__device__ __forceinline__ void move_ll(const device_world& w, const device_team& t, void* dest, const void* source,
                                        size_t bytes, int root, const char* call) {
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  const char* src = static_cast<const char*>(source);
  char* dst = static_cast<char*>(dest);
  const ll_call ll(w);
  Scope::sync();
  for (int k = 1; k < n; ++k) {
    const int j = (me + k) % n;
    if constexpr (kKind == move_kind::broadcast) {
      ll_send<Scope>(w, ll, t.world_pe(j), src, me == root ? bytes : 0, call);
    } else if constexpr (kKind == move_kind::fcollect) {
      ll_send<Scope>(w, ll, t.world_pe(j), src, bytes, call);
    } else {
      ll_send<Scope>(w, ll, t.world_pe(j), src + static_cast<size_t>(j) * bytes, bytes, call);
    }
  }
  // This PE's own block, locally.
  if constexpr (kKind == move_kind::broadcast) {
    if (me == root && dst != src) copy_spaces<Scope, false, false>(dst, src, bytes);
  } else {
    const size_t own = kKind == move_kind::fcollect ? 0 : static_cast<size_t>(me) * bytes;
    copy_spaces<Scope, false, false>(dst + static_cast<size_t>(me) * bytes, src + own, bytes);
  }
  // Every other member's message (for broadcast: the root's data, the rest's empty messages).
  for (int k = 1; k < n; ++k) {
    const int j = (me + k) % n;
    const size_t in_bytes = kKind == move_kind::broadcast ? (j == root ? bytes : 0) : bytes;
    char* out = kKind == move_kind::broadcast ? dst : dst + static_cast<size_t>(j) * bytes;
    const size_t lines = ll_lines(in_bytes);
    for (size_t l = Scope::rank(); l < lines; l += Scope::size()) {
      const uint64_t v = ll_recv_line(w, ll, t.world_pe(j), l, call);
      if (in_bytes > 0) store8(out, 8 * l, in_bytes, v);
    }
  }
  ll_finish<Scope>(w, t, ll);
}

}  // namespace shoal::detail
