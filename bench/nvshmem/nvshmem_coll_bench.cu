// shoal-bench-nvshmem's collectives: the rows of shoal-bench's bench/coll/coll_bench.cu (same
// sizes, busBW formulas, timing method and CSV schema; impl "nvshmem-<version>", ratio 0, no baseline: the
// ratios are compare.py's) through NVSHMEM's public collective API on NVSHMEM_TEAM_WORLD, in three
// launch styles:
//
//   scope block/1x<t>  one CTA of t (-t) threads per PE calls the device collective many times in
//                      one kernel; the median of reps kernels, timed with CUDA events on PE 0
//   scope stream       many host-launched nvshmemx_*_on_stream calls back to back on one stream
//                      between two events; the median of reps runs
//   scope graph        the same on-stream calls captured into one CUDA graph (several calls) and
//                      replayed; graph time / calls. Rows whose capture NVSHMEM refuses are skipped.
//
//   benchmark     block                               stream, graph
//   allreduce     nvshmemx_float_sum_reduce_block     nvshmemx_float_sum_reduce_on_stream
//   broadcast     nvshmemx_broadcastmem_block root 0  nvshmemx_broadcastmem_on_stream root 0
//   fcollect      nvshmemx_fcollectmem_block          nvshmemx_fcollectmem_on_stream
//   alltoall      nvshmemx_alltoallmem_block          nvshmemx_alltoallmem_on_stream
//   team_barrier  nvshmemx_barrier_block              -
//   barrier       -                                   nvshmemx_barrier_on_stream
//
// Sizes as nccl-tests counts them: the whole buffer (allreduce, broadcast), the gathered output
// (fcollect), one PE's send buffer (alltoall: size / n_pes to each PE). algBW = size / time; busBW =
// algBW x 2(n-1)/n (allreduce), x 1 (broadcast), x (n-1)/n (fcollect, alltoall). Sweeps end at -e,
// and at most at 1 MiB (block allreduce), 16 MiB (other block collectives), 256 MiB (stream, graph).
//
// Every PE runs the same points in the same order; a point's call count is decided by PE 0 from its
// timed warm-up and shared. All block rows come first, then stream, then graph, so a stuck graph
// loses the least. Bounded: every stream wait polls with a timeout, and a progress watchdog covers
// the host waits inside NVSHMEM (barriers, enqueues); either stops the process after PE 0 wrote the
// rows measured so far.
//
// The harness (watchdog, stream waits, timing, shared call counts, data check, graph replay, rows)
// is shoal-bench's, bench/coll/coll_harness.cuh; here are NVSHMEM's policy for it, NVSHMEM's
// calls and the sweeps.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "coll/coll_harness.cuh"
#include "nvshmem/nvshmem_api.cuh"
#include "nvshmem/nvshmem_bench.hpp"

namespace shoal::bench::nvshmem {

namespace {

using coll_harness::coll;
using coll_harness::kDataColls;
using coll_harness::kSlowCallUs;
using coll_harness::measured;
using coll_harness::name_of;
using coll_harness::shape;
using coll_harness::shape_of;
using coll_harness::style;

/// The NVSHMEM call a row of collective c in style st measures (for messages).
const char* call_of(coll c, style st) {
  const bool block = st == style::block;
  switch (c) {
    case coll::allreduce:
      return block ? "nvshmemx_float_sum_reduce_block" : "nvshmemx_float_sum_reduce_on_stream";
    case coll::broadcast:
      return block ? "nvshmemx_broadcastmem_block" : "nvshmemx_broadcastmem_on_stream";
    case coll::fcollect:
      return block ? "nvshmemx_fcollectmem_block" : "nvshmemx_fcollectmem_on_stream";
    case coll::alltoall:
      return block ? "nvshmemx_alltoallmem_block" : "nvshmemx_alltoallmem_on_stream";
    case coll::team_barrier:
      return "nvshmemx_barrier_block";
    case coll::barrier:
      return "nvshmemx_barrier_on_stream";
    case coll::allreduce_scratch:  // shoal-bench's alone
      break;
  }
  return "?";
}

// --- device side --------------------------------------------------------------------------------

/// `iters` back-to-back calls of NVSHMEM's block-scope collective C by the one CTA of this PE.
template <coll C>
__global__ void __launch_bounds__(1024)
    block_coll_kernel(char* dst, const char* src, size_t nbytes, size_t per_pe, int iters) {
  for (int i = 0; i < iters; ++i) {
    if constexpr (C == coll::allreduce) {
      nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, reinterpret_cast<float*>(dst),
                                      reinterpret_cast<const float*>(src), nbytes / sizeof(float));
    } else if constexpr (C == coll::broadcast) {
      // NVSHMEM 3.4's host-pass declaration of broadcastmem_block lacks PE_root; the definition the
      // device pass sees has it.
#ifdef __CUDA_ARCH__
      nvshmemx_broadcastmem_block(NVSHMEM_TEAM_WORLD, dst, src, nbytes, 0);
#endif
    } else if constexpr (C == coll::fcollect) {
      nvshmemx_fcollectmem_block(NVSHMEM_TEAM_WORLD, dst, src, per_pe);
    } else if constexpr (C == coll::alltoall) {
      nvshmemx_alltoallmem_block(NVSHMEM_TEAM_WORLD, dst, src, per_pe);
    } else if constexpr (C == coll::team_barrier) {
      nvshmemx_barrier_block(NVSHMEM_TEAM_WORLD);
    }
  }
}

// --- host side ----------------------------------------------------------------------------------

/// The harness's library policy (coll_harness.cuh) for NVSHMEM's host API.
struct nvshmem_lib {
  static constexpr const char* kName = "nvshmem";
  static constexpr const char* kProgram = "shoal-bench-nvshmem";
  /// Above kKernelTimeoutSeconds, so a stuck kernel reports itself first.
  static constexpr double kStallSeconds = 60;
  /// A PE other than 0 that stops exits at once.
  static constexpr int kStopGraceSeconds = 0;
  /// Relaxed: NVSHMEM may make calls that the stricter modes forbid while a capture is open.
  static constexpr cudaStreamCaptureMode kCaptureMode = cudaStreamCaptureModeRelaxed;

