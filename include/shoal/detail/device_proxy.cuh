// Device producers of the proxy ring (shoal/detail/proxy_ring.hpp): how a kernel hands an operation
// on a proxy peer to its PE's proxy thread. Reached only from the cold branch of a device call
// (peer_route returned -1: the peer's path is proxy and device_world::proxy_ring is live), and from
// fence/quiet/barriers of a world with a ring. One descriptor per call, posted by rank 0 of the
// scope between two syncs of the scope (so the whole scope's earlier writes to a put's source are
// visible, and a get's data is visible to the whole scope after the call). Waits are bounded by the
// world's wait_timeout_ns: a lost proxy reports and traps. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/detail/proxy_ring.hpp"
#include "shoal/device/ptx.cuh"
#include "shoal/device_world.hpp"
#include "shoal/types.h"

namespace shoal::detail {

/// The bounded wait of one ring call: false until wait_timeout_ns (0: never) has passed. The pauses between
/// polls are the ring gate's (ring_gated::idle).
struct ring_clock {
  uint64_t timeout_ns;
  uint64_t start = 0;
  uint32_t polls = 0;
  __device__ __forceinline__ bool operator()() {
    if (timeout_ns == 0 || (++polls & 63u) != 0) return false;
    const uint64_t now = ptx::globaltimer();
    if (start == 0) start = now;
    return now - start > timeout_ns;
  }
};

/// What went wrong with a ring call (proxy_failed's message).
enum class proxy_fault : uint8_t { no_credit, no_reply, engine };

/// Reports a failed ring call of `call` towards `pe` (-1: fence, quiet) and traps. Scalars only: the inline callers
/// never take the address of the world (which would make a kernel holding it as a parameter copy it to local memory).
[[noreturn]] inline __device__ __noinline__ void proxy_failed(device_report_box* box, const char* call, int my_pe,
                                                              int pe, proxy_fault fault, long long st) {
  const char* what = fault == proxy_fault::no_credit  ? "no ring credit within SHOAL_WAIT_TIMEOUT"
                     : fault == proxy_fault::no_reply ? "no reply within SHOAL_WAIT_TIMEOUT"
                                                      : "the engine failed";
#if SHOAL_DEVICE_PRINTF
  if (pe >= 0)
    printf("shoal: PE %d: %s to PE %d over the proxy: %s (status %lld)\n", my_pe, call, pe, what, st);
  else  // fence, quiet: no one peer
    printf("shoal: PE %d: %s over the proxy: %s (status %lld)\n", my_pe, call, what, st);
#endif
  report_and_trap(box, device_report_kind::proxy_failed, call, my_pe, pe, st, what);
}

/// This PE's ring gate (device_sync::proxy_gate, in its own heap's device memory).
__device__ __forceinline__ ring_gate* proxy_gate(const device_world& w) {
  return &reinterpret_cast<device_sync*>(w.heap_base + w.sync_offset)->proxy_gate;
}

/// One ring call as its caller lays it out in its own local memory: the descriptor and what posting it needs from the
/// world. proxy_post_to takes its address: two argument registers, and the world's address never taken (a kernel
/// holding its world as a parameter would copy it to local memory at its start and read it from there on the hot path
/// too).
struct proxy_call {
  proxy_desc desc;
  proxy_ring* ring;
  ring_gate* gate;
  device_report_box* box;
  uint64_t timeout_ns;
  int my_pe;
};

/// Posts `c->desc` from this thread into `c->ring`; waiting descriptors (kProxyWait) return the proxy's reply.
/// Not inlined: the cold branch of a device call is one call, and the kernel's hot path keeps its registers. This is
/// the leaf of most cold chains (RMA, AMO, signal, barrier and collective calls on a proxy peer), so its own
/// registers add to those of every such chain: its wait state lives in this frame's local memory, reached through a
/// pointer the compiler cannot see through, and the empty asm statements with a memory clobber make each phase
/// (reserve, fill and commit, wait) read it again instead of keeping it in registers across the others. A ring call
/// is a round trip over PCIe; a few local loads cost nothing beside it.
inline __device__ __noinline__ uint64_t proxy_post_to(const proxy_call* c, const char* call) {
  struct state {
    ring_clock clock;
    ring_gated watch;
    const proxy_call* c;
    const char* call;
    uint64_t ticket, reply;
    int64_t status;
  } st{ring_clock{c->timeout_ns}, ring_gated{c->gate}, c, call, 0, 0, 0};
  state* S = &st;
  asm volatile("" : "+l"(S));
  // No fence first: the commit is a st.release.sys, which makes this thread's earlier stores (a put's source;
  // for a scoped call, the scope's, ordered before it by the scope's sync) visible before the descriptor.
  S->ticket = ring_reserve(S->c->ring, S->clock, S->watch);
  asm volatile("" ::: "memory");
  if (S->ticket != ~uint64_t{0}) ring_commit(S->c->ring, S->ticket, S->c->desc);
  asm volatile("" ::: "memory");
  const bool wait = (S->c->desc.flags & kProxyWait) != 0;
  if (!wait || S->ticket == ~uint64_t{0}) S->watch.done();
  if (S->ticket == ~uint64_t{0})
    proxy_failed(S->c->box, S->call, S->c->my_pe, S->c->desc.pe, proxy_fault::no_credit, 0);
  if (!wait) return 0;
  asm volatile("" ::: "memory");
  const bool replied = ring_wait(S->c->ring, S->ticket, &S->reply, &S->status, S->clock, S->watch);
  asm volatile("" ::: "memory");
  S->watch.done();
  if (!replied || S->status != 0)
    proxy_failed(S->c->box, S->call, S->c->my_pe, S->c->desc.pe, replied ? proxy_fault::engine : proxy_fault::no_reply,
                 replied ? S->status : 0);
  return S->reply;
}

/// proxy_post_to on the world's ring.
__device__ __forceinline__ uint64_t proxy_post(const device_world& w, const proxy_desc& d, const char* call) {
  const proxy_call c{d, w.proxy_ring, proxy_gate(w), w.report_box, w.wait_timeout_ns, w.my_pe};
  return proxy_post_to(&c, call);
}

/// The scoped form (put/get and their nbi variants at any scope): rank 0 posts, the scope syncs
/// before (the scope's writes to the source are made) and after (a blocking get's data is there for
/// every rank). Replies are for thread-scope calls (g, fetching AMOs), which use proxy_post.
template <class Scope>
__device__ __forceinline__ void proxy_post_scoped(const device_world& w, const proxy_desc& d, const char* call) {
  Scope::sync();
  if (Scope::rank() == 0) proxy_post(w, d, call);
  Scope::sync();
}

/// A descriptor for `op` towards `pe` at heap offset `offset`.
__device__ __forceinline__ proxy_desc proxy_make(proxy_op op, bool wait, int pe, uint64_t offset) {
  proxy_desc d{};
  d.op = op;
  d.flags = wait ? kProxyWait : 0;
  d.pe = pe;
  d.offset = offset;
  return d;
}

/// Heap offset of the symmetric address `p` (the same on every PE).
__device__ __forceinline__ uint64_t proxy_offset(const device_world& w, const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<const char*>(p) - w.heap_base);
}

