// shoal-bench's collectives (issue 4): shoal's team collectives on SHOAL_TEAM_WORLD beside NCCL (C API,
// same process, same symmetric buffers, where NCCL was found at configure time: SHOAL_BENCH_NCCL), in
// three launch styles, each a `scope` of the CSV:
//
//   block/1x<t>  one CTA of t (-t) threads per PE calls the device facade's block collective many
//                times in one kernel; the median of reps kernels, timed with CUDA events on PE 0
//   stream       many host-launched on-stream calls back to back between two events; median of reps
//   graph        the same on-stream calls, up to kGraphCalls of them captured in one CUDA graph,
//                replayed back to back; graph time / calls
//
//   benchmark          block (shoal)                        stream, graph (shoal)                 NCCL
//   allreduce          shoalx_float_sum_reduce_block        shoalx_float_sum_reduce_on_stream     ncclAllReduce
//   allreduce_scratch  reduce<sum_op>(block) + scratch      -                                     -
//   broadcast          shoalx_broadcastmem_block, root 0    shoalx_broadcastmem_on_stream         ncclBroadcast
//   fcollect           shoalx_fcollectmem_block             shoalx_fcollectmem_on_stream          ncclAllGather
//   alltoall           shoalx_alltoallmem_block             shoalx_alltoallmem_on_stream          ncclSend/Recv
//   team_barrier       shoalx_barrier_block                 -                                     -
//   barrier            -                                    shoalx_barrier_on_stream              -
//
// NCCL rows have scopes stream and graph. allreduce_scratch (the explicit-scratch device form) runs
// only when named. Sizes as nccl-tests counts them: the whole buffer (allreduce, broadcast), the
// gathered output (fcollect), one PE's send buffer (alltoall: size / n_pes to each PE). algBW = size
// / time; busBW = algBW x 2(n-1)/n (allreduce), x 1 (broadcast), x (n-1)/n (fcollect, alltoall).
// Sweeps follow -b/-e/-f and end at most at 256 MiB (stream, graph, NCCL), 1 MiB (block allreduce)
// or 16 MiB (other block collectives), as shoal-bench-nvshmem's do. A shoal row's ratio compares it
// with NCCL's row of the same scope at the same size (block rows: NCCL stream): latency shoal/NCCL
// up to 64 KiB (lower is better), busBW shoal/NCCL above (higher is better); `baseline` says which.
//
// Environment (benchmark knobs, read here only):
//   SHOAL_BENCH_COLL_SCOPES  comma list of block, stream, graph (default: all three)
//   SHOAL_BENCH_COLL_SIZES   comma list of sizes (K/M/G suffixes) instead of the -b/-e/-f sweep
//   SHOAL_BENCH_NCCL=0       no NCCL rows;  SHOAL_BENCH_NCCL_GRAPH=0  no NCCL graph rows
//
// NCCL's graph-captured calls hung on 2xH200 (found by reading NCCL 2.28's enqueue and registration
// code; not yet confirmed on the GPUs). Graph capture is where NCCL, by default
// (NCCL_GRAPH_REGISTER=1), registers the user buffers for zero-copy: it exports the cuMem allocation
// behind each buffer, here a chunk of shoal's symmetric heap, and the peer's proxy thread imports and
// maps it. Destroying a graph only queues its cleanup (NCCL's graph destructor); NCCL runs it from
// inside whichever later NCCL enqueue first polls that queue, at a different call on each rank: the
// plan's work buffer is freed here and the registration dropped through a blocking RPC to the peer's
// proxy, which unmaps and frees there. The old code destroyed each graph right after its point, so
// those frees met the next point's NCCL kernels, each waiting for the other rank's next kernel, which
// that rank's host, blocked inside NCCL, never launched: a cycle across both hosts and GPUs where no
// stream watchdog looked. So here: the buffers are allocated once (a registration never outlives
// its memory), every capture starts with both GPUs idle, NCCL's graphs live until the end and are
// destroyed, both GPUs idle, before ncclCommFinalize (which waits for them anyway), and every host
// step is under the progress watchdog. If an NCCL point still stops a run, scripts/gpu.sh (coll) reruns
// it with NCCL_GRAPH_REGISTER=0, then without NCCL's graph rows (SHOAL_BENCH_NCCL_GRAPH=0).
//
// Every PE runs the same points in the same order; a point's call count is decided by PE 0 from its
// timed warm-up and shared. Bounded: shoal's device waits trap after SHOAL_WAIT_TIMEOUT, every
// stream wait polls for at most kKernelTimeoutSeconds, and a progress watchdog stops the process
// when a host call (barrier, NCCL or shoal enqueue, capture) makes no progress for kStallSeconds;
// either way PE 0 first writes the rows measured so far and the line says where it stopped.
//
// The harness (watchdog, stream waits, timing, shared call counts, data check, graph replay, rows)
// is bench/coll/coll_harness.cuh, shared with shoal-bench-nvshmem; here are shoal's policy for it,
// shoal's and NCCL's calls, and the sweep that sets shoal's rows beside NCCL's.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#if SHOAL_BENCH_NCCL
#include <nccl.h>
#endif

