// shoal-bench's host-issued set: perftest-style measurements of the host API between PEs, each beside a baseline
// measured in the same run (memcpy, raw atomics on the shoal_ptr addresses, a local std::atomic), so every figure
// comes with a ratio. PE 0 drives, PE 1 is the target; other PEs idle. Runs on whatever heap the job has: the whole
// set on host-memory PEs (a machine with no GPU), the part whose host side touches only its own host buffers on GPU
// heaps (shoal-bench --host-issued). Over the proxy, bench/proxy/run.sh sets it beside ucx_perftest.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/report.hpp"

namespace shoal::bench::host {

/// The sweep of a run (shoal-bench's -b -e -f -n -w; reps: repetitions of each timed loop, the median kept).
struct config {
  size_t min_bytes = 8;
  size_t max_bytes = 64u << 20;
  size_t factor = 2;
  int iterations = 100;
  int warmup = 10;
  int reps = 5;
  std::string backend;
};

/// One run of the set on this PE: its sweep, who it is, the heap's backend and the rows (PE 0's).
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

/// The host set, in run order (shoal-bench's default on host-memory PEs).
const std::vector<std::string>& benchmark_names();
/// The part of the set that runs on GPU heaps (--host-issued): the benchmarks whose host side touches only its own
/// host buffers (the others poll or fill heap memory from the CPU), and the on-stream put and get (put_on_stream,
/// get_on_stream: shoal's kernel or copy-engine path beside a bare cudaMemcpyAsync), built with CUDA only.
const std::vector<std::string>& gpu_heap_benchmark_names();

/// Runs benchmark `name` of the set; every PE calls it with the same name, PE 0 appends the rows to ctx.rows.
void run(context& ctx, const std::string& name);

}  // namespace shoal::bench::host
