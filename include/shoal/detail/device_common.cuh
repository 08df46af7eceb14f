// Internals shared by the device API bodies: peer addressing (the one place device code branches
// per peer path), the checks that turn a bad PE into a message + trap, and the bounded-wait clock.
// Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"
#include "shoal/types.h"

/// 1 (default): device calls check `pe` (in range, load/store-reachable) and the signal/compare
/// operators, printing what was wrong and trapping. 0: no checks (a bad PE is undefined behaviour).
#ifndef SHOAL_DEVICE_CHECKS
#define SHOAL_DEVICE_CHECKS 1
#endif

/// 1 (default): the device team collectives carry their proxy path (worlds with proxy peers: routed
/// puts and team barriers, a cold non-inlined function). It costs up to 16 registers in every
/// kernel that calls a collective, proxy peers or not (docs/device-api.md); 0 leaves it out for
/// programs that only ever run on load/store-reachable peers (a proxy member then traps, naming the call).
#ifndef SHOAL_DEVICE_COLL_PROXY
#define SHOAL_DEVICE_COLL_PROXY 1
#endif

/// 0 (default): a failing device call writes its report into the world's report box (device_report_box, printed by
/// the host) and traps; kernels then hold no call to printf, whose presence costs a shared-memory drain before every
/// system fence. 1: it also prints the report with device printf, the only message a world without a report box
/// gets.
#ifndef SHOAL_DEVICE_PRINTF
#define SHOAL_DEVICE_PRINTF 0
#endif

/// Polls between two reads of %globaltimer in a bounded wait (a power of two).
#ifndef SHOAL_WAIT_POLLS_PER_CLOCK
#define SHOAL_WAIT_POLLS_PER_CLOCK 64
#endif

namespace shoal::detail {

/// Copies the world `from` into `to`, a cold call's arguments in local memory, on the cold branch. A plain copy, so
/// the compiler may hoist the loads of the world's fields out of a loop around the call and keep them live across it
/// (what keeps a block-scope put kernel above 64 registers); taking the world's address instead would make a kernel
/// that holds its world as a parameter copy it to local memory at its start and read it from there on the hot path.
__device__ __forceinline__ void copy_world_cold(device_world* to, const device_world& from) { *to = from; }

/// The world a call reads: the explicit API passes its device_world by reference and gets it back; the device facade
/// passes its world's tag (facade_world_tag, <shoal/detail/device_facade_world.cuh>), found by argument-dependent
/// lookup, whose overload returns the translation unit's __constant__ world. A cold path that takes the tag needs no
/// copy of the world: it reads the __constant__ world itself.
__device__ __forceinline__ const device_world& world_ref(const device_world& w) { return w; }

/// The address of `args`, a cold call's arguments laid out in local memory, as the compiler cannot follow it: the
/// callee reads them back after each call it makes instead of keeping them in registers.
template <class T>
__device__ __forceinline__ const T* opaque_addr(const T& args) {
  const T* p = &args;
  asm volatile("" : "+l"(p)::"memory");
  return p;
}

/// The bits of v as a To of the same size.
template <class To, class From>
__device__ __forceinline__ To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &v, sizeof(To));
  return t;
}

/// Copies the text at `from` (up to kTextBytes - 1 characters; null: empty) into a report's field.
__device__ __forceinline__ void report_text(char* to, const char* from) {
  int k = 0;
  if (from != nullptr)
    for (; k < device_report_box::kTextBytes - 1 && from[k] != '\0'; ++k) to[k] = from[k];
  to[k] = '\0';
}

/// Fills `box` when this thread is the PE's first to fail (state 0 -> 1, ..., 2 after a system fence) and traps.
/// Later failing threads only trap: one report per PE. No box (a world not made by shoal_init): the trap alone.
/// Not inlined: the failure path of every device call is one call with scalar arguments.
[[noreturn]] __device__ __forceinline__ void report_and_trap(device_report_box* box, device_report_kind kind,
                                                             const char* call, int my_pe, int pe, long long value,
                                                             const char* what, uint64_t addr = 0, int cmp = 0,
                                                             uint64_t expected = 0, uint64_t seen = 0,
                                                             uint64_t elapsed_ns = 0, int n_pes = 0) {
  if (box != nullptr && atomicCAS_system(&box->state, 0u, 1u) == 0u) {
    box->kind = static_cast<uint32_t>(kind);
    box->my_pe = my_pe;
    box->pe = pe;
    box->n_pes = n_pes;
    box->cmp = cmp;
    box->elapsed_ns = elapsed_ns;
    box->addr = addr;
    box->expected = expected;
    box->seen = seen;
    box->value = value;
    report_text(box->call, call);
    report_text(box->what, what);
    __threadfence_system();
    atomicExch_system(&box->state, 2u);
    __threadfence_system();
  }
  __trap();
  __builtin_unreachable();
}

