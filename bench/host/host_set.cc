#include "host/host_set.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "shoal/shoal.h"

#if SHOAL_BENCH_DEVICE
#include <cuda_runtime.h>
#endif

namespace shoal::bench::host {

namespace {

double now_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `body(iterations)` reps times after a warm-up; returns the median time per iteration in us.
double time_per_iter(const config& cfg, int iterations, const std::function<void(int)>& body) {
  body(cfg.warmup);
  std::vector<double> samples;
  for (int r = 0; r < cfg.reps; ++r) {
    double t0 = now_us();
    body(iterations);
    samples.push_back((now_us() - t0) / iterations);
  }
  return median(samples);
}

// Fewer iterations for large transfers so every point takes similar time.
int iters_for(const config& cfg, size_t bytes) {
  size_t budget = size_t(cfg.iterations) * 64 * 1024;
  return static_cast<int>(std::clamp<size_t>(budget / std::max<size_t>(bytes, 1), 3, cfg.iterations));
}

std::vector<size_t> sizes(const config& cfg) {
  std::vector<size_t> out;
  for (size_t s = cfg.min_bytes; s <= cfg.max_bytes; s *= cfg.factor) {
    out.push_back(s);
    if (cfg.factor < 2) break;
  }
  return out;
}

// put_bw / get_bw: PE 0 moves `bytes` to/from PE 1; baseline: memcpy between two local buffers of
// the same kind of memory, the ceiling for a CPU-driven copy on this machine.
void bandwidth(context& ctx, bool is_put) {
  const std::string name = is_put ? "put_bw" : "get_bw";
  char* sym = static_cast<char*>(shoal_malloc(ctx.cfg.max_bytes));
  std::vector<char> local(ctx.cfg.max_bytes, 1);
  std::vector<char> local2(ctx.cfg.max_bytes, 2);
  if (ctx.backend != "cuda") std::memset(sym, 3, ctx.cfg.max_bytes);  // a GPU heap is not the CPU's to fill
  shoal_barrier_all();
  if (ctx.me == 0) {
    for (size_t bytes : sizes(ctx.cfg)) {
      int iters = iters_for(ctx.cfg, bytes);
      double shoal_us = time_per_iter(ctx.cfg, iters, [&](int n) {
        for (int i = 0; i < n; ++i) {
          if (is_put)
            shoal_putmem_nbi(sym, local.data(), bytes, 1);
          else
            shoal_getmem_nbi(local.data(), sym, bytes, 1);
        }
        shoal_quiet();
      });
      double memcpy_us = time_per_iter(ctx.cfg, iters, [&](int n) {
        for (int i = 0; i < n; ++i) std::memcpy(local2.data(), local.data(), bytes);
        std::atomic_signal_fence(std::memory_order_seq_cst);
      });
      row base = ctx.make(name, "memcpy", bytes, iters, memcpy_us);
      base.bandwidth_gbps = bytes / (memcpy_us * 1e3);
      row r = ctx.make(name, "shoal", bytes, iters, shoal_us);
      r.bandwidth_gbps = bytes / (shoal_us * 1e3);
      r.ratio = r.bandwidth_gbps / base.bandwidth_gbps;
      r.baseline = "memcpy";
      ctx.rows.push_back(r);
      ctx.rows.push_back(base);
    }
  }
  shoal_barrier_all();
  shoal_free(sym);
}

// p_ping_pong: PE 0 and PE 1 bounce a counter with shoal_uint64_p + wait_until; half round trip.
// Baseline: the same ping-pong through raw shared-memory atomics on the shoal_ptr addresses.
void p_ping_pong(context& ctx) {
  auto* flag = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  shoal_barrier_all();
  uint64_t seq = 0;
  auto shoal_round = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ++seq;
      if (ctx.me == 0) {
        shoal_uint64_p(flag, seq, 1);
        shoal_uint64_wait_until(flag, SHOAL_CMP_GE, seq);
      } else if (ctx.me == 1) {
        shoal_uint64_wait_until(flag, SHOAL_CMP_GE, seq);
        shoal_uint64_p(flag, seq, 0);
      }
    }
  };
  auto* peer = static_cast<uint64_t*>(shoal_ptr(flag, ctx.me == 0 ? 1 : 0));
  auto raw_round = [&](int n) {
    std::atomic_ref<uint64_t> mine(*flag);
    for (int i = 0; i < n; ++i) {
      ++seq;
      if (ctx.me == 0) {
        std::atomic_ref<uint64_t>(*peer).store(seq, std::memory_order_release);
        while (mine.load(std::memory_order_acquire) < seq) {
        }
      } else if (ctx.me == 1) {
        while (mine.load(std::memory_order_acquire) < seq) {
        }
        std::atomic_ref<uint64_t>(*peer).store(seq, std::memory_order_release);
      }
    }
  };
  int iters = ctx.cfg.iterations * 10;
  if (ctx.me <= 1) {
    // Both sides run the same number of rounds (warm-up + reps), so they stay in step.
    double us = time_per_iter(ctx.cfg, iters, shoal_round) / 2;
    double raw_us = peer != nullptr ? time_per_iter(ctx.cfg, iters, raw_round) / 2 : 0;
    if (ctx.me == 0) {
      row r = ctx.make("p_ping_pong", "shoal", 8, iters, us);
      if (raw_us > 0) {
        r.ratio = us / raw_us;
        r.baseline = "raw atomics";
      }
      ctx.rows.push_back(r);
      if (raw_us > 0) ctx.rows.push_back(ctx.make("p_ping_pong", "raw", 8, iters, raw_us));
    }
  }
  shoal_barrier_all();
  shoal_free(flag);
}