/// The local buffer of a proxy put/get must be global memory (the proxy hands its address to UCX);
/// checked builds trap for shared or local memory.
__device__ __forceinline__ void proxy_check_global(const device_world& w, const void* p, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (!__isGlobal(p))
    device_fail_arg(w.report_box, call, w.my_pe, "local buffer (not global memory, which the proxy needs)", 0);
#else
  (void)w, (void)p, (void)call;
#endif
}

/// Largest put/get whose local buffer may be outside global memory: its bytes travel in p/g descriptors.
inline constexpr size_t kProxyInlineBytes = 256;

/// put (p pieces, not waiting) or get (g pieces, each waiting for its reply) of nbytes <=
/// kProxyInlineBytes between the symmetric `remote` and a `local` buffer in any memory space: 8-byte
/// pieces, then 4, 2, 1 for the tail.
__device__ __noinline__ inline void proxy_rma_inline(const device_world& w, proxy_op op, const void* remote,
                                                     void* local, size_t nbytes, int pe, const char* call) {
  struct state {
    proxy_call c;
    char* local;
    const char* call;
    uint64_t nbytes, at;
    bool put;
  } st;
  st.c = proxy_call{proxy_desc{}, w.proxy_ring, proxy_gate(w), w.report_box, w.wait_timeout_ns, w.my_pe};
  st.c.desc.pe = pe;
  st.c.desc.offset = proxy_offset(w, remote);
  st.put = op == proxy_op::put;
  st.local = static_cast<char*>(local), st.call = call, st.nbytes = nbytes;
  state* S = &st;
  asm volatile("" : "+l"(S));
  for (S->at = 0; S->at < S->nbytes;) {
    asm volatile("" ::: "memory");
    const size_t left = S->nbytes - S->at;
    const size_t piece = left >= 8 ? 8 : (left >= 4 ? 4 : (left >= 2 ? 2 : 1));
    proxy_desc& d = S->c.desc;
    d.op = S->put ? proxy_op::p : proxy_op::g;
    d.flags = S->put ? 0 : kProxyWait;
    d.nbytes = piece;
    if (S->put) {
      d.operand = 0;
      memcpy(&d.operand, S->local + S->at, piece);
      proxy_post_to(&S->c, S->call);
    } else {
      const uint64_t bits = proxy_post_to(&S->c, S->call);
      asm volatile("" ::: "memory");
      memcpy(S->local + S->at, &bits, piece);
    }
    asm volatile("" ::: "memory");
    S->at += piece;
    d.offset += piece;
  }
}

