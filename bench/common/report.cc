#include "common/report.hpp"

#include <bit>
#include <cstdint>
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
  fmt::print("{:<26} {:<11} {:<14} {:>4} {:>5} {:>8} {:>12} {:>11} {:>9} {:>8}  {}\n", "benchmark", "impl", "scope",
             "PEs", "pair", "size", "latency_us", "GB/s", "busGB/s", "ratio", "vs");
  std::string last;
  for (const auto& r : rows) {
    if (!last.empty() && last != r.benchmark) fmt::print("\n");
    last = r.benchmark;
    fmt::print("{:<26} {:<11} {:<14} {:>4} {:>5} {:>8} {:>12.3f} {:>11.2f} {:>9} {:>8}  {}\n", r.benchmark, r.impl,
               r.scope, r.num_pes, r.pair.empty() ? "-" : r.pair, human_size(r.size_bytes), r.latency_us,
               r.bandwidth_gbps, r.busbw_gbps > 0 ? fmt::format("{:.2f}", r.busbw_gbps) : std::string("-"),
               r.ratio > 0 ? fmt::format("{:.3f}", r.ratio) : std::string("-"), r.baseline);
  }
  std::fflush(stdout);
}

void write_csv(const std::string& path, const std::vector<row>& rows) {
  auto out = open_or_throw(path);
  out << "benchmark,impl,backend,num_pes,scope,size_bytes,iterations,latency_us,bandwidth_gbps,ratio,baseline,busbw_"
         "gbps,pair\n";
  for (const auto& r : rows)
    out << fmt::format("{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{},{:.4f},{}\n", r.benchmark, r.impl, r.backend,
                       r.num_pes, r.scope, r.size_bytes, r.iterations, r.latency_us, r.bandwidth_gbps, r.ratio,
                       r.baseline, r.busbw_gbps, r.pair);
}

void write_json(const std::string& path, const std::vector<row>& rows) {
  auto out = open_or_throw(path);
  out << "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out << fmt::format(
        "  {{\"benchmark\": \"{}\", \"impl\": \"{}\", \"backend\": \"{}\", \"num_pes\": {}, \"scope\": \"{}\", "
        "\"size_bytes\": {}, \"iterations\": {}, \"latency_us\": {:.4f}, \"bandwidth_gbps\": {:.4f}, "
        "\"ratio\": {:.4f}, \"baseline\": \"{}\", \"busbw_gbps\": {:.4f}, \"pair\": \"{}\"}}{}\n",
        r.benchmark, r.impl, r.backend, r.num_pes, r.scope, r.size_bytes, r.iterations, r.latency_us, r.bandwidth_gbps,
        r.ratio, r.baseline, r.busbw_gbps, r.pair, i + 1 < rows.size() ? "," : "");
  }
  out << "]\n";
}

namespace {
constexpr char kField = '\x1f';  // between the fields of a packed row
constexpr char kRow = '\x1e';    // after each packed row

std::string bits_of(double v) { return fmt::format("{:x}", std::bit_cast<uint64_t>(v)); }

double double_of(const std::string& hex) {
  return std::bit_cast<double>(static_cast<uint64_t>(std::stoull(hex, nullptr, 16)));
}
}  // namespace

std::string pack_rows(const std::vector<row>& rows) {
  std::string out;
  for (const auto& r : rows) {
    for (const std::string* text : {&r.benchmark, &r.impl, &r.backend, &r.scope, &r.baseline, &r.pair})
      if (text->find_first_of(std::string{kField, kRow}) != std::string::npos)
        throw std::runtime_error("shoal-bench: a row's text holds a separator byte: " + *text);
    out += fmt::format("{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}", r.benchmark, kField, r.impl, kField,
                       r.backend, kField, r.num_pes, kField, r.scope, kField, r.size_bytes, kField, r.iterations,
                       kField, bits_of(r.latency_us), kField, bits_of(r.bandwidth_gbps), kField, bits_of(r.ratio),
                       kField, r.baseline, kField, bits_of(r.busbw_gbps), kField, r.pair, kRow);
  }
  return out;
}

std::vector<row> unpack_rows(const std::string& packed) {
  std::vector<row> rows;
  size_t start = 0;
  while (start < packed.size()) {
    const size_t end = packed.find(kRow, start);
    if (end == std::string::npos) throw std::runtime_error("shoal-bench: packed rows end inside a row");
    std::vector<std::string> f;
    for (size_t at = start;;) {
      const size_t next = packed.find(kField, at);
      if (next == std::string::npos || next > end) {
        f.push_back(packed.substr(at, end - at));
        break;
      }
      f.push_back(packed.substr(at, next - at));
      at = next + 1;
    }
    if (f.size() != 13)
      throw std::runtime_error(fmt::format("shoal-bench: a packed row has {} fields, not 13", f.size()));
    try {
      row r;
      r.benchmark = f[0];
      r.impl = f[1];
      r.backend = f[2];
      r.num_pes = std::stoi(f[3]);
      r.scope = f[4];
      r.size_bytes = static_cast<size_t>(std::stoull(f[5]));
      r.iterations = std::stoi(f[6]);
      r.latency_us = double_of(f[7]);
      r.bandwidth_gbps = double_of(f[8]);
      r.ratio = double_of(f[9]);
      r.baseline = f[10];
      r.busbw_gbps = double_of(f[11]);
      r.pair = f[12];
      rows.push_back(std::move(r));
    } catch (const std::logic_error&) {
      throw std::runtime_error("shoal-bench: a packed row has a malformed number");
    }
    start = end + 1;
  }
  return rows;
}

}  // namespace shoal::bench