  static int my_pe() { return nvshmem_my_pe(); }
  static int n_pes() { return nvshmem_n_pes(); }
  static void* host_malloc(size_t nbytes) { return nvshmem_malloc(nbytes); }
  static void host_free(void* p) { nvshmem_free(p); }
  static void* host_ptr(const void* p, int pe) { return nvshmem_ptr(p, pe); }
  static std::string host_barrier() {
    nvshmem_barrier_all();
    return "";
  }

  // The stop lines (after "shoal-bench-nvshmem: PE <me>: ").
  static std::string stopped(const std::string& why) { return why + "; stopping"; }
  static std::string stalled(const std::string& where, int seconds) {
    return "no progress for " + std::to_string(seconds) + " s (last: " + where + ")";
  }
  static std::string gpu_timed_out(const std::string& where, int seconds) {
    return where + " did not finish within " + std::to_string(seconds) + " s";
  }
  static std::string failed_row(int /*me*/, const row& r) {
    return r.benchmark + " " + r.scope + " " + std::to_string(r.size_bytes) + " bytes";
  }
};

struct buffers {
  char* src = nullptr;  // symmetric
  char* dst = nullptr;  // symmetric
};

class coll_runner : public coll_harness::harness<nvshmem_lib> {
 public:
  coll_runner(const options& opts, std::vector<row>& rows) : harness(opts, rows, "cuda") {}

  void run(const selection& sel) {
    auto wanted = [&](coll c) { return std::find(sel.colls.begin(), sel.colls.end(), name_of(c)) != sel.colls.end(); };
    if (sel.block) {
      for (coll c : kDataColls)
        if (wanted(c)) sweep(c, style::block);
      if (wanted(coll::team_barrier)) barrier_point(coll::team_barrier, style::block);
    }
    for (style st : {style::stream, style::graph}) {
      if (!(st == style::stream ? sel.stream : sel.graph)) continue;
      for (coll c : kDataColls)
        if (wanted(c)) sweep(c, st);
      if (wanted(coll::barrier)) barrier_point(coll::barrier, st);
    }
    barrier("done");
  }

 private:
  // ---- the calls ----

  void launch_block(coll c, const buffers& b, const shape& s, int calls) {
    const dim3 grid(1), block(opts_.threads);
    switch (c) {
      case coll::allreduce:
        block_coll_kernel<coll::allreduce><<<grid, block, 0, stream_>>>(b.dst, b.src, s.bytes, s.per_pe, calls);
        break;
      case coll::broadcast:
        block_coll_kernel<coll::broadcast><<<grid, block, 0, stream_>>>(b.dst, b.src, s.bytes, s.per_pe, calls);
        break;
      case coll::fcollect:
        block_coll_kernel<coll::fcollect><<<grid, block, 0, stream_>>>(b.dst, b.src, s.bytes, s.per_pe, calls);
        break;
      case coll::alltoall:
        block_coll_kernel<coll::alltoall><<<grid, block, 0, stream_>>>(b.dst, b.src, s.bytes, s.per_pe, calls);
        break;
      case coll::team_barrier:
        block_coll_kernel<coll::team_barrier><<<grid, block, 0, stream_>>>(nullptr, nullptr, 0, 0, calls);
        break;
      case coll::barrier:
      case coll::allreduce_scratch:  // shoal-bench's alone
        break;
    }
  }

