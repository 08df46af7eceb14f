// put_bw, get_bw, put_bw_bidir, put_quiet_latency and p_ping_pong of the device-initiated set: the members of
// driver<Api> (bench/common/driver.cuh) that measure the API's RMA calls (putmem_nbi / getmem_nbi at thread, warp and
// block scope, blocking putmem + quiet, int p + wait_until) beside their same-run baselines (plain SM copy, raw block
// put, copy engines, raw put + fence, raw flag ping-pong), with their kernels (bench/rma/rma_kernels.cuh). A pair on
// the proxy path (no direct_) runs the API rows only, its buffers filled, cleared and checked by host RMA.
// Included by the translation unit that runs the set (bench/device_set.cu; shoal-bench-nvshmem's nvshmem_bench.cu).
#pragma once

#include <time.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <cuda_runtime.h>

#include "common/driver.cuh"
#include "rma/rma_kernels.cuh"

namespace shoal::bench::dev {

/// get_bw's source: at least this many bytes of the peer's heap, read a new slice per iteration, so
/// that no iteration finds what an earlier one left in this GPU's L2 (50 MiB on H200; peer reads are
/// cached there, which made repeated 4-16 MiB gets report several TB/s).
inline constexpr size_t kGetRotateBytes = size_t{256} << 20;
inline constexpr size_t kPutQuietMaxBytes = size_t{1} << 10;

template <class Api>
std::vector<typename driver<Api>::grid> driver<Api>::bw_grids(bool block_only) const {
  std::vector<grid> out;
  const bool all = opts_.scope == "all";
  if (all || opts_.scope == "block") {
    out.push_back({shoal::block_scope{}, sms_, opts_.threads});
    if (opts_.ctas != sms_) out.push_back({shoal::block_scope{}, opts_.ctas, opts_.threads});
  }
  if (block_only) return out;
  if (all || opts_.scope == "warp") out.push_back({shoal::warp_scope{}, opts_.ctas, opts_.threads});
  if (all || opts_.scope == "thread") out.push_back({shoal::thread_scope{}, opts_.ctas, opts_.threads});
  return out;
}

template <class Api>
template <class A, class S, bool kGet>
void driver<Api>::launch_rma_bw(const grid& g, char* dst, const char* src, size_t nbytes, int iters, background bg,
                                size_t slices) {
  auto kernel = rma_bw_kernel<A, S, kGet>;
  size_t smem = 0;
  if constexpr (is_block_v<S>) smem = A::kBlockSmemBytes;
  static bool configured = false;  // once per kernel instantiation, outside any timed region
  if (!configured && smem > 48 * 1024) {
    cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
               "cudaFuncSetAttribute");
  }
  configured = true;
  kernel<<<g.ctas, g.threads, smem, stream_>>>(dst, src, nbytes, g.chunk(nbytes), iters, slices, peer_, bg, ctx_);
}

template <class Api>
template <class A, bool kGet>
void driver<Api>::launch_rma_bw_any(const grid& g, char* dst, const char* src, size_t nbytes, int iters, background bg,
                                    size_t slices) {
  std::visit([&](auto sc) { launch_rma_bw<A, decltype(sc), kGet>(g, dst, src, nbytes, iters, bg, slices); }, g.s);
}

// ---- put_bw / get_bw: the initiator moves the message to / from the target; the target is passive ----

