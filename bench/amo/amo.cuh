// atomic_latency of the device-initiated set: the member of driver<Api> (bench/common/driver.cuh) that measures the
// API's uint64 fetch_add beside a raw atomicAdd_system chain, with the probe rows of SHOAL_BENCH_PROBE=1; kernels in
// bench/amo/amo_kernels.cuh. A pair on the proxy path (no direct_) runs the API rows only.
// Included by the translation unit that runs the set (bench/device_set.cu; shoal-bench-nvshmem's nvshmem_bench.cu).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda_runtime.h>

#include "amo/amo_kernels.cuh"
#include "common/driver.cuh"

namespace shoal::bench::dev {

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
    // SHOAL_BENCH_PROBE=1: the probe-amo-alt rows, the API, the raw atom and (shoal) the address arithmetic with the
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

}  // namespace shoal::bench::dev
