// shoal-bench-moe's two halves: the command line and the rows (moe_plain_main.cc, plain C++) and the runs on the GPU
// (moe_plain.cu: the plain kernel and the CPU-orchestrated form, their checks and their timing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/report.hpp"

namespace shoal::bench::moe {

struct run_config {
  std::vector<uint32_t> tokens{128, 512, 2048, 8192, 16384};  ///< tokens per PE
  std::vector<uint32_t> hidden{4096, 7168};                   ///< elements per row (BF16), a multiple of 8
  int num_topk = 8;                                           ///< experts per token, at most max_topk()
  int experts_per_rank = 32;
  int warmup = 5;                                   ///< untimed calls before the timed ones
  int iters = 20;                                   ///< timed calls; their mean is the row's time
  int ctas = 0;                                     ///< most blocks of the plain kernel; 0: one per SM
  std::vector<std::string> paths{"device", "cpu"};  ///< device: the plain kernel; cpu: the CPU-orchestrated form
};

/// The most PEs (a token's destinations are one 64-bit mask) and the most experts per token.
int max_pes();
int max_topk();

/// Before shoal_init: this PE's GPU (SHOAL_DEVICE, else the launcher's local rank). false: no usable GPU.
bool select_gpu();

/// Every point of cfg on the default world (collective; the heap on GPUs). Appends PE 0's rows to `rows` (on PE 0)
/// and returns false when a check failed, the same on every PE. Throws on a failed CUDA or shoal call.
bool run_points(const run_config& cfg, std::vector<row>& rows);

}  // namespace shoal::bench::moe