  /// One on-stream call of collective c on stream_; NVSHMEM's return code.
  int call_on_stream(coll c, const buffers& b, const shape& s) {
    switch (c) {
      case coll::allreduce:
        return nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, reinterpret_cast<float*>(b.dst),
                                                   reinterpret_cast<const float*>(b.src), s.bytes / sizeof(float),
                                                   stream_);
      case coll::broadcast:
        return nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, b.dst, b.src, s.bytes, 0, stream_);
      case coll::fcollect:
        return nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, b.dst, b.src, s.per_pe, stream_);
      case coll::alltoall:
        return nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, b.dst, b.src, s.per_pe, stream_);
      case coll::barrier:
        return nvshmemx_barrier_on_stream(NVSHMEM_TEAM_WORLD, stream_);
      case coll::team_barrier:
      case coll::allreduce_scratch:  // shoal-bench's alone
        break;
    }
    return 0;
  }

  void enqueue_on_stream(coll c, const buffers& b, const shape& s, int calls) {
    for (int i = 0; i < calls; ++i) {
      if (int rc = call_on_stream(c, b, s); rc != 0)
        throw std::runtime_error(std::string(call_of(c, style::stream)) + " returned " + std::to_string(rc));
    }
  }

  // ---- points and sweeps ----

  /// One measured point of c in style st (a graph that NVSHMEM refused to capture on some PE: no
  /// row); false when the sweep should end here (calls slower than kSlowCallUs).
  bool point(coll c, style st, const buffers& b, const shape& s) {
    const std::string scope = scope_label(st);
    bool slow = false;
    auto on_stream = [&](int n) { enqueue_on_stream(c, b, s, n); };
    if (st != style::graph) {
      auto enqueue = [&](int n) {
        if (st == style::block)
          launch_block(c, b, s, n);
        else
          on_stream(n);
      };
      const int calls = point_calls(name_of(c), b.dst, s, &slow, enqueue);
      add(measure(name_of(c), c, dev::kNvshmemImpl, scope, b.dst, s, calls, [&] { enqueue(calls); }));
    } else {
      // The stream warm-up also lets NVSHMEM set up whatever it sets up on first use, outside the capture.
      const int calls = point_calls(name_of(c), b.dst, s, &slow, on_stream);
      cudaGraphExec_t exec = nullptr;
      wd_.step("graph capture");
      const std::string why = capture([&] { on_stream(calls); }, &exec);
      if (!why.empty())
        std::fprintf(stderr, "shoal-bench-nvshmem: PE %d: %s, %zu bytes: graph capture refused: %s\n", me_, name_of(c),
                     s.bytes, why.c_str());
      if (!all_agree(why.empty())) {
        if (exec != nullptr) cudaGraphExecDestroy(exec);
        if (me_ == 0)
          std::fprintf(stderr, "shoal-bench-nvshmem: %s graph %zu bytes: capture refused on some PE; row skipped\n",
                       name_of(c), s.bytes);
        return !slow;
      }
      measured m = replay_graph("graph", c, dev::kNvshmemImpl, b.dst, s, exec, calls, 1);
      cudaGraphExecDestroy(exec);
      add(std::move(m));
    }
    if (slow && me_ == 0)
      std::fprintf(stderr, "shoal-bench-nvshmem: %s %s: calls take over %.0f ms at %zu bytes; no larger sizes\n",
                   name_of(c), scope.c_str(), kSlowCallUs / 1e3, s.bytes);
    return !slow;
  }

  void sweep(coll c, style st) {
    const size_t end = end_of(c, st);
    if (end < opts_.min_bytes) return;
    buffers b;
    b.src = static_cast<char*>(nvshmem_malloc(end));
    b.dst = static_cast<char*>(nvshmem_malloc(end));
    if (b.src == nullptr || b.dst == nullptr)
      throw std::runtime_error(std::string(name_of(c)) + ": nvshmem_malloc of 2 x " + std::to_string(end) +
                               " bytes failed (NVSHMEM_SYMMETRIC_SIZE?)");
    barrier("alloc");
    for (size_t size : sizes(opts_.min_bytes, end, opts_.factor)) {
      const shape s = shape_of(c, size, npes_);
      if (s.bytes == 0 || s.bytes != size) continue;  // not whole 4-byte words per PE
      fill_source(c, b.src, s);
      if (!point(c, st, b, s)) break;
    }
    barrier("free");
    nvshmem_free(b.dst);
    nvshmem_free(b.src);
  }

  void barrier_point(coll c, style st) {
    barrier(name_of(c));
    point(c, st, buffers{}, shape{});
  }
};

}  // namespace

std::vector<std::string> collective_names() {
  return {"allreduce", "broadcast", "fcollect", "alltoall", "team_barrier", "barrier"};
}

bool run_collectives(const options& opts, const selection& sel, std::vector<row>& rows) {
  if (sel.colls.empty() || !(sel.block || sel.stream || sel.graph)) return true;
  coll_runner runner(opts, rows);
  runner.run(sel);
  return !runner.any_check_failed();
}

}  // namespace shoal::bench::nvshmem