/// Reserves the next `count` ring slots for this thread (their credit waited for through the gate, bounded) and
/// returns the first ticket, or traps.
__device__ __forceinline__ uint64_t proxy_reserve(const device_world& w, uint64_t count, int pe, const char* call) {
  ring_clock clock{w.wait_timeout_ns};
  ring_gated watch{proxy_gate(w)};
  const uint64_t ticket = ring_reserve(w.proxy_ring, clock, watch, count);
  watch.done();
  if (ticket == ~uint64_t{0}) proxy_failed(w.report_box, call, w.my_pe, pe, proxy_fault::no_credit, 0);
  return ticket;
}

/// How many threads of a Scope carry a call's bytes to or from the ring's payload areas: the scope's first warp
/// (ranks 0-31, one warp of the block: lane == rank), or fewer when the scope is smaller; the thread alone.
template <class Scope>
__device__ __forceinline__ uint32_t carrier_lanes() {
  if constexpr (std::is_same_v<Scope, thread_scope>) {
    return 1;
  } else {
    return Scope::size() < 32 ? Scope::size() : 32;
  }
}

/// The lanes of carrier_lanes() as a warp mask (lane == rank).
__device__ __forceinline__ unsigned carrier_mask(uint32_t lanes) {
  return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

/// Copies nbytes from `from` to `to` over `lanes` threads (this one is `rank`): 16-byte vectors where both
/// addresses and the size allow, else 8-byte words, else bytes. `volatile_from`: `from` is a payload area the proxy
/// writes (host memory read again from memory, never from a cached copy of an earlier use of the slot).
__device__ __forceinline__ void carry_bytes(char* to, const char* from, size_t nbytes, uint32_t rank, uint32_t lanes,
                                            bool volatile_from) {
  const auto bits = reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from) | nbytes;
  if ((bits & 15u) == 0) {
    for (size_t i = rank; i < nbytes / 16; i += lanes) {
      const auto* src = reinterpret_cast<const uint4*>(from) + i;
      reinterpret_cast<uint4*>(to)[i] = volatile_from ? __ldcv(src) : *src;
    }
  } else if ((bits & 7u) == 0) {
    for (size_t i = rank; i < nbytes / 8; i += lanes) {
      const auto* src = reinterpret_cast<const unsigned long long*>(from) + i;
      reinterpret_cast<unsigned long long*>(to)[i] = volatile_from ? __ldcv(src) : *src;
    }
  } else {
    for (size_t i = rank; i < nbytes; i += lanes) {
      const auto* src = reinterpret_cast<const unsigned char*>(from) + i;
      reinterpret_cast<unsigned char*>(to)[i] = volatile_from ? __ldcv(src) : *src;
    }
  }
}

