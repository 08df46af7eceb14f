// shoal-bench's command line, shared by shoal-bench and shoal-bench-nvshmem: perftest options
// (-b -e -f -n -w, plus -c -t -s for device-initiated runs), the benchmark list and outputs.
// Plain C++; both mains register these on their CLI11 app.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace shoal::bench {

struct options {
  size_t min_bytes = 8;          ///< -b: smallest message
  size_t max_bytes = 64u << 20;  ///< -e: largest message (device runs: 256 MiB unless -e is given)
  bool max_bytes_given = false;  ///< -e was on the command line
  size_t factor = 2;             ///< -f: size multiplier between points
  int iterations = 100;          ///< -n: timed iterations per point (x10 for latency loops)
  int warmup = 10;               ///< -w: untimed iterations before each point
  int reps = 5;                  ///< -r: timed repetitions per point; the median is reported
  int ctas = 32;              ///< -c: CTAs of a device-initiated bandwidth grid (block scope also runs the full grid)
  int threads = 512;          ///< -t: threads per CTA
  std::string scope = "all";  ///< -s: thread, warp, block or all (device bandwidth rows)
  std::vector<std::string> which;  ///< benchmark names; empty: all of the set that runs
  std::string csv;                 ///< --csv: rows as CSV (PE 0)
  std::string json;                ///< --json: rows as JSON (PE 0)

  // Texts of -b/-e as given (K/M/G suffixes); turned into bytes by finish().
  std::string min_text = "8";
  std::string max_text;  ///< empty: the default of the set that runs
};

/// Registers every option above on `app`.
void add_options(CLI::App& app, options& opts);

/// After parsing: converts the size texts and checks ranges. Returns an empty string or what is wrong.
std::string finish(options& opts);

/// A size with an optional K/M/G suffix ("8", "64K", "256M") into bytes; false when malformed.
bool parse_size(const std::string& text, size_t& out);

/// The device-initiated benchmarks (shoal-bench on the cuda backend, shoal-bench-nvshmem), in run order
/// (allreduce_scratch, the explicit-scratch device allreduce, runs only when named).
std::vector<std::string> device_benchmark_names();

/// The message sizes -b, -b*f, ... up to `max_bytes`.
std::vector<size_t> sizes(size_t min_bytes, size_t max_bytes, size_t factor);

}  // namespace shoal::bench
