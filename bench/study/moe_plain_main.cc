// shoal-bench-moe: the study's MoE dispatch written by a user of shoal's public API, beside the CPU-orchestrated form
// of the same dispatch, on the same tokens, in one run (docs/study.md, the MoE section). One process per PE:
//
//   shoalrun -n 4 -- shoal-bench-moe [--tokens 128 512 2048 8192 16384] [--hidden 4096 7168] [--csv rows.csv]
//
// Each PE routes its tokens on the GPU (top-8 of 32 x n_pes experts by a hash of a seed per PE and token count), so
// each token goes once to every PE that holds one of its experts, and two paths move the BF16 rows:
//   shoal/device           plain_dispatch_kernel (moe_plain_kernels.cuh): one kernel on the device API alone, no CPU
//                          on the path: slots reserved by one remote fetch-add per block and destination, one warp
//                          per token putting its row, a done word per destination (fence + signal, tagged with the
//                          call's epoch), bounded waits for every sender's
//   cpu/copy_engine_plain  the CPU-orchestrated form: rows grouped per destination on the GPU, the counts exchanged by
//                          shoal's on-stream fcollect and copied to the host (the round trip), one
//                          shoalx_putmem_on_stream per peer (the copy engine), then shoalx_barrier_all_on_stream
// Both are checked (moe_plain_check.cuh: every received row against the row its origin must have sent, every routed
// token once) before and after the timed calls; a failed check fails the run on every PE. The time is the wall time
// of one call with its host round trips, every call complete before the next, the mean of --iters calls after
// --warmup (PE 0's), as bench/study/moe_a2a.py times shoal.ep. Rows in shoal-bench's CSV columns: benchmark
// moe_dispatch_h<hidden>, size_bytes = tokens x hidden x 2 (the PE's input), bandwidth = the bytes it sends / time.
// Exit status: 0, 1 (a check or a call failed), 2 (usage), 77 (no GPU heap: skipped).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "common/report.hpp"
#include "shoal/shoal.h"
#include "study/moe_plain.hpp"

int main(int argc, char** argv) {
  namespace moe = shoal::bench::moe;
  CLI::App app{"shoal-bench-moe: a MoE dispatch on shoal's public device API against the CPU-orchestrated form"};
  moe::run_config cfg;
  std::string csv;
  app.add_option("--tokens", cfg.tokens, "tokens per PE")->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  app.add_option("--hidden", cfg.hidden, "elements per row (BF16; a multiple of 8)")
      ->capture_default_str()
      ->check(CLI::Range(8u, 1u << 20));
  app.add_option("--num-topk", cfg.num_topk, "experts per token")
      ->capture_default_str()
      ->check(CLI::Range(1, moe::max_topk()));
  app.add_option("--experts-per-rank", cfg.experts_per_rank, "experts per PE")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--warmup", cfg.warmup, "untimed calls before the timed ones")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--iters", cfg.iters, "timed calls (their mean is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--ctas", cfg.ctas, "most blocks of the plain kernel (0: one per SM)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--paths", cfg.paths, "device (the plain kernel), cpu (the CPU-orchestrated form)")
      ->capture_default_str()
      ->check(CLI::IsMember({"device", "cpu"}));
  app.add_option("--csv", csv, "write the rows as CSV (PE 0)");
  CLI11_PARSE(app, argc, argv);
  for (uint32_t h : cfg.hidden) {
    if (h % 8 != 0) {
      std::fprintf(stderr, "shoal-bench-moe: --hidden %u: a multiple of 8 (rows of 16-byte pieces)\n", h);
      return 2;
    }
  }

  if (!moe::select_gpu()) {
    std::printf("SKIP: shoal-bench-moe: no usable GPU\n");
    return 77;
  }
  shoal_init();
  const int me = shoal_my_pe();
  const int num_pes = shoal_n_pes();
  if (std::string(shoalx_backend_name()) != "cuda") {
    if (me == 0) std::printf("SKIP: shoal-bench-moe: the heap is not on GPUs (backend %s)\n", shoalx_backend_name());
    shoal_finalize();
    return 77;
  }
  if (num_pes < 2 || num_pes > moe::max_pes() || cfg.experts_per_rank * num_pes < cfg.num_topk) {
    if (me == 0)
      std::fprintf(stderr, "shoal-bench-moe: needs 2 to %d PEs and at least --num-topk experts (shoalrun -n 2 ...)\n",
                   moe::max_pes());
    shoal_finalize();
    return 2;
  }
  std::vector<shoal::bench::row> rows;
  bool ok = false;
  try {
    ok = moe::run_points(cfg, rows);
  } catch (const std::exception& e) {
    // A peer may wait inside a kernel or a collective: no collective finalize (shoalrun ends the others).
    std::fprintf(stderr, "shoal-bench-moe: PE %d: %s\n", me, e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  if (me == 0) {
    fmt::print("shoal-bench-moe: {} PEs, top-{} of {} experts per PE\n", num_pes, cfg.num_topk, cfg.experts_per_rank);
    shoal::bench::print_table(rows);
    if (!csv.empty()) shoal::bench::write_csv(csv, rows);
  }
  shoal_finalize();
  return ok ? 0 : 1;
}