/// A put of nbytes (0 < nbytes <= w.proxy_payload_max) from `local` (any memory space) to heap offset `offset` on
/// pe, carried in the ring's payload areas in pieces of w.proxy_payload bytes, each its own descriptor: lane 0
/// reserves the pieces' consecutive slots (one atomic; a quarter of the ring at a time at most), the `lanes` carrier
/// threads (this one `rank`; one warp, converged) copy each piece into its payload area and lane 0 fills its
/// descriptor (ring_fill); every kCarriedCommitPieces pieces, and at the end of a reservation, a __syncwarp (the
/// other lanes' copies visible first), one fence.acq_rel.sys and lane 0's relaxed state stores commit them
/// (ring_publish): one system fence per 64 KiB instead of one per piece.
/// The last piece is `tail` (a put, or a put_signal with its signal fields); none waits: the source is reusable
/// on return, and the proxy stages nothing from GPU memory. The first piece of each reservation is marked as the
/// start of a run (kProxyRun) of its put pieces, which the proxy sends as one message per 64 KiB.
/// Not inlined (the cold branch of a device call).
inline __device__ __noinline__ void proxy_put_carried(const device_world& w, const proxy_desc* last, const char* local,
                                                      uint32_t rank, uint32_t lanes, const char* call) {
  // The loop's state lives in this frame's local memory, reached through a pointer the compiler cannot see through,
  // and the empty asm statements with a memory clobber make it read the state again after them: this is the deepest
  // frame of a carried put, and what it keeps in registers adds to the calling kernel's count (46 registers with the
  // state in registers, 34 so). The pieces travel over PCIe to the proxy; a few local loads per piece cost nothing.
  struct state {
    const device_world* w;
    const proxy_desc* last;
    const char* local;
    const char* call;
    uint64_t nbytes, payload, at, first, run;
    uint32_t rank, lanes, batch, reserved, committed, k;
  } st;
  st.w = &w, st.last = last, st.local = local, st.call = call, st.rank = rank, st.lanes = lanes;
  st.nbytes = last->nbytes, st.payload = w.proxy_payload;
  st.batch = w.proxy_slots / 4 > 0 ? w.proxy_slots / 4 : 1;
  state* S = &st;
  asm volatile("" : "+l"(S));
  for (S->at = 0; S->at < S->nbytes;) {
    const uint64_t pieces = (S->nbytes - S->at + S->payload - 1) / S->payload;
    S->reserved = pieces < S->batch ? static_cast<uint32_t>(pieces) : S->batch;
    uint64_t first = S->rank == 0 ? proxy_reserve(*S->w, S->reserved, S->last->pe, S->call) : 0;
    if (S->lanes > 1) first = __shfl_sync(carrier_mask(S->lanes), static_cast<unsigned long long>(first), 0);
    S->first = first;
    S->run = carried_run_bytes(S->at, S->nbytes, S->reserved, S->payload, S->last->op == proxy_op::put);
    S->committed = 0;
    for (S->k = 0; S->k < S->reserved; ++S->k) {
      asm volatile("" ::: "memory");
      const uint64_t ticket = S->first + S->k;
      const uint64_t piece = S->nbytes - S->at < S->payload ? S->nbytes - S->at : S->payload;
      carry_bytes(proxy_ring::payload_at(S->w->proxy_ring, S->w->proxy_slots, S->payload, ticket), S->local + S->at,
                  piece, S->rank, S->lanes, false);
      asm volatile("" ::: "memory");
      if (S->rank == 0) {
        proxy_desc d = S->at + piece == S->nbytes ? *S->last : proxy_make(proxy_op::put, false, S->last->pe, 0);
        const uint64_t spare = S->k == 0 ? S->run : 0;
        d.flags = spare > 0 ? kProxyPayload | kProxyRun : kProxyPayload;
        d.spare = spare;
        d.offset = S->last->offset + S->at;
        d.local = 0;
        d.nbytes = piece;
        ring_fill(S->w->proxy_ring, ticket, d);
      }
      asm volatile("" ::: "memory");
      S->at += piece;
      if (S->k + 1 - S->committed == kCarriedCommitPieces || S->k + 1 == S->reserved) {
        if (S->lanes > 1) __syncwarp(carrier_mask(S->lanes));
        if (S->rank == 0) {
          ptx::fence_acq_rel_sys();
          for (uint32_t j = S->committed; j <= S->k; ++j) ring_publish(S->w->proxy_ring, S->first + j);
        }
        S->committed = S->k + 1;
      }
    }
  }
}

