// shoal-bench-nvshmem's collectives: the rows of shoal-bench's bench/device/coll_bench.cu (same
// sizes, busBW formulas, timing method and CSV schema; impl "nvshmem", ratio 0, no baseline: the
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
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "device/coll_data.cuh"
#include "nvshmem/nvshmem_bench.hpp"

namespace shoal::bench::nvshmem {

namespace {

enum class coll : int { allreduce, broadcast, fcollect, alltoall, team_barrier, barrier };
enum class style : int { block, stream, graph };

constexpr coll kDataColls[] = {coll::allreduce, coll::broadcast, coll::fcollect, coll::alltoall};

/// One stream wait longer than this stops the process.
constexpr double kKernelTimeoutSeconds = 30;
/// No progress (a stream wait ended, a host barrier returned, ...) for this long stops the process;
/// above kKernelTimeoutSeconds, so a stuck kernel reports itself first.
constexpr int kStallSeconds = 60;
/// GPU busy time enqueued ahead of every timed region (keeps the host's first enqueues out of it).
constexpr uint64_t kLaunchCoverNs = 50'000;
/// Sweep ends without -e (and ceilings with it).
constexpr size_t kBlockReduceMaxBytes = size_t{1} << 20;
constexpr size_t kBlockMaxBytes = size_t{16} << 20;
constexpr size_t kStreamMaxBytes = size_t{256} << 20;
/// At most this many bytes (by size) in one timed kernel, stream run or graph.
constexpr size_t kBytesPerRun = size_t{64} << 20;
/// Time budget of one point's timed reps (fewer calls where the warm-up says so).
constexpr double kPointBudgetUs = 100'000;
/// A call slower than this ends its sweep (larger sizes would take too long).
constexpr double kSlowCallUs = 100'000;

struct cuda_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw cuda_failure(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

const char* name_of(coll c) {
  switch (c) {
    case coll::allreduce:
      return "allreduce";
    case coll::broadcast:
      return "broadcast";
    case coll::fcollect:
      return "fcollect";
    case coll::alltoall:
      return "alltoall";
    case coll::team_barrier:
      return "team_barrier";
    case coll::barrier:
      return "barrier";
  }
  return "?";
}

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
  }
  return "?";
}

using coll_data::data_of;
double bus_factor(coll c, int n) { return coll_data::bus_factor_of(c, n); }
using coll_data::shape;
shape shape_of(coll c, size_t size, int n) { return coll_data::shape_of_coll(c, size, n); }

// --- device side --------------------------------------------------------------------------------

/// `iters` back-to-back calls of NVSHMEM's block-scope collective C by the one CTA of this PE.
template <coll C>
__global__ void __launch_bounds__(1024)
    block_coll_kernel(char* dst, const char* src, size_t num_bytes, size_t per_pe, int iters) {
  for (int i = 0; i < iters; ++i) {
    if constexpr (C == coll::allreduce) {
      nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, reinterpret_cast<float*>(dst),
                                      reinterpret_cast<const float*>(src), num_bytes / sizeof(float));
    } else if constexpr (C == coll::broadcast) {
      // NVSHMEM 3.4's host-pass declaration of broadcastmem_block lacks PE_root; the definition the
      // device pass sees has it.
#ifdef __CUDA_ARCH__
      nvshmemx_broadcastmem_block(NVSHMEM_TEAM_WORLD, dst, src, num_bytes, 0);
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

double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/// The rows so far and where they go; what a stopped run leaves behind.
class results {
 public:
  results(const options& opts, std::vector<row>& rows, int me) : opts_(opts), rows_(rows), me_(me) {}

  void add(row r) {
    std::lock_guard<std::mutex> lock(mu_);
    rows_.push_back(std::move(r));
  }

  /// Ends the process (exit status 3) after PE 0 wrote the rows so far to --csv/--json. Callable
  /// from any thread; the first caller wins, later ones wait for the exit.
  [[noreturn]] void give_up(const std::string& why) {
    static std::atomic<bool> taken{false};
    if (taken.exchange(true)) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::fprintf(stderr, "shoal-bench-nvshmem: PE %d: %s; stopping\n", me_, why.c_str());
    if (me_ == 0) {
      std::lock_guard<std::mutex> lock(mu_);  // held only around a push_back: never for long
      try {
        if (!opts_.csv.empty()) write_csv(opts_.csv, rows_);
        if (!opts_.json.empty()) write_json(opts_.json, rows_);
        std::fprintf(stderr, "shoal-bench-nvshmem: wrote the %zu rows measured so far\n", rows_.size());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shoal-bench-nvshmem: %s\n", e.what());
      }
    }
    std::fflush(nullptr);
    std::_Exit(3);
  }

 private:
  const options& opts_;
  std::vector<row>& rows_;
  int me_;
  std::mutex mu_;  // rows_: the runner appends, the watchdog thread may write them out
};

/// Gives up when the runner reports no progress for kStallSeconds: a host wait inside NVSHMEM (host
/// barrier, on-stream enqueue, graph instantiation) that never returns.
class stall_watchdog {
 public:
  explicit stall_watchdog(results& out) : out_(out) {
    step("start");
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; })) {
        if (now_s() - last_.load() > kStallSeconds)
          out_.give_up(std::string("no progress for ") + std::to_string(kStallSeconds) + " s (last: " + what_.load() +
                       ")");
      }
    });
  }
  ~stall_watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  stall_watchdog(const stall_watchdog&) = delete;
  stall_watchdog& operator=(const stall_watchdog&) = delete;

  /// Progress: `what` (a string literal) is what the runner does next.
  void step(const char* what) {
    what_.store(what);
    last_.store(now_s());
  }

 private:
  results& out_;
  std::atomic<double> last_{0};
  std::atomic<const char*> what_{""};
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

