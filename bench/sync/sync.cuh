// The latency benchmarks of shoal-bench's device driver (bench/device/driver.cuh): p_ping_pong,
// put_signal_ping_pong, put_quiet_latency, atomic_latency and barrier_latency, as out-of-class members
// of driver<Api>. Included at the end of driver.cuh only. A pair on the proxy path (no direct_) runs
// the API rows only: no raw baseline, the target's buffers filled, cleared and checked by host RMA.
#pragma once

namespace shoal::bench::dev {

// ---- p_ping_pong: int p + wait_until, half round trip ----

template <class Api>
void driver<Api>::p_ping_pong() {
  int* flag = static_cast<int*>(Api::host_calloc(sizeof(int)));
  int* raw_flag = static_cast<int*>(Api::host_calloc(sizeof(int)));
  Api::host_barrier();
  const int iters = loop_iters();
  const int warm = loop_warmup();
  const int total = warm + opts_.reps * iters;
  int* raw_peer = active() && direct_ ? remote(raw_flag, peer_) : nullptr;
  // Both use fresh flags: sequence numbers 1..total.
  double raw_us = 0;
  if (direct_) {
    raw_us = ping_pong_run("raw flag ping-pong", iters, warm, [&](int first, int count, bool initiator) {
      raw_flag_ping_pong_kernel<<<1, 1, 0, stream_>>>(raw_flag, raw_peer, first, count, initiator, ctx_);
    });
  }
  const double api_us = ping_pong_run("p ping-pong", iters, warm, [&](int first, int count, bool initiator) {
    p_ping_pong_kernel<Api><<<1, 1, 0, stream_>>>(flag, first, count, peer_, initiator);
  });
  if (me_ == init_) {
    // The last reply wrote `total` into the initiator's flag.
    int seen_api = 0, seen_raw = 0;
    cuda_check(cudaMemcpy(&seen_api, flag, sizeof(int), cudaMemcpyDeviceToHost), "read flag");
    cuda_check(cudaMemcpy(&seen_raw, raw_flag, sizeof(int), cudaMemcpyDeviceToHost), "read flag");
    row r = make("p_ping_pong", Api::kName, "thread", sizeof(int), iters, api_us);
    if (direct_) {
      r.ratio = api_us / raw_us;
      r.baseline = "raw";
    }
    add(r, seen_api == total);
    if (direct_) add(make("p_ping_pong", "raw", "thread", sizeof(int), iters, raw_us), seen_raw == total);
  }
  Api::host_barrier();
  Api::host_free(raw_flag);
  Api::host_free(flag);
}

/// Ping-pong protocol: the target (responder) runs all warm + reps*iters rounds in one kernel; the initiator runs
/// a warm-up kernel, then reps timed kernels of iters rounds. Sequence numbers go on from 1.
/// launch(first, count, initiator). Returns the initiator's median half round trip in microseconds.
template <class Api>
template <class Launch>
double driver<Api>::ping_pong_run(const char* what, int iters, int warm, Launch&& launch, uint64_t first_seq) {
  Api::host_barrier();
  double us = 0;
  if (me_ == target_) {
    untimed(what, [&] { launch(static_cast<int>(first_seq), warm + opts_.reps * iters, false); });
  } else if (me_ == init_) {
    untimed(what, [&] { launch(static_cast<int>(first_seq), warm, true); });
    int next = static_cast<int>(first_seq) + warm;
    us = median_us(what,
                   [&] {
                     launch(next, iters, true);
                     next += iters;
                   }) /
         iters / 2;
  }
  Api::host_barrier();
  return us;
}

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

// ---- put_quiet_latency: one thread, putmem + quiet; the target is passive ----

template <class Api>
void driver<Api>::put_quiet_latency() {
  const size_t max_bytes = std::min(max_bytes_, kPutQuietMaxBytes);
  char* src = static_cast<char*>(Api::host_malloc(max_bytes));
  char* dst = static_cast<char*>(Api::host_malloc(max_bytes));
  Api::host_barrier();
  if (me_ == init_) {
    const int iters = loop_iters();
    const int warm = loop_warmup();
    char* peer_dst = direct_ ? remote(dst, peer_) : nullptr;  // the raw baseline's
    for (size_t nbytes : sizes(opts_.min_bytes, max_bytes, opts_.factor)) {
      double us[2] = {0, 0};
      bool ok[2] = {true, true};
      for (int v = direct_ ? 0 : 1; v < 2; ++v) {  // 0: raw baseline (load/store pairs), 1: the API
        const bool raw = v == 0;
        const uint32_t seed = fill(src, nbytes);
        auto k = [&](int n) {
          if (raw)
            raw_put_fence_kernel<<<1, 1, 0, stream_>>>(peer_dst, src, nbytes, n);
          else
            put_quiet_kernel<Api><<<1, 1, 0, stream_>>>(dst, src, nbytes, n, peer_);
        };
        untimed("put_quiet warm-up", [&] { k(warm); });
        clear_at({dst, peer_}, nbytes);
        us[v] = median_us(raw ? "raw put+fence" : "putmem+quiet", [&] { k(iters); }) / iters;
        ok[v] = holds_at({dst, peer_}, nbytes, seed);
      }
      row r = make("put_quiet_latency", Api::kName, "thread", nbytes, iters, us[1]);
      if (direct_) {
        r.ratio = us[1] / us[0];
        r.baseline = "raw";
      }
      add(r, ok[1]);
      if (direct_) add(make("put_quiet_latency", "raw", "thread", nbytes, iters, us[0]), ok[0]);
    }
  }
  Api::host_barrier();
  Api::host_free(dst);
  Api::host_free(src);
}

// ---- atomic_latency: dependent uint64 fetch_adds on the target's words (kAtomicWords, round robin); the target
// is passive ----

template <class Api>
void driver<Api>::atomic_latency() {
  auto* words = static_cast<char*>(Api::host_calloc(kAtomicBytes));
  auto* raw_words = static_cast<char*>(Api::host_calloc(kAtomicBytes));
  char* probe_words[2];  // the probe-amo-arith and -nocheck rows' words
  for (char*& p : probe_words) p = static_cast<char*>(Api::host_calloc(kAtomicBytes));
  auto* alt_words = static_cast<char*>(Api::host_calloc(kAtomicBytes));        // the probe-amo-alt rows'
  auto* alt_raw_words = static_cast<char*>(Api::host_calloc(kAtomicBytes));    // (API, raw and
  auto* alt_arith_words = static_cast<char*>(Api::host_calloc(kAtomicBytes));  // arithmetic)
  Api::host_barrier();
  if (me_ == init_) {
    const int iters = loop_iters();
    const int warm = std::max(loop_warmup(), kAtomicWords);         // every word touched before the timed loops
    char* peer_raw = direct_ ? remote(raw_words, peer_) : nullptr;  // the raw baseline's
    const uint64_t expected = warm + static_cast<uint64_t>(opts_.reps) * iters;
    // Every word's count summed (each step adds 1 to one word).
    auto total = [&](char* base, bool raw) {
      uint64_t sum = 0;
      for (int k = 0; k < kAtomicWords; ++k) {
        auto* w = reinterpret_cast<uint64_t*>(base + k * kAtomicWordStride);
        sum += raw ? read_word(w) : read_word_at(w, peer_);
      }
      return sum;
    };
    double raw_us = 0;
    if (direct_) {
      untimed("raw fetch_add warm-up",
              [&] { raw_fetch_add_kernel<<<1, 1, 0, stream_>>>(peer_raw, warm, &scratch_->sink); });
      raw_us = median_us("raw fetch_add",
                         [&] { raw_fetch_add_kernel<<<1, 1, 0, stream_>>>(peer_raw, iters, &scratch_->sink); }) /
               iters;
    }
    untimed("fetch_add warm-up",
            [&] { fetch_add_kernel<Api><<<1, 1, 0, stream_>>>(words, warm, peer_, &scratch_->sink); });
    const double us =
        median_us("fetch_add",
                  [&] { fetch_add_kernel<Api><<<1, 1, 0, stream_>>>(words, iters, peer_, &scratch_->sink); }) /
        iters;
    row r = make("atomic_latency", Api::kName, "thread", sizeof(uint64_t), iters, us);
    if (direct_) {
      r.ratio = us / raw_us;
      r.baseline = "raw";
    }
    add(r, total(words, false) == expected);
    if (direct_)
      add(make("atomic_latency", "raw", "thread", sizeof(uint64_t), iters, raw_us), total(peer_raw, true) == expected);
    constexpr bool kHasArith = requires { Api::uint64_atomic_fetch_add_arith(nullptr, 0, 0); };
    // SHOAL_BENCH_PROBE=1: the probe-amo-arith and -nocheck rows (fetch_add_kernel), each on its own words.
    if constexpr (kHasArith) {
      if (direct_ && probe_rows_) {
        auto probe = [&]<fetch_add_via kVia>(const char* probe_name, char* words_of_row) {
          untimed(probe_name, [&] {
            fetch_add_kernel<Api, kVia><<<1, 1, 0, stream_>>>(words_of_row, warm, peer_, &scratch_->sink);
          });
          const double probe_us = median_us(probe_name,
                                            [&] {
                                              fetch_add_kernel<Api, kVia>
                                                  <<<1, 1, 0, stream_>>>(words_of_row, iters, peer_, &scratch_->sink);
                                            }) /
                                  iters;
          row p = make("atomic_latency", probe_name, "thread", sizeof(uint64_t), iters, probe_us);
          p.ratio = probe_us / raw_us;
          p.baseline = "raw";
          add(p, total(words_of_row, false) == expected);
        };
        probe.template operator()<fetch_add_via::arith>("probe-amo-arith", probe_words[0]);
        probe.template operator()<fetch_add_via::nocheck>("probe-amo-nocheck", probe_words[1]);
      }
    }
    // SHOAL_BENCH_PROBE=1: the probe-amo-alt rows, the API, the raw atom and (shoal) the session-24 arithmetic with the
    // target alternating between the peer and this PE (fetch_add_alt_kernel), each on its own words: a per-call
    // lookup that no loop can hoist.
    if (direct_ && probe_rows_) {
      double alt_us[3] = {0, 0, 0};
      char* alt_base[3] = {alt_words, alt_raw_words, alt_arith_words};
      for (int via = 0; via < (kHasArith ? 3 : 2); ++via) {
        char* raw_peer = via == 1 ? remote(alt_raw_words, peer_) : nullptr;
        auto launch = [&](int n) {
          if (via == 1) {
            fetch_add_alt_kernel<Api, fetch_add_via::raw>
                <<<1, 1, 0, stream_>>>(nullptr, n, peer_, me_, raw_peer, alt_raw_words, &scratch_->sink);
          } else if (via == 0) {
            fetch_add_alt_kernel<Api, fetch_add_via::api>
                <<<1, 1, 0, stream_>>>(alt_words, n, peer_, me_, nullptr, nullptr, &scratch_->sink);
          } else if constexpr (kHasArith) {
            fetch_add_alt_kernel<Api, fetch_add_via::arith>
                <<<1, 1, 0, stream_>>>(alt_arith_words, n, peer_, me_, nullptr, nullptr, &scratch_->sink);
          }
        };
        untimed("probe-amo-alt warm-up", [&] { launch(warm); });
        alt_us[via] = median_us("probe-amo-alt", [&] { launch(iters); }) / iters;
      }
      // Every step added 1 to one word of the peer's or this PE's copy: both copies' counts sum to `expected`.
      auto alt_total = [&](char* base, bool raw) {
        uint64_t sum = total(raw ? remote(base, peer_) : base, raw);
        for (int k = 0; k < kAtomicWords; ++k)
          sum += read_word(reinterpret_cast<uint64_t*>(base + k * kAtomicWordStride));
        return sum;
      };
      const char* names[3] = {"probe-amo-alt", "raw-alt", "probe-amo-alt-arith"};
      for (int via : {0, 2}) {
        if (via == 2 && !kHasArith) continue;
        row a = make("atomic_latency", names[via], "thread", sizeof(uint64_t), iters, alt_us[via]);
        a.ratio = alt_us[via] / alt_us[1];
        a.baseline = "raw-alt";
        add(a, alt_total(alt_base[via], false) == expected);
      }
      add(make("atomic_latency", "raw-alt", "thread", sizeof(uint64_t), iters, alt_us[1]),
          alt_total(alt_raw_words, true) == expected);
    }
  }
  Api::host_barrier();
  Api::host_free(alt_arith_words);
  Api::host_free(alt_raw_words);
  Api::host_free(alt_words);
  for (char* p : probe_words) Api::host_free(p);
  Api::host_free(raw_words);
  Api::host_free(words);
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
