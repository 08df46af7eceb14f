#include "common/options.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>

namespace shoal::bench {

bool parse_size(const std::string& text, size_t& out) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    return false;
  }
  std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k")
    v <<= 10;
  else if (suffix == "M" || suffix == "m")
    v <<= 20;
  else if (suffix == "G" || suffix == "g")
    v <<= 30;
  else if (!suffix.empty())
    return false;
  out = static_cast<size_t>(v);
  return true;
}

void add_options(CLI::App& app, options& opts) {
  app.add_option("benchmarks", opts.which, "which to run (default: all of the host or device set)");
  app.add_option("-b,--min-size", opts.min_text, "smallest message (bytes; K/M/G suffixes)");
  app.add_option("-e,--max-size", opts.max_text, "largest message (default 64M host, 256M device)");
  app.add_option("-f,--step-factor", opts.factor, "size multiplier between points")->check(CLI::Range(2, 1024));
  app.add_option("-n,--iters", opts.iterations, "timed iterations per point (scaled down for large sizes)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("-w,--warmup", opts.warmup, "untimed iterations before each point")->check(CLI::Range(0, 1000000));
  app.add_option("-r,--reps", opts.reps, "timed repetitions per point; the median is reported")
      ->check(CLI::Range(1, 1000));
  app.add_option("-c,--ctas", opts.ctas, "device bandwidth: CTAs (block scope also runs one CTA per SM)")
      ->check(CLI::Range(1, 65535));
  app.add_option("-t,--threads", opts.threads, "device: threads per CTA (a multiple of 32)")
      ->check(CLI::Range(32, 1024));
  app.add_option("-s,--scope", opts.scope, "device bandwidth scope")
      ->check(CLI::IsMember({"thread", "warp", "block", "all"}));
  app.add_option("--pairs", opts.pairs,
                 "device RMA set: PE pairs to measure, initiator:target[,...], all, from0 or ring (default 0:1)");
  app.add_option("--csv", opts.csv, "write the rows as CSV to this file (PE 0)");
  app.add_option("--json", opts.json, "write the rows as JSON to this file (PE 0)");
  app.add_flag("--host-issued", opts.host_issued,
               "GPU heaps: run the host set's put_bw, get_bw, put_quiet_latency and atomic_latency through the host "
               "API, and put_on_stream/get_on_stream, instead of the device set (the host-issued side of a "
               "device-vs-host comparison)");
}

std::string finish(options& opts) {
  opts.max_bytes_given = !opts.max_text.empty();
  if (!parse_size(opts.min_text, opts.min_bytes)) return "-b: bad size '" + opts.min_text + "'";
  if (opts.max_bytes_given && !parse_size(opts.max_text, opts.max_bytes)) return "-e: bad size '" + opts.max_text + "'";
  if (opts.min_bytes == 0 || (opts.max_bytes_given && opts.min_bytes > opts.max_bytes))
    return "-b/-e: need 0 < min <= max";
  if (opts.threads % 32 != 0) return "-t: threads per CTA must be a multiple of 32";
  return {};
}

std::vector<std::pair<int, int>> parse_pairs(const std::string& text, int n_pes, std::string& error) {
  error.clear();
  std::vector<std::pair<int, int>> out;
  if (n_pes < 2) return out;
  if (text == "all") {
    for (int a = 0; a < n_pes; ++a)
      for (int b = a + 1; b < n_pes; ++b) out.emplace_back(a, b);
    return out;
  }
  if (text == "from0") {
    for (int b = 1; b < n_pes; ++b) out.emplace_back(0, b);
    return out;
  }
  if (text == "ring") {
    for (int a = 0; a < (n_pes == 2 ? 1 : n_pes); ++a) out.emplace_back(a, (a + 1) % n_pes);
    return out;
  }
  auto fail = [&](const std::string& why) {
    error = "--pairs '" + text + "': " + why;
    out.clear();
    return out;
  };
  if (text.empty()) return fail("no pair given (A:B[,C:D...], all, from0 or ring)");
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t colon = item.find(':');
    int pe[2] = {-1, -1};
    for (int k = 0; k < 2 && colon != std::string::npos; ++k) {
      const std::string num = k == 0 ? item.substr(0, colon) : item.substr(colon + 1);
      if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos) break;
      pe[k] = std::stoi(num);
    }
    if (pe[0] < 0 || pe[1] < 0) return fail("'" + item + "' is not A:B with PE numbers A and B");
    if (pe[0] >= n_pes || pe[1] >= n_pes)
      return fail("'" + item + "' names a PE outside 0.." + std::to_string(n_pes - 1));
    if (pe[0] == pe[1]) return fail("'" + item + "' pairs a PE with itself");
    if (std::find(out.begin(), out.end(), std::pair<int, int>(pe[0], pe[1])) != out.end())
      return fail("'" + item + "' is given twice");
    out.emplace_back(pe[0], pe[1]);
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> device_benchmark_names() {
  return {"put_bw",
          "get_bw",
          "put_bw_bidir",
          "p_ping_pong",
          "put_signal_ping_pong",
          "put_quiet_latency",
          "atomic_latency",
          "quiet_after_k",
          "fence_cost",
          "signal_vs_flag",
          "barrier_latency",
          "allreduce",
          "broadcast",
          "fcollect",
          "alltoall",
          "team_barrier",
          "barrier",
          "allreduce_scratch"};
}

std::vector<size_t> sizes(size_t min_bytes, size_t max_bytes, size_t factor) {
  std::vector<size_t> out;
  for (size_t s = min_bytes; s <= max_bytes; s *= factor) out.push_back(s);
  return out;
}

}  // namespace shoal::bench
