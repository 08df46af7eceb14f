// shoal-bench-nvshmem: shoal-bench's device-initiated measurements through NVSHMEM, for the
// side-by-side figures of the issue-3 targets. Same options and CSV schema as shoal-bench
// (impl "nvshmem"); the baselines (plain SM copy, raw flags) are measured in this run too.
//
//   shoalrun -n 2 shoal-bench-nvshmem [benchmarks] [-b 8 -e 256M -c 32 -t 512 ...] --csv nvshmem.csv
//
// Bootstrap: NVSHMEM's UID bootstrap. Rank 0 makes the id (nvshmemx_get_uniqueid) and the others get
// it through a small shoal world on host memory, which joins the job from the launcher's environment
// (shoalrun, mpirun, srun, torchrun) like every shoal program; no file, no extra port to pick.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "device/options.hpp"
#include "nvshmem/nvshmem_bench.hpp"
#include "report.hpp"
#include "shoal/world.hpp"

namespace nvb = shoal::bench::nvshmem;

int main(int argc, char** argv) {
  CLI::App app{"shoal-bench-nvshmem: shoal-bench's device-initiated measurements through NVSHMEM"};
  shoal::bench::options opts;
  shoal::bench::add_options(app, opts);
  CLI11_PARSE(app, argc, argv);
  if (std::string err = shoal::bench::finish(opts); !err.empty()) {
    std::fprintf(stderr, "shoal-bench-nvshmem: %s\n", err.c_str());
    return 2;
  }
  const std::vector<std::string> set = shoal::bench::device_benchmark_names();
  for (const auto& w : opts.which) {
    if (std::find(set.begin(), set.end(), w) == set.end()) {
      std::fprintf(stderr, "shoal-bench-nvshmem: unknown benchmark '%s'\n", w.c_str());
      return 2;
    }
  }
  if (!nvb::select_gpu()) {
    std::fprintf(stderr, "shoal-bench-nvshmem: no usable GPU\n");
    return 2;
  }

  int rank = 0;
  std::vector<shoal::bench::row> rows;
  bool passed = false;
  try {
    // The id's courier: a host-memory shoal world over the launcher's rendezvous.
    shoal::init_options boot_options;
    boot_options.backend = "host";
    shoal::world boot(boot_options);
    rank = boot.my_pe();
    const int size = boot.n_pes();
    if (size < 2) {
      if (rank == 0) std::fprintf(stderr, "shoal-bench-nvshmem: needs 2 PEs (shoalrun -n 2 shoal-bench-nvshmem)\n");
      return 2;
    }
    nvb::unique_id uid{};
    auto* slot = static_cast<unsigned char*>(boot.malloc(uid.size()));
    if (rank == 0) {
      uid = nvb::make_unique_id();
      std::memcpy(slot, uid.data(), uid.size());
    }
    boot.barrier_all();
    if (rank != 0) boot.get(uid.data(), slot, uid.size(), 0);
    boot.barrier_all();
    boot.free(slot);

    passed = nvb::run(rank, size, uid, opts, opts.which, rows);
    boot.finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-nvshmem: PE %d: %s\n", rank, e.what());
    if (rank == 0 && !opts.csv.empty() && !rows.empty()) shoal::bench::write_csv(opts.csv, rows);
    std::fflush(nullptr);
    std::_Exit(1);  // the peers may be inside NVSHMEM: no collective teardown
  }
  if (rank == 0) {
    std::printf("shoal-bench-nvshmem: device-initiated operations through NVSHMEM\n");
    shoal::bench::print_table(rows);
    if (!opts.csv.empty()) shoal::bench::write_csv(opts.csv, rows);
    if (!opts.json.empty()) shoal::bench::write_json(opts.json, rows);
  }
  return passed ? 0 : 1;
}