#include "coll/coll_harness.cuh"
#include "device_set.hpp"
#include "shoal/device/coll.cuh"
#include "shoal/device_team.hpp"
#include "shoal/shoal.h"

namespace shoal::bench {

namespace {

using coll_harness::coll;
using coll_harness::kDataColls;
using coll_harness::kSlowCallUs;
using coll_harness::measured;
using coll_harness::name_of;
using coll_harness::shape;
using coll_harness::shape_of;
using coll_harness::style;

/// NCCL's communicator setup and teardown.
constexpr double kNcclSetupSeconds = 90;
/// Largest size at which a shoal row's ratio is a latency ratio; above, a busBW ratio.
constexpr size_t kLatencyMaxBytes = size_t{64} << 10;
/// At most this many calls captured in one graph (the timed run replays it as often as needed).
constexpr int kGraphCalls = 64;

/// Comma-separated items of environment variable `name` (empty when unset).
std::vector<std::string> env_list(const char* name) {
  std::vector<std::string> out;
  const char* v = std::getenv(name);
  if (v == nullptr) return out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// false only when environment variable `name` is "0".
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

std::string size_text(size_t bytes) {
  for (auto [unit, shift] : {std::pair{"G", 30}, std::pair{"M", 20}, std::pair{"K", 10}}) {
    if (bytes >= (size_t{1} << shift) && bytes % (size_t{1} << shift) == 0)
      return std::to_string(bytes >> shift) + " " + unit + "iB";
  }
  return std::to_string(bytes) + " B";
}

// --- device side --------------------------------------------------------------------------------

/// `iters` calls of collective C by the one block of this PE on the world team.
template <coll C>
__global__ void block_coll_kernel(shoal::device_team t, char* dst, const char* src, size_t nbytes, size_t per_pe,
                                  void* scratch, int iters) {
  for (int i = 0; i < iters; ++i) {
    if constexpr (C == coll::allreduce) {
      shoalx_float_sum_reduce_block(SHOAL_TEAM_WORLD, reinterpret_cast<float*>(dst),
                                    reinterpret_cast<const float*>(src), nbytes / sizeof(float));
    } else if constexpr (C == coll::allreduce_scratch) {
      shoal::device::reduce<shoal::device::sum_op>(shoal::block, shoal::device::facade_world(), t,
                                                   reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src),
                                                   nbytes / sizeof(float), scratch);
    } else if constexpr (C == coll::broadcast) {
      shoalx_broadcastmem_block(SHOAL_TEAM_WORLD, dst, src, nbytes, 0);
    } else if constexpr (C == coll::fcollect) {
      shoalx_fcollectmem_block(SHOAL_TEAM_WORLD, dst, src, per_pe);
    } else if constexpr (C == coll::alltoall) {
      shoalx_alltoallmem_block(SHOAL_TEAM_WORLD, dst, src, per_pe);
    } else if constexpr (C == coll::team_barrier) {
      shoalx_barrier_block(SHOAL_TEAM_WORLD);
    }
  }
  (void)t, (void)scratch, (void)dst, (void)src, (void)nbytes, (void)per_pe;
}

// --- host side ----------------------------------------------------------------------------------

/// The harness's library policy (coll_harness.cuh) for shoal's C facade on the default world.
/// Alive as long as the runner: failed shoal calls return (and end the run with the rows so far)
/// instead of aborting the job.
struct shoal_lib {
  static constexpr const char* kName = "shoal";
  static constexpr const char* kProgram = "shoal-bench";
  /// Above kKernelTimeoutSeconds and the 25 s SHOAL_WAIT_TIMEOUT that scripts/gpu.sh sets, so
  /// their more specific reports come first.
  static constexpr double kStallSeconds = 45;
  /// A PE other than 0 that stops waits this long first (PE 0 may be writing the rows).
  static constexpr int kStopGraceSeconds = 20;
  /// Thread-local: no other thread's CUDA calls (NCCL's proxy, shoal's monitor) disturb the capture.
  static constexpr cudaStreamCaptureMode kCaptureMode = cudaStreamCaptureModeThreadLocal;

