// The kernels of put_signal_ping_pong and barrier_latency (bench/sync/sync.cuh): the measured loops, templates on
// the API adapter, their raw baselines on peer pointers (raw put-with-signal ping-pong, raw flag barrier) and the
// barrier's probe rows (SHOAL_BENCH_PROBE=1).
// Defines kernels: included by exactly one translation unit of each binary.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "common/kernels.cuh"
#include "shoal/device/ptx.cuh"

namespace shoal::bench::dev {

// --- put_signal_ping_pong (both PEs run; the initiator is timed, the responder runs one kernel) ----

/// Block-scope put-with-signal ping-pong: nbytes of `src` into the peer's `buf`, signal SET to seq;
/// thread 0 waits for the peer's signal (signal_wait_until >= seq), then the block goes on. kAlt: the API's other
/// put-with-signal shape (Api::putmem_signal_block_alt, a SHOAL_BENCH_PROBE=1 row).
template <class Api, bool kAlt = false>
__global__ void put_signal_ping_pong_kernel(char* buf, const char* src, size_t nbytes, uint64_t* sig, uint64_t first,
                                            int count, int peer, bool initiator) {
  for (int i = 0; i < count; ++i) {
    const uint64_t seq = first + i;
    if (!initiator) {
      if (threadIdx.x == 0) Api::signal_wait_until_ge(sig, seq);
      __syncthreads();
    }
    if constexpr (kAlt) {
      Api::putmem_signal_block_alt(buf, src, nbytes, sig, seq, peer);
    } else {
      Api::putmem_signal_block(buf, src, nbytes, sig, seq, peer);
    }
    if (initiator) {
      if (threadIdx.x == 0) Api::signal_wait_until_ge(sig, seq);
      __syncthreads();
    }
  }
}

/// Block-uniform bounded wait of thread 0 for *sig >= seq. false: timed out (recorded).
__device__ __forceinline__ bool block_wait_ge(const uint64_t* sig, uint64_t seq, const kernel_ctx& ctx,
                                              unsigned int where) {
  __shared__ int s_ok;
  if (threadIdx.x == 0) s_ok = spin_until_ge(reinterpret_cast<const volatile uint64_t*>(sig), seq, ctx, where);
  __syncthreads();
  const bool ok = s_ok != 0;
  __syncthreads();
  return ok;
}

/// Baseline of put_signal_ping_pong on raw peer pointers: the block copies with int4 stores,
/// __syncthreads, thread 0 fences (system) and stores the signal with a volatile store; the waiting
/// side polls with volatile loads.
__global__ void raw_put_signal_ping_pong_kernel(char* peer_buf, const char* src, size_t nbytes, uint64_t* my_sig,
                                                uint64_t* peer_sig, uint64_t first, int count, bool initiator,
                                                kernel_ctx ctx) {
  const size_t vecs = nbytes / 16;
  auto* d = reinterpret_cast<int4*>(peer_buf);
  const auto* s = reinterpret_cast<const int4*>(src);
  for (int i = 0; i < count; ++i) {
    const uint64_t seq = first + i;
    if (!initiator && !block_wait_ge(my_sig, seq, ctx, 3)) return;
    for (size_t v = threadIdx.x; v < vecs; v += blockDim.x) d[v] = s[v];
    for (size_t b = vecs * 16 + threadIdx.x; b < nbytes; b += blockDim.x) peer_buf[b] = src[b];
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      *reinterpret_cast<volatile uint64_t*>(peer_sig) = seq;
    }
    if (initiator && !block_wait_ge(my_sig, seq, ctx, 4)) return;
  }
}

// --- barriers (every PE runs) ----------------------------------------------------------------

/// One thread: `count` device barrier_all calls.
template <class Api>
__global__ void barrier_all_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::barrier_all();
}

/// One thread: `count` barrier_all calls in the epoch protocol (Api::barrier_all_epochs).
template <class Api>
__global__ void barrier_all_epochs_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::barrier_all_epochs();
}

/// One thread: `count` barrier_all calls of the count protocol with relaxed polls (Api::barrier_all_relaxed_polls).
template <class Api>
__global__ void barrier_all_relaxed_polls_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::barrier_all_relaxed_polls();
}

/// One thread: clears this PE's device barrier words (Api::reset_barrier_words), between protocols.
template <class Api>
__global__ void reset_barrier_words_kernel() {
  Api::reset_barrier_words();
}