// put_signal_ping_pong: `bytes` of data plus a signal each way; half round trip.
void put_signal_ping_pong(context& ctx) {
  size_t max_bytes = std::min<size_t>(ctx.cfg.max_bytes, 1u << 20);
  char* buf = static_cast<char*>(shoal_malloc(max_bytes));
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  std::vector<char> src(max_bytes, 7);
  shoal_barrier_all();
  uint64_t seq = 0;
  for (size_t bytes : sizes(ctx.cfg)) {
    if (bytes > max_bytes) break;
    int iters = std::max(10, iters_for(ctx.cfg, bytes));
    auto round = [&](int n) {
      for (int i = 0; i < n; ++i) {
        ++seq;
        if (ctx.me == 0) {
          shoal_putmem_signal(buf, src.data(), bytes, sig, seq, SHOAL_SIGNAL_SET, 1);
          shoal_signal_wait_until(sig, SHOAL_CMP_GE, seq);
        } else if (ctx.me == 1) {
          shoal_signal_wait_until(sig, SHOAL_CMP_GE, seq);
          shoal_putmem_signal(buf, src.data(), bytes, sig, seq, SHOAL_SIGNAL_SET, 0);
        }
      }
    };
    if (ctx.me <= 1) {
      double us = time_per_iter(ctx.cfg, iters, round) / 2;
      if (ctx.me == 0) {
        row r = ctx.make("put_signal_ping_pong", "shoal", bytes, iters, us);
        r.bandwidth_gbps = bytes / (us * 1e3);
        ctx.rows.push_back(r);
      }
    }
  }
  shoal_barrier_all();
  shoal_free(sig);
  shoal_free(buf);
}