struct buffers {
  char* src = nullptr;  // symmetric
  char* dst = nullptr;  // symmetric
};

class coll_runner {
 public:
  coll_runner(const options& opts, std::vector<row>& rows)
      : opts_(opts), me_(nvshmem_my_pe()), npes_(nvshmem_n_pes()), out_(opts, rows, me_), watchdog_(out_) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    cuda_check(cudaMalloc(&local_, sizeof(local_words)), "cudaMalloc");
    share_ = static_cast<uint32_t*>(nvshmem_malloc(kShareWords * sizeof(uint32_t)));
    if (share_ == nullptr) throw std::runtime_error("nvshmem_malloc of the share buffer failed");
    barrier("setup");
  }
  ~coll_runner() {
    // nvshmem_free is collective: while an exception unwinds, the peers are not there to join it
    // (the process exits right after).
    if (std::uncaught_exceptions() == 0) nvshmem_free(share_);
    cudaFree(local_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  coll_runner(const coll_runner&) = delete;
  coll_runner& operator=(const coll_runner&) = delete;

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

  bool any_check_failed() const { return check_failed_; }

 private:
  /// Symmetric words for host-side agreement: [0, kVoteWord) PE 0's broadcasts, kVoteWord this PE's vote.
  static constexpr int kShareWords = 64;
  static constexpr int kVoteWord = kShareWords - 1;
  /// Device memory of this PE that the host reads back.
  struct local_words {
    uint32_t copied[kShareWords];
    unsigned long long bad;
  };

  // ---- plumbing ----

  void barrier(const char* what) {
    watchdog_.step(what);
    nvshmem_barrier_all();
    watchdog_.step(what);
  }

  /// Waits for the stream, polling, at most kKernelTimeoutSeconds.
  void finish(const char* what) {
    watchdog_.step(what);
    const double t0 = now_s();
    for (unsigned polls = 0;; ++polls) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) cuda_check(e, what);
      if (now_s() - t0 > kKernelTimeoutSeconds)
        out_.give_up(std::string(what) + " did not finish within " +
                     std::to_string(static_cast<int>(kKernelTimeoutSeconds)) + " s");
      if (polls > 1000) {
        timespec nap{0, 20000};
        nanosleep(&nap, nullptr);
      }
    }
    watchdog_.step(what);
  }

  /// Microseconds of what enqueue() puts on the stream, behind a short delay kernel.
  template <class Enqueue>
  double timed_us(const char* what, Enqueue&& enqueue) {
    coll_data::delay_kernel<<<1, 1, 0, stream_>>>(kLaunchCoverNs);
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    watchdog_.step(what);
    enqueue();
    cuda_check(cudaGetLastError(), what);
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    finish(what);
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e3;
  }

  /// Reads `words` words of PE q's share buffer (q may be this PE) into `out`.
  void read_share(int q, int first_word, uint32_t* out, int words) {
    const uint32_t* p = static_cast<const uint32_t*>(nvshmem_ptr(share_ + first_word, q));
    if (p == nullptr) throw std::runtime_error("no load/store path to PE " + std::to_string(q) + " (nvshmem_ptr)");
    coll_data::copy_words_kernel<<<1, 64, 0, stream_>>>(local_->copied, p, words);
    cuda_check(cudaGetLastError(), "copy share");
    cuda_check(cudaMemcpyAsync(out, local_->copied, words * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_),
               "copy share");
    finish("copy share");
  }

  /// PE 0's `words` words at `data` to every PE (collective; host barriers inside).
  void share_from_pe0(uint32_t* data, int words) {
    if (me_ == 0) {
      cuda_check(cudaMemcpyAsync(share_, data, words * sizeof(uint32_t), cudaMemcpyHostToDevice, stream_), "share");
      finish("share");
    }
    barrier("share");
    if (me_ != 0) read_share(0, 0, data, words);
    barrier("share");
  }

  /// true on every PE when `mine` is true on every PE (collective; host barriers inside).
  bool all_agree(bool mine) {
    const uint32_t vote = mine ? 1 : 0;
    cuda_check(cudaMemcpyAsync(share_ + kVoteWord, &vote, sizeof vote, cudaMemcpyHostToDevice, stream_), "vote");
    finish("vote");
    barrier("vote");
    bool all = true;
    for (int q = 0; q < npes_; ++q) {
      uint32_t v = 0;
      read_share(q, kVoteWord, &v, 1);
      all = all && v != 0;
    }
    barrier("vote");
    return all;
  }

  int loop_iters() const { return std::max(1, opts_.iterations * 10); }
  int loop_warmup() const { return std::max(1, opts_.warmup * 10); }

  /// Calls per timed run at a point of `bytes` (0: barrier): kBytesPerRun's worth, at most 10 x -n.
  int max_calls(size_t bytes) const {
    if (bytes == 0) return loop_iters();
    return static_cast<int>(std::clamp<size_t>(kBytesPerRun / bytes, 1, static_cast<size_t>(loop_iters())));
  }

  /// A timed warm-up of `warm` calls (enqueue(n) enqueues n); from it PE 0 picks the timed call
  /// count, at most `max`, within the point's budget, and every PE gets it. *slow: one warm-up call
  /// took longer than kSlowCallUs (agreed too).
  template <class Enqueue>
  int decide_calls(const char* what, int warm, int max, bool* slow, Enqueue&& enqueue) {
    const double warm_us = timed_us(what, [&] { enqueue(warm); });
    uint32_t decided[2] = {static_cast<uint32_t>(max), 0};
    if (me_ == 0) {
      const double per_call = warm_us / warm;
      const double budget = kPointBudgetUs / opts_.reps;
      if (per_call * max > budget) decided[0] = static_cast<uint32_t>(std::max(1.0, budget / per_call));
      decided[1] = per_call > kSlowCallUs;
    }
    share_from_pe0(decided, 2);
    if (slow != nullptr) *slow = decided[1] != 0;
    return static_cast<int>(decided[0]);
  }

  /// The median over reps of timed_us(enqueue(calls)), per call (PE 0; other PEs: 0).
  template <class Enqueue>
  double median_per_call(const char* what, int calls, int units_per_run, Enqueue&& enqueue) {
    std::vector<double> v;
    for (int r = 0; r < opts_.reps; ++r) v.push_back(timed_us(what, [&] { enqueue(calls); }));
    std::sort(v.begin(), v.end());
    return me_ == 0 ? v[v.size() / 2] / units_per_run : 0;
  }

  /// Clears this PE's dest, then a host barrier: nobody writes a dest before it is cleared.
  void clear_dest(const buffers& b, const shape& s) {
    cuda_check(cudaMemsetAsync(b.dst, 0, s.dst_bytes, stream_), "clear dest");
    finish("clear dest");
    barrier("clear dest");
  }

  void fill_source(coll c, const buffers& b, const shape& s) {
    coll_data::fill_source_kernel<<<256, 256, 0, stream_>>>(
        data_of(c), reinterpret_cast<uint32_t*>(b.src), s.src_bytes / 4, std::max<size_t>(s.per_pe / 4, 1), me_, npes_);
    cuda_check(cudaGetLastError(), "fill source");
    finish("fill source");
  }

  /// After every PE's calls ended (host barrier), PE 0 checks every PE's dest; then a barrier.
  bool verify(coll c, const buffers& b, const shape& s) {
    finish("collective");
    barrier("verify");
    bool ok = true;
    if (me_ == 0) {
      for (int q = 0; q < npes_; ++q) {
        const auto* d = static_cast<const uint32_t*>(nvshmem_ptr(b.dst, q));
        if (d == nullptr) throw std::runtime_error("no load/store path to PE " + std::to_string(q) + " (nvshmem_ptr)");
        cuda_check(cudaMemsetAsync(&local_->bad, 0, sizeof(unsigned long long), stream_), "verify");
        coll_data::count_bad_kernel<<<256, 256, 0, stream_>>>(
            data_of(c), d, s.dst_bytes / 4, std::max<size_t>(s.per_pe / 4, 1), q, npes_, &local_->bad);
        cuda_check(cudaGetLastError(), "verify");
        unsigned long long bad = 0;
        cuda_check(cudaMemcpyAsync(&bad, &local_->bad, sizeof bad, cudaMemcpyDeviceToHost, stream_), "verify");
        finish("verify");
        ok = ok && bad == 0;
      }
    }
    barrier("verify");
    return ok;
  }

  row make(coll c, const std::string& scope, const shape& s, int iters, double us) const {
    row r;
    r.benchmark = name_of(c);
    r.impl = "nvshmem";
    r.backend = "cuda";
    r.num_pes = npes_;
    r.scope = scope;
    r.size_bytes = s.bytes;
    r.iterations = iters;
    r.latency_us = us;
    if (us > 0 && s.bytes > 0) {
      r.bandwidth_gbps = s.bytes / (us * 1e3);
      r.busbw_gbps = r.bandwidth_gbps * bus_factor(c, npes_);
    }
    return r;
  }

  /// PE 0 keeps the row; a failed data check marks it and the run.
  void add(row r, bool ok) {
    if (!ok) {
      r.baseline = "DATA-CHECK-FAILED";
      check_failed_ = true;
      std::fprintf(stderr, "shoal-bench-nvshmem: %s %s %zu bytes: the data check failed\n", r.benchmark.c_str(),
                   r.scope.c_str(), r.size_bytes);
    }
    if (me_ == 0) out_.add(std::move(r));
  }

  std::string scope_label(style st) const {
    switch (st) {
      case style::block:
        return "block/1x" + std::to_string(opts_.threads);
      case style::stream:
        return "stream";
      case style::graph:
        return "graph";
    }
    return "?";
  }

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

  /// Captures `calls` on-stream calls of c into a graph and instantiates it. Returns why not, or "".
  std::string capture(coll c, const buffers& b, const shape& s, int calls, cudaGraphExec_t* exec) {
    // Relaxed: NVSHMEM may make calls that the stricter modes forbid while a capture is open.
    cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e);
    }
    std::string why;
    for (int i = 0; i < calls && why.empty(); ++i) {
      if (int rc = call_on_stream(c, b, s); rc != 0)
        why = std::string(call_of(c, style::graph)) + " returned " + std::to_string(rc) + " while capturing";
    }
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream_, &graph);  // always: leaves the stream out of capture mode
    if (why.empty() && e != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e);
    if (why.empty() && graph == nullptr) why = "cudaStreamEndCapture gave no graph";
    if (why.empty()) {
      e = cudaGraphInstantiate(exec, graph, 0);
      if (e != cudaSuccess) why = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // a refused capture leaves no error behind for the next check
    return why;
  }

  // ---- points and sweeps ----

  /// One measured point of c in style st (a graph that NVSHMEM refused to capture on some PE: no
  /// row); false when the sweep should end here (calls slower than kSlowCallUs).
  bool point(coll c, style st, const buffers& b, const shape& s) {
    const std::string scope = scope_label(st);
    const int most = max_calls(s.bytes);
    const int warm = std::max(1, std::min(most, loop_warmup()));
    const bool data = b.dst != nullptr;
    if (data) clear_dest(b, s);
    bool slow = false;
    if (st != style::graph) {
      auto enqueue = [&](int n) {
        if (st == style::block)
          launch_block(c, b, s, n);
        else
          enqueue_on_stream(c, b, s, n);
      };
      const int calls = decide_calls(name_of(c), warm, most, &slow, enqueue);
      const double us = median_per_call(name_of(c), calls, calls, enqueue);
      const bool ok = !data || verify(c, b, s);
      add(make(c, scope, s, calls, us), ok);
    } else {
      // The stream warm-up also lets NVSHMEM set up whatever it sets up on first use, outside the capture.
      const int calls = decide_calls(name_of(c), warm, most, &slow, [&](int n) { enqueue_on_stream(c, b, s, n); });
      cudaGraphExec_t exec = nullptr;
      watchdog_.step("graph capture");
      const std::string why = capture(c, b, s, calls, &exec);
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
      cuda_check(cudaGraphUpload(exec, stream_), "cudaGraphUpload");
      finish("graph upload");
      if (data)
        clear_dest(b, s);  // the stream warm-up wrote it: the check is the graph's alone
      else
        barrier("graph upload");
      auto replay = [&](int n) {
        for (int i = 0; i < n; ++i) cuda_check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
      };
      timed_us("graph warm-up", [&] { replay(1); });
      const double us = median_per_call("graph", 1, calls, replay);
      const bool ok = !data || verify(c, b, s);
      cudaGraphExecDestroy(exec);
      add(make(c, scope, s, calls, us), ok);
    }
    if (slow && me_ == 0)
      std::fprintf(stderr, "shoal-bench-nvshmem: %s %s: calls take over %.0f ms at %zu bytes; no larger sizes\n",
                   name_of(c), scope.c_str(), kSlowCallUs / 1e3, s.bytes);
    return !slow;
  }

  size_t sweep_end(coll c, style st) const {
    const size_t ceiling =
        st != style::block ? kStreamMaxBytes : (c == coll::allreduce ? kBlockReduceMaxBytes : kBlockMaxBytes);
    return opts_.max_bytes_given ? std::min(opts_.max_bytes, ceiling) : ceiling;
  }

  void sweep(coll c, style st) {
    const size_t end = sweep_end(c, st);
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
      fill_source(c, b, s);
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

  const options& opts_;
  int me_ = 0, npes_ = 0;
  results out_;
  stall_watchdog watchdog_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  local_words* local_ = nullptr;
  uint32_t* share_ = nullptr;  // symmetric; see kShareWords
  bool check_failed_ = false;
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