template <class Api>
void driver<Api>::bandwidth(const char* name, bool get) {
  // The rotating get source only where the peer's memory is read by load/store (cached in this
  // GPU's L2); over the proxy the owner copies it out of its heap.
  const size_t src_bytes = get && direct_ ? std::max(max_bytes_, kGetRotateBytes) : max_bytes_;
  char* src = static_cast<char*>(Api::host_malloc(src_bytes));
  char* dst = static_cast<char*>(Api::host_malloc(max_bytes_));
  Api::host_barrier();
  // put: local src -> peer dst. get: peer src -> local dst.
  const at data_src{src, get ? peer_ : me_};  // where the pattern is written
  const at data_dst{dst, get ? me_ : peer_};  // where it must arrive
  bool ce_ok = true;
  for (size_t nbytes : sizes(opts_.min_bytes, max_bytes_, opts_.factor)) {
    // One host barrier per size keeps the passive PEs' host waits short (SHOAL_WAIT_TIMEOUT).
    Api::host_barrier();
    if (me_ == init_) {
      const size_t slices = get && direct_ ? src_bytes / nbytes : 1;  // kGetRotateBytes
      const int iters = bw_iters(nbytes);
      const int warm = std::clamp(opts_.warmup * 10, 1, iters);
      std::vector<grid> grids = bw_grids(false);
      double copy_bw_full = 0;
      std::string last_copy_grid;
      double copy_bw = 0;
      for (const grid& g : grids) {
        const std::string copy_grid = std::to_string(g.ctas) + "x" + std::to_string(g.threads);
        // Baseline: the plain SM copy kernel on the same grid (measured once per grid shape; load/store
        // pairs only).
        if (direct_ && copy_grid != last_copy_grid) {
          last_copy_grid = copy_grid;
          auto run = [&] {
            char* raw_src = raw(data_src);
            char* raw_dst = raw(data_dst);
            const uint32_t seed = fill(raw_src, nbytes, slices);
            auto k = [&](int n) {
              sm_copy_kernel<<<g.ctas, g.threads, 0, stream_>>>(raw_dst, raw_src, nbytes, n, slices, background{},
                                                                ctx_);
            };
            int n = iters;
            const double us = per_iter_us("sm_copy", warm, n, k, [&] { clear(raw_dst, nbytes); });
            row r = make(name, "sm_copy", "grid/" + copy_grid, nbytes, n, us);
            r.bandwidth_gbps = nbytes / (us * 1e3);
            copy_bw = r.bandwidth_gbps;
            add(r, holds(raw_dst, nbytes, seed));
          };
          run();
          if (g.ctas == sms_) copy_bw_full = copy_bw;
        }
        if (!get && g.is_block() && direct_) {
          // Baseline: the block put on raw pointers, this binary's heap (raw_block_put_kernel; load/store
          // pairs only).
          char* raw_dst = raw(data_dst);
          const uint32_t seed = fill_at(data_src, nbytes, slices);
          auto k = [&](int n) {
            raw_block_put_kernel<<<g.ctas, g.threads, 0, stream_>>>(raw_dst, src, nbytes, g.chunk(nbytes), n, slices);
          };
          int n = iters;
          const double us = per_iter_us("raw_block", warm, n, k, [&] { clear(raw_dst, nbytes); });
          row r = make(name, "raw_block", g.label(), nbytes, n, us);
          r.bandwidth_gbps = nbytes / (us * 1e3);
          r.ratio = copy_bw > 0 ? r.bandwidth_gbps / copy_bw : 0;
          r.baseline = "sm_copy";
          add(r, holds(raw_dst, nbytes, seed));
        }
        measure_rma<Api>(name, Api::kName, g, get, src, dst, data_src, data_dst, nbytes, slices, iters, warm, copy_bw);
        if constexpr (requires { typename Api::tma; }) {
          if (!get && g.is_block() && variant_rows_)
            measure_rma<typename Api::tma>(name, Api::kTmaName, g, get, src, dst, data_src, data_dst, nbytes, slices,
                                           iters, warm, copy_bw);
        }
        // Other block puts of the same API, measured beside it (shoal: the generic copy, the probe rows).
        if constexpr (requires { typename Api::block_put_variants; }) {
          if (!get && g.is_block() && variant_rows_)
            std::apply(
                [&]<class... V>(V...) {
                  (measure_rma_variant<V>(name, g, src, dst, data_src, data_dst, nbytes, slices, iters, warm, copy_bw),
                   ...);
                },
                typename Api::block_put_variants{});
        }
      }
      // Information: the copy engines (cudaMemcpyAsync between the two heaps), not reachable from a kernel.
      if (ce_ok && copy_bw_full > 0) {
        char* raw_src = raw(data_src);
        char* raw_dst = raw(data_dst);
        const uint32_t seed = fill(raw_src, nbytes, slices);
        cudaError_t e = cudaMemcpyAsync(raw_dst, raw_src, nbytes, cudaMemcpyDeviceToDevice, stream_);
        if (e != cudaSuccess) {
          cudaGetLastError();
          std::fprintf(stderr, "shoal-bench: %s: no copy-engine row (cudaMemcpyAsync between the heaps: %s)\n", name,
                       cudaGetErrorString(e));
          ce_ok = false;
        } else {
          finish("copy engine");
          int n = iters;
          const double us = per_iter_us(
              "copy engine", 1, n,
              [&](int count) {
                for (int i = 0; i < count; ++i)
                  cudaMemcpyAsync(raw_dst, raw_src + (static_cast<size_t>(i) % slices) * nbytes, nbytes,
                                  cudaMemcpyDeviceToDevice, stream_);
              },
              [&] { clear(raw_dst, nbytes); });
          row r = make(name, "copy_engine", "ce", nbytes, n, us);
          r.bandwidth_gbps = nbytes / (us * 1e3);
          r.ratio = r.bandwidth_gbps / copy_bw_full;
          r.baseline = "sm_copy/" + std::to_string(sms_) + "x" + std::to_string(opts_.threads);
          add(r, holds(raw_dst, nbytes, seed));
        }
      }
    }
  }
  Api::host_barrier();
  Api::host_free(dst);
  Api::host_free(src);
}