// atomic_latency: PE 0 does fetch_add on PE 1's word; baseline: a local atomic fetch_add.
void atomic_latency(context& ctx) {
  auto* word = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  shoal_barrier_all();
  if (ctx.me == 0) {
    int iters = ctx.cfg.iterations * 10;
    uint64_t sink = 0;
    double us = time_per_iter(ctx.cfg, iters, [&](int n) {
      for (int i = 0; i < n; ++i) sink += shoal_uint64_atomic_fetch_add(word, 1, 1);
    });
    std::atomic<uint64_t> local{0};
    double local_us = time_per_iter(ctx.cfg, iters, [&](int n) {
      for (int i = 0; i < n; ++i) sink += local.fetch_add(1);
    });
    row r = ctx.make("atomic_latency", "shoal", 8, iters, us);
    r.ratio = us / local_us;
    r.baseline = "local std::atomic";
    ctx.rows.push_back(r);
    ctx.rows.push_back(ctx.make("atomic_latency", "local", 8, iters, local_us));
    if (sink == 42) std::puts("");  // keep the loop
  }
  shoal_barrier_all();
  shoal_free(word);
}

// put_quiet_latency: PE 0 puts `bytes` to PE 1 and waits for remote completion (putmem_nbi + quiet)
// each iteration; on the proxy a put plus a UCX flush, a round trip. Baseline: p_ping_pong's raw
// shared-memory store where PE 1 is mapped (none on the proxy).
void put_quiet_latency(context& ctx) {
  size_t max_bytes = std::min<size_t>(ctx.cfg.max_bytes, 1u << 20);
  char* buf = static_cast<char*>(shoal_malloc(max_bytes));
  std::vector<char> src(max_bytes, 5);
  shoal_barrier_all();
  if (ctx.me == 0) {
    for (size_t bytes : sizes(ctx.cfg)) {
      if (bytes > max_bytes) break;
      int iters = std::max(10, iters_for(ctx.cfg, bytes));
      double us = time_per_iter(ctx.cfg, iters, [&](int n) {
        for (int i = 0; i < n; ++i) {
          shoal_putmem_nbi(buf, src.data(), bytes, 1);
          shoal_quiet();
        }
      });
      row r = ctx.make("put_quiet_latency", "shoal", bytes, iters, us);
      r.bandwidth_gbps = bytes / (us * 1e3);
      ctx.rows.push_back(r);
    }
  }
  shoal_barrier_all();
  shoal_free(buf);
}

// barrier_latency: every PE calls barrier_all; the figure is PE 0's median time per barrier.
void barrier_latency(context& ctx) {
  int iters = ctx.cfg.iterations * 10;
  double us = time_per_iter(ctx.cfg, iters, [&](int n) {
    for (int i = 0; i < n; ++i) shoal_barrier_all();
  });
  if (ctx.me == 0) ctx.rows.push_back(ctx.make("barrier_latency", "shoal", 0, iters, us));
}

// team_split_latency: every PE splits the whole world off SHOAL_TEAM_WORLD and destroys it; the
// figure is PE 0's median time per split (the destroy is local).
void team_split_latency(context& ctx) {
  int iters = ctx.cfg.iterations;
  double us = time_per_iter(ctx.cfg, iters, [&](int n) {
    for (int i = 0; i < n; ++i) {
      shoal_team_t team = SHOAL_TEAM_INVALID;
      if (shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, ctx.npes, nullptr, 0, &team) != 0) return;
      shoal_team_destroy(team);
    }
  });
  if (ctx.me == 0) ctx.rows.push_back(ctx.make("team_split_latency", "shoal", 0, iters, us));
}