  shoal_lib() : saved_error_mode_(shoal_set_error_mode(SHOAL_ERRORS_RETURN)) {}
  ~shoal_lib() { shoal_set_error_mode(saved_error_mode_); }
  shoal_lib(const shoal_lib&) = delete;
  shoal_lib& operator=(const shoal_lib&) = delete;

  static int my_pe() { return shoal_my_pe(); }
  static int n_pes() { return shoal_n_pes(); }
  static void* host_malloc(size_t nbytes) { return shoal_malloc(nbytes); }
  static void host_free(void* p) { shoal_free(p); }
  static void* host_ptr(const void* p, int pe) { return shoal_ptr(p, pe); }
  static std::string host_barrier() {
    shoal_clear_error();
    shoal_barrier_all();
    const char* msg = nullptr;
    if (shoal_last_error(&msg) == SHOAL_OK) return "";
    return std::string("shoal_barrier_all failed: ") + (msg != nullptr ? msg : "?");
  }

  // The stop lines (after "shoal-bench: PE <me>: "); scripts/gpu.sh looks for "STOPPED: ".
  static std::string stopped(const std::string& why) { return "STOPPED: " + why; }
  static std::string stalled(const std::string& where, int seconds) {
    return where + ": no progress for " + std::to_string(seconds) +
           " s (a host call inside CUDA, NCCL or shoal that never returned)";
  }
  static std::string gpu_timed_out(const std::string& where, int seconds) {
    return where + ": the GPU work did not finish within " + std::to_string(seconds) +
           " s (a GPU wait that never ends)";
  }
  static std::string failed_row(int me, const row& r) {
    return "PE " + std::to_string(me) + ": " + r.benchmark + " " + r.impl + "/" + r.scope + " " +
           std::to_string(r.size_bytes) + " bytes";
  }

 private:
  int saved_error_mode_;
};

class coll_runner : public coll_harness::harness<shoal_lib> {
 public:
  coll_runner(const options& opts, std::vector<row>& rows, std::string backend)
      : harness(opts, rows, std::move(backend)) {
    const std::vector<std::string> scopes = env_list("SHOAL_BENCH_COLL_SCOPES");
    if (!scopes.empty()) {
      auto has = [&](const char* s) { return std::find(scopes.begin(), scopes.end(), s) != scopes.end(); };
      block_on_ = has("block");
      stream_on_ = has("stream");
      graph_on_ = has("graph");
    }
    for (const std::string& text : env_list("SHOAL_BENCH_COLL_SIZES")) {
      size_t v = 0;
      if (!parse_size(text, v) || v == 0) throw std::runtime_error("SHOAL_BENCH_COLL_SIZES: bad size '" + text + "'");
      size_list_.push_back(v);
    }
    std::sort(size_list_.begin(), size_list_.end());
    if (shoalx_team_device_handle(SHOAL_TEAM_WORLD, &team_, sizeof team_) != 0)
      throw std::runtime_error("shoalx_team_device_handle(SHOAL_TEAM_WORLD) failed");
  }

