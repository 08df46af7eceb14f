// shoal-bench-nvshmem: the device-initiated set of shoal-bench (bench/rma/, amo/, sync/) and its collectives
// through NVSHMEM's public API, for side-by-side figures (impl "nvshmem-<version>", same CSV schema). Plain C++
// interface to the nvcc -rdc part (nvshmem_bench.cu, nvshmem_coll_bench.cu), so main.cc needs no
// NVSHMEM header.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "common/report.hpp"

namespace shoal::bench::nvshmem {

/// Bytes of nvshmemx_uniqueid_t.
inline constexpr size_t kUniqueIdBytes = 128;
using unique_id = std::array<unsigned char, kUniqueIdBytes>;

/// What one run measures; main.cc resolves it from the command line.
struct selection {
  bool rma = true;                     ///< the device-initiated set of bench/common/driver.cuh
  std::vector<std::string> rma_names;  ///< its benchmarks; empty: all of them
  std::vector<std::string> colls;      ///< collectives (names from collective_names()); empty: none
  bool block = true;                   ///< collective rows of scope block/1x<-t>
  bool stream = true;                  ///< collective rows of scope stream
  bool graph = true;                   ///< collective rows of scope graph
};

/// The collectives, in run order: allreduce, broadcast, fcollect, alltoall (block, stream and graph
/// rows), team_barrier (block rows), barrier (stream and graph rows).
std::vector<std::string> collective_names();

/// Before NVSHMEM init: makes this PE's GPU current (SHOAL_DEVICE, else the launcher's local rank).
bool select_gpu();

/// The rows' impl name, "nvshmem-<version>" of the NVSHMEM this binary was built against.
std::string impl_name();

/// Before any other NVSHMEM call: checks that the libnvshmem_host.so loaded is the one of the folder this
/// binary was built against (another one, e.g. through LD_PRELOAD, would measure another release under
/// this one's name), and points NVSHMEM_BOOTSTRAP_UID_PLUGIN at the UID plugin of that folder unless the
/// environment names one. Returns what is wrong, empty when nothing is.
std::string check_library();

/// On the PE that will be rank 0: nvshmemx_get_uniqueid (opens NVSHMEM's UID bootstrap listener).
unique_id make_unique_id();

/// Initializes NVSHMEM with the UID bootstrap (rank of size), checks that the library reports the
/// headers' version and that the UID plugin came from the library's folder, runs what `sel` selects
/// (the RMA set, then the collectives; PE 0 appends the rows), finalizes. Returns false if a data check failed.
/// Throws std::runtime_error on init or CUDA failures and timed-out device waits.
bool run(int rank, int size, const unique_id& uid, const options& opts, const selection& sel, std::vector<row>& rows);

/// Inside run(), NVSHMEM initialized: the collectives of `sel` (bench/nvshmem/nvshmem_coll_bench.cu),
/// same contract. A wait that never ends stops the process (exit status 3) after PE 0 wrote the rows
/// measured so far to opts.csv / opts.json.
bool run_collectives(const options& opts, const selection& sel, std::vector<row>& rows);

}  // namespace shoal::bench::nvshmem