/// A blocking get of nbytes (0 < nbytes <= w.proxy_payload) from heap offset `offset` on pe into `local` (any
/// memory space) through its slot's payload area: lane 0 posts a waiting descriptor and waits for the answer
/// (the bytes are in the payload area by then), the carrier lanes copy them out, lane 0 acknowledges (freeing the
/// slot) after a __syncwarp. The proxy makes no copy into GPU memory. Not inlined.
inline __device__ __noinline__ void proxy_get_carried(const device_world& w, uint64_t offset, char* local,
                                                      uint64_t nbytes, int pe, uint32_t rank, uint32_t lanes,
                                                      const char* call) {
  const unsigned mask = carrier_mask(lanes);
  uint64_t ticket = 0;
  int64_t status = 0;
  if (rank == 0) {
    ring_clock clock{w.wait_timeout_ns};
    ring_gated watch{proxy_gate(w)};
    proxy_desc d = proxy_make(proxy_op::get, true, pe, offset);
    d.flags |= kProxyPayload;
    d.nbytes = nbytes;
    ticket = ring_post(w.proxy_ring, d, clock, watch);
    if (ticket == ~uint64_t{0}) {
      watch.done();
      proxy_failed(w.report_box, call, w.my_pe, pe, proxy_fault::no_credit, 0);
    }
    uint64_t reply = 0;
    const bool replied = ring_wait(w.proxy_ring, ticket, &reply, &status, clock, watch, false);
    watch.done();
    if (!replied || status != 0)
      proxy_failed(w.report_box, call, w.my_pe, pe, replied ? proxy_fault::engine : proxy_fault::no_reply,
                   replied ? status : 0);
  }
  if (lanes > 1) ticket = __shfl_sync(mask, static_cast<unsigned long long>(ticket), 0);
  carry_bytes(local, proxy_ring::payload_at(w.proxy_ring, w.proxy_slots, w.proxy_payload, ticket), nbytes, rank, lanes,
              true);
  if (lanes > 1) __syncwarp(mask);
  if (rank == 0) ring_ack(w.proxy_ring, ticket);
}

/// put/get (op put or get) of nbytes between the symmetric `remote` on pe and `local`, at Scope. Blocking calls
/// wait for the proxy's completion (source reusable, data arrived); _nbi ones only post (completed by quiet; the
/// local buffer must stay valid until then). Puts up to w.proxy_payload_max and blocking gets up to one payload
/// area are carried in the ring's payload areas (`local` in any memory space; a carried put returns once posted);
/// other calls need `local` in global memory (the proxy hands its address to UCX), except those of one word or of
/// at most kProxyInlineBytes, whose bytes travel in descriptors.
template <class Scope>
__device__ __forceinline__ void proxy_rma(const device_world& w, proxy_op op, bool nbi, const void* remote,
                                          const void* local, size_t nbytes, int pe, const char* call) {
  const bool one_word = nbytes <= 8 && (nbytes & (nbytes - 1)) == 0;
  // Carried in the ring's payload areas (a ring with them, SHOAL_PROXY_PAYLOAD_MAX): puts in pieces, returning once
  // posted; blocking gets of one piece. The scope's first warp carries the bytes; the others wait at the syncs.
  const bool carried_put = op == proxy_op::put && nbytes <= w.proxy_payload_max;
  const bool carried_get = op == proxy_op::get && !nbi && nbytes <= w.proxy_payload_max && nbytes <= w.proxy_payload;
  if (!one_word && nbytes > 0 && (carried_put || carried_get)) {
    Scope::sync();
    const uint32_t lanes = carrier_lanes<Scope>();
    if (Scope::rank() < lanes) {
      if (carried_put) {
        proxy_desc tail = proxy_make(proxy_op::put, false, pe, proxy_offset(w, remote));
        tail.nbytes = nbytes;
        proxy_put_carried(w, &tail, static_cast<const char*>(local), Scope::rank(), lanes, call);
      } else {
        proxy_get_carried(w, proxy_offset(w, remote), static_cast<char*>(const_cast<void*>(local)), nbytes, pe,
                          Scope::rank(), lanes, call);
      }
    }
    Scope::sync();
    return;
  }
  if (one_word || (!__isGlobal(local) && nbytes <= kProxyInlineBytes)) {
    // Not carried: a buffer in registers, local or shared memory (UCX cannot reach it), or one word (1, 2, 4 or 8
    // bytes): its bytes travel in the descriptors themselves, as p/g do (rank 0 of the scope). A one-word put then
    // returns once posted, with no reply to wait for and no staging copy of its source by the proxy (a waiting
    // round trip through the ring costs a kernel ~6 us: docs/results/proxy/analysis.md), and a one-word get waits for
    // its value in the reply line instead of a copy into GPU memory.
    Scope::sync();
    if (Scope::rank() == 0) proxy_rma_inline(w, op, remote, const_cast<void*>(local), nbytes, pe, call);
    Scope::sync();
    return;
  }
  proxy_check_global(w, local, call);
  proxy_desc d = proxy_make(op, !nbi, pe, proxy_offset(w, remote));
  d.local = reinterpret_cast<uint64_t>(local);
  d.nbytes = nbytes;
  proxy_post_scoped<Scope>(w, d, call);
}