/// One block: `count` sync_all_block calls.
template <class Api>
__global__ void sync_all_block_kernel(int count) {
  for (int i = 0; i < count; ++i) Api::sync_all_block();
}

/// Baseline for 2 PEs: a raw flag barrier. Thread 0 stores epoch to the peer's word (volatile) and
/// polls its own until the peer's epoch arrives; with more than one thread, __syncthreads around it.
/// kFenced: fence.acq_rel.sys before the store, the least a barrier_all needs to order this PE's
/// earlier writes to peers (the bound for any barrier that does: "raw-fenced" rows).
template <bool kFenced>
__global__ void raw_barrier_kernel(uint64_t* my_word, uint64_t* peer_word, uint64_t first, int count, kernel_ctx ctx) {
  for (int i = 0; i < count; ++i) {
    const uint64_t epoch = first + i;
    if (blockDim.x > 1) __syncthreads();
    if (kFenced && threadIdx.x == 0) ptx::fence_acq_rel_sys();
    if (threadIdx.x == 0) *reinterpret_cast<volatile uint64_t*>(peer_word) = epoch;
    if (blockDim.x > 1) {
      if (!block_wait_ge(my_word, epoch, ctx, 5)) return;
    } else if (!spin_until_ge(reinterpret_cast<const volatile uint64_t*>(my_word), epoch, ctx, 5)) {
      return;
    }
  }
}

/// SHOAL_BENCH_PROBE=1 rows of barrier_latency (2 PEs, one thread): raw-fenced plus one ingredient of shoal's
/// barrier per step, to find what its time over raw-fenced is made of. kStep 1: the polls are ld.acquire.sys (shoal's)
/// instead of volatile loads; 2: also the signal is red.relaxed.sys.add(1) to a count, awaited as count >= epoch;
/// 3: also the waiter consumes with red.relaxed.sys.add(-1) before its polls and waits for the word >= 0 as int64
/// (shoal's count protocol, on raw pointers); 4: also a call to a function that is not inlined, on a branch the
/// barrier never takes (shoal's barrier holds such calls: the timeout report, the cold lookups). Each row starts on
/// zeroed words; `first` must start at 1.
__device__ __noinline__ void probe_barrier_cold(kernel_ctx ctx, uint64_t seen) {
  printf("shoal-bench: probe barrier saw %llu\n", static_cast<unsigned long long>(seen));
  record_failure(ctx, kTimedOut, 7);
}
template <int kStep>
__global__ void probe_barrier_kernel(uint64_t* my_word, uint64_t* peer_word, uint64_t first, int count,
                                     kernel_ctx ctx) {
  for (int i = 0; i < count; ++i) {
    const uint64_t epoch = first + i;
    ptx::fence_acq_rel_sys();
    if constexpr (kStep >= 2) {
      ptx::red_add_relaxed_sys(peer_word, uint64_t{1});
    } else {
      *reinterpret_cast<volatile uint64_t*>(peer_word) = epoch;
    }
    if constexpr (kStep >= 3) ptx::red_add_relaxed_sys(my_word, ~uint64_t{0});
    if constexpr (kStep >= 4) {
      if (static_cast<int64_t>(epoch) < 0) probe_barrier_cold(ctx, epoch);
    }
    uint64_t deadline = 0;
    uint32_t polls = 0;
    for (;;) {
      const uint64_t seen =
          kStep >= 1 ? ptx::ld_acquire_sys(my_word) : *reinterpret_cast<const volatile uint64_t*>(my_word);
      if (kStep >= 3 ? static_cast<int64_t>(seen) >= 0 : seen >= epoch) break;
      if ((++polls & 255u) == 0) {
        const uint64_t t = now_ns();
        if (deadline == 0) {
          deadline = t + ctx.timeout_ns;
        } else if (t > deadline) {
          record_failure(ctx, kTimedOut, 6);
          return;
        }
      }
    }
  }
}

/// SHOAL_BENCH_PROBE=1 rows probe-lib* (Api::barrier_probe_lib, shoal only): one
/// thread, `count` barriers; the words start at zero and return to it (count protocol).
template <class Api, int kMode>
__global__ void probe_lib_barrier_kernel(uint64_t* mine, uint64_t* theirs, int peer, int count) {
  for (int i = 0; i < count; ++i) Api::template barrier_probe_lib<kMode>(mine, theirs, peer);
}

}  // namespace shoal::bench::dev
