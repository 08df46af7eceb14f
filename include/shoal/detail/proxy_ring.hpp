// The proxy's request ring: fixed 64-byte descriptors in pinned, device-mapped host memory (one
// ring per PE), written by any number of producers (GPU threads, host threads) and drained in
// ticket order by the PE's proxy thread. Plain C++ that also compiles as device code: the same
// producer functions serve kernels and host calls, so both share one ordering domain.
//
// Protocol (docs/design.md, "The proxy ring"):
//   reserve  ticket = fetch_add(reserved, 1); wait for a credit: ticket < released + slots
//   commit   fill slot ticket % slots, then state = ticket*4 + committed (release)
//   consume  the proxy reads slot head % slots once its state is head*4 + committed (acquire)
//   reply    for a waiting descriptor (whose producer cleared the slot's reply line before committing) the
//            proxy writes the reply line: two words, each half of the value (or of the failure status) and
//            the ticket's flag, so one 16-byte read shows both halves and that they are this ticket's answer;
//            the producer reads it and acknowledges with state = ticket*4 + done
//   release  other descriptors: the proxy sets done once it copied them out; `released` advances
//            over consecutive done slots, which gives producers their credits back
//   payload  where the ring has one (kernels' rings): a put's bytes travel in the slot's payload area, written by
//            the producer between reserve and commit, so the proxy stages nothing from GPU memory; a waiting get's
//            bytes land there and the producer copies them out before it acknowledges
// quiet = a waiting descriptor the proxy answers once everything it issued before is complete;
// fence = a descriptor that orders what came before it against what comes after.
#pragma once

#include <cstdint>

#include "shoal/device_world.hpp"

#if defined(__CUDA_ARCH__)
#include "shoal/device/ptx.cuh"
#else
#endif