/// The lanes of a warp that called a warp-shared proxy call together (__activemask), met at a __syncwarp so
/// that what each posted before the call is visible to the others, and the lowest of them, which acts for all.
struct warp_group {
  unsigned lanes;
  int leader;
  __device__ __forceinline__ bool leads() const { return static_cast<int>(ptx::lane_id()) == leader; }
};
__device__ __forceinline__ warp_group warp_group_enter() {
  const unsigned lanes = __activemask();
  __syncwarp(lanes);
  return {lanes, __ffs(lanes) - 1};
}

/// quiet over the ring: returns once every descriptor this PE posted before it is complete. Shared twice
/// over, so that a grid whose every thread ends with quiet costs a few proxy round trips, not one UCX flush
/// (nor one stream of host-memory polls) per thread:
/// - in the warp: the lanes that call it together elect one, which quiets for all of them after a
///   __syncwarp (their descriptors were posted before it, so the leader's quiet covers them);
/// - in the ring (ring_quiet_shared): a leader finding a quiet already posted after its warp's descriptors
///   waits for that one's answer instead of posting its own.
/// Its polls back off (ring_gated::idle) and go through the PE's ring gate (ring_gated: a few readers of the ring
/// at a time, the others watch the gate's copy of quiet_done in device memory).
inline __device__ __noinline__ void proxy_quiet_at(const proxy_call* c, const char* call) {
  const warp_group g = warp_group_enter();
  int64_t status = 0;
  if (g.leads()) {
    ring_clock clock{c->timeout_ns};
    ptx::fence_sc_sys();  // the warp's earlier stores before the proxy acts on what it posted
    ring_gated watch{c->gate};
    status = ring_quiet_shared(
        c->ring, clock, [] {}, watch);  // the gate pauses between polls
    watch.done();
  }
  status = static_cast<int64_t>(__shfl_sync(g.lanes, static_cast<unsigned long long>(status), g.leader));
  if (status != 0) {
    const proxy_fault fault = status == kQuietNoCredit  ? proxy_fault::no_credit
                              : status == kQuietNoReply ? proxy_fault::no_reply
                                                        : proxy_fault::engine;
    proxy_failed(c->box, call, c->my_pe, -1, fault, fault == proxy_fault::engine ? status : 0);
  }
}

/// proxy_quiet_at on the world's ring, its arguments laid out in this branch's local memory (proxy_call): the
/// world's address is never taken (a kernel holding its world as a parameter would copy it to local memory at its
/// start and read it from there on the hot path too).
__device__ __forceinline__ void proxy_quiet(const device_world& w, const char* call) {
  const proxy_call c{proxy_desc{}, w.proxy_ring, proxy_gate(w), w.report_box, w.wait_timeout_ns, w.my_pe};
  proxy_quiet_at(&c, call);
}