/// Why `pe` has no load/store address here (out of range, behind the proxy, or unreachable): reports it and traps.
/// Inlined into the functions that end in it (peer_miss, device_fail_pe), so that no call chain of the cold path is
/// deeper than it must be: with whole-program compilation each noinline callee's registers are allocated above the
/// registers its caller keeps live across the call, so a kernel pays for the depth of its deepest cold chain.
[[noreturn]] __device__ __forceinline__ void fail_pe_report(device_report_box* box, const char* call, int my_pe, int pe,
                                                            int n_pes, const peer_path* path_of_pe) {
  const bool out_of_range = pe < 0 || pe >= n_pes;
  const device_report_kind kind =
      out_of_range ? device_report_kind::pe_out_of_range
                   : (path_of_pe != nullptr && path_of_pe[pe] == peer_path::proxy ? device_report_kind::pe_behind_proxy
                                                                                  : device_report_kind::pe_unreachable);
#if SHOAL_DEVICE_PRINTF
  if (kind == device_report_kind::pe_out_of_range)
    printf("shoal: PE %d: %s: pe %d out of range [0, %d)\n", my_pe, call, pe, n_pes);
  else if (kind == device_report_kind::pe_behind_proxy)
    printf("shoal: PE %d: %s: PE %d is reached through the proxy path, which this call does not go through yet\n",
           my_pe, call, pe);
  else
    printf("shoal: PE %d: %s: PE %d is not load/store-reachable from this GPU (no P2P mapping)\n", my_pe, call, pe);
#endif
  report_and_trap(box, kind, call, my_pe, pe, 0, nullptr, 0, 0, 0, 0, 0, out_of_range ? n_pes : 0);
}

/// fail_pe_report as one call (report_unreachable, and code built on the device API).
[[noreturn]] inline __device__ __noinline__ void device_fail_pe(device_report_box* box, const char* call, int my_pe,
                                                                int pe, int n_pes, const peer_path* path_of_pe) {
  fail_pe_report(box, call, my_pe, pe, n_pes, path_of_pe);
}

[[noreturn]] inline __device__ __noinline__ void device_fail_arg(device_report_box* box, const char* call, int my_pe,
                                                                 const char* what, long long value) {
#if SHOAL_DEVICE_PRINTF
  printf("shoal: PE %d: %s: bad %s %lld\n", my_pe, call, what, value);
#endif
  report_and_trap(box, device_report_kind::bad_argument, call, my_pe, -1, value, what);
}

/// The lookup behind a miss of the direct run (device_world::direct_local_of), not inlined: `pe`'s node-local index
/// from the world's table when this GPU can load/store its heap; else -1 when `pe` is a proxy peer and `ring` is the
/// world's proxy ring (a call that routes: the caller posts to the ring), and otherwise a report and a trap
/// (fail_pe_report: out of range, unreachable, or a proxy peer of a call that does not route).
inline __device__ __noinline__ int32_t peer_miss(device_report_box* box, const char* call, int my_pe, int pe, int n_pes,
                                                 const int32_t* local_of_pe, const peer_path* path_of_pe,
                                                 const void* ring) {
  if (pe >= 0 && pe < n_pes) {
    const int32_t local = local_of_pe == nullptr ? pe : local_of_pe[pe];
    if (local >= 0) return local;
    if (ring != nullptr && path_of_pe != nullptr && path_of_pe[pe] == peer_path::proxy) return -1;
  }
  fail_pe_report(box, call, my_pe, pe, n_pes, path_of_pe);
}

