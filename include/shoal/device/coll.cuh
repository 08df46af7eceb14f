// Device team collectives on the explicit handle: team_sync / team_barrier, broadcastmem,
// fcollectmem, alltoallmem, reduce and reducescatter over a strided team (shoal::device_team, by
// value), at thread, warp and block scope, and the channel-parallel forms that libshoal's on-stream
// collectives run with one CTA per channel.
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

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/detail/coll_ws.hpp"

#include "shoal/detail/device_common.cuh"
#include "shoal/device/copy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device_team.hpp"
#include "shoal/device_world.hpp"

namespace shoal::detail {

template <class T>
inline constexpr bool is_float16_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
/// The element types the reductions take: integers (not bool), float, double, half, bfloat16.
template <class T>
inline constexpr bool is_reduce_type_v =
    (std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 8) || is_float16_v<T>;

/// f(a, b) for 16-bit floats: computed in float, rounded back to nearest-even.
template <class T, class F>
__device__ __forceinline__ T via_float(T a, T b, F f) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(f(__half2float(a), __half2float(b)));
  } else {
    return __float2bfloat16_rn(f(__bfloat162float(a), __bfloat162float(b)));
  }
}

}  // namespace shoal::detail

namespace shoal::device {

// --- reduction operators (the Op of reduce*) ----------------------------------------------------

/// a + b (integers wrap: computed unsigned).
struct sum_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (detail::is_float16_v<T>) {
      return detail::via_float(a, b, [](float x, float y) { return x + y; });
    } else if constexpr (std::is_integral_v<T>) {
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
    if constexpr (detail::is_float16_v<T>) {
      return detail::via_float(a, b, [](float x, float y) { return x * y; });
    } else if constexpr (std::is_integral_v<T>) {
      // Unsigned, and at least as wide as unsigned int (a 16-bit product would overflow int).
      using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
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
    if constexpr (detail::is_float16_v<T>) {
      return detail::via_float(a, b, [](float x, float y) { return y < x ? y : x; });
    } else {
      return b < a ? b : a;
    }
  }
};
/// The larger of a and b (a < b ? b : a).
struct max_op {
  template <class T>
  static __device__ __forceinline__ T apply(T a, T b) {
    if constexpr (detail::is_float16_v<T>) {
      return detail::via_float(a, b, [](float x, float y) { return x < y ? y : x; });
    } else {
      return a < b ? b : a;
    }
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
/// per-team state: within one barrier a PE signals each peer at most once (the steps differ mod n),
/// and members run a team's collectives in the same order (with the same channel count), so the
/// n-th signal from a peer on a channel is the one this PE awaits n-th there. Ordering as
/// barrier_thread: a fence.acq_rel.sys releases this PE's earlier accesses before round 0's relaxed
/// store, later rounds' stores are st.release.sys (passing on what earlier rounds acquired), waits
/// poll ld.acquire.sys; so every member's accesses before the barrier happen before every member's
/// accesses after it.
__device__ __forceinline__ void team_barrier_thread(const device_world& w, const device_team& t, const char* call,
                                                    uint32_t chan = 0) {
  check_team(w, t, call);
  const channel_words cw = channel_of(w, chan);
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
    const uint64_t sent = cw.sent[to_word] + 1;
    cw.sent[to_word] = sent;
    uint64_t* remote_flag = peer_ptr(w, &cw.arrived[my_word], to, call);
    if (r == 0) {
      ptx::st_relaxed_sys(remote_flag, sent);  // released by the fence above
    } else {
      ptx::st_release_sys(remote_flag, sent);  // passes on what earlier rounds acquired
    }
    const uint64_t want = cw.consumed[from_word] + 1;
    cw.consumed[from_word] = want;
    const uint64_t* mine = &cw.arrived[from_word];
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

template <class Scope, class Op, class T>
__device__ __forceinline__ void reduce(const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce, void* scratch, const char* call) {
  static_assert(is_reduce_type_v<T>, "reduce: T must be an integer, floating-point, half or bfloat16 type");
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
  const int32_t to_local = checked_local_of(w, to, call);
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
  const int32_t from_local = checked_local_of(w, from, call);
  const uint64_t count = ll.recv[from_local] + 1;
  const uint64_t want = count & 0xffffffffull;
  const uint64_t* line = ll_slot(w, w.heap_base + w.coll_offset, from_local, count) + 2 * l;
  wait_clock clock(w.wait_timeout_ns);
  for (;;) {
    uint64_t a, b;
    ptx::ld_volatile_v2_b64(line, a, b);
    if ((a >> 32) == want && (b >> 32) == want) return (a & 0xffffffffull) | (b << 32);
    if (clock.expired())
      wait_timed_out(call, w.my_pe, clock.elapsed_ns(), line, from, SHOAL_CMP_EQ, want,
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

/// collect (per-member sizes): each member's num_bytes (may differ) of source, concatenated in team
/// order into every member's dest. Sizes travel as LL messages (which also tells each member that
/// every other has entered, so dest is free), then each member pushes its block at its offset into
/// every member's dest, then a team barrier.
template <class Scope>
__device__ __forceinline__ void collectmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                           size_t num_bytes, const char* call) {
  check_team(w, t, call);
  const int n = t.n_pes;
  const int me = t.my_pe_in_team;
  size_t offset = 0;
  if (n > 1) {
#if SHOAL_DEVICE_CHECKS
    if (w.coll_offset == 0 || w.coll_ll_bytes < 8)
      device_fail_arg(call, w.my_pe, "SHOAL_COLL_LL_BYTES (collect needs >= 8)", w.coll_ll_bytes);
#endif
    const ll_call ll(w);
    const uint64_t mine = num_bytes;
    Scope::sync();
    for (int k = 1; k < n; ++k) ll_send<Scope>(w, ll, team_target(t, k), &mine, sizeof mine, call);
    for (int j = 0; j < me; ++j) offset += ll_recv_line(w, ll, t.world_pe(j), 0, call);
    for (int j = me + 1; j < n; ++j) (void)ll_recv_line(w, ll, t.world_pe(j), 0, call);
    ll_finish<Scope>(w, t, ll);
  } else {
    Scope::sync();
  }
  if (num_bytes > 0) {
    char* my_block = static_cast<char*>(dest) + offset;
    for (int k = 1; k <= n; ++k)
      copy_to_remote<Scope>(peer_ptr(w, my_block, team_target(t, k), call), source, num_bytes);
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
/// (direct algorithm). Barriers are the caller's. kChunk: bytes a channel moves per (target, block).
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

/// broadcastmem / fcollectmem / alltoallmem of the device API: the whole scope pushes every byte
/// (move_direct as channel 0 of 1), then a team barrier.
template <class Scope, move_kind kKind>
__device__ __forceinline__ void move_team(const device_world& w, const device_team& t, void* dest, const void* source,
                                          size_t bytes, int root, const char* call) {
  check_team(w, t, call);
  Scope::sync();  // the scope's writes to source happen before any of its threads reads it
#if SHOAL_DEVICE_CHECKS
  if (kKind == move_kind::broadcast && (root < 0 || root >= t.n_pes))
    device_fail_arg(call, w.my_pe, "root (a team PE number)", root);
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

/// Symmetric-buffer all-reduce (kScatter false: dest and source symmetric, may be the same buffer)
/// or reduce-scatter (true: source holds n_pes blocks of nreduce; dest gets block my_pe_in_team of
/// the reduced vector): LL when the message fits the workspace, else two-shot direct between two
/// team barriers.
template <class Scope, class Op, class T, bool kScatter>
__device__ __forceinline__ void reduce_sym(const device_world& w, const device_team& t, T* dest, const T* source,
                                           size_t nreduce, const char* call) {
  static_assert(is_reduce_type_v<T>, "reduce: T must be an integer, floating-point, half or bfloat16 type");
  check_team(w, t, call);
  if (t.n_pes == 1) {
    reduce_sym_alone<Scope>(dest, source, nreduce);
    return;
  }
  if (ll_fits(w, nreduce * sizeof(T))) {
    reduce_sym_ll<Scope, Op, T, kScatter>(w, t, dest, source, nreduce, call);
  } else {
    reduce_sym_direct<Scope, Op, T, kScatter>(w, t, dest, source, nreduce, call);
  }
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
  detail::move_team<thread_scope, detail::move_kind::broadcast>(w, t, dest, source, num_bytes, root,
                                                                "shoal::device::broadcastmem");
}
__device__ __forceinline__ void broadcastmem_warp(const device_world& w, const device_team& t, void* dest,
                                                  const void* source, size_t num_bytes, int root) {
  detail::move_team<warp_scope, detail::move_kind::broadcast>(w, t, dest, source, num_bytes, root,
                                                              "shoal::device::broadcastmem_warp");
}
__device__ __forceinline__ void broadcastmem_block(const device_world& w, const device_team& t, void* dest,
                                                   const void* source, size_t num_bytes, int root) {
  detail::move_team<block_scope, detail::move_kind::broadcast>(w, t, dest, source, num_bytes, root,
                                                               "shoal::device::broadcastmem_block");
}

/// Concatenates every member's num_bytes_per_pe of `source`, in team order, into `dest` on every
/// member (dest holds n_pes * num_bytes_per_pe bytes; member r's block at r * num_bytes_per_pe).
/// Algorithm: each PE puts its block into every member's dest, then a team barrier. Collective
/// contract.
__device__ __forceinline__ void fcollectmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t num_bytes_per_pe) {
  detail::move_team<thread_scope, detail::move_kind::fcollect>(w, t, dest, source, num_bytes_per_pe, 0,
                                                               "shoal::device::fcollectmem");
}
__device__ __forceinline__ void fcollectmem_warp(const device_world& w, const device_team& t, void* dest,
                                                 const void* source, size_t num_bytes_per_pe) {
  detail::move_team<warp_scope, detail::move_kind::fcollect>(w, t, dest, source, num_bytes_per_pe, 0,
                                                             "shoal::device::fcollectmem_warp");
}
__device__ __forceinline__ void fcollectmem_block(const device_world& w, const device_team& t, void* dest,
                                                  const void* source, size_t num_bytes_per_pe) {
  detail::move_team<block_scope, detail::move_kind::fcollect>(w, t, dest, source, num_bytes_per_pe, 0,
                                                              "shoal::device::fcollectmem_block");
}

/// Block j (num_bytes_per_pe bytes at j * num_bytes_per_pe) of `source` on member i lands as block i
/// of `dest` on member j; source and dest hold n_pes blocks. Algorithm: each PE puts block j to
/// member j, then a team barrier. Collective contract.
__device__ __forceinline__ void alltoallmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                            size_t num_bytes_per_pe) {
  detail::move_team<thread_scope, detail::move_kind::alltoall>(w, t, dest, source, num_bytes_per_pe, 0,
                                                               "shoal::device::alltoallmem");
}
__device__ __forceinline__ void alltoallmem_warp(const device_world& w, const device_team& t, void* dest,
                                                 const void* source, size_t num_bytes_per_pe) {
  detail::move_team<warp_scope, detail::move_kind::alltoall>(w, t, dest, source, num_bytes_per_pe, 0,
                                                             "shoal::device::alltoallmem_warp");
}
__device__ __forceinline__ void alltoallmem_block(const device_world& w, const device_team& t, void* dest,
                                                  const void* source, size_t num_bytes_per_pe) {
  detail::move_team<block_scope, detail::move_kind::alltoall>(w, t, dest, source, num_bytes_per_pe, 0,
                                                              "shoal::device::alltoallmem_block");
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

namespace shoal::device {

/// The device handle of team `team` (a shoal_team_t) as this PE sees it, from the world's device
/// team table. Checked builds trap when the handle is out of range or names no team of this PE.
__device__ __forceinline__ device_team team_of(const device_world& w, int32_t team) {
#if SHOAL_DEVICE_CHECKS
  if (w.teams == nullptr || team < 0 || team >= w.max_teams)
    detail::device_fail_arg("shoal::device::team_of", w.my_pe, "team handle", team);
#endif
  const device_team t = w.teams[team];
#if SHOAL_DEVICE_CHECKS
  if (t.n_pes < 1)
    detail::device_fail_arg("shoal::device::team_of", w.my_pe, "team handle (not a team of this PE)", team);
#endif
  return t;
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
template <class Op, class T>
__device__ __forceinline__ void reduce(const device_world& w, const device_team& t, T* dest, const T* source,
                                       size_t nreduce) {
  detail::reduce_sym<thread_scope, Op, T, false>(w, t, dest, source, nreduce, "shoal::device::reduce");
}
template <class Op, class T>
__device__ __forceinline__ void reduce_warp(const device_world& w, const device_team& t, T* dest, const T* source,
                                            size_t nreduce) {
  detail::reduce_sym<warp_scope, Op, T, false>(w, t, dest, source, nreduce, "shoal::device::reduce_warp");
}
template <class Op, class T>
__device__ __forceinline__ void reduce_block(const device_world& w, const device_team& t, T* dest, const T* source,
                                             size_t nreduce) {
  detail::reduce_sym<block_scope, Op, T, false>(w, t, dest, source, nreduce, "shoal::device::reduce_block");
}

/// Reduce-scatter: source holds n_pes blocks of nreduce elements; dest (nreduce elements) gets block
/// my_pe_in_team of the all-reduced vector. Same contract as reduce above.
template <class Op, class T>
__device__ __forceinline__ void reducescatter(const device_world& w, const device_team& t, T* dest, const T* source,
                                              size_t nreduce) {
  detail::reduce_sym<thread_scope, Op, T, true>(w, t, dest, source, nreduce, "shoal::device::reducescatter");
}
template <class Op, class T>
__device__ __forceinline__ void reducescatter_warp(const device_world& w, const device_team& t, T* dest,
                                                   const T* source, size_t nreduce) {
  detail::reduce_sym<warp_scope, Op, T, true>(w, t, dest, source, nreduce, "shoal::device::reducescatter_warp");
}
template <class Op, class T>
__device__ __forceinline__ void reducescatter_block(const device_world& w, const device_team& t, T* dest,
                                                    const T* source, size_t nreduce) {
  detail::reduce_sym<block_scope, Op, T, true>(w, t, dest, source, nreduce, "shoal::device::reducescatter_block");
}

/// collect: member r's num_bytes of source (sizes may differ between members) land in every
/// member's dest at the sum of the sizes of team PEs 0..r-1. Collective contract (dest symmetric;
/// source local); needs the world's LL workspace (SHOAL_COLL_LL_BYTES >= 8).
__device__ __forceinline__ void collectmem(const device_world& w, const device_team& t, void* dest, const void* source,
                                           size_t num_bytes) {
  detail::collectmem<thread_scope>(w, t, dest, source, num_bytes, "shoal::device::collectmem");
}
__device__ __forceinline__ void collectmem_warp(const device_world& w, const device_team& t, void* dest,
                                                const void* source, size_t num_bytes) {
  detail::collectmem<warp_scope>(w, t, dest, source, num_bytes, "shoal::device::collectmem_warp");
}
__device__ __forceinline__ void collectmem_block(const device_world& w, const device_team& t, void* dest,
                                                 const void* source, size_t num_bytes) {
  detail::collectmem<block_scope>(w, t, dest, source, num_bytes, "shoal::device::collectmem_block");
}

}  // namespace shoal::device