namespace shoal::detail {

/// What a descriptor asks the proxy to do.
enum class proxy_op : uint8_t {
  put,         ///< nbytes from `local` to `offset` on pe
  get,         ///< nbytes from `offset` on pe to `local`
  p,           ///< the low nbytes (1..8) of `operand` to `offset` on pe
  g,           ///< nbytes (1..8) from `offset` on pe into `reply`
  amo,         ///< proxy_amo `amo` on nbytes (4, 8) at `offset` on pe: operand; cswap: compare = the
               ///< new value (UCP's convention), compared against operand; old value into `reply`
  put_signal,  ///< put, fence, then signal op `amo` (set/add) of `operand` at `compare` on pe
  fence,       ///< orders every earlier descriptor before every later one (per PE)
  quiet,       ///< waiting: answered once every earlier descriptor is complete
};

/// The atomic opcodes a descriptor carries (proxy_desc::amo), as the engine issues them: the
/// producer maps OpenSHMEM's AMOs onto them (fetch = or 0, set = swap, inc = add 1). The values
/// equal the engine's ucx_amo (checked in ucx_engine.cc).
enum class proxy_amo : uint8_t { add, swap, cswap, and_, or_, xor_ };

/// proxy_ring::quiet_posted's flag: a producer is posting the next shared quiet (ring_quiet_shared).
inline constexpr uint64_t kQuietPosting = uint64_t{1} << 63;

/// Descriptor flag: the producer waits for the proxy's reply (blocking calls, fetches, quiet).
inline constexpr uint8_t kProxyWait = 1;
/// Descriptor flag: the data are in the slot's payload area (proxy_ring::payload), not at `local`. A put or
/// put_signal: the producer wrote its nbytes (<= the ring's payload) there before the commit, so its source is
/// reusable once posted. A get (waiting): the proxy lands the bytes there before answering, and the producer copies
/// them out before it acknowledges (the slot, payload included, is its own until then).
inline constexpr uint8_t kProxyPayload = 2;
/// Descriptor flag, on a carried put's piece (kProxyPayload): the first of a run of pieces at consecutive tickets,
/// one descriptor each, every one a put of the same pe at the offset where the one before ended; `spare` holds the
/// run's bytes (this piece's included). The proxy may gather the run into fewer, larger messages (up to 64 KiB
/// each: kCarriedRunMessage in ucx_engine.cc) instead of one per piece. A hint: without it every piece is its own
/// message.
inline constexpr uint8_t kProxyRun = 4;

/// Pieces of a carried put that its producer commits together, with one release (ring_fill, then ring_publish):
/// a kernel pays one system fence per 64 KiB of 4 KiB areas instead of one per piece.
inline constexpr uint64_t kCarriedCommitPieces = 16;

/// Bytes of the run (kProxyRun) that the piece at byte `at` of a carried put of nbytes starts, when the producer
/// reserved `batch` consecutive tickets for its pieces from there on (each piece `payload` bytes but the last), or
/// 0 when it would be one piece. `tail_is_put`: the put's last piece is a plain put (a put_signal's last piece
/// carries the signal, so it stays out of the run).
SHOAL_HOST_DEVICE constexpr uint64_t carried_run_bytes(uint64_t at, uint64_t nbytes, uint64_t batch, uint64_t payload,
                                                       bool tail_is_put) {
  uint64_t end = at + batch * payload < nbytes ? at + batch * payload : nbytes;
  if (!tail_is_put && end == nbytes) end = (nbytes - 1) / payload * payload;  // up to the last piece
  return end > at + payload ? end - at : 0;
}

/// One request. The proxy copies it out before it releases the slot; `local` must stay valid
/// until the call's completion (blocking: its return; nbi: the next quiet).
struct proxy_desc {
  uint64_t state;  ///< ticket*4 + proxy_state; written with release, read with acquire
  proxy_op op;
  uint8_t flags;  ///< kProxyWait, kProxyPayload, kProxyRun
  uint8_t amo;    ///< amo_op code (src/transport/scalar.hpp)
  uint8_t type;   ///< scalar_kind << 4 | bytes
  int32_t pe;
  uint64_t offset;  ///< heap offset on pe
  uint64_t local;   ///< address of the local buffer (source of put, destination of get); 0 with kProxyPayload
  uint64_t nbytes;
  uint64_t operand;  ///< p value, AMO operand, signal value
  uint64_t compare;  ///< compare_swap's compare value; put_signal's signal offset
  uint64_t spare;    ///< kProxyRun: the run's bytes; else zero (the answer travels in the slot's proxy_reply)
};
static_assert(sizeof(proxy_desc) == 64);

/// Low two bits of proxy_desc::state.
enum proxy_state : uint64_t { kSlotCommitted = 1, kSlotDone = 3 };

/// The flag of `ticket`'s reply line: odd, so never zero; a failure (the value then holds the engine's status)
/// flips the top bit.
SHOAL_HOST_DEVICE constexpr uint32_t reply_flag(uint64_t ticket, bool ok) {
  const uint32_t flag = static_cast<uint32_t>(ticket) * 2u + 1u;
  return ok ? flag : flag ^ 0x80000000u;
}

/// The proxy's answer to a waiting descriptor, one per slot after the descriptors: each word holds a 32-bit half
/// of the value (low bits) under the ticket's flag (high bits, reply_flag). A kernel reads the line with one
/// 16-byte load across PCIe, where reading a state word and then the value cost two round trips (~1.4 us each on
/// an H200, shoal-ring-probe); each 8-byte word is single-copy atomic, so a word with the right flag holds the
/// right half. The producer zeroes the line before committing (a zero flag is never valid).
struct proxy_reply {
  uint64_t lo;  ///< flag << 32 | low half of the value
  uint64_t hi;  ///< flag << 32 | high half