  /// `which`: the names to run (all when empty); `named`: what the command line named
  /// (allreduce_scratch runs only when named).
  void run(const std::vector<std::string>& which, const std::vector<std::string>& named) {
    auto in = [](const std::vector<std::string>& v, const char* x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    auto wanted = [&](coll c) {
      if (c == coll::allreduce_scratch) return in(named, name_of(c));
      return which.empty() || in(which, name_of(c));
    };
    std::vector<coll> data;
    for (coll c : kDataColls)
      if (wanted(c) && (block_on_ || stream_on_ || graph_on_)) data.push_back(c);
    const bool scratch = wanted(coll::allreduce_scratch) && block_on_;
    allocate(data, scratch);
#if SHOAL_BENCH_NCCL
    if (!data.empty() && env_on("SHOAL_BENCH_NCCL")) init_nccl();
#else
    if (!data.empty() && me_ == 0)
      std::fprintf(stderr, "shoal-bench: built without NCCL (not found at configure time); no nccl rows\n");
#endif
    for (coll c : data) sweep(c);
    if (scratch) sweep(coll::allreduce_scratch);
    if (wanted(coll::team_barrier) && block_on_) barrier_points(coll::team_barrier);
    if (wanted(coll::barrier) && (stream_on_ || graph_on_)) barrier_points(coll::barrier);
    finish_up();
  }

 private:
  // ---- buffers ----

  std::vector<size_t> sizes_up_to(size_t end) const {
    if (size_list_.empty()) return sizes(opts_.min_bytes, end, opts_.factor);
    std::vector<size_t> out;
    for (size_t s : size_list_)
      if (s <= end) out.push_back(s);
    return out;
  }

  /// One source and one dest buffer for every collective, allocated once: NCCL's graph registration
  /// of a buffer (see the top of this file) then never outlives the memory behind its address.
  void allocate(const std::vector<coll>& data, bool scratch) {
    size_t bytes = 0;
    for (coll c : data)
      for (style st : {style::block, style::stream, style::graph}) bytes = std::max(bytes, end_of(c, st));
    if (scratch) bytes = std::max(bytes, end_of(coll::allreduce_scratch, style::block));
    if (!size_list_.empty()) bytes = std::min(bytes, size_list_.back());
    if (bytes == 0) return;
    buffer_bytes_ = bytes;
    src_ = static_cast<char*>(shoal_malloc(bytes));
    dst_ = static_cast<char*>(shoal_malloc(bytes));
    if (src_ == nullptr || dst_ == nullptr)
      throw std::runtime_error("shoal_malloc of 2 x " + std::to_string(bytes) + " bytes failed");
    if (scratch) {
      const size_t n = end_of(coll::allreduce_scratch, style::block) / sizeof(float);
      scratch_ = shoal_malloc(shoal::device::reduce_scratch_bytes<float>(npes_, n));
      if (scratch_ == nullptr) throw std::runtime_error("allreduce_scratch: shoal_malloc of the scratch failed");
    }
    barrier("alloc");
  }

  /// Normal end: NCCL's graphs, then NCCL (both GPUs idle), then the buffers. Collective teardown
  /// happens only here: while an exception unwinds, the peers are not there to join it (the process
  /// exits right after).
  void finish_up() {
    finish("done");
    barrier("done");
#if SHOAL_BENCH_NCCL
    if (comm_ != nullptr) {
      wd_.point("NCCL teardown");
      wd_.step("cudaGraphExecDestroy", kNcclSetupSeconds);
      for (cudaGraphExec_t exec : nccl_graphs_) cudaGraphExecDestroy(exec);
      nccl_graphs_.clear();
      cuda_check(cudaStreamSynchronize(stream_), "teardown");
      barrier("graphs destroyed");
      wd_.step("ncclCommFinalize", kNcclSetupSeconds);
      nccl_check(ncclCommFinalize(comm_), "ncclCommFinalize");
      wd_.step("ncclCommDestroy", kNcclSetupSeconds);
      nccl_check(ncclCommDestroy(comm_), "ncclCommDestroy");
      comm_ = nullptr;
      barrier("NCCL destroyed");
    }
#endif
    wd_.point("teardown");
    if (scratch_ != nullptr) shoal_free(scratch_);
    if (dst_ != nullptr) shoal_free(dst_);
    if (src_ != nullptr) shoal_free(src_);
    free_share();
    scratch_ = nullptr, dst_ = nullptr, src_ = nullptr;
    barrier("freed");
  }

  // ---- shoal's calls ----

  void launch_block(coll c, const shape& s, int calls) {
    const dim3 grid(1), block(opts_.threads);
    switch (c) {
      case coll::allreduce:
        block_coll_kernel<coll::allreduce>
            <<<grid, block, 0, stream_>>>(team_, dst_, src_, s.bytes, s.per_pe, nullptr, calls);
        break;
      case coll::allreduce_scratch:
        block_coll_kernel<coll::allreduce_scratch>
            <<<grid, block, 0, stream_>>>(team_, dst_, src_, s.bytes, s.per_pe, scratch_, calls);
        break;
      case coll::broadcast:
        block_coll_kernel<coll::broadcast>
            <<<grid, block, 0, stream_>>>(team_, dst_, src_, s.bytes, s.per_pe, nullptr, calls);
        break;
      case coll::fcollect:
        block_coll_kernel<coll::fcollect>
            <<<grid, block, 0, stream_>>>(team_, dst_, src_, s.bytes, s.per_pe, nullptr, calls);
        break;
      case coll::alltoall:
        block_coll_kernel<coll::alltoall>
            <<<grid, block, 0, stream_>>>(team_, dst_, src_, s.bytes, s.per_pe, nullptr, calls);
        break;
      case coll::team_barrier:
        block_coll_kernel<coll::team_barrier>
            <<<grid, block, 0, stream_>>>(team_, nullptr, nullptr, 0, 0, nullptr, calls);
        break;
      case coll::barrier:
        break;
    }
  }

  /// One on-stream call of collective c on stream_; shoal's return code.
  int shoal_call(coll c, const shape& s) {
    switch (c) {
      case coll::allreduce:
        return shoalx_float_sum_reduce_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<float*>(dst_),
                                                 reinterpret_cast<const float*>(src_), s.bytes / sizeof(float),
                                                 stream_);
      case coll::broadcast:
        return shoalx_broadcastmem_on_stream(SHOAL_TEAM_WORLD, dst_, src_, s.bytes, 0, stream_);
      case coll::fcollect:
        return shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, dst_, src_, s.per_pe, stream_);
      case coll::alltoall:
        return shoalx_alltoallmem_on_stream(SHOAL_TEAM_WORLD, dst_, src_, s.per_pe, stream_);
      case coll::barrier:
        return shoalx_barrier_on_stream(SHOAL_TEAM_WORLD, stream_);
      default:
        return 0;
    }
  }