/// peer_local's and peer_route's body: a PE of the world's direct run (device_world::direct_local_of) is the hot
/// path, a subtraction and a compare with no memory read; any other PE takes the cold branch. There a load/store peer
/// outside the run gets its index from the table (peer_miss), a proxy peer -1 when `ring` is non-null (the caller
/// routes), and checked builds (SHOAL_DEVICE_CHECKS) say why any other pe has no load/store path (out of range,
/// behind the proxy, unreachable) and trap. Unchecked builds read the table inline and do no check: such a pe is
/// undefined behaviour (a proxy peer still gets -1 from the table).
__device__ __forceinline__ int32_t peer_lookup(const device_world& w, int pe, const char* call, const void* ring) {
  int32_t local = w.direct_local_of(pe);
#if SHOAL_DEVICE_CHECKS
  if (local < 0) local = peer_miss(w.report_box, call, w.my_pe, pe, w.n_pes, w.local_of_pe, w.path_of_pe, ring);
#else
  (void)call;
  (void)ring;
  if (local < 0) local = w.local_of(pe);
#endif
  return local;
}

/// The node-local index of `pe` for a load/store access, for calls with no proxy route (the team
/// collectives' data paths): peer_lookup with no ring, so a proxy peer traps in checked builds.
__device__ __forceinline__ int32_t peer_local(const device_world& w, int pe, const char* call) {
  return peer_lookup(w, pe, call, nullptr);
}

/// THE place where device calls branch per peer (RMA, AMOs, signals, barriers): the node-local index
/// of `pe` (>= 0: load/store, the hot path, exactly peer_local's), or -1 when `pe` is a proxy peer
/// this world's ring serves (device_world::proxy_ring): the caller then takes its proxy branch
/// (`if (local < 0)`, which the compiler merges with this one), posting to the ring
/// (shoal/detail/device_proxy.cuh). See peer_lookup for the run, the tables and the checks.
__device__ __forceinline__ int32_t peer_route(const device_world& w, int pe, const char* call) {
  return peer_lookup(w, pe, call, w.proxy_ring);
}

/// The node-local index of `pe` when it is in the world's direct run, else -1 (out of range, proxy, unreachable, or
/// a load/store peer outside the run): the hot path's lookup, with no call and no memory read in it. A -1 sends the
/// caller to its cold path, which routes with peer_route or peer_local (the table, the proxy, or checked builds'
/// report and trap).
__device__ __forceinline__ int32_t peer_local_or_cold(const device_world& w, int pe) { return w.direct_local_of(pe); }

/// `p`'s copy on the PE of node-local index `local` (peer_local's result): region + local*stride +
/// (p - heap_base). For calls that address several words on one PE with one path-table lookup.
template <class T>
__device__ __forceinline__ T* local_peer_ptr(const device_world& w, T* p, int64_t local) {
  const auto offset = reinterpret_cast<const char*>(p) - w.heap_base;
  return reinterpret_cast<T*>(w.region + static_cast<uint64_t>(local) * w.stride + offset);
}

/// `p`'s copy on the direct run's PE direct_first + k (k = device_world::direct_index(pe) < direct_count): p plus
/// entry k of device_world::direct_offset. The entry is read by ld.global.nc in an asm that is not volatile and
/// touches no other memory: the table never changes after init, so the compiler may hoist the load out of a loop
/// and keep the offset in a register across the call's cold path, as it cannot keep local_peer_ptr's arithmetic.
/// Hoisting also lifts the load above the caller's `k < direct_count` branch (a cold PE's index would read past the
/// table), so the asm checks k itself and loads only inside the run; outside it yields 0, never used.
template <class T>
__device__ __forceinline__ T* run_peer_ptr(const device_world& w, T* p, uint32_t k) {
  uint64_t offset;
  asm("{\n\t.reg .pred in_run;\n\tsetp.lt.u32 in_run, %2, %3;\n\tmov.u64 %0, 0;\n\t"
      "@in_run ld.global.nc.u64 %0, [%1];\n\t}"
      : "=l"(offset)
      : "l"(reinterpret_cast<uint64_t>(w.direct_offset) + 8ull * k), "r"(k),
        "r"(static_cast<uint32_t>(w.direct_count)));
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + offset);
}

/// `p`'s copy on `pe` as seen from this GPU.
template <class T>
__device__ __forceinline__ T* peer_ptr(const device_world& w, T* p, int pe, const char* call) {
  return local_peer_ptr(w, p, peer_local(w, pe, call));
}

