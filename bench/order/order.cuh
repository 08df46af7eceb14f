// quiet_after_k, fence_cost and signal_vs_flag of the device-initiated set: what completion and ordering cost (the
// study's completion section, docs/study.md). One thread of the pair's initiator issues; the target is passive.
//
//   quiet_after_k   k non-blocking puts of one size to consecutive slots, then one quiet, for k = 1 .. 4096 (while
//                   k x size <= kOrderMaxBatch); the row's time is per put (the batch's time / k), scope
//                   "thread/k=<k>", beside the raw baseline (the same stores, one __threadfence_system) as ratio
//   fence_cost      puts with a fence after each ("thread/put+fence") beside the same puts without ("thread/put"),
//                   one quiet at the end; the ratio is the fenced row's time over the plain row's
//   signal_vs_flag  put-with-signal ("thread/put_signal") beside put + fence + p of a flag ("thread/put+fence+p"),
//                   one quiet at the end; the ratio is put-with-signal's time over the three-call form's
//
// A pair on the proxy path (no direct_) runs the API rows only, its buffers filled, cleared and checked by host RMA.
// Included by the translation unit that runs the set (bench/device_set.cu; shoal-bench-nvshmem's nvshmem_bench.cu).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "common/driver.cuh"
#include "order/order_kernels.cuh"