  /// `calls` on-stream calls of c (shoal or NCCL) on stream_; throws on an error code.
  void enqueue_calls(bool nccl, coll c, const shape& s, int calls) {
    for (int i = 0; i < calls; ++i) {
      if (nccl) {
#if SHOAL_BENCH_NCCL
        nccl_call(c, s);
#endif
      } else if (int rc = shoal_call(c, s); rc != 0) {
        const char* msg = nullptr;
        shoal_last_error(&msg);
        throw std::runtime_error(std::string(name_of(c)) + ": shoal's on-stream call returned " + std::to_string(rc) +
                                 (msg != nullptr ? std::string(" (") + msg + ")" : std::string()));
      }
    }
  }

  // ---- points ----

  /// The block row of c at one point; *slow as decide_calls.
  measured block_point(coll c, const shape& s, bool* slow) {
    const std::string scope = scope_label(style::block);
    const std::string impl = "shoal";
    wd_.point(std::string(name_of(c)) + " " + size_text(s.bytes) + " " + impl + "/" + scope);
    auto enqueue = [&](int n) { launch_block(c, s, n); };
    const int calls = point_calls("warm-up", dst_, s, slow, enqueue);
    return measure("timed run", c, impl, scope, dst_, s, calls, [&] { enqueue(calls); });
  }

