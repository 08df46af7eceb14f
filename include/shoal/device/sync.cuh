// Device point-to-point synchronization and ordering on the explicit handle: wait_until / test and
// their _all/_any/_some(_vector) forms on local symmetric words, fence, quiet, and barrier_all /
// sync_all at thread, warp and block scope. Waits poll relaxed and acquire once, when satisfied;
// every wait is bounded by w.wait_timeout_ns (report + trap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/detail/device_common.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/rma.cuh"
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
/// chosen by SHOAL_WAIT_ACQUIRE_FENCE. Both are correct; on 2xH200 over NVLink acquire polls were
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
      wait_timed_out(call, w.my_pe, clock.elapsed_ns(), ivar, w.my_pe, cmp, as_ull(value), as_ull(seen));
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
      wait_timed_out(call, w.my_pe, clock.elapsed_ns(), ivar, w.my_pe, cmp, as_ull(value), as_ull(seen));
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
      wait_timed_out(call, w.my_pe, clock.elapsed_ns(), &ivars[stuck], w.my_pe, cmp, as_ull(target),
                     as_ull(stuck_seen));
    }
  }
}

/// The dissemination barrier run by ONE thread per PE. Round r: write this barrier's epoch to
/// barrier_round[r] of PE (me + 2^r) % n, then wait for my own barrier_round[r] >= epoch with
/// relaxed polls and one ld.acquire.sys re-read. Round 0's store is released by a fence.acq_rel.sys
/// (this PE's accesses before the barrier); later rounds' stores are st.release.sys, so what this
/// PE acquired in earlier rounds travels on (release/acquire chain, cumulative): every PE's accesses
/// before the barrier happen before every PE's accesses after it. Only acquires follow the last
/// wait: no fence waits for this PE's own flag store to be acknowledged over the link.
__device__ __forceinline__ void barrier_thread(const device_world& w, const char* call) {
  device_sync* sync = local_sync(w);
  const uint64_t epoch = sync->barrier_epoch + 1;  // private to this PE's barrier thread
  sync->barrier_epoch = epoch;
  ptx::fence_acq_rel_sys();  // release: this PE's earlier puts/stores before its arrival
  const int n = w.n_pes;
  const int me = w.my_pe;
  for (int r = 0, step = 1; step < n; ++r, step <<= 1) {
    const int to = (me + step) % n;
    const int from = (me - step + n) % n;
    uint64_t* remote_flag = peer_ptr(w, &sync->barrier_round[r], to, call);
    if (r == 0) {
      ptx::st_relaxed_sys(remote_flag, epoch);  // released by the fence above
    } else {
      ptx::st_release_sys(remote_flag, epoch);  // passes on what earlier rounds acquired
    }
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
        wait_timed_out(call, me, clock.elapsed_ns(), mine, from, SHOAL_CMP_GE, epoch, seen);
      }
    }
  }
}

/// barrier_thread run by rank 0 of the scope, with the scope's barrier before and after (so every
/// thread's accesses before the call are released, and acquired by every thread after it).
template <class Scope>
__device__ __forceinline__ void barrier(const device_world& w, const char* call) {
  Scope::sync();
  if (Scope::rank() == 0) barrier_thread(w, call);
  Scope::sync();
}

}  // namespace shoal::detail

