// shoal-bench-nvshmem: the device-initiated set of shoal-bench (bench/device/) through NVSHMEM's
// public API, for side-by-side figures (impl "nvshmem", same CSV schema). Plain C++ interface to the
// nvcc -rdc part (nvshmem_bench.cu), so main.cc needs no NVSHMEM header.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "device/options.hpp"
#include "report.hpp"

namespace shoal::bench::nvshmem {

/// Bytes of nvshmemx_uniqueid_t.
inline constexpr size_t kUniqueIdBytes = 128;
using unique_id = std::array<unsigned char, kUniqueIdBytes>;

/// Before NVSHMEM init: makes this PE's GPU current (SHOAL_DEVICE, else the launcher's local rank).
bool select_gpu();

/// On the PE that will be rank 0: nvshmemx_get_uniqueid (opens NVSHMEM's UID bootstrap listener).
unique_id make_unique_id();

/// Initializes NVSHMEM with the UID bootstrap (rank of size), runs the named benchmarks (all when
/// empty; PE 0 appends the rows), finalizes. Returns false if a data check failed. Throws
/// std::runtime_error on init or CUDA failures and timed-out device waits.
bool run(int rank, int size, const unique_id& uid, const options& opts, const std::vector<std::string>& which,
         std::vector<row>& rows);

}  // namespace shoal::bench::nvshmem
