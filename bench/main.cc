// shoal-bench: perftest-style measurements between PEs, with a baseline measured in the same run
// so every figure comes with a ratio. Its command line, the choice of the set that runs, and the
// table, CSV and JSON of the rows (bench/common/report.hpp). On host-memory PEs (a machine with no
// GPU) the host-issued set runs (bench/host/host_set.cc). PE 0 drives, PE 1 is the target; other PEs idle.
//
//   shoalrun -n 2 shoal-bench [put_bw get_bw p_ping_pong put_signal_ping_pong put_quiet_latency
//                              atomic_latency barrier_latency team_split_latency] -b 8 -e 64M -f 2 -n 100
//                              -w 10 --csv out.csv
//
// When the job's heap is on GPUs (backend "cuda"), the device-initiated set runs instead
// (bench/device_set.cu over bench/rma/, bench/amo/, bench/sync/, bench/order/: put_bw, get_bw, put_bw_bidir,
// p_ping_pong, put_signal_ping_pong, put_quiet_latency, atomic_latency, quiet_after_k, fence_cost, signal_vs_flag,
// barrier_latency; options -c -t -s too), then the device
// collectives (bench/coll/coll_bench.cu: allreduce, broadcast, fcollect, alltoall, team_barrier,
// one block per PE, beside NCCL where it was found at build time).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "common/options.hpp"
#include "common/report.hpp"
#include "host/host_set.hpp"
#include "shoal/shoal.h"

#ifndef SHOAL_BENCH_DEVICE
#define SHOAL_BENCH_DEVICE 0  // 1 where bench/device_set.cu and bench/coll/ are built (SHOAL_CUDA)
#endif
#if SHOAL_BENCH_DEVICE
#include "device_set.hpp"
#endif

int main(int argc, char** argv) {
  CLI::App app{"shoal-bench: perftest-style RMA, atomic, signal and sync measurements between PEs"};
  shoal::bench::options opts;
  shoal::bench::add_options(app, opts);
  const std::vector<std::string>& host_set = shoal::bench::host::benchmark_names();
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
                  "atomic latency on GPU heaps, with put_on_stream and get_on_stream):\n{}\n"
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
  shoal::bench::host::context ctx;
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
  const std::vector<std::string>& host_on_gpu_set = shoal::bench::host::gpu_heap_benchmark_names();
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
    for (const auto& w : which) shoal::bench::host::run(ctx, w);
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