namespace shoal::bench::dev {

inline constexpr size_t kOrderMaxBytes = size_t{64} << 10;  // largest message of the three
inline constexpr size_t kOrderMaxBatch = size_t{4} << 20;   // quiet_after_k: k x size at most this
inline constexpr int kOrderKs[] = {1, 4, 16, 64, 256, 1024, 4096};

// ---- quiet_after_k ----

template <class Api>
void driver<Api>::quiet_after_k() {
  const size_t max_bytes = std::min(max_bytes_, kOrderMaxBytes);
  // Room for the largest batch of the largest size, up to kOrderMaxBatch: every size gets each k while k x size fits.
  const size_t buffer = std::min(kOrderMaxBatch, size_t{4096} * max_bytes);
  char* src = static_cast<char*>(Api::host_malloc(buffer));
  char* dst = static_cast<char*>(Api::host_malloc(buffer));
  Api::host_barrier();
  if (me_ == init_) {
    char* peer_dst = direct_ ? remote(dst, peer_) : nullptr;
    for (size_t nbytes : sizes(opts_.min_bytes, max_bytes, opts_.factor)) {
      for (int k : kOrderKs) {
        const size_t total = static_cast<size_t>(k) * nbytes;
        if (total > buffer) break;
        const int iters = std::max(1, loop_iters() / k);
        const int warm = std::max(1, loop_warmup() / k);
        double us[2] = {0, 0};
        bool ok[2] = {true, true};
        for (int v = direct_ ? 0 : 1; v < 2; ++v) {  // 0: raw baseline, 1: the API
          const bool raw = v == 0;
          const uint32_t seed = fill(src, total);
          auto launch = [&](int n) {
            if (raw)
              raw_k_then_fence_kernel<<<1, 1, 0, stream_>>>(peer_dst, src, nbytes, k, n);
            else
              quiet_after_k_kernel<Api><<<1, 1, 0, stream_>>>(dst, src, nbytes, k, n, peer_);
          };
          untimed("quiet_after_k warm-up", [&] { launch(warm); });
          clear_at({dst, peer_}, total);
          us[v] = median_us(raw ? "raw k stores + fence" : "k putmem_nbi + quiet", [&] { launch(iters); }) /
                  (static_cast<double>(iters) * k);
          ok[v] = holds_at({dst, peer_}, total, seed);
        }
        const std::string label = "thread/k=" + std::to_string(k);
        row r = make("quiet_after_k", Api::kName, label, nbytes, iters, us[1]);
        r.bandwidth_gbps = us[1] > 0 ? nbytes / (us[1] * 1e3) : 0;
        if (direct_) {
          r.ratio = us[1] / us[0];
          r.baseline = "raw";
        }
        add(r, ok[1]);
        if (direct_) add(make("quiet_after_k", "raw", label, nbytes, iters, us[0]), ok[0]);
      }
    }
  }
  Api::host_barrier();
  Api::host_free(dst);
  Api::host_free(src);
}

// ---- fence_cost and signal_vs_flag: two forms of one operation, the second's time over the first's ----

template <class Api>
template <class Launch, class Check>
void driver<Api>::order_pair(const char* bench, const char* const labels[2], char* src, char* dst, size_t nbytes,
                             Launch&& launch, Check&& check) {
  const int iters = loop_iters();
  double us[2] = {0, 0};
  bool ok[2] = {true, true};
  for (int v = 0; v < 2; ++v) {
    const uint32_t seed = fill(src, nbytes);
    untimed(bench, [&] { launch(v, loop_warmup()); });
    clear_at({dst, peer_}, nbytes);
    us[v] = median_us(labels[v], [&] { launch(v, iters); }) / iters;
    ok[v] = holds_at({dst, peer_}, nbytes, seed) && check(v);
  }
  add(make(bench, Api::kName, std::string("thread/") + labels[0], nbytes, iters, us[0]), ok[0]);
  row r = make(bench, Api::kName, std::string("thread/") + labels[1], nbytes, iters, us[1]);
  r.ratio = us[0] > 0 ? us[1] / us[0] : 0;
  r.baseline = labels[0];
  add(r, ok[1]);
}

template <class Api>
void driver<Api>::fence_cost() {
  const size_t max_bytes = std::min(max_bytes_, kOrderMaxBytes);
  char* src = static_cast<char*>(Api::host_malloc(max_bytes));
  char* dst = static_cast<char*>(Api::host_malloc(max_bytes));
  Api::host_barrier();
  if (me_ == init_) {
    static constexpr const char* kLabels[2] = {"put", "put+fence"};
    for (size_t nbytes : sizes(opts_.min_bytes, max_bytes, opts_.factor)) {
      auto launch = [&](int v, int n) {
        if (v == 0)
          put_fence_kernel<Api, false><<<1, 1, 0, stream_>>>(dst, src, nbytes, n, peer_);
        else
          put_fence_kernel<Api, true><<<1, 1, 0, stream_>>>(dst, src, nbytes, n, peer_);
      };
      order_pair("fence_cost", kLabels, src, dst, nbytes, launch, [](int) { return true; });
    }
  }
  Api::host_barrier();
  Api::host_free(dst);
  Api::host_free(src);
}

template <class Api>
void driver<Api>::signal_vs_flag() {
  const size_t max_bytes = std::min(max_bytes_, kOrderMaxBytes);
  char* src = static_cast<char*>(Api::host_malloc(max_bytes));
  char* dst = static_cast<char*>(Api::host_malloc(max_bytes));
  auto* word = static_cast<uint64_t*>(Api::host_calloc(sizeof(uint64_t)));
  Api::host_barrier();
  if (me_ == init_) {
    static constexpr const char* kLabels[2] = {"put+fence+p", "put_signal"};
    uint64_t next = 1;  // signal values only grow, so a stale word never passes the check
    for (size_t nbytes : sizes(opts_.min_bytes, max_bytes, opts_.factor)) {
      auto launch = [&](int v, int n) {  // sets the word to next .. next + n - 1
        if (v == 0)
          signal_or_flag_kernel<Api, false><<<1, 1, 0, stream_>>>(dst, src, nbytes, word, next, n, peer_);
        else
          signal_or_flag_kernel<Api, true><<<1, 1, 0, stream_>>>(dst, src, nbytes, word, next, n, peer_);
        next += static_cast<uint64_t>(n);
      };
      order_pair("signal_vs_flag", kLabels, src, dst, nbytes, launch,
                 [&](int) { return read_word_at(word, peer_) == next - 1; });
    }
  }
  Api::host_barrier();
  Api::host_free(word);
  Api::host_free(dst);
  Api::host_free(src);
}

}  // namespace shoal::bench::dev
