// shoal-bench results: one row per (benchmark, size), printed as a table and written as CSV/JSON.
#pragma once

#include <string>
#include <vector>

namespace shoal::bench {

struct row {
  std::string benchmark;  ///< perftest name, e.g. "put_bw"
  std::string impl;       ///< "shoal", "memcpy" (ceiling), "nvshmem", "nccl"
  std::string backend;    ///< "host" or "cuda"
  int num_pes = 0;
  std::string scope;  ///< "thread", "warp", "block", "host", ...
  size_t size_bytes = 0;
  int iterations = 0;
  double latency_us = 0;      ///< median time per operation
  double bandwidth_gbps = 0;  ///< GB/s (1e9 bytes/s); 0 for latency-only rows (collectives: algBW)
  double ratio = 0;      ///< vs the row's baseline in the same run (bandwidth: shoal/baseline; latency: shoal/baseline)
  std::string baseline;  ///< which impl `ratio` compares against
  double busbw_gbps = 0;  ///< collectives: nccl-tests' busBW (GB/s); 0 for other rows
  std::string pair;       ///< device RMA rows: "initiator-target" PEs (e.g. "0-1"); empty for all-PE rows
};

void print_table(const std::vector<row>& rows);
void write_csv(const std::string& path, const std::vector<row>& rows);
void write_json(const std::string& path, const std::vector<row>& rows);

/// Rows as one string, and back (exact: doubles travel as their bits), for moving the rows that a
/// PE other than 0 measured to PE 0. unpack_rows throws std::runtime_error on text pack_rows did not make.
std::string pack_rows(const std::vector<row>& rows);
std::vector<row> unpack_rows(const std::string& packed);

}  // namespace shoal::bench
