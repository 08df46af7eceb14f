// put_signal_ping_pong and barrier_latency of the device-initiated set: the members of driver<Api>
// (bench/common/driver.cuh) that measure the API's block-scope put-with-signal + signal_wait_until and its device
// barriers (barrier_all from one thread, sync_all_block) beside raw flag baselines, with the probe rows of
// SHOAL_BENCH_PROBE=1; kernels in bench/sync/sync_kernels.cuh. A pair on the proxy path (no direct_) runs the API rows
// only, its buffers filled, cleared and checked by host RMA.
// Included by the translation unit that runs the set (bench/device_set.cu; shoal-bench-nvshmem's nvshmem_bench.cu).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda_runtime.h>

#include "common/driver.cuh"
#include "sync/sync_kernels.cuh"

namespace shoal::bench::dev {

inline constexpr size_t kPingPongMaxBytes = size_t{64} << 10;

// ---- put_signal_ping_pong: block-scope putmem_signal + signal_wait_until, half round trip ----

template <class Api>
void driver<Api>::put_signal_ping_pong() {
  const size_t max_bytes = std::min(max_bytes_, kPingPongMaxBytes);
  char* buf = static_cast<char*>(Api::host_malloc(max_bytes));
  char* src = static_cast<char*>(Api::host_malloc(max_bytes));
  auto* sig = static_cast<uint64_t*>(Api::host_calloc(sizeof(uint64_t)));
  auto* raw_sig = static_cast<uint64_t*>(Api::host_calloc(sizeof(uint64_t)));
  Api::host_barrier();
  const int iters = loop_iters();
  const int warm = loop_warmup();
  const int threads = opts_.threads;
  const std::string label = "block/1x" + std::to_string(threads);
  char* peer_buf = active() && direct_ ? remote(buf, peer_) : nullptr;  // the raw baseline's
  uint64_t* peer_raw_sig = active() && direct_ ? remote(raw_sig, peer_) : nullptr;
  uint64_t api_seq = 1, raw_seq = 1;  // next sequence number of each signal word
  for (size_t nbytes : sizes(opts_.min_bytes, max_bytes, opts_.factor)) {
    uint32_t seed0 = 0, seed1 = 0;
    if (me_ == init_) {
      seed0 = fill(src, nbytes);
      seed1 = fill_at({src, peer_}, nbytes);
    }
    double us[3] = {0, 0, 0};
    bool ok[3] = {true, true, true};
    // 0: raw baseline (load/store pairs), 1: the API, 2 (SHOAL_BENCH_PROBE=1, an Api with putmem_signal_block_alt):
    // the API's other put-with-signal shape (Api::kPutSignalAltName)
    constexpr bool kHasAlt = requires { Api::putmem_signal_block_alt(nullptr, nullptr, 0, nullptr, 0, 0); };
    const int variants = kHasAlt && probe_rows_ && direct_ ? 3 : 2;
    for (int v = direct_ ? 0 : 1; v < variants; ++v) {
      const bool raw = v == 0;
      uint64_t& seq = raw ? raw_seq : api_seq;
      uint64_t* word = raw ? raw_sig : sig;
      if (me_ == init_) {
        clear(buf, nbytes);
        clear_at({buf, peer_}, nbytes);
      }
      us[v] = ping_pong_run(
          raw ? "raw put-signal ping-pong" : "put_signal ping-pong", iters, warm,
          [&](int first, int count, bool initiator) {
            if (raw) {
              raw_put_signal_ping_pong_kernel<<<1, threads, 0, stream_>>>(
                  peer_buf, src, nbytes, raw_sig, peer_raw_sig, static_cast<uint64_t>(first), count, initiator, ctx_);
            } else if (v == 1) {
              put_signal_ping_pong_kernel<Api><<<1, threads, 0, stream_>>>(
                  buf, src, nbytes, sig, static_cast<uint64_t>(first), count, peer_, initiator);
            } else if constexpr (kHasAlt) {
              put_signal_ping_pong_kernel<Api, true><<<1, threads, 0, stream_>>>(
                  buf, src, nbytes, sig, static_cast<uint64_t>(first), count, peer_, initiator);
            }
          },
          seq);
      seq += warm + static_cast<uint64_t>(opts_.reps) * iters;
      if (me_ == init_) {
        uint64_t seen = 0;
        cuda_check(cudaMemcpy(&seen, word, sizeof(seen), cudaMemcpyDeviceToHost), "read signal");
        ok[v] = seen == seq - 1 && holds(buf, nbytes, seed1) && holds_at({buf, peer_}, nbytes, seed0);
      }
    }
    if (me_ == init_) {
      row r = make("put_signal_ping_pong", Api::kName, label, nbytes, iters, us[1]);
      if (direct_) {
        r.ratio = us[1] / us[0];
        r.baseline = "raw";
      }
      add(r, ok[1]);
      if (direct_) add(make("put_signal_ping_pong", "raw", label, nbytes, iters, us[0]), ok[0]);
      if constexpr (kHasAlt) {
        if (variants == 3) {
          row a = make("put_signal_ping_pong", Api::kPutSignalAltName, label, nbytes, iters, us[2]);
          a.ratio = us[2] / us[0];
          a.baseline = "raw";
          add(a, ok[2]);
        }
      }
    }
  }
  Api::host_barrier();
  Api::host_free(raw_sig);
  Api::host_free(sig);
  Api::host_free(src);
  Api::host_free(buf);
}

// ---- barrier_latency: device barrier_all (one thread) and sync_all_block (one block); every PE ----

template <class Api>
void driver<Api>::barrier_latency() {
  // raw: [0] thread, [1] block; raw-fenced: [2], [3]; probe rows: [4..7]; probe-lib rows: [8..11]
  auto* words = static_cast<uint64_t*>(Api::host_calloc(16 * sizeof(uint64_t)));
  Api::host_barrier();
  const int iters = loop_iters();
  const int warm = loop_warmup();
  const int threads = opts_.threads;
  const bool raw_ok = npes_ == 2 && direct_;  // the raw flag barrier is written for two PEs and peer pointers
  if (proxy_ && me_ == 0) {
    std::fprintf(stderr,
                 "shoal-bench: barrier_latency: some PEs have no load/store path between them (the proxy path):%s "
                 "%d timed iterations per repetition (-n x 10 = %d) after %d warm-up\n",
                 npes_ == 2 ? " no raw or raw-fenced rows;" : "", iters, std::max(1, opts_.iterations * 10), warm);
    std::fflush(stderr);
  }
  struct variant {
    const char* label;
    bool block;
  };
  for (const variant& v : {variant{"thread", false}, variant{"block", true}}) {
    const std::string label = v.block ? "block/1x" + std::to_string(threads) : "thread";
    const int block_threads = v.block ? threads : 1;
    double raw_us = 0;
    double fenced_us = 0;
    if (raw_ok) {
      uint64_t* mine = words + (v.block ? 1 : 0);
      uint64_t* theirs = remote(mine, peer_);
      raw_us = barrier_run("raw barrier", iters, warm, [&](int first, int count) {
        raw_barrier_kernel<false>
            <<<1, block_threads, 0, stream_>>>(mine, theirs, static_cast<uint64_t>(first), count, ctx_);
      });
      uint64_t* mine_f = words + (v.block ? 3 : 2);
      uint64_t* theirs_f = remote(mine_f, peer_);
      fenced_us = barrier_run("raw fenced barrier", iters, warm, [&](int first, int count) {
        raw_barrier_kernel<true>
            <<<1, block_threads, 0, stream_>>>(mine_f, theirs_f, static_cast<uint64_t>(first), count, ctx_);
      });
    }
    const double us = barrier_run(v.block ? "sync_all_block" : "barrier_all", iters, warm, [&](int, int count) {
      if (v.block)
        sync_all_block_kernel<Api><<<1, block_threads, 0, stream_>>>(count);
      else
        barrier_all_kernel<Api><<<1, 1, 0, stream_>>>(count);
    });
    // SHOAL_BENCH_PROBE=1: raw-fenced plus shoal's barrier ingredients, one per step (probe_barrier_kernel).
    double probe_us[4] = {0, 0, 0, 0};
    if (raw_ok && !v.block && probe_rows_) {
      auto probe = [&]<int kStep>(std::integral_constant<int, kStep>) {
        uint64_t* mine_p = words + 3 + kStep;
        uint64_t* theirs_p = remote(mine_p, peer_);
        probe_us[kStep - 1] = barrier_run("probe barrier", iters, warm, [&](int first, int count) {
          probe_barrier_kernel<kStep>
              <<<1, 1, 0, stream_>>>(mine_p, theirs_p, static_cast<uint64_t>(first), count, ctx_);
        });
      };
      probe(std::integral_constant<int, 1>{});
      probe(std::integral_constant<int, 2>{});
      probe(std::integral_constant<int, 3>{});
      probe(std::integral_constant<int, 4>{});
    }
    // probe-lib rows (shoal only): one per mode of Api::barrier_probe_lib, each on its own word (words[8 + mode]).
    static constexpr const char* kLibNames[4] = {"probe-lib", "probe-lib-addr", "probe-lib-table", "probe-lib-arith"};
    double lib_us[4] = {0, 0, 0, 0};
    if constexpr (requires { Api::template barrier_probe_lib<0>(nullptr, nullptr, 0); }) {
      if (raw_ok && !v.block && probe_rows_) {
        auto lib = [&]<int kMode>(std::integral_constant<int, kMode>) {
          uint64_t* mine_l = words + 8 + kMode;
          uint64_t* theirs_l = remote(mine_l, peer_);
          lib_us[kMode] = barrier_run(kLibNames[kMode], iters, warm, [&](int, int count) {
            probe_lib_barrier_kernel<Api, kMode><<<1, 1, 0, stream_>>>(mine_l, theirs_l, peer_, count);
          });
        };
        lib(std::integral_constant<int, 0>{});
        lib(std::integral_constant<int, 1>{});
        lib(std::integral_constant<int, 2>{});
        lib(std::integral_constant<int, 3>{});
      }
    }
    double relaxed_us = 0;
    if constexpr (requires { Api::barrier_all_relaxed_polls(); }) {
      if (!v.block && !proxy_ && probe_rows_) {
        relaxed_us = barrier_run("barrier_all (relaxed polls)", iters, warm, [&](int, int count) {
          barrier_all_relaxed_polls_kernel<Api><<<1, 1, 0, stream_>>>(count);
        });
      }
    }
    // shoal: the epoch protocol beside the default count protocol (thread scope, load/store worlds, variant rows on).
    double epochs_us = 0;
    if constexpr (requires { Api::barrier_all_epochs(); }) {
      if (!v.block && !proxy_ && variant_rows_) {
        epochs_us = barrier_run("barrier_all (epochs)", iters, warm,
                                [&](int, int count) { barrier_all_epochs_kernel<Api><<<1, 1, 0, stream_>>>(count); });
        // Every PE has left its last epoch barrier (PE 0's median came after all of them): clear the words for
        // the count protocol, then no PE signals before every PE has cleared its own.
        untimed("reset_barrier_words", [&] { reset_barrier_words_kernel<Api><<<1, 1, 0, stream_>>>(); });
        Api::host_barrier();
      }
    }
    if (me_ == 0) {
      row r = make("barrier_latency", Api::kName, label, 0, iters, us);
      if (raw_ok) {
        r.ratio = us / raw_us;
        r.baseline = "raw";
      }
      add(r, true);
      if (relaxed_us > 0)
        add(make("barrier_latency", std::string(Api::kName) + "-relaxed", label, 0, iters, relaxed_us), true);
      if (epochs_us > 0)
        add(make("barrier_latency", std::string(Api::kName) + "-epochs", label, 0, iters, epochs_us), true);
      if (raw_ok) {
        add(make("barrier_latency", "raw", label, 0, iters, raw_us), true);
        add(make("barrier_latency", "raw-fenced", label, 0, iters, fenced_us), true);
      }
      static constexpr const char* kProbeNames[4] = {"probe-acq", "probe-red", "probe-count", "probe-call"};
      for (int k = 0; k < 4; ++k)
        if (probe_us[k] > 0) add(make("barrier_latency", kProbeNames[k], label, 0, iters, probe_us[k]), true);
      for (int k = 0; k < 4; ++k)
        if (lib_us[k] > 0) add(make("barrier_latency", kLibNames[k], label, 0, iters, lib_us[k]), true);
    }
  }
  Api::host_barrier();
  Api::host_free(words);
}

/// Like ping_pong_run for an all-PE barrier: PEs other than 0 run every round in one kernel.
/// launch(first_epoch, count). Returns PE 0's median time per barrier (us).
template <class Api>
template <class Launch>
double driver<Api>::barrier_run(const char* what, int iters, int warm, Launch&& launch) {
  Api::host_barrier();
  double us = 0;
  if (me_ != 0) {
    untimed(what, [&] { launch(1, warm + opts_.reps * iters); });
  } else {
    untimed(what, [&] { launch(1, warm); });
    int next = 1 + warm;
    us = median_us(what,
                   [&] {
                     launch(next, iters);
                     next += iters;
                   }) /
         iters;
  }
  Api::host_barrier();
  return us;
}

}  // namespace shoal::bench::dev