  /// The line that answers `ticket`: `value` when `status` is 0, else the status, under the ticket's flag.
  SHOAL_HOST_DEVICE static proxy_reply answer(uint64_t ticket, uint64_t value, int64_t status) {
    const bool ok = status == 0;
    const uint64_t bits = ok ? value : static_cast<uint64_t>(status);
    const uint64_t flag = uint64_t{reply_flag(ticket, ok)} << 32;
    return {flag | (bits & 0xffffffffu), flag | (bits >> 32)};
  }
  /// True when this line (as read: each word whole, the pair not) answers `ticket`, i.e. both words carry its
  /// flag; then its value (0 on failure) and status (0: success, else the engine's).
  SHOAL_HOST_DEVICE bool answers(uint64_t ticket, uint64_t* value, int64_t* status) const {
    const auto flag = static_cast<uint32_t>(lo >> 32);
    const bool ok = flag == reply_flag(ticket, true);
    if (flag != static_cast<uint32_t>(hi >> 32) || (!ok && flag != reply_flag(ticket, false))) return false;
    const uint64_t bits = (lo & 0xffffffffu) | (hi << 32);
    *value = ok ? bits : 0;
    *status = ok ? 0 : static_cast<int64_t>(bits);
    return true;
  }
};
static_assert(sizeof(proxy_reply) == 16);

/// A ring's geometry as kernels hold it (device_world::proxy_slots, proxy_payload).
struct proxy_ring_shape {
  uint32_t slots = 0;
  uint32_t payload = 0;  ///< bytes of each slot's payload area (0: none)
};

/// The ring's control words, followed in the same allocation by `slots` descriptors, their reply lines and (when
/// `payload` is not 0) a payload area of `payload` bytes per slot. Each counter sits on its own cache line:
/// producers hammer `reserved`, the proxy writes `released`.
struct proxy_ring {
  alignas(64) uint64_t reserved;      ///< the next ticket (producers' fetch_add)
  alignas(64) uint64_t released;      ///< tickets below this are free (the proxy's credits)
  alignas(64) uint64_t quiet_posted;  ///< 1 + the newest shared quiet's ticket (0: none); kQuietPosting: one is
                                      ///< being posted
  alignas(64) uint64_t quiet_done;    ///< 1 + the newest answered quiet's ticket (0: none): every other ticket
                                      ///< below it is complete
  alignas(64) uint32_t slots;         ///< a power of two
  uint32_t payload;                   ///< bytes of each slot's payload area (a multiple of 64; 0: none)
  uint64_t pad[7];

