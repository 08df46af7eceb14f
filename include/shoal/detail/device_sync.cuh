// Bodies of the device waits, tests and the world barrier (<shoal/device/sync.cuh>). Waits poll
// and acquire once, when satisfied; every wait is bounded by w.wait_timeout_ns (report + trap).
// Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_proxy.cuh"
#include "shoal/detail/device_rma.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"
#include "shoal/types.h"

/// With SHOAL_WAIT_ACQUIRE_POLL=0, how a satisfied single-word wait acquires: 0 (default) an ld.acquire.sys re-read of
/// the word (retried if it no longer compares true); 1 one fence.acq_rel.sys after the satisfying relaxed read. Both
/// are correct; which is cheaper on a given GPU is for shoal-bench to say.
#ifndef SHOAL_WAIT_ACQUIRE_FENCE
#define SHOAL_WAIT_ACQUIRE_FENCE 0
#endif
/// 1 (default): single-word waits (and the barrier) poll with ld.acquire.sys itself, so the read
/// that sees the value is the acquire (no re-read, no fence). 0: relaxed polls, then the acquire
/// chosen by SHOAL_WAIT_ACQUIRE_FENCE. Both are correct; on 2xH200 over NVLink acquire polls are
/// faster (int_p ping-pong half round trip 0.87 us vs 1.04 us; barrier_all 1.69 vs 1.93 us).
#ifndef SHOAL_WAIT_ACQUIRE_POLL
#define SHOAL_WAIT_ACQUIRE_POLL 1
#endif