/// One (size, grid, API path) point of put_bw/get_bw, on the initiator. src/dst: symmetric; data_src/
/// data_dst: where the pattern is written / must arrive. copy_bw: the sm_copy baseline (0: none).
/// Skipped, with a note on stderr instead of a launch failure, when the point's kernel has too many registers for
/// g's block size (a thread-scope get kernel of this binary needs 138: at most 448 threads).
template <class Api>
template <class A>
void driver<Api>::measure_rma(const char* name, const char* impl, const grid& g, bool get, char* src, char* dst,
                              at data_src, at data_dst, size_t nbytes, size_t slices, int iters, int warm,
                              double copy_bw) {
  const cudaFuncAttributes attr = std::visit(
      [&](auto sc) {
        return get ? kernel_attributes(rma_bw_kernel<A, decltype(sc), true>)
                   : kernel_attributes(rma_bw_kernel<A, decltype(sc), false>);
      },
      g.s);
  if (g.threads > attr.maxThreadsPerBlock) {
    std::fprintf(stderr, "shoal-bench: %s %s: no %s row (%d registers: at most %d threads per block)\n", name,
                 g.label().c_str(), impl, attr.numRegs, attr.maxThreadsPerBlock);
    return;
  }
  const uint32_t seed = fill_at(data_src, nbytes, slices);
  auto k = [&](int n) {
    if (get)
      launch_rma_bw_any<A, true>(g, dst, src, nbytes, n, background{}, slices);
    else
      launch_rma_bw_any<A, false>(g, dst, src, nbytes, n, background{}, slices);
  };
  const double us = per_iter_us(impl, warm, iters, k, [&] { clear_at(data_dst, nbytes); });
  row r = make(name, impl, g.label(), nbytes, iters, us);
  r.bandwidth_gbps = nbytes / (us * 1e3);
  if (direct_) {
    r.ratio = copy_bw > 0 ? r.bandwidth_gbps / copy_bw : 0;
    r.baseline = "sm_copy";
  }
  add(r, holds_at(data_dst, nbytes, seed));
}

/// measure_rma of a put variant A (named A::kName) at block scope; its probe rows only with SHOAL_BENCH_PROBE=1.
template <class Api>
template <class A>
void driver<Api>::measure_rma_variant(const char* name, const grid& g, char* src, char* dst, at data_src, at data_dst,
                                      size_t nbytes, size_t slices, int iters, int warm, double copy_bw) {
  if constexpr (requires { A::kProbe; }) {
    // The bisection rows: SHOAL_BENCH_PROBE=1 only, load/store pairs only (most of them address the peer unchecked).
    if (A::kProbe && (!probe_rows_ || !direct_)) return;
  }
  measure_rma<A>(name, A::kName, g, false, src, dst, data_src, data_dst, nbytes, slices, iters, warm, copy_bw);
}

// ---- put_bw_bidir: the pair put to each other; the initiator's direction is timed ----

template <class Api>
void driver<Api>::bandwidth_bidir() {
  char* src = static_cast<char*>(Api::host_malloc(max_bytes_));
  char* dst = static_cast<char*>(Api::host_malloc(max_bytes_));
  auto* ctrl = static_cast<uint64_t*>(Api::host_calloc(2 * sizeof(uint64_t)));  // [0] started, [1] stop
  Api::host_barrier();
  for (size_t nbytes : sizes(opts_.min_bytes, max_bytes_, opts_.factor)) {
    const int iters = bw_iters(nbytes);
    const int warm = std::clamp(opts_.warmup * 10, 1, iters);
    for (const grid& g : bw_grids(true)) {
      double copy_bw = 0;
      if (direct_)
        bidir_point(
            "sm_copy", "grid/" + std::to_string(g.ctas) + "x" + std::to_string(g.threads), src, dst, ctrl, nbytes,
            iters, warm, 0,
            [&](char* peer_dst, int n, background bg) {
              sm_copy_kernel<<<g.ctas, g.threads, 0, stream_>>>(peer_dst, src, nbytes, n, 1, bg, ctx_);
            },
            &copy_bw);
      bidir_point(
          Api::kName, g.label(), src, dst, ctrl, nbytes, iters, warm, copy_bw,
          [&](char*, int n, background bg) {
            launch_rma_bw<Api, shoal::block_scope, false>(g, dst, src, nbytes, n, bg);
          },
          nullptr);
      if constexpr (requires { typename Api::tma; }) {
        bidir_point(
            Api::kTmaName, g.label(), src, dst, ctrl, nbytes, iters, warm, copy_bw,
            [&](char*, int n, background bg) {
              launch_rma_bw<typename Api::tma, shoal::block_scope, false>(g, dst, src, nbytes, n, bg);
            },
            nullptr);
      }
    }
  }
  Api::host_barrier();
  Api::host_free(ctrl);
  Api::host_free(dst);
  Api::host_free(src);
}