  /// The stream and graph rows (as wanted) of c through shoal or NCCL at one point. *slow as
  /// decide_calls; *graph_ok false when a graph capture was refused on some PE (no graph rows after).
  std::vector<measured> on_stream_point(bool nccl, coll c, const shape& s, bool want_stream, bool want_graph,
                                        bool* slow, bool* graph_ok) {
    std::vector<measured> out;
    const std::string impl = nccl ? "nccl" : "shoal";
    const std::string what = std::string(name_of(c)) + " " + size_text(s.bytes) + " " + impl + "/";
    auto enqueue = [&](int n) { enqueue_calls(nccl, c, s, n); };
    // The stream warm-up runs even without stream rows: it decides the call count, and NCCL connects
    // (and shoal sets up) whatever it sets up on first use there, outside any capture.
    wd_.point(what + "stream");
    const int calls = point_calls("warm-up", dst_, s, slow, enqueue);
    if (want_stream) out.push_back(measure("timed run", c, impl, "stream", dst_, s, calls, [&] { enqueue(calls); }));
    if (!want_graph || !*graph_ok) return out;

    wd_.point(what + "graph");
    // Both GPUs idle before anyone captures: NCCL's capture may call into the peer's proxy thread.
    finish("before capture");
    barrier("before capture");
    const int per_graph = std::min(calls, kGraphCalls);
    const int replays = std::max(1, calls / per_graph);
    cudaGraphExec_t exec = nullptr;
    wd_.step("capture");
    const std::string why = capture([&] { enqueue(per_graph); }, &exec);
    if (!why.empty())
      std::fprintf(stderr, "shoal-bench: PE %d: %sgraph: capture refused: %s\n", me_, what.c_str(), why.c_str());
    if (!all_agree(why.empty())) {
      if (exec != nullptr) cudaGraphExecDestroy(exec);
      if (me_ == 0)
        std::fprintf(stderr, "shoal-bench: %sgraph: capture refused on some PE; no %s graph rows of %s from here on\n",
                     what.c_str(), impl.c_str(), name_of(c));
      *graph_ok = false;
      return out;
    }
    if (nccl) nccl_graphs_.push_back(exec);  // destroyed at the end (see the top of this file)
    out.push_back(replay_graph("timed run", c, impl, dst_, s, exec, per_graph, replays));
    if (!nccl) cuda_check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
    return out;
  }

  /// Sets a shoal row's ratio against NCCL's row of scope `nccl_scope` at the same size, if any.
  static void set_ratio(row& r, const std::vector<measured>& nccl_rows, const std::string& nccl_scope) {
    for (const measured& n : nccl_rows) {
      if (!n.ok || n.r.scope != nccl_scope || n.r.size_bytes != r.size_bytes || n.r.latency_us <= 0) continue;
      if (r.size_bytes <= kLatencyMaxBytes) {
        r.ratio = r.latency_us / n.r.latency_us;
        r.baseline = "nccl/" + nccl_scope + " latency";
      } else if (n.r.busbw_gbps > 0) {
        r.ratio = r.busbw_gbps / n.r.busbw_gbps;
        r.baseline = "nccl/" + nccl_scope + " busBW";
      }
    }
  }

  // ---- sweeps ----

  bool have_nccl() const {
#if SHOAL_BENCH_NCCL
    return comm_ != nullptr;
#else
    return false;
#endif
  }