/// This PE's shoal sync words (device_sync) in its own heap.
__device__ __forceinline__ device_sync* local_sync(const device_world& w) {
  return reinterpret_cast<device_sync*>(w.heap_base + w.sync_offset);
}

/// `value <cmp> target` for a SHOAL_CMP_* operator (unknown operators compare false; checked builds
/// reject them before the wait starts).
template <class T>
__device__ __forceinline__ bool compare(int cmp, T value, T target) {
  switch (cmp) {
    case SHOAL_CMP_EQ:
      return value == target;
    case SHOAL_CMP_NE:
      return value != target;
    case SHOAL_CMP_GT:
      return value > target;
    case SHOAL_CMP_LE:
      return value <= target;
    case SHOAL_CMP_LT:
      return value < target;
    case SHOAL_CMP_GE:
      return value >= target;
    default:
      return false;
  }
}

__device__ __forceinline__ void check_cmp(const device_world& w, int cmp, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (cmp < SHOAL_CMP_EQ || cmp > SHOAL_CMP_GE) device_fail_arg(w.report_box, call, w.my_pe, "cmp", cmp);
#else
  (void)w, (void)cmp, (void)call;
#endif
}

/// The clock of one bounded wait: cheap to tick, reads %globaltimer every SHOAL_WAIT_POLLS_PER_CLOCK
/// polls, and says when w.wait_timeout_ns (0: never) has passed since its first reading.
class wait_clock {
 public:
  __device__ __forceinline__ explicit wait_clock(uint64_t timeout_ns) : timeout_ns_(timeout_ns) {}
  /// Call once per unsatisfied poll; true once the timeout has expired.
  __device__ __forceinline__ bool expired() {
    if (timeout_ns_ == 0 || (++polls_ & (SHOAL_WAIT_POLLS_PER_CLOCK - 1)) != 0) return false;
    const uint64_t now = ptx::globaltimer();
    if (start_ == 0) start_ = now;
    return now - start_ > timeout_ns_;
  }
  __device__ __forceinline__ uint64_t elapsed_ns() const { return ptx::globaltimer() - start_; }

 private:
  uint64_t timeout_ns_;
  uint64_t start_ = 0;
  uint32_t polls_ = 0;
};
static_assert((SHOAL_WAIT_POLLS_PER_CLOCK & (SHOAL_WAIT_POLLS_PER_CLOCK - 1)) == 0);

/// Reports a wait that timed out and traps: what it waited on, for what, and what it saw.
[[noreturn]] inline __device__ __noinline__ void wait_timed_out(device_report_box* box, const char* call, int my_pe,
                                                                uint64_t elapsed_ns, const void* addr, int owner_pe,
                                                                int cmp, unsigned long long expected,
                                                                unsigned long long seen) {
#if SHOAL_DEVICE_PRINTF
  printf("shoal: PE %d: %s timed out after %llu ns waiting on %p (PE %d): expected %s %llu, seen %llu\n", my_pe, call,
         static_cast<unsigned long long>(elapsed_ns), addr, owner_pe, cmp_text(cmp), expected, seen);
#endif
  report_and_trap(box, device_report_kind::wait_timeout, call, my_pe, owner_pe, 0, nullptr,
                  reinterpret_cast<uint64_t>(addr), cmp, expected, seen, elapsed_ns);
}

/// shoal::device::report_stall's body: a wait of a protocol built on shoal (its own words, its own timeout) that saw
/// no progress from `peer`.
[[noreturn]] inline __device__ __noinline__ void stall_reported(device_report_box* box, const char* call, int my_pe,
                                                                int peer, int channel, const void* addr,
                                                                unsigned long long have, unsigned long long want,
                                                                unsigned long long waited_ns) {
#if SHOAL_DEVICE_PRINTF
  printf("shoal: PE %d: %s: no progress from PE %d (channel %d) for %llu ms on %p: have %#llx, want %#llx\n", my_pe,
         call, peer, channel, waited_ns / 1000000ull, addr, have, want);
#endif
  report_and_trap(box, device_report_kind::peer_stalled, call, my_pe, peer, channel, nullptr,
                  reinterpret_cast<uint64_t>(addr), 0, want, have, waited_ns);
}

}  // namespace shoal::detail
