// shoal-bench-nvshmem: shoal-bench's device-initiated measurements through NVSHMEM, for the
// side-by-side figures of the issue-3 targets, and NVSHMEM's collectives beside shoal's (issue 4).
// Same options and CSV schema as shoal-bench (impl "nvshmem-<version>", e.g. nvshmem-3.4.5); the
// baselines (plain SM copy, raw flags) are measured in this run too. The build makes one binary per
// NVSHMEM it is given (shoal-bench-nvshmem, shoal-bench-nvshmem-<version>: bench/nvshmem/CMakeLists.txt);
// each checks that it loads the host library and UID bootstrap plugin it was built against.
//
//   shoalrun -n 2 shoal-bench-nvshmem [benchmarks] [-b 8 -e 256M -c 32 -t 512 ...] --csv nvshmem.csv
//   shoalrun -n 2 shoal-bench-nvshmem --coll [--coll-scope block,stream,graph] --csv nvshmem_coll.csv
//
// Without benchmark names or --coll: the RMA/latency set (put_bw ... barrier_latency). Collectives
// (allreduce broadcast fcollect alltoall team_barrier barrier) run when named or with --coll (all of
// them); --coll alone runs only them. --coll-scope picks their launch styles (default all).
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

#include "common/options.hpp"
#include "common/report.hpp"
#include "nvshmem/nvshmem_bench.hpp"
#include "shoal/world.hpp"

namespace nvb = shoal::bench::nvshmem;

int main(int argc, char** argv) {
  CLI::App app{"shoal-bench-nvshmem: shoal-bench's device-initiated measurements through NVSHMEM"};
  shoal::bench::options opts;
  shoal::bench::add_options(app, opts);
  bool all_colls = false;
  std::vector<std::string> coll_scopes;
  app.add_flag("--coll", all_colls, "run NVSHMEM's collectives (all; without benchmark names, only them)");
  app.add_option("--coll-scope", coll_scopes, "collectives' launch styles (comma list; default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"block", "stream", "graph", "all"}));
  CLI11_PARSE(app, argc, argv);
  if (std::string err = shoal::bench::finish(opts); !err.empty()) {
    std::fprintf(stderr, "shoal-bench-nvshmem: %s\n", err.c_str());
    return 2;
  }
  auto in = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  const std::vector<std::string> rma_set = shoal::bench::device_benchmark_names();
  const std::vector<std::string> coll_set = nvb::collective_names();
  nvb::selection sel;
  for (const auto& w : opts.which) {
    if (in(coll_set, w)) continue;
    if (!in(rma_set, w)) {
      std::fprintf(stderr, "shoal-bench-nvshmem: unknown benchmark '%s'\n", w.c_str());
      return 2;
    }
    sel.rma_names.push_back(w);
  }
  for (const auto& c : coll_set)
    if (all_colls || in(opts.which, c)) sel.colls.push_back(c);
  sel.rma = opts.which.empty() ? !all_colls : !sel.rma_names.empty();
  if (!coll_scopes.empty() && !in(coll_scopes, "all")) {
    sel.block = in(coll_scopes, "block");
    sel.stream = in(coll_scopes, "stream");
    sel.graph = in(coll_scopes, "graph");
  }
  if (std::string why = nvb::check_library(); !why.empty()) {
    std::fprintf(stderr, "shoal-bench-nvshmem (%s): %s\n", nvb::impl_name().c_str(), why.c_str());
    return 2;
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

    passed = nvb::run(rank, size, uid, opts, sel, rows);
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
