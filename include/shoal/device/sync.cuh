// Device point-to-point synchronization and ordering on the explicit handle: wait_until / test and
// their _all/_any/_some(_vector) forms on local symmetric words, fence, quiet (one thread), and
// barrier_all / sync_all at any scope. Waits poll and acquire once, when satisfied; every wait is
// bounded by w.wait_timeout_ns (report + trap). Bodies: <shoal/detail/device_sync.cuh>.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_sync.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"

namespace shoal::device {

// Common contract of the waits (the "wait contract"):
//  - ivar(s): symmetric words in THIS PE's heap (written by other PEs' p/put/AMO/signal); T an
//    integer of 2, 4 or 8 bytes. cmp: a SHOAL_CMP_* operator (checked builds trap on others).
//  - Ordering: polls are relaxed (ld.relaxed.sys); when the wait is satisfied it acquires once
//    (single word: an ld.acquire.sys re-read; several words: fence.acq_rel.sys), so everything the
//    writer released before the satisfying value (put_signal data, data before fence+p) is visible.
//  - Bounded: past w.wait_timeout_ns (if non-zero) it reports (the host prints from the world's report box)
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
__device__ __forceinline__ void fence(const device_world& w) { detail::fence(w, "shoal::device::fence"); }
/// Completes this thread's earlier puts, AMOs and signals: they are performed at system scope before
/// any later memory access of this thread, loads included (fence.sc.sys). acq_rel would not order
/// an earlier store before a later load (store buffering), which OpenSHMEM's "complete" implies.
/// Over load/store transports nothing else is outstanding (gets and TMA puts complete on return); a
/// world with proxy peers also posts a waiting quiet to its proxy ring (fence: a ring fence).
__device__ __forceinline__ void quiet(const device_world& w) { detail::quiet(w, "shoal::device::quiet"); }

/// For protocols built on shoal that wait on their own words with their own bound (DeepEP-style progress words):
/// reports that `peer` made no progress and traps, like shoal's own bounded waits. The host prints
/// "shoal: PE <me>: <call>: no progress from PE <peer> (channel <channel>) for <ms> ms on <word>: have <hex>, want
/// <hex>" (channel < 0: no channel part) from the world's report box, so the kernel holds no printf. The first
/// failing thread of the PE reports; every caller traps.
__device__ __forceinline__ void report_stall(const device_world& w, const char* call, int peer, int channel,
                                             const void* word, uint64_t have, uint64_t want, uint64_t waited_ns) {
  detail::stall_reported(w.report_box, call, w.my_pe, peer, channel, word, have, want, waited_ns);
}

/// Collective over all PEs: returns once every PE has called it, with every PE's accesses before
/// the barrier visible to every PE after it (a release/acquire chain at system scope, which also
/// gives quiet's completion to everything observed through the barrier). Exactly ONE scope per PE
/// calls it (rank 0 runs the barrier, with the scope's sync() before and after, so the scope's
/// accesses before and after are covered). Bounded by w.wait_timeout_ns per round.
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void barrier_all(Scope s, const device_world& w) {
  detail::barrier(s, w, "shoal::device::barrier_all");
}
/// sync_all: the same synchronization as barrier_all (shoal's device barrier is already a
/// release/acquire chain, so keeping the stronger guarantee costs nothing).
template <SHOAL_SCOPE_TYPE Scope>
__device__ __forceinline__ void sync_all(Scope s, const device_world& w) {
  detail::barrier(s, w, "shoal::device::sync_all");
}

}  // namespace shoal::device
