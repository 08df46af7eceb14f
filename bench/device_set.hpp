// shoal-bench's device-initiated set (bench/device_set.cu and bench/coll/coll_bench.cu, built when SHOAL_CUDA is on:
// the compile definition SHOAL_BENCH_DEVICE=1), called from shoal-bench's main when the job's heap is on GPUs.
#pragma once

#include <string>
#include <vector>

#include "common/options.hpp"
#include "common/report.hpp"

namespace shoal::bench {

/// Before shoal_init: makes this PE's GPU current (SHOAL_DEVICE, else the launcher's local rank
/// modulo the visible GPUs), the one the cuda backend then picks too. false: no usable GPU.
bool device_select_gpu();

/// After shoal_init on the cuda backend: runs the named device benchmarks (all when empty); PE 0
/// appends the rows. Returns false if a point failed its data check (its row says so). Throws
/// std::runtime_error on a CUDA error or a timed-out device wait.
bool run_device_benchmarks(const options& opts, const std::vector<std::string>& which, std::vector<row>& rows,
                           const std::string& backend);

/// After run_device_benchmarks, same contract: the collectives of issue 4 (allreduce, broadcast,
/// fcollect, alltoall, team_barrier, barrier; allreduce_scratch when opts.which names it;
/// bench/coll/coll_bench.cu) as one-block device calls, on-stream calls and graph-replayed
/// on-stream calls, with NCCL rows where NCCL was found at configure time. Does nothing when `which`
/// names none of them. A run that stops making progress ends the process (status 3) after PE 0
/// wrote the rows so far to --csv/--json.
bool run_collective_benchmarks(const options& opts, const std::vector<std::string>& which, std::vector<row>& rows,
                               const std::string& backend);

}  // namespace shoal::bench