/// fence over the ring: descriptors posted before it are ordered before those posted after it. Shared in
/// the warp like proxy_quiet: one fence descriptor, posted by one of the lanes calling together after a
/// __syncwarp and before a second one, has a higher ticket than every descriptor those lanes posted before
/// the call and a lower one than every descriptor they post after it, so it orders them all (a grid whose
/// every thread fences posts one descriptor per warp, not one per thread).
inline __device__ __noinline__ void proxy_fence_at(const proxy_call* c, const char* call) {
  const warp_group g = warp_group_enter();
  if (g.leads()) proxy_post_to(c, call);
  __syncwarp(g.lanes);
}

/// proxy_fence_at on the world's ring (its fence descriptor and arguments laid out as proxy_quiet's).
__device__ __forceinline__ void proxy_fence(const device_world& w, const char* call) {
  const proxy_call c{
      proxy_make(proxy_op::fence, false, -1, 0), w.proxy_ring, proxy_gate(w), w.report_box, w.wait_timeout_ns, w.my_pe};
  proxy_fence_at(&c, call);
}

/// Strided put/get as one descriptor per element (posted by rank 0), then a waiting quiet: the
/// elements are complete on return.
template <class Scope>
__device__ __forceinline__ void proxy_strided(const device_world& w, proxy_op op, const char* remote, const char* local,
                                              ptrdiff_t remote_step, ptrdiff_t local_step, size_t nelems,
                                              size_t elem_nbytes, int pe, const char* call) {
  proxy_check_global(w, local, call);
  Scope::sync();
  if (Scope::rank() == 0) {
    for (size_t i = 0; i < nelems; ++i) {
      const auto k = static_cast<ptrdiff_t>(i);
      proxy_desc d = proxy_make(op, false, pe, proxy_offset(w, remote + k * remote_step));
      d.local = reinterpret_cast<uint64_t>(local + k * local_step);
      d.nbytes = elem_nbytes;
      proxy_post(w, d, call);
    }
    proxy_quiet(w, call);
  }
  Scope::sync();
}

/// p: the value travels in the descriptor (8 bytes at most per descriptor; wider T in 8-byte
/// pieces). Not waiting: the value is copied out, and quiet completes it.
template <class T>
__device__ __forceinline__ void proxy_p(const device_world& w, T* dest, T value, int pe, const char* call) {
  static_assert(sizeof(T) <= 8 || sizeof(T) % 8 == 0, "proxy p: T is 1..8 bytes or a multiple of 8");
  constexpr size_t kPiece = sizeof(T) < 8 ? sizeof(T) : 8;
  for (size_t at = 0; at < sizeof(T); at += kPiece) {
    proxy_desc d = proxy_make(proxy_op::p, false, pe, proxy_offset(w, dest) + at);
    memcpy(&d.operand, reinterpret_cast<const char*>(&value) + at, kPiece);
    d.nbytes = kPiece;
    proxy_post(w, d, call);
  }
}

/// g: the value comes back in the reply (wider T in 8-byte pieces).
template <class T>
__device__ __forceinline__ T proxy_g(const device_world& w, const T* source, int pe, const char* call) {
  static_assert(sizeof(T) <= 8 || sizeof(T) % 8 == 0, "proxy g: T is 1..8 bytes or a multiple of 8");
  constexpr size_t kPiece = sizeof(T) < 8 ? sizeof(T) : 8;
  T value;
  for (size_t at = 0; at < sizeof(T); at += kPiece) {
    proxy_desc d = proxy_make(proxy_op::g, true, pe, proxy_offset(w, source) + at);
    d.nbytes = kPiece;
    const uint64_t bits = proxy_post(w, d, call);
    memcpy(reinterpret_cast<char*>(&value) + at, &bits, kPiece);
  }
  return value;
}

/// One 4- or 8-byte atomic on `dest` on pe (the ring's opcodes; cswap: operand is the compare
/// value, `swap_in` the new one). Fetching forms wait for the old value; others only post.
__device__ __forceinline__ uint64_t proxy_atomic(const device_world& w, const void* dest, proxy_amo code, size_t nbytes,
                                                 uint64_t operand, uint64_t swap_in, bool fetch, int pe,
                                                 const char* call) {
  proxy_desc d = proxy_make(proxy_op::amo, fetch, pe, proxy_offset(w, dest));
  d.amo = static_cast<uint8_t>(code);
  d.nbytes = nbytes;
  d.operand = operand;
  d.compare = swap_in;
  return proxy_post(w, d, call);
}