  void sweep(coll c) {
    const bool stream_form = c != coll::allreduce_scratch;
    bool block = block_on_;
    bool on_stream = (stream_on_ || graph_on_) && stream_form;
    bool nccl = have_nccl() && stream_form;
    bool shoal_graph = true, nccl_graph = true;
    const size_t block_end = block ? end_of(c, style::block) : 0;
    const size_t stream_end = on_stream ? end_of(c, style::stream) : 0;
    // NCCL: up to the on-stream rows' end, and stream rows wherever block rows need their baseline.
    const size_t nccl_end = nccl ? std::max(block_end, stream_end) : 0;
    const size_t end = std::min(std::max(block_end, stream_end), buffer_bytes_);
    for (size_t size : sizes_up_to(end)) {
      const shape s = shape_of(c, size, npes_);
      if (s.bytes == 0 || s.bytes != size) continue;  // not whole 4-byte words per PE
      fill_source(c, src_, s);
      std::vector<measured> shoal_rows, nccl_rows;
      if (block && size <= block_end) {
        bool slow = false;
        shoal_rows.push_back(block_point(c, s, &slow));
        if (slow) block = stop_note(c, "shoal/block", s);
      }
      if (on_stream && size <= stream_end) {
        bool slow = false;
        for (measured& m : on_stream_point(false, c, s, stream_on_, graph_on_, &slow, &shoal_graph))
          shoal_rows.push_back(std::move(m));
        if (slow) on_stream = stop_note(c, "shoal on-stream", s);
      }
      if (nccl && size <= nccl_end) {
        bool slow = false;
        const bool want_stream = stream_on_ || (block_on_ && size <= block_end);
        const bool want_graph = graph_on_ && nccl_graph_on_ && size <= stream_end;
        nccl_rows = on_stream_point(true, c, s, want_stream, want_graph, &slow, &nccl_graph);
        if (slow) nccl = stop_note(c, "nccl", s);
      }
      if (c == coll::allreduce)  // allreduce_scratch's baseline, measured later
        for (const measured& m : nccl_rows) nccl_allreduce_.push_back(m);
      const std::vector<measured>& baseline = c == coll::allreduce_scratch ? nccl_allreduce_ : nccl_rows;
      for (measured& m : shoal_rows) {
        if (m.ok) set_ratio(m.r, baseline, m.r.scope == "graph" ? "graph" : "stream");
        add(std::move(m));
      }
      for (measured& m : nccl_rows) add(std::move(m));
    }
  }

  /// Says that variant `what` of c stops after size s (calls over kSlowCallUs); returns false.
  bool stop_note(coll c, const char* what, const shape& s) const {
    if (me_ == 0)
      std::fprintf(stderr, "shoal-bench: %s %s: calls take over %.0f ms at %s; no larger sizes\n", name_of(c), what,
                   kSlowCallUs / 1e3, size_text(s.bytes).c_str());
    return false;
  }

  void barrier_points(coll c) {
    const shape none{};
    barrier(name_of(c));
    if (c == coll::team_barrier) {
      bool slow = false;
      add(block_point(c, none, &slow));
      return;
    }
    bool slow = false, graph_ok = true;
    for (measured& m : on_stream_point(false, c, none, stream_on_, graph_on_, &slow, &graph_ok)) add(std::move(m));
  }

  // ---- NCCL ----

#if SHOAL_BENCH_NCCL
  static void nccl_check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
  }