#if SHOAL_BENCH_DEVICE
// put_on_stream / get_on_stream (GPU heaps): PE 0 moves `bytes` between a buffer of its GPU and PE 1's heap with
// shoalx_putmem_on_stream / shoalx_getmem_on_stream on a stream of its own. Rows: scope "stream", calls back to
// back then one stream synchronize (time per call); scope "stream/one", each call followed by a synchronize (the
// latency of one message, its host round trip included). Baseline: cudaMemcpyAsync between the same buffers through
// the peer's mapping (shoal_ptr), the copy engine with nothing of shoal's around it. Which path shoal's call takes
// (SM kernel or copy engine) follows SHOAL_STREAM_KERNEL_BYTES or the measured table; the study runs both.
void on_stream(context& ctx, bool is_put) {
  const std::string name = is_put ? "put_on_stream" : "get_on_stream";
  char* sym = static_cast<char*>(shoal_malloc(ctx.cfg.max_bytes));
  char* local = static_cast<char*>(shoal_malloc(ctx.cfg.max_bytes));  // on this PE's GPU
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) stream = nullptr;
  shoal_barrier_all();
  if (ctx.me == 0 && stream != nullptr) {
    char* peer = static_cast<char*>(shoal_ptr(sym, 1));  // null on the proxy path: no copy-engine baseline
    auto call = [&](size_t bytes) {
      if (is_put)
        shoalx_putmem_on_stream(sym, local, bytes, 1, stream);
      else
        shoalx_getmem_on_stream(local, sym, bytes, 1, stream);
    };
    for (size_t bytes : sizes(ctx.cfg)) {
      const int iters = iters_for(ctx.cfg, bytes);
      const double back_to_back = time_per_iter(ctx.cfg, iters, [&](int n) {
        for (int i = 0; i < n; ++i) call(bytes);
        cudaStreamSynchronize(stream);
      });
      const double one = time_per_iter(ctx.cfg, iters, [&](int n) {
        for (int i = 0; i < n; ++i) {
          call(bytes);
          cudaStreamSynchronize(stream);
        }
      });
      double ce = 0;
      if (peer != nullptr)
        ce = time_per_iter(ctx.cfg, iters, [&](int n) {
          for (int i = 0; i < n; ++i)
            cudaMemcpyAsync(is_put ? peer : local, is_put ? local : peer, bytes, cudaMemcpyDeviceToDevice, stream);
          cudaStreamSynchronize(stream);
        });
      row r = ctx.make(name, "shoal", bytes, iters, back_to_back);
      r.scope = "stream";
      r.bandwidth_gbps = bytes / (back_to_back * 1e3);
      if (ce > 0) {
        r.ratio = ce / back_to_back;
        r.baseline = "copy_engine";
      }
      ctx.rows.push_back(r);
      row l = ctx.make(name, "shoal", bytes, iters, one);
      l.scope = "stream/one";
      ctx.rows.push_back(l);
      if (ce > 0) {
        row b = ctx.make(name, "copy_engine", bytes, iters, ce);
        b.scope = "stream";
        b.bandwidth_gbps = bytes / (ce * 1e3);
        ctx.rows.push_back(b);
      }
    }
  }
  if (stream != nullptr) cudaStreamDestroy(stream);
  shoal_barrier_all();
  shoal_free(local);
  shoal_free(sym);
}
#endif

}  // namespace

const std::vector<std::string>& benchmark_names() {
  static const std::vector<std::string> names = {
      "put_bw",         "get_bw",          "p_ping_pong",       "put_signal_ping_pong", "put_quiet_latency",
      "atomic_latency", "barrier_latency", "team_split_latency"};
  return names;
}

const std::vector<std::string>& gpu_heap_benchmark_names() {
  static const std::vector<std::string> names = {"put_bw",         "get_bw",        "put_quiet_latency",
                                                 "atomic_latency", "put_on_stream", "get_on_stream"};
  return names;
}

void run(context& ctx, const std::string& w) {
  if (w == "put_bw")
    bandwidth(ctx, true);
  else if (w == "get_bw")
    bandwidth(ctx, false);
  else if (w == "p_ping_pong")
    p_ping_pong(ctx);
  else if (w == "put_signal_ping_pong")
    put_signal_ping_pong(ctx);
  else if (w == "put_quiet_latency")
    put_quiet_latency(ctx);
  else if (w == "atomic_latency")
    atomic_latency(ctx);
  else if (w == "barrier_latency")
    barrier_latency(ctx);
  else if (w == "team_split_latency")
    team_split_latency(ctx);
#if SHOAL_BENCH_DEVICE
  else if (w == "put_on_stream")
    on_stream(ctx, true);
  else if (w == "get_on_stream")
    on_stream(ctx, false);
#endif
}

}  // namespace shoal::bench::host