namespace shoal::device {

// Common contract of the waits (the "wait contract"):
//  - ivar(s): symmetric words in THIS PE's heap (written by other PEs' p/put/AMO/signal); T an
//    integer of 2, 4 or 8 bytes. cmp: a SHOAL_CMP_* operator (checked builds trap on others).
//  - Ordering: polls are relaxed (ld.relaxed.sys); when the wait is satisfied it acquires once
//    (single word: an ld.acquire.sys re-read; several words: fence.acq_rel.sys), so everything the
//    writer released before the satisfying value (put_signal data, data before fence+p) is visible.
//  - Bounded: past w.wait_timeout_ns (if non-zero) it prints
//    "shoal: PE <me>: <call> timed out after <ns> ns waiting on <addr> (PE <owner>): expected <cmp>
//    <value>, seen <value>" and traps.
//  - One thread; any number of threads may wait on the same words.

/// Waits until *ivar <cmp> cmp_value; returns the (acquired) value that satisfied it.
template <class T>
__device__ __forceinline__ T wait_until(const device_world& w, T* ivar, int cmp, T cmp_value) {
  return detail::wait_until(w, ivar, cmp, cmp_value, "shoal::device::wait_until");
}
/// 1 if *ivar <cmp> cmp_value now (then acquired, as a satisfied wait), else 0. Never blocks.
template <class T>
__device__ __forceinline__ int test(const device_world& w, T* ivar, int cmp, T cmp_value) {
  return detail::test(w, ivar, cmp, cmp_value, "shoal::device::test") ? 1 : 0;
}
/// Waits until every non-skipped ivars[i] <cmp> cmp_value (status[i] != 0 skips i; status may be null).
template <class T>
__device__ __forceinline__ void wait_until_all(const device_world& w, T* ivars, size_t nelems, const int* status,
                                               int cmp, T cmp_value) {
  detail::wait_many<detail::wait_mode::all, false, false>(w, ivars, nelems, nullptr, status, cmp, &cmp_value,
                                                          "shoal::device::wait_until_all");
}
/// Waits until one non-skipped element compares true; returns its index (SIZE_MAX if all skipped).
template <class T>
__device__ __forceinline__ size_t wait_until_any(const device_world& w, T* ivars, size_t nelems, const int* status,
                                                 int cmp, T cmp_value) {
  return detail::wait_many<detail::wait_mode::any, false, false>(w, ivars, nelems, nullptr, status, cmp, &cmp_value,
                                                                 "shoal::device::wait_until_any");
}
/// Waits until at least one compares true; writes all that do to indices[]; returns their count.
template <class T>
__device__ __forceinline__ size_t wait_until_some(const device_world& w, T* ivars, size_t nelems, size_t* indices,
                                                  const int* status, int cmp, T cmp_value) {
  return detail::wait_many<detail::wait_mode::some, false, false>(w, ivars, nelems, indices, status, cmp, &cmp_value,
                                                                  "shoal::device::wait_until_some");
}
/// _vector forms: element i compares with cmp_values[i].
template <class T>
__device__ __forceinline__ void wait_until_all_vector(const device_world& w, T* ivars, size_t nelems, const int* status,
                                                      int cmp, T* cmp_values) {
  detail::wait_many<detail::wait_mode::all, true, false>(w, ivars, nelems, nullptr, status, cmp, cmp_values,
                                                         "shoal::device::wait_until_all_vector");
}
template <class T>
__device__ __forceinline__ size_t wait_until_any_vector(const device_world& w, T* ivars, size_t nelems,
                                                        const int* status, int cmp, T* cmp_values) {
  return detail::wait_many<detail::wait_mode::any, true, false>(w, ivars, nelems, nullptr, status, cmp, cmp_values,
                                                                "shoal::device::wait_until_any_vector");
}
template <class T>
__device__ __forceinline__ size_t wait_until_some_vector(const device_world& w, T* ivars, size_t nelems,
                                                         size_t* indices, const int* status, int cmp, T* cmp_values) {
  return detail::wait_many<detail::wait_mode::some, true, false>(w, ivars, nelems, indices, status, cmp, cmp_values,
                                                                 "shoal::device::wait_until_some_vector");
}
/// test_* forms: one pass, never block; same return values as the waits, 0 / SIZE_MAX for "not yet".
template <class T>
__device__ __forceinline__ int test_all(const device_world& w, T* ivars, size_t nelems, const int* status, int cmp,
                                        T cmp_value) {
  return static_cast<int>(detail::wait_many<detail::wait_mode::all, false, true>(
      w, ivars, nelems, nullptr, status, cmp, &cmp_value, "shoal::device::test_all"));
}
template <class T>
__device__ __forceinline__ size_t test_any(const device_world& w, T* ivars, size_t nelems, const int* status, int cmp,
                                           T cmp_value) {
  return detail::wait_many<detail::wait_mode::any, false, true>(w, ivars, nelems, nullptr, status, cmp, &cmp_value,
                                                                "shoal::device::test_any");
}
template <class T>
__device__ __forceinline__ size_t test_some(const device_world& w, T* ivars, size_t nelems, size_t* indices,
                                            const int* status, int cmp, T cmp_value) {
  return detail::wait_many<detail::wait_mode::some, false, true>(w, ivars, nelems, indices, status, cmp, &cmp_value,
                                                                 "shoal::device::test_some");
}
template <class T>
__device__ __forceinline__ int test_all_vector(const device_world& w, T* ivars, size_t nelems, const int* status,
                                               int cmp, T* cmp_values) {
  return static_cast<int>(detail::wait_many<detail::wait_mode::all, true, true>(
      w, ivars, nelems, nullptr, status, cmp, cmp_values, "shoal::device::test_all_vector"));
}
template <class T>
__device__ __forceinline__ size_t test_any_vector(const device_world& w, T* ivars, size_t nelems, const int* status,
                                                  int cmp, T* cmp_values) {
  return detail::wait_many<detail::wait_mode::any, true, true>(w, ivars, nelems, nullptr, status, cmp, cmp_values,
                                                               "shoal::device::test_any_vector");
}
template <class T>
__device__ __forceinline__ size_t test_some_vector(const device_world& w, T* ivars, size_t nelems, size_t* indices,
                                                   const int* status, int cmp, T* cmp_values) {
  return detail::wait_many<detail::wait_mode::some, true, true>(w, ivars, nelems, indices, status, cmp, cmp_values,
                                                                "shoal::device::test_some_vector");
}

// --- ordering ------------------------------------------------------------------------------------

/// Orders this thread's earlier puts, AMOs and signals to each PE before its later ones
/// (fence.acq_rel.sys: store->store, the release half of put -> fence -> p/signal_op/AMO flag).
/// Scope: the calling thread, plus what happens-before it (e.g. a block's puts then __syncthreads()).
__device__ __forceinline__ void fence(const device_world& w) {
  (void)w;
  ptx::fence_acq_rel_sys();
}
/// Completes this thread's earlier puts, AMOs and signals: they are performed at system scope before
/// any later memory access of this thread, loads included (fence.sc.sys). acq_rel would not order
/// an earlier store before a later load (store buffering), which OpenSHMEM's "complete" implies.
/// Over load/store transports nothing else is outstanding (gets and TMA puts complete on return).
__device__ __forceinline__ void quiet(const device_world& w) {
  (void)w;
  ptx::fence_sc_sys();
}

/// Collective over all PEs: returns once every PE has called it, with every PE's accesses before
/// the barrier visible to every PE after it (a release/acquire chain at system scope, which also
/// gives quiet's completion to everything observed through the barrier). Exactly ONE thread per PE
/// calls it (one kernel thread in the whole grid); barrier_all_warp/_block for a warp/block.
/// Bounded by w.wait_timeout_ns per round.
__device__ __forceinline__ void barrier_all(const device_world& w) {
  detail::barrier<thread_scope>(w, "shoal::device::barrier_all");
}
/// barrier_all by one full warp (lane 0 runs it; __syncwarp() around).
__device__ __forceinline__ void barrier_all_warp(const device_world& w) {
  detail::barrier<warp_scope>(w, "shoal::device::barrier_all_warp");
}
/// barrier_all by one whole block (thread 0 runs it; __syncthreads() around, so the block's accesses
/// before and after are covered).
__device__ __forceinline__ void barrier_all_block(const device_world& w) {
  detail::barrier<block_scope>(w, "shoal::device::barrier_all_block");
}
/// sync_all: the same synchronization as barrier_all (shoal's device barrier is already a
/// release/acquire chain, so keeping the stronger guarantee costs nothing). Scopes as barrier_all.
__device__ __forceinline__ void sync_all(const device_world& w) {
  detail::barrier<thread_scope>(w, "shoal::device::sync_all");
}
__device__ __forceinline__ void sync_all_warp(const device_world& w) {
  detail::barrier<warp_scope>(w, "shoal::device::sync_all_warp");
}
__device__ __forceinline__ void sync_all_block(const device_world& w) {
  detail::barrier<block_scope>(w, "shoal::device::sync_all_block");
}

}  // namespace shoal::device
