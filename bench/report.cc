#include "report.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace shoal::bench {

namespace {
std::string human_size(size_t bytes) {
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return fmt::format("{}G", bytes >> 30);
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{}M", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{}K", bytes >> 10);
  return fmt::format("{}", bytes);
}

std::ofstream open_or_throw(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("shoal-bench: cannot write " + path);
  return out;
}
}  // namespace

void print_table(const std::vector<row>& rows) {
  fmt::print("{:<26} {:<11} {:<14} {:>4} {:>8} {:>12} {:>11} {:>9} {:>8}  {}\n", "benchmark", "impl", "scope", "PEs",
             "size", "latency_us", "GB/s", "busGB/s", "ratio", "vs");
  std::string last;
  for (const auto& r : rows) {
    if (!last.empty() && last != r.benchmark) fmt::print("\n");
    last = r.benchmark;
    fmt::print("{:<26} {:<11} {:<14} {:>4} {:>8} {:>12.3f} {:>11.2f} {:>9} {:>8}  {}\n", r.benchmark, r.impl, r.scope,
               r.num_pes, human_size(r.size_bytes), r.latency_us, r.bandwidth_gbps,
               r.busbw_gbps > 0 ? fmt::format("{:.2f}", r.busbw_gbps) : std::string("-"),
               r.ratio > 0 ? fmt::format("{:.3f}", r.ratio) : std::string("-"), r.baseline);
  }
  std::fflush(stdout);
}

void write_csv(const std::string& path, const std::vector<row>& rows) {
  auto out = open_or_throw(path);
  out << "benchmark,impl,backend,num_pes,scope,size_bytes,iterations,latency_us,bandwidth_gbps,ratio,baseline,busbw_"
         "gbps\n";
  for (const auto& r : rows)
    out << fmt::format("{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{},{:.4f}\n", r.benchmark, r.impl, r.backend,
                       r.num_pes, r.scope, r.size_bytes, r.iterations, r.latency_us, r.bandwidth_gbps, r.ratio,
                       r.baseline, r.busbw_gbps);
}

void write_json(const std::string& path, const std::vector<row>& rows) {
  auto out = open_or_throw(path);
  out << "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out << fmt::format(
        "  {{\"benchmark\": \"{}\", \"impl\": \"{}\", \"backend\": \"{}\", \"num_pes\": {}, \"scope\": \"{}\", "
        "\"size_bytes\": {}, \"iterations\": {}, \"latency_us\": {:.4f}, \"bandwidth_gbps\": {:.4f}, "
        "\"ratio\": {:.4f}, \"baseline\": \"{}\", \"busbw_gbps\": {:.4f}}}{}\n",
        r.benchmark, r.impl, r.backend, r.num_pes, r.scope, r.size_bytes, r.iterations, r.latency_us, r.bandwidth_gbps,
        r.ratio, r.baseline, r.busbw_gbps, i + 1 < rows.size() ? "," : "");
  }
  out << "]\n";
}

}  // namespace shoal::bench