/// launch(peer_dst, iterations, background): enqueue one put kernel of this path toward the peer.
template <class Api>
template <class Launch>
void driver<Api>::bidir_point(const std::string& impl, const std::string& label, char* src, char* dst, uint64_t* ctrl,
                              size_t nbytes, int iters, int warm, double copy_bw, Launch&& launch, double* bw_out) {
  const uint64_t gen = ++generation_;
  uint32_t seed_mine = 0, seed_peer = 0;
  if (me_ == init_) {
    seed_mine = fill(src, nbytes);
    seed_peer = fill_at({src, peer_}, nbytes);
  }
  Api::host_barrier();  // the target's source is ready
  if (me_ == target_ && direct_) {
    // Background traffic toward the initiator until it says stop (bounded by the device timeout).
    background bg{remote(ctrl, peer_), gen, ctrl + 1, gen};
    untimed("put_bw_bidir background", [&] { launch(remote(dst, peer_), INT_MAX, bg); });
  } else if (me_ == target_) {
    // The proxy path: the kernel says it runs in this PE's pinned word; the host passes it on.
    if (started_ == nullptr) {
      cuda_check(cudaHostAlloc(&started_, sizeof(uint64_t), cudaHostAllocMapped), "cudaHostAlloc");
      *started_ = 0;
    }
    uint64_t* started_dev = nullptr;
    cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&started_dev), started_, 0),
               "cudaHostGetDevicePointer");
    launch(nullptr, INT_MAX, background{started_dev, gen, ctrl + 1, gen});
    launched("put_bw_bidir background");
    wait_started(gen);
    write_word_at(ctrl, peer_, gen, "tell the peer");
    finish("put_bw_bidir background");
  } else if (me_ == init_) {
    untimed("wait for the peer's traffic", [&] { wait_u64_kernel<<<1, 1, 0, stream_>>>(ctrl, gen, ctx_); });
    char* peer_dst = direct_ ? remote(dst, peer_) : nullptr;
    // The target keeps writing our dst while we clear it: many complete passes land during the timed reps.
    const double us = per_iter_us(
        "put_bw_bidir", warm, iters, [&](int n) { launch(peer_dst, n, background{}); },
        [&] {
          clear_at({dst, peer_}, nbytes);
          clear(dst, nbytes);
        });
    write_word_at(ctrl + 1, peer_, gen, "stop the peer");
    row r = make("put_bw_bidir", impl, label, nbytes, iters, us);
    r.bandwidth_gbps = nbytes / (us * 1e3);
    if (bw_out != nullptr) *bw_out = r.bandwidth_gbps;
    if (copy_bw > 0) {
      r.ratio = r.bandwidth_gbps / copy_bw;
      r.baseline = "sm_copy";
    }
    pending_ = r;
  }
  Api::host_barrier();  // the target's traffic has ended
  if (me_ == init_) add(pending_, holds_at({dst, peer_}, nbytes, seed_mine) && holds(dst, nbytes, seed_peer));
}

/// Until the kernel on the stream has stored `value` into the pinned word started_ (or ended, which
/// finish then reports); bounded like finish.
template <class Api>
void driver<Api>::wait_started(uint64_t value) {
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (*reinterpret_cast<volatile uint64_t*>(started_) < value) {
    if (cudaStreamQuery(stream_) != cudaErrorNotReady) return;
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > kKernelTimeoutSeconds) {
      std::fprintf(stderr, "shoal-bench: PE %d: put_bw_bidir background (%s) did not start within %.0f s; stopping\n",
                   me_, Api::kName, kKernelTimeoutSeconds);
      std::fflush(nullptr);
      std::_Exit(3);
    }
    timespec nap{0, 20000};
    nanosleep(&nap, nullptr);
  }
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

}  // namespace shoal::bench::dev