namespace shoal::detail {

template <class T>
__device__ __forceinline__ T load_relaxed(const T* addr) {
  using U = typename uint_of<sizeof(T)>::type;
  static_assert(!std::is_void_v<U>, "wait/test words are 1, 2, 4 or 8 bytes");
  return bits_as<T>(ptx::ld_relaxed_sys(reinterpret_cast<const U*>(addr)));
}
template <class T>
__device__ __forceinline__ T load_acquire(const T* addr) {
  using U = typename uint_of<sizeof(T)>::type;
  static_assert(sizeof(T) >= 2, "acquire loads are 2, 4 or 8 bytes");
  return bits_as<T>(ptx::ld_acquire_sys(reinterpret_cast<const U*>(addr)));
}
template <class T>
__device__ __forceinline__ unsigned long long as_ull(T v) {
  if constexpr (std::is_signed_v<T>) {
    return static_cast<unsigned long long>(static_cast<long long>(v));
  } else {
    return static_cast<unsigned long long>(v);
  }
}

/// Waits until *ivar <cmp> value: relaxed polls (ld.relaxed.sys), then one ld.acquire.sys re-read;
/// if the acquired value no longer compares true, polls again (so the acquire always reads a
/// satisfying value and synchronizes with its writer). Returns that value. (SHOAL_WAIT_ACQUIRE_FENCE:
/// fence.acq_rel.sys after the satisfying relaxed read instead.)
template <class T>
__device__ __forceinline__ T wait_until(const device_world& w, const T* ivar, int cmp, T value, const char* call) {
  check_cmp(w, cmp, call);
  wait_clock clock(w.wait_timeout_ns);
  for (;;) {
#if SHOAL_WAIT_ACQUIRE_POLL
    const T seen = load_acquire(ivar);
    if (compare(cmp, seen, value)) return seen;
    if (clock.expired()) {
      wait_timed_out(w.report_box, call, w.my_pe, clock.elapsed_ns(), ivar, w.my_pe, cmp, as_ull(value), as_ull(seen));
    }
#else
    const T seen = load_relaxed(ivar);
    if (compare(cmp, seen, value)) {
#if SHOAL_WAIT_ACQUIRE_FENCE
      ptx::fence_acq_rel_sys();
      return seen;
#else
      const T acquired = load_acquire(ivar);
      if (compare(cmp, acquired, value)) return acquired;
#endif
    } else if (clock.expired()) {
      wait_timed_out(w.report_box, call, w.my_pe, clock.elapsed_ns(), ivar, w.my_pe, cmp, as_ull(value), as_ull(seen));
    }
#endif
  }
}

/// One relaxed read; if it compares true, one acquire re-read that must compare true too.
template <class T>
__device__ __forceinline__ bool test(const device_world& w, const T* ivar, int cmp, T value, const char* call) {
  check_cmp(w, cmp, call);
#if SHOAL_WAIT_ACQUIRE_FENCE
  if (!compare(cmp, load_relaxed(ivar), value)) return false;
  ptx::fence_acq_rel_sys();
  return true;
#else
  return compare(cmp, load_relaxed(ivar), value) && compare(cmp, load_acquire(ivar), value);
#endif
}

enum class wait_mode { all, any, some };

/// The multi-word waits and tests. Elements with status[i] != 0 (status may be null) are skipped.
/// Polls relaxed; once the mode's condition holds, one fence.acq_rel.sys acquires every word read.
///  all:  returns 1 when every element compares true (vacuously if all are skipped).
///  any:  returns the index of one element that compares true; SIZE_MAX if all are skipped (or, for
///        test, if none compares true).
///  some: writes the indices of every element that compared true in one pass to `indices`,
///        returns their count (0 for test if none; wait: at least 1 unless all are skipped).
/// kVector: compare element i with cmp_values[i] instead of *cmp_values.
template <wait_mode kMode, bool kVector, bool kTest, class T>
__device__ __forceinline__ size_t wait_many(const device_world& w, const T* ivars, size_t nelems, size_t* indices,
                                            const int* status, int cmp, const T* cmp_values, const char* call) {
  check_cmp(w, cmp, call);
  size_t active = 0;
  for (size_t i = 0; i < nelems; ++i) active += (status == nullptr || status[i] == 0) ? 1 : 0;
  if (active == 0) return kMode == wait_mode::any ? SIZE_MAX : (kMode == wait_mode::all ? 1 : 0);
  wait_clock clock(w.wait_timeout_ns);
  for (;;) {
    size_t found = 0;
    size_t first = SIZE_MAX;
    size_t stuck = SIZE_MAX;  // first element that did not compare true (for the timeout report)
    T stuck_seen{};
    for (size_t i = 0; i < nelems; ++i) {
      if (status != nullptr && status[i] != 0) continue;
      const T target = kVector ? cmp_values[i] : cmp_values[0];
      const T seen = load_relaxed(&ivars[i]);
      if (compare(cmp, seen, target)) {
        if (kMode == wait_mode::some) indices[found] = i;
        if (first == SIZE_MAX) first = i;
        ++found;
        if (kMode == wait_mode::any) break;
      } else if (stuck == SIZE_MAX) {
        stuck = i;
        stuck_seen = seen;
        if (kMode == wait_mode::all) break;  // no need to look further this pass
      }
    }
    const bool done = kMode == wait_mode::all ? found == active : found > 0;
    if (done) {
      ptx::fence_acq_rel_sys();
      return kMode == wait_mode::all ? 1 : (kMode == wait_mode::any ? first : found);
    }
    if (kTest) return kMode == wait_mode::any ? SIZE_MAX : 0;
    if (clock.expired()) {
      const T target = kVector ? cmp_values[stuck] : cmp_values[0];
      wait_timed_out(w.report_box, call, w.my_pe, clock.elapsed_ns(), &ivars[stuck], w.my_pe, cmp, as_ull(target),
                     as_ull(stuck_seen));
    }
  }
}

/// fence: fence.acq_rel.sys, plus a ring fence when the world has proxy peers.
__device__ __forceinline__ void fence(const device_world& w, const char* call) {
  ptx::fence_acq_rel_sys();
  if (w.proxy_ring != nullptr) proxy_fence(w, call);
}

/// quiet: fence.sc.sys, plus a waiting ring quiet when the world has proxy peers.
__device__ __forceinline__ void quiet(const device_world& w, const char* call) {
  ptx::fence_sc_sys();
  if (w.proxy_ring != nullptr) proxy_quiet(w, call);
}

/// (a + step) mod n and (a - step) mod n for 0 <= a < n, 0 < step < n, without a division.
__device__ __forceinline__ int ring_after(int a, int step, int n) { return a + step < n ? a + step : a + step - n; }
__device__ __forceinline__ int ring_before(int a, int step, int n) { return a >= step ? a - step : a - step + n; }

/// Signals a count barrier's word on a load/store peer (no kFlagBarrierEpochs): red.add(1), released by
/// the caller's earlier fence (`release` false: round 0) or by itself (later rounds pass on what earlier
/// rounds acquired).
__device__ __forceinline__ void count_signal(uint64_t* remote, bool release) {
  if (release) {
    ptx::red_add_release_sys(remote, 1);
  } else {
    ptx::red_add_relaxed_sys(remote, 1);
  }
}

/// A count barrier's wait: consumes one signal from this PE's `word` (red.add(-1), so the word may go
/// below zero), then polls until the word is >= 0 as int64, i.e. that signal has arrived; the read that
/// sees it acquires. Only this PE lowers its words, so a satisfied word stays satisfied. Bounded by
/// w.wait_timeout_ns: the report names the PE whose signal is missing (`from()`, computed only then) and
/// counts signals (expected >= 1, seen the word + 1).
/// kAcquirePoll (SHOAL_WAIT_ACQUIRE_POLL): every poll is the acquire; false: relaxed polls, then one acquire re-read.
template <bool kAcquirePoll = SHOAL_WAIT_ACQUIRE_POLL != 0, class From>
__device__ __forceinline__ void count_wait(const device_world& w, uint64_t* word, From from, const char* call) {
  ptx::red_add_relaxed_sys(word, ~uint64_t{0});
  wait_clock clock(w.wait_timeout_ns);
  for (;;) {
    const uint64_t seen = kAcquirePoll ? ptx::ld_acquire_sys(word) : ptx::ld_relaxed_sys(word);
    if (static_cast<int64_t>(seen) >= 0 && (kAcquirePoll || static_cast<int64_t>(ptx::ld_acquire_sys(word)) >= 0)) {
      return;
    }
    if (clock.expired())
      wait_timed_out(w.report_box, call, w.my_pe, clock.elapsed_ns(), word, from(), SHOAL_CMP_GE, 1, seen + 1);
  }
}

/// The dissemination barrier run by ONE thread per PE. Round r: signal barrier_round[r] of PE
/// (me + 2^r) % n, then wait for the signal of PE (me - 2^r) % n on my own barrier_round[r]. Round
/// 0's signal is released by a fence.acq_rel.sys (this PE's accesses before the barrier); later
/// rounds' signals are release operations, so what this PE acquired in earlier rounds travels on
/// (release/acquire chain, cumulative): every PE's accesses before the barrier happen before every
/// PE's accesses after it. Only acquires follow the last wait: no fence waits for this PE's own
/// signal to be acknowledged over the link.
///
/// Nothing branches ahead of the fence: round 0's peer word is computed before it without a branch (a pe with no
/// load/store path gives -1, which peer_ptr's or peer_route's checks take after the fence). This order is 0.024-0.035
/// us faster than a branch to the cold check before the fence, and the lookup costs 0.05 us over a precomputed address
/// (the barrier probes of docs/results/gpu-1xh200/protocol/README.md).
///
/// Without kFlagBarrierEpochs (no PE of the job has a proxy peer) a signal is red.add(1) and the wait
/// consumes one (count_wait): nothing private is loaded or stored before the signal. With it, the signal is this PE's
/// barrier epoch (a p through the ring to a proxy peer), kept in device_sync::barrier_epoch, and the wait is
/// for the word >= that epoch.
/// kAcquirePoll: as count_wait's (the count protocol only; the epoch protocol follows SHOAL_WAIT_ACQUIRE_POLL).
template <bool kAcquirePoll = SHOAL_WAIT_ACQUIRE_POLL != 0>
__device__ __forceinline__ void barrier_thread(const device_world& w, const char* call) {
  device_sync* sync = local_sync(w);
  const int n = w.n_pes;
  const int me = w.my_pe;
  const bool counts = (w.flags & kFlagBarrierEpochs) == 0;
  // -1 (out of range, proxy, unreachable) is sent to peer_ptr's or peer_route's checks after the fence.
  const int32_t local0 = peer_local_or_cold(w, n > 1 ? ring_after(me, 1, n) : me);
  uint64_t* const first = local_peer_ptr(w, &sync->barrier_round[0], local0);
  asm volatile("" ::"l"(first));  // computed ahead of the fence (the compiler would sink it below)
  ptx::fence_acq_rel_sys();       // release: this PE's earlier puts/stores before its arrival
  if (counts) {
    for (int r = 0, step = 1; step < n; ++r, step <<= 1) {
      uint64_t* mine = &sync->barrier_round[r];
      // Round 0: released by the fence above; later rounds pass on what earlier rounds acquired.
      count_signal(r == 0 && local0 >= 0 ? first : peer_ptr(w, mine, ring_after(me, step, n), call), r != 0);
      count_wait<kAcquirePoll>(
          w, mine, [&] { return ring_before(me, step, n); }, call);
    }
    return;
  }
  // Epochs: the private epoch is this PE's own word, which the fence need not order.
  const uint64_t epoch = sync->barrier_epoch + 1;  // private to this PE's barrier thread
  sync->barrier_epoch = epoch;
  if (w.proxy_ring != nullptr) proxy_quiet(w, call);  // this PE's proxy operations complete before its arrival
  for (int r = 0, step = 1; step < n; ++r, step <<= 1) {
    const int to = ring_after(me, step, n);
    // Round 0: released by the fence above; later rounds pass on what earlier rounds acquired.
    barrier_flag(w, &sync->barrier_round[r], peer_route(w, to, call), to, epoch, r != 0, call);
    const uint64_t* mine = &sync->barrier_round[r];
    wait_clock clock(w.wait_timeout_ns);
    for (;;) {
#if SHOAL_WAIT_ACQUIRE_POLL
      const uint64_t seen = ptx::ld_acquire_sys(mine);
      if (seen >= epoch) break;
#else
      const uint64_t seen = ptx::ld_relaxed_sys(mine);
      // Epochs only grow, so a satisfying relaxed read stays satisfied for the acquire re-read.
      if (seen >= epoch && ptx::ld_acquire_sys(mine) >= epoch) break;
#endif
      if (clock.expired()) {
        wait_timed_out(w.report_box, call, me, clock.elapsed_ns(), mine, ring_before(me, step, n), SHOAL_CMP_GE, epoch,
                       seen);
      }
    }
  }
}

/// barrier_thread run by rank 0 of the scope, with the scope's barrier before and after (so every
/// thread's accesses before the call are released, and acquired by every thread after it).
template <class Scope>
__device__ __forceinline__ void barrier(Scope, const device_world& w, const char* call) {
  Scope::sync();
  if (Scope::rank() == 0) barrier_thread(w, call);
  Scope::sync();
}

}  // namespace shoal::detail