  SHOAL_HOST_DEVICE proxy_desc* slot(uint64_t ticket) {
    return reinterpret_cast<proxy_desc*>(this + 1) + (ticket & (slots - 1));
  }
  SHOAL_HOST_DEVICE proxy_reply* reply_line(uint64_t ticket) {
    return reinterpret_cast<proxy_reply*>(reinterpret_cast<proxy_desc*>(this + 1) + slots) + (ticket & (slots - 1));
  }
  /// Where the payload areas start, from the ring's start (64-byte aligned).
  SHOAL_HOST_DEVICE static constexpr uint64_t payload_offset(uint32_t slots) {
    return (sizeof(proxy_ring) + uint64_t{slots} * (sizeof(proxy_desc) + sizeof(proxy_reply)) + 63) & ~uint64_t{63};
  }
  /// `ticket`'s payload area in a ring of `slots` slots with `payload` bytes each (kernels pass the geometry they
  /// hold in device memory, so finding the area reads no host memory).
  SHOAL_HOST_DEVICE static char* payload_at(proxy_ring* ring, uint32_t slots, uint32_t payload, uint64_t ticket) {
    return reinterpret_cast<char*>(ring) + payload_offset(slots) + (ticket & (slots - 1)) * payload;
  }
  SHOAL_HOST_DEVICE char* payload_of(uint64_t ticket) { return payload_at(this, slots, payload, ticket); }
  /// Bytes of a ring with `slots` descriptors, their reply lines and `payload` bytes of payload area per slot.
  static constexpr uint64_t nbytes_for(uint32_t slots, uint32_t payload = 0) {
    return payload_offset(slots) + uint64_t{slots} * payload;
  }
};
static_assert(sizeof(proxy_ring) == 320);

namespace ring_atomic {

// The ring's atomics: system-scope PTX on the device, the GCC/Clang __atomic builtins on the host (any
// C++ standard: device code includes this header from C++17 translation units too).
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint64_t fetch_add(uint64_t* a, uint64_t v) { return ptx::atom_add_relaxed_sys(a, v); }
__device__ __forceinline__ uint64_t load_acquire(uint64_t* a) { return ptx::ld_acquire_sys(a); }
__device__ __forceinline__ void store_release(uint64_t* a, uint64_t v) { ptx::st_release_sys(a, v); }
__device__ __forceinline__ uint64_t cas(uint64_t* a, uint64_t expected, uint64_t desired) {
  return ptx::atom_cas_relaxed_sys(a, expected, desired);
}
__device__ __forceinline__ void store_relaxed(uint64_t* a, uint64_t v) { ptx::st_relaxed_sys(a, v); }
__device__ __forceinline__ void load_line(proxy_reply* r, uint64_t& lo, uint64_t& hi) {
  ptx::ld_acquire_sys_v2(&r->lo, lo, hi);
}
__device__ __forceinline__ void clear_line(proxy_reply* r) { ptx::st_relaxed_sys_v2(&r->lo, 0, 0); }
// Kernels never answer; this form lets .cu files that hold a ring_consumer (shoal-ring-probe) compile.
__device__ __forceinline__ void store_line(proxy_reply* r, proxy_reply v) {
  ptx::st_release_sys(&r->lo, v.lo);
  ptx::st_release_sys(&r->hi, v.hi);
}
#else
inline uint64_t fetch_add(uint64_t* a, uint64_t v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline uint64_t load_acquire(uint64_t* a) { return __atomic_load_n(a, __ATOMIC_ACQUIRE); }
inline void store_release(uint64_t* a, uint64_t v) { __atomic_store_n(a, v, __ATOMIC_RELEASE); }
inline uint64_t cas(uint64_t* a, uint64_t expected, uint64_t desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;  // the value found: `expected` itself when the exchange happened
}
inline void store_relaxed(uint64_t* a, uint64_t v) { __atomic_store_n(a, v, __ATOMIC_RELAXED); }
inline void load_line(proxy_reply* r, uint64_t& lo, uint64_t& hi) {
  lo = __atomic_load_n(&r->lo, __ATOMIC_ACQUIRE);
  hi = __atomic_load_n(&r->hi, __ATOMIC_ACQUIRE);
}
/// The proxy's write of a reply line (each word released; their order does not matter to readers).
inline void store_line(proxy_reply* r, proxy_reply v) {
  __atomic_store_n(&r->lo, v.lo, __ATOMIC_RELEASE);
  __atomic_store_n(&r->hi, v.hi, __ATOMIC_RELEASE);
}
inline void clear_line(proxy_reply* r) { store_line(r, proxy_reply{}); }
#endif

}  // namespace ring_atomic

/// Producers reading the ring's host-memory words at once, per gate.
inline constexpr uint64_t kRingPollers = 8;

namespace gate_atomic {
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint64_t load_acquire(const uint64_t* a) { return ptx::ld_acquire_gpu(a); }
__device__ __forceinline__ uint64_t fetch_add(uint64_t* a, uint64_t v) { return ptx::atom_add_relaxed_gpu(a, v); }
__device__ __forceinline__ void add(uint64_t* a, uint64_t v) { ptx::red_add_relaxed_gpu(a, v); }
__device__ __forceinline__ void raise_release(uint64_t* a, uint64_t v) { ptx::red_max_release_gpu(a, v); }
#else
inline uint64_t load_acquire(const uint64_t* a) { return __atomic_load_n(a, __ATOMIC_ACQUIRE); }
inline uint64_t fetch_add(uint64_t* a, uint64_t v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline void add(uint64_t* a, uint64_t v) { __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline void raise_release(uint64_t* a, uint64_t v) {
  uint64_t seen = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (seen < v && !__atomic_compare_exchange_n(a, &seen, v, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}
#endif
}  // namespace gate_atomic

/// How a producer reads the ring's proxy-written words: ring_direct reads them at every poll (host
/// producers: the ring is in their own memory); ring_gated goes through a ring_gate (kernels).
///   released_seen(), quiet_done_seen()   lower bounds known without reading the ring (0: none)
///   enter()                              true: this producer may read the ring now (then leave())
///   saw_released(v), saw_quiet_done(v)   publish what it read (only values above what it had seen)
///   also_released()                      true: this unsatisfied read of the ring should also refresh the copy of
///                                        released
///   idle()                               after an unsatisfied poll: the pause before the next one
///   done()                               the producer's waiting is over (its call returns)
struct ring_direct {
  SHOAL_HOST_DEVICE uint64_t released_seen() const { return 0; }
  SHOAL_HOST_DEVICE uint64_t quiet_done_seen() const { return 0; }
  SHOAL_HOST_DEVICE bool enter() { return true; }
  SHOAL_HOST_DEVICE void leave() {}
  SHOAL_HOST_DEVICE void saw_released(uint64_t) {}
  SHOAL_HOST_DEVICE void saw_quiet_done(uint64_t) {}
  SHOAL_HOST_DEVICE bool also_released() { return false; }
  SHOAL_HOST_DEVICE void idle() {}
  SHOAL_HOST_DEVICE void done() {}
};

/// ring_gated's pauses between polls on the device (__nanosleep(t) sleeps up to 2t on an H200: 1024 took 2.05 us
/// in shoal-ring-probe): a direct waiter's poll is itself a ~1.4 us read of host memory, so it pauses little;
/// the others back off to 1 us (a full grid watching the gate's copies).
inline constexpr uint32_t kDirectPauseNs = 64;
inline constexpr uint32_t kGatedPauseNs = 1024;

/// Through a ring_gate. The first kRingPollers producers waiting at once read the ring at every poll, as
/// ring_direct does (a lone waiter pays two gate atomics per call, not per poll); later ones take one of
/// kRingPollers places for each read, and otherwise watch the gate's copies. Every fourth unsatisfied read of a
/// reply or of quiet_done also refreshes the copy of released: a producer waiting for credit may lose the race
/// for a place to other waiters for as long as they keep reading, but then their reads refresh the copy it
/// watches. A satisfied read returns at once (the refresh is off a lone waiter's path).
struct ring_gated {
  ring_gate* gate;
  bool waiting = false;    // counted in gate->waiting
  bool direct = false;     // among the first kRingPollers waiters: reads without taking a place
  uint32_t reads = 0;      // unsatisfied reads of a reply or of quiet_done (also_released)
  uint32_t pause_ns = 32;  // idle(): doubles up to kDirectPauseNs or kGatedPauseNs

  SHOAL_HOST_DEVICE uint64_t released_seen() const { return gate_atomic::load_acquire(&gate->released); }
  SHOAL_HOST_DEVICE uint64_t quiet_done_seen() const { return gate_atomic::load_acquire(&gate->quiet_done); }
  SHOAL_HOST_DEVICE bool enter() {
    if (!waiting) {
      waiting = true;
      direct = gate_atomic::fetch_add(&gate->waiting, 1) < kRingPollers;
    }
    if (direct) return true;
    // test, then take: waiters that find every place taken only load the count
    if (gate_atomic::load_acquire(&gate->pollers) >= kRingPollers) return false;
    if (gate_atomic::fetch_add(&gate->pollers, 1) < kRingPollers) return true;
    gate_atomic::add(&gate->pollers, ~uint64_t{0});
    return false;
  }
  SHOAL_HOST_DEVICE void leave() {
    if (!direct) gate_atomic::add(&gate->pollers, ~uint64_t{0});
  }
  SHOAL_HOST_DEVICE void saw_released(uint64_t v) { gate_atomic::raise_release(&gate->released, v); }
  SHOAL_HOST_DEVICE void saw_quiet_done(uint64_t v) { gate_atomic::raise_release(&gate->quiet_done, v); }
  SHOAL_HOST_DEVICE bool also_released() { return (reads++ & 3u) == 0; }
  SHOAL_HOST_DEVICE void idle() {
#if defined(__CUDA_ARCH__)
    __nanosleep(pause_ns);
    const uint32_t cap = direct ? kDirectPauseNs : kGatedPauseNs;
    pause_ns = pause_ns * 2 < cap ? pause_ns * 2 : cap;
#endif
  }
  SHOAL_HOST_DEVICE void done() {
    if (waiting) gate_atomic::add(&gate->waiting, ~uint64_t{0});
    waiting = direct = false;
  }
};

/// Inside a read of the ring (between watch.enter() and leave()): reads released and publishes it where it
/// is above `seen`, the watch's copy.
template <class Watch>
SHOAL_HOST_DEVICE uint64_t ring_read_released(proxy_ring* ring, Watch& watch, uint64_t seen) {
  const uint64_t released = ring_atomic::load_acquire(&ring->released);
  if (released > seen) watch.saw_released(released);
  return released;
}

/// The same where the watch asks for it (every few unsatisfied reads of other words), for the producers waiting
/// for credit without a place.
template <class Watch>
SHOAL_HOST_DEVICE void ring_share_released(proxy_ring* ring, Watch& watch) {
  if (watch.also_released()) ring_read_released(ring, watch, watch.released_seen());
}

/// True when `ticket` has a credit (ticket < released + slots), as far as `watch` can tell now.
template <class Watch>
SHOAL_HOST_DEVICE bool ring_credit(proxy_ring* ring, uint64_t ticket, uint64_t slots, Watch& watch) {
  const uint64_t seen = watch.released_seen();
  if (ticket < seen + slots) return true;
  if (!watch.enter()) return false;
  const uint64_t released = ring_read_released(ring, watch, seen);
  watch.leave();
  return ticket < released + slots;
}

/// Reserves the next `count` consecutive tickets (count <= slots) and waits for the credit of the last (its polls
/// through `watch`); `expired()` is asked once per unsatisfied poll and ends the wait (returning ~0) when it says
/// true. Returns the first. The slots (and their payload areas) are then the producer's to fill until ring_commit,
/// which must follow for each: the proxy takes tickets in order and waits for every one.
template <class Clock, class Watch = ring_direct>
SHOAL_HOST_DEVICE uint64_t ring_reserve(proxy_ring* ring, Clock& expired, Watch&& watch = Watch{}, uint64_t count = 1) {
  const uint64_t slots = ring->slots;
  const uint64_t ticket = ring_atomic::fetch_add(&ring->reserved, count);
  while (!ring_credit(ring, ticket + count - 1, slots, watch)) {
    if (expired()) return ~uint64_t{0};
    watch.idle();
  }
  return ticket;
}

/// Writes `ticket`'s descriptor `d` (its op, flags and fields; state is ignored) but not its state; a waiting
/// descriptor's reply line is zeroed. ring_commit and ring_publish then commit it.
SHOAL_HOST_DEVICE inline void ring_fill(proxy_ring* ring, uint64_t ticket, const proxy_desc& d) {
  proxy_desc* s = ring->slot(ticket);
  s->op = d.op, s->flags = d.flags, s->amo = d.amo, s->type = d.type, s->pe = d.pe;
  s->offset = d.offset, s->local = d.local, s->nbytes = d.nbytes;
  s->operand = d.operand, s->compare = d.compare, s->spare = d.spare;
  if ((d.flags & kProxyWait) != 0) ring_atomic::clear_line(ring->reply_line(ticket));
}

/// Fills `ticket`'s slot with `d` (ring_fill) and commits it. The commit is a release: the producer's earlier stores
/// (a payload it wrote; for a scoped call, the scope's, ordered before by the scope's sync) are visible first.
SHOAL_HOST_DEVICE inline void ring_commit(proxy_ring* ring, uint64_t ticket, const proxy_desc& d) {
  ring_fill(ring, ticket, d);
  ring_atomic::store_release(&ring->slot(ticket)->state, ticket * 4 + kSlotCommitted);
}

/// Commits the filled (ring_fill) `ticket` with a relaxed store, for a producer that commits several tickets with
/// one release (a carried put's pieces): it must follow a release fence (fence.acq_rel.sys on the device) that
/// itself follows every ring_fill and payload write it publishes.
SHOAL_HOST_DEVICE inline void ring_publish(proxy_ring* ring, uint64_t ticket) {
  ring_atomic::store_relaxed(&ring->slot(ticket)->state, ticket * 4 + kSlotCommitted);
}

/// Acknowledges the answer to the waiting descriptor `ticket`, which frees its slot. A relaxed store: the answer
/// was read with acquire, which orders this after that read (and after the reads of the payload behind it, which
/// the caller made before).
SHOAL_HOST_DEVICE inline void ring_ack(proxy_ring* ring, uint64_t ticket) {
  ring_atomic::store_relaxed(&ring->slot(ticket)->state, ticket * 4 + kSlotDone);
}

/// Posts `d` (ring_reserve, then ring_commit) and returns its ticket, or ~0 when `expired()` ended the wait for a
/// credit. Thread-safe across any number of producers.
template <class Clock, class Watch = ring_direct>
SHOAL_HOST_DEVICE uint64_t ring_post(proxy_ring* ring, const proxy_desc& d, Clock& expired, Watch&& watch = Watch{}) {
  const uint64_t ticket = ring_reserve(ring, expired, watch);
  if (ticket != ~uint64_t{0}) ring_commit(ring, ticket, d);
  return ticket;
}

/// Waits for the proxy's reply to the waiting descriptor `ticket` (its reply line), acknowledges it (freeing the
/// slot; with `ack` false the caller does, with ring_ack, once it has read the slot's payload) and returns the value
/// and the proxy's status (0: success, else the engine's negative error code). False when `expired()` ended the
/// wait (the slot stays held). Polls through `watch`.
template <class Clock, class Watch = ring_direct>
SHOAL_HOST_DEVICE bool ring_wait(proxy_ring* ring, uint64_t ticket, uint64_t* reply, int64_t* status, Clock& expired,
                                 Watch&& watch = Watch{}, bool ack = true) {
  proxy_reply* line = ring->reply_line(ticket);
  for (;;) {
    if (watch.enter()) {
      proxy_reply seen{};
      ring_atomic::load_line(line, seen.lo, seen.hi);
      if (seen.answers(ticket, reply, status)) {
        watch.leave();
        break;
      }
      ring_share_released(ring, watch);
      watch.leave();
    }
    if (expired()) return false;
    watch.idle();
  }
  if (ack) ring_ack(ring, ticket);
  return true;
}

/// What ring_quiet_shared reports besides success (0) and the proxy's own status (negative).
inline constexpr int64_t kQuietNoCredit = 1;  ///< its quiet found no ring credit before `expired`
inline constexpr int64_t kQuietNoReply = 2;   ///< no answer before `expired`

/// quiet for one producer among many calling it at once (every thread of a grid ending a kernel with
/// quiet): where a quiet at or after this producer's last possible descriptor exists (ticket >=
/// `reserved` - 1 as read on entry: the slot just below may be that quiet itself), the producer waits
/// for that quiet's answer (the proxy raises `quiet_done` when it answers one) instead of posting its
/// own; otherwise it posts a waiting quiet (one producer at a time, through kQuietPosting) and the
/// others wait for it. So a grid of N threads costs a few ring round trips, not N. Returns 0 once every
/// descriptor posted before the call is complete; a quiet this producer posted itself returns the
/// proxy's status (negative: the engine failed; a failure answered to another producer's quiet is that
/// producer's to report); kQuietNoCredit or kQuietNoReply when `expired()` ended a wait. Its polls go
/// through `watch` (a producer that cannot read the ring now watches the gate's quiet_done); the caller
/// ends the watch (done()). `pause()` runs between polls.
template <class Clock, class Pause, class Watch = ring_direct>
SHOAL_HOST_DEVICE int64_t ring_quiet_shared(proxy_ring* ring, Clock& expired, Pause&& pause, Watch&& watch = Watch{}) {
  // This producer's descriptors have tickets below `mine`; a quiet with ticket >= mine - 1 covers them
  // (both counters hold 1 + a ticket, so the test is >= mine).
  const uint64_t mine = ring_atomic::load_acquire(&ring->reserved);
  bool covered = false;  // a quiet that covers this producer is posted: only its answer is awaited
  for (;;) {
    const uint64_t seen = watch.quiet_done_seen();
    if (seen >= mine) return 0;
    uint64_t posted = 0;
    if (watch.enter()) {
      const uint64_t done = ring_atomic::load_acquire(&ring->quiet_done);
      if (done >= mine) {
        watch.leave();
        if (done > seen) watch.saw_quiet_done(done);
        return 0;
      }
      if (!covered) posted = ring_atomic::load_acquire(&ring->quiet_posted);
      ring_share_released(ring, watch);
      watch.leave();
      if (done > seen) watch.saw_quiet_done(done);
      if (!covered && (posted & kQuietPosting) == 0) {
        if (posted >= mine) {
          covered = true;
        } else if (ring_atomic::cas(&ring->quiet_posted, posted, posted | kQuietPosting) == posted) {
          proxy_desc d{};
          d.op = proxy_op::quiet;
          d.flags = kProxyWait;
          d.pe = -1;
          const uint64_t ticket = ring_post(ring, d, expired, watch);  // at or above `mine`
          if (ticket == ~uint64_t{0}) {
            ring_atomic::store_release(&ring->quiet_posted, posted);
            return kQuietNoCredit;
          }
          ring_atomic::store_release(&ring->quiet_posted, ticket + 1);
          uint64_t reply = 0;
          int64_t status = 0;
          if (!ring_wait(ring, ticket, &reply, &status, expired, watch)) return kQuietNoReply;
          if (status == 0) watch.saw_quiet_done(ticket + 1);  // what the proxy raised before answering
          return status;
        } else {
          continue;  // another producer changed quiet_posted first: look again at once
        }
      }
    }
    if (expired()) return kQuietNoReply;
    pause();
    watch.idle();
  }
}

}  // namespace shoal::detail
