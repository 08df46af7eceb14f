// shoal-bench: perftest-style measurements between PEs, with a baseline measured in the same run
// so every figure comes with a ratio. Host-issued operations on whatever heap the job has (host
// memory PEs on a machine with no GPU). PE 0 drives, PE 1 is the target; other PEs idle.
//
//   shoalrun -n 2 shoal-bench [put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency
//                              atomic_latency barrier_latency team_split_latency] -b 8 -e 64M -f 2 -n 100
//                              -w 10 --csv out.csv
//
// When the job's heap is on GPUs (backend "cuda"), the device-initiated set runs instead
// (bench/device/: put_bw, get_bw, put_bw_bidir, p_ping_pong, put_signal_ping_pong,
// put_quiet_latency, atomic_latency, barrier_latency; options -c -t -s too), then the device
// collectives (bench/device/coll_bench.cu: allreduce, broadcast, fcollect, alltoall, team_barrier,
// one block per PE, beside NCCL where it was found at build time).
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "device/options.hpp"
#include "report.hpp"
#include "shoal/shoal.h"

#ifndef SHOAL_BENCH_DEVICE
#define SHOAL_BENCH_DEVICE 0  // 1 where bench/device/*.cu are built (SHOAL_CUDA)
#endif
#if SHOAL_BENCH_DEVICE
#include "device/device_bench.hpp"
#endif

namespace {

using shoal::bench::row;

struct config {
  size_t min_bytes = 8;
  size_t max_bytes = 64u << 20;
  size_t factor = 2;
  int iterations = 100;
  int warmup = 10;
  int reps = 5;
  std::string backend;
};

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

struct context {
  config cfg;
  int me = 0;
  int npes = 0;
  std::string backend;
  std::vector<row> rows;

  row make(const std::string& bench, const std::string& impl, size_t bytes, int iters, double us) const {
    row r;
    r.benchmark = bench;
    r.impl = impl;
    r.backend = backend;
    r.num_pes = npes;
    r.scope = "host";
    r.size_bytes = bytes;
    r.iterations = iters;
    r.latency_us = us;
    return r;
  }
};

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shoal-bench: perftest-style RMA, atomic, signal and sync measurements between PEs"};
  shoal::bench::options opts;
  shoal::bench::add_options(app, opts);
  const std::vector<std::string> host_set = {
      "put_bw",         "get_bw",          "p_ping_pong",       "put_signal_ping_pong", "put_quiet_latency",
      "atomic_latency", "barrier_latency", "team_split_latency"};
  const std::vector<std::string> device_set = shoal::bench::device_benchmark_names();
  auto wrapped = [](const std::vector<std::string>& names) {  // indented lines of at most ~96 characters
    std::string text = "   ";
    size_t line_start = 0;
    for (const std::string& n : names) {
      if (text.size() - line_start + n.size() > 96) {
        text += "\n   ";
        line_start = text.size() - 3;
      }
      text += " " + n;
    }
    return text;
  };
  app.footer(
      fmt::format("Benchmarks (positional; default: the whole set that runs):\n"
                  "  host set (host-memory PEs, or no device code; --host-issued: its put/get bandwidth, put+quiet and "
                  "atomic latency on GPU heaps):\n{}\n"
                  "  device set (GPU heaps; device-initiated, collectives beside NCCL where built):\n{}\n"
                  "Run between PEs: shoalrun -n 2 shoal-bench [benchmarks] [options]; plot a --csv with bench/plot.py.",
                  wrapped(host_set), wrapped(device_set)));
  CLI11_PARSE(app, argc, argv);
  if (std::string err = shoal::bench::finish(opts); !err.empty()) {
    std::fprintf(stderr, "shoal-bench: %s\n", err.c_str());
    return 2;
  }
  auto in = [](const std::vector<std::string>& set, const std::string& name) {
    return std::find(set.begin(), set.end(), name) != set.end();
  };
  for (const auto& w : opts.which) {
    if (!in(host_set, w) && !in(device_set, w)) {
      std::fprintf(stderr, "shoal-bench: unknown benchmark '%s'\n", w.c_str());
      return 2;
    }
  }

#if SHOAL_BENCH_DEVICE
  // Before init, so that the cuda backend adopts this GPU (a no-op without one).
  shoal::bench::device_select_gpu();
#endif
  shoal_init();
  context ctx;
  ctx.cfg.min_bytes = opts.min_bytes;
  ctx.cfg.max_bytes = opts.max_bytes;
  ctx.cfg.factor = opts.factor;
  ctx.cfg.iterations = opts.iterations;
  ctx.cfg.warmup = opts.warmup;
  ctx.cfg.reps = opts.reps;
  ctx.me = shoal_my_pe();
  ctx.npes = shoal_n_pes();
  if (ctx.npes < 2) {
    if (ctx.me == 0) std::fprintf(stderr, "shoal-bench: needs at least 2 PEs (shoalrun -n 2 shoal-bench)\n");
    shoal_finalize();
    return 2;
  }
  ctx.backend = shoalx_backend_name();
  // Device-initiated operations where the heap is on GPUs; host-issued ones otherwise.
  const bool gpu_heap = ctx.backend == "cuda";
  const bool device = SHOAL_BENCH_DEVICE && gpu_heap && !opts.host_issued;
  // Host-issued on a GPU heap: the host set's benchmarks whose host side touches only its own host
  // buffers (the others poll or fill heap memory from the CPU).
  const std::vector<std::string> host_on_gpu_set = {"put_bw", "get_bw", "put_quiet_latency", "atomic_latency"};
  const std::vector<std::string>& set = device ? device_set : gpu_heap ? host_on_gpu_set : host_set;
  std::vector<std::string> which;
  for (const auto& w : opts.which.empty() ? set : opts.which) {
    if (in(set, w))
      which.push_back(w);
    else if (ctx.me == 0)
      std::fprintf(stderr, "shoal-bench: '%s' is not in the %s set; skipped\n", w.c_str(),
                   device     ? "device"
                   : gpu_heap ? "host-issued (GPU heap)"
                              : "host");
  }
  bool checks_passed = true;
  bool aborted = false;
  if (device) {
#if SHOAL_BENCH_DEVICE
    try {
      checks_passed = shoal::bench::run_device_benchmarks(opts, which, ctx.rows, ctx.backend);
    } catch (const std::exception& e) {
      // Keep what was measured; the job stops (shoalrun ends the other PEs).
      std::fprintf(stderr, "shoal-bench: PE %d: %s\n", ctx.me, e.what());
      aborted = true;
    }
#endif
  } else {
    for (const auto& w : which) {
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
    }
  }
  if (ctx.me == 0) {
    fmt::print("shoal-bench: {} PEs, {} operations, backend {}\n", ctx.npes,
               device ? "device-initiated" : "host-issued", ctx.backend);
    shoal::bench::print_table(ctx.rows);
    if (!opts.csv.empty()) shoal::bench::write_csv(opts.csv, ctx.rows);
    if (!opts.json.empty()) shoal::bench::write_json(opts.json, ctx.rows);
  }
  if (aborted) {
    std::fflush(nullptr);
    std::_Exit(1);  // the peer may be waiting inside a benchmark: no collective finalize
  }
  shoal_finalize();
  return checks_passed ? 0 : 1;
}