/// The typed AMO of the device API on a proxy peer: one ring atomic on T's bits; float and double add
/// run a fetch + compare-and-swap loop through the ring (UCX and the owner apply integer ops only).
template <class T>
__device__ __forceinline__ T proxy_amo_typed(const device_world& w, T* dest, proxy_amo code, T value, T cond,
                                             bool fetch, int pe, const char* call) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  auto bits = [](T v) { return static_cast<uint64_t>(bits_as<U>(v)); };
  if (std::is_floating_point_v<T> && code == proxy_amo::add) {
    U old = static_cast<U>(proxy_atomic(w, dest, proxy_amo::or_, sizeof(T), 0, 0, true, pe, call));
    for (;;) {
      const T next = bits_as<T>(old) + value;
      const U seen =
          static_cast<U>(proxy_atomic(w, dest, proxy_amo::cswap, sizeof(T), old, bits(next), true, pe, call));
      if (seen == old) return bits_as<T>(old);
      old = seen;
    }
  } else if (code == proxy_amo::cswap) {
    return bits_as<T>(static_cast<U>(proxy_atomic(w, dest, code, sizeof(T), bits(cond), bits(value), true, pe, call)));
  } else {
    return bits_as<T>(static_cast<U>(proxy_atomic(w, dest, code, sizeof(T), bits(value), 0, fetch, pe, call)));
  }
}

/// put-with-signal: data, then (ordered after it by the proxy) the signal's set (swap) or add. A
/// blocking call waits for the whole operation; _nbi only posts.
template <class Scope>
__device__ __forceinline__ void proxy_put_signal(const device_world& w, bool nbi, void* dest, const void* source,
                                                 size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                                 const char* call) {
  proxy_desc d = proxy_make(proxy_op::put_signal, !nbi, pe, proxy_offset(w, dest));
  d.nbytes = nbytes;
  d.amo = static_cast<uint8_t>(sig_op == SHOAL_SIGNAL_ADD ? proxy_amo::add : proxy_amo::swap);
  d.operand = signal;
  d.compare = proxy_offset(w, sig_addr);
  if (nbytes > 0 && nbytes <= w.proxy_payload_max) {
    // Carried (proxy_put_carried): the data in payload pieces, the last one the put_signal; returns once posted
    // (a blocking put-with-signal waits only until its source is reusable).
    Scope::sync();
    const uint32_t lanes = carrier_lanes<Scope>();
    if (Scope::rank() < lanes) {
      d.flags = 0;
      proxy_put_carried(w, &d, static_cast<const char*>(source), Scope::rank(), lanes, call);
    }
    Scope::sync();
    return;
  }
  proxy_check_global(w, source, call);
  d.local = reinterpret_cast<uint64_t>(source);
  proxy_post_scoped<Scope>(w, d, call);
}

/// signal_op on a proxy peer: a non-fetching set (swap) or add of the 8-byte signal word.
__device__ __forceinline__ void proxy_signal_op(const device_world& w, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                int pe, const char* call) {
  const proxy_amo code = sig_op == SHOAL_SIGNAL_ADD ? proxy_amo::add : proxy_amo::swap;
  proxy_atomic(w, sig_addr, code, 8, signal, 0, false, pe, call);
}

/// One barrier flag store towards `pe` (local: peer_route's result): st.relaxed.sys (round 0,
/// released by the fence before it) or st.release.sys; a proxy peer gets an 8-byte p through the
/// ring (ordered after this PE's earlier proxy operations by the barrier's ring quiet). World and team
/// barriers.
__device__ __forceinline__ void barrier_flag(const device_world& w, uint64_t* flag, int32_t local, int pe,
                                             uint64_t epoch, bool release, const char* call) {
  if (local < 0) return proxy_p(w, flag, epoch, pe, call);
  uint64_t* remote = local_peer_ptr(w, flag, local);
  if (release) {
    ptx::st_release_sys(remote, epoch);
  } else {
    ptx::st_relaxed_sys(remote, epoch);
  }
}

}  // namespace shoal::detail
