// shoal-bench's command line, shared by shoal-bench and shoal-bench-nvshmem: perftest options
// (-b -e -f -n -w, plus -c -t -s for device-initiated runs), the benchmark list and outputs.
// Plain C++; both mains register these on their CLI11 app.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
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
  std::string pairs = "0:1";  ///< --pairs: which PE pairs the device RMA set measures (parse_pairs)
  std::vector<std::string> which;  ///< benchmark names; empty: all of the set that runs
  std::string csv;                 ///< --csv: rows as CSV (PE 0)
  std::string json;                ///< --json: rows as JSON (PE 0)
  bool host_issued = false;        ///< --host-issued: the host set on GPU heaps too (host API, no kernels)

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

/// The PE pairs of --pairs for a job of n_pes PEs, in measuring order; each pair is {initiator, target}.
///   "A:B[,C:D...]"  the listed pairs (A initiates; A != B; both below n_pes; no pair twice)
///   "all"           every pair A < B (n(n-1)/2 of them), A initiating
///   "from0"         0:1, 0:2, ..., 0:n-1
///   "ring"          0:1, 1:2, ..., n-1:0 (just 0:1 for 2 PEs)
/// A job of one PE has no pairs (an empty list, whatever the text). On bad text: an empty list and
/// `error` saying what is wrong, naming --pairs and the text.
std::vector<std::pair<int, int>> parse_pairs(const std::string& text, int n_pes, std::string& error);

/// The device-initiated benchmarks (shoal-bench on the cuda backend, shoal-bench-nvshmem), in run order
/// (allreduce_scratch, the explicit-scratch device allreduce, runs only when named).
std::vector<std::string> device_benchmark_names();

/// The message sizes -b, -b*f, ... up to `max_bytes`.
std::vector<size_t> sizes(size_t min_bytes, size_t max_bytes, size_t factor);

}  // namespace shoal::bench