  void init_nccl() {
    wd_.point("NCCL setup");
    // No NVLS/multicast: the figures are point-to-point NVLink (scripts/env.sh exports it too).
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    uint32_t msg[1 + (sizeof(ncclUniqueId) + 3) / 4] = {};
    static_assert(sizeof msg <= (kVoteWord) * sizeof(uint32_t));
    if (me_ == 0) {
      ncclUniqueId id;
      const ncclResult_t r = ncclGetUniqueId(&id);
      msg[0] = r == ncclSuccess;
      if (r == ncclSuccess)
        std::memcpy(&msg[1], &id, sizeof id);
      else
        std::fprintf(stderr, "shoal-bench: ncclGetUniqueId failed (%s); no nccl rows\n", ncclGetErrorString(r));
    }
    share_from_pe0(msg, static_cast<int>(sizeof msg / sizeof msg[0]));
    if (msg[0] == 0) return;
    ncclUniqueId id;
    std::memcpy(&id, &msg[1], sizeof id);
    wd_.step("ncclCommInitRank", kNcclSetupSeconds);
    const ncclResult_t r = ncclCommInitRank(&comm_, npes_, id, me_);
    if (r != ncclSuccess) {
      // A PE whose init failed stops the job rather than leave the others' NCCL calls waiting for it.
      comm_ = nullptr;
      throw std::runtime_error(std::string("ncclCommInitRank: ") + ncclGetErrorString(r));
    }
    barrier("NCCL ready");
    nccl_graph_on_ = env_on("SHOAL_BENCH_NCCL_GRAPH");
    int version = 0;
    ncclGetVersion(&version);
    const char* reg = std::getenv("NCCL_GRAPH_REGISTER");
    if (me_ == 0)
      std::fprintf(
          stderr, "shoal-bench: NCCL %d, %d ranks, NCCL_NVLS_ENABLE=0, NCCL_GRAPH_REGISTER=%s, graph rows %s\n",
          version, npes_, reg != nullptr ? reg : "(NCCL's default)", graph_on_ && nccl_graph_on_ ? "on" : "off");
  }

  /// Enqueues one NCCL call of collective c on stream_.
  void nccl_call(coll c, const shape& s) {
    switch (c) {
      case coll::allreduce:
        nccl_check(ncclAllReduce(src_, dst_, s.bytes / sizeof(float), ncclFloat, ncclSum, comm_, stream_),
                   "ncclAllReduce");
        break;
      case coll::broadcast:
        nccl_check(ncclBroadcast(src_, dst_, s.bytes, ncclChar, 0, comm_, stream_), "ncclBroadcast");
        break;
      case coll::fcollect:
        nccl_check(ncclAllGather(src_, dst_, s.per_pe, ncclChar, comm_, stream_), "ncclAllGather");
        break;
      case coll::alltoall:
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int j = 0; j < npes_; ++j) {
          nccl_check(ncclSend(src_ + j * s.per_pe, s.per_pe, ncclChar, j, comm_, stream_), "ncclSend");
          nccl_check(ncclRecv(dst_ + j * s.per_pe, s.per_pe, ncclChar, j, comm_, stream_), "ncclRecv");
        }
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
        break;
      default:
        break;
    }
  }

  ncclComm_t comm_ = nullptr;
#endif

  bool block_on_ = true, stream_on_ = true, graph_on_ = true;  // SHOAL_BENCH_COLL_SCOPES
  bool nccl_graph_on_ = true;                                  // SHOAL_BENCH_NCCL_GRAPH
  std::vector<size_t> size_list_;                              // SHOAL_BENCH_COLL_SIZES (sorted)
  shoal::device_team team_{};
  char* src_ = nullptr;      // symmetric, buffer_bytes_
  char* dst_ = nullptr;      // symmetric, buffer_bytes_
  void* scratch_ = nullptr;  // symmetric (allreduce_scratch)
  size_t buffer_bytes_ = 0;
  /// NCCL's graphs, alive until finish_up (see the top of this file).
  std::vector<cudaGraphExec_t> nccl_graphs_;
  /// NCCL's allreduce rows, the baseline of the allreduce_scratch rows.
  std::vector<measured> nccl_allreduce_;
};

}  // namespace
bool run_collective_benchmarks(const options& opts, const std::vector<std::string>& which, std::vector<row>& rows,
                               const std::string& backend) {
  const std::vector<std::string> names = {"allreduce", "allreduce_scratch", "broadcast", "fcollect",
                                          "alltoall",  "team_barrier",      "barrier"};
  bool any = which.empty();
  for (const auto& w : which) any = any || std::find(names.begin(), names.end(), w) != names.end();
  if (!any) return true;
  coll_runner runner(opts, rows, backend);
  runner.run(which, opts.which);
  return !runner.any_check_failed();
}

}  // namespace shoal::bench
