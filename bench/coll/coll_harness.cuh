// The host harness of the collective benchmarks, shared by shoal-bench (coll_bench.cu) and
// shoal-bench-nvshmem (nvshmem_coll_bench.cu): the progress watchdog and the stop that keeps the rows
// measured so far, bounded stream waits, CUDA-event timing (median of reps), call counts that PE 0
// decides and shares through a small symmetric buffer, the data check, graph capture and replay, and
// the rows. Each runner derives from harness<Lib> and keeps its library's calls and sweeps; the
// policy Lib (a Lib object lives as long as the harness) supplies only what differs:
//   kName ("shoal": its shoal_malloc, shoal_ptr), kProgram (the stderr prefix), kStallSeconds,
//   kStopGraceSeconds, kCaptureMode; my_pe, n_pes, host_malloc/host_free (collective),
//   host_ptr(addr, pe), host_barrier() ("" or what failed); and the texts of the stop lines, kept as
//   each program printed them: stopped(why), stalled(where, s), gpu_timed_out(where, s), failed_row(me, row).
// Included by one translation unit of each binary (through coll_data.cuh it defines kernels).
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "coll/coll_data.cuh"
#include "common/cuda_util.hpp"
#include "common/options.hpp"
#include "common/report.hpp"

namespace shoal::bench::coll_harness {

/// The benchmarks (allreduce_scratch, the explicit-scratch device allreduce, is shoal-bench's alone).
enum class coll : int { allreduce, allreduce_scratch, broadcast, fcollect, alltoall, team_barrier, barrier };
/// The launch styles, each a `scope` of the CSV: block/1x<t>, stream, graph.
enum class style : int { block, stream, graph };

/// The collectives that move data, in run order.
inline constexpr coll kDataColls[] = {coll::allreduce, coll::broadcast, coll::fcollect, coll::alltoall};

/// One stream wait longer than this stops the process.
inline constexpr double kKernelTimeoutSeconds = 30;
/// GPU busy time enqueued ahead of every timed region (keeps the host's first enqueue out of the figure).
inline constexpr uint64_t kLaunchCoverNs = 50'000;
/// Sweep ends without -e (and ceilings with it).
inline constexpr size_t kStreamMaxBytes = size_t{256} << 20;
inline constexpr size_t kBlockReduceMaxBytes = size_t{1} << 20;
inline constexpr size_t kBlockMaxBytes = size_t{16} << 20;
/// At most this many bytes (by size) in one timed run.
inline constexpr size_t kBytesPerRun = size_t{64} << 20;
/// Time budget of one variant's timed reps at one size (fewer calls where the warm-up says so).
inline constexpr double kPointBudgetUs = 100'000;
/// A variant slower than this per call ends its sweep (larger sizes would take too long).
inline constexpr double kSlowCallUs = 100'000;

inline double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

inline const char* name_of(coll c) {
  switch (c) {
    case coll::allreduce:
      return "allreduce";
    case coll::allreduce_scratch:
      return "allreduce_scratch";
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

using coll_data::shape;
inline shape shape_of(coll c, size_t size, int n) { return coll_data::shape_of_coll(c, size, n); }

/// One measured variant at one point: the row, whether its data checked out.
struct measured {
  row r;
  bool ok = true;
};

/// The rows so far and where they go; what a stopped run leaves behind.
template <class Lib>
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
    std::fprintf(stderr, "%s: PE %d: %s\n", Lib::kProgram, me_, Lib::stopped(why).c_str());
    if (me_ == 0) {
      std::lock_guard<std::mutex> lock(mu_);  // held only around a push_back: never for long
      try {
        if (!opts_.csv.empty()) write_csv(opts_.csv, rows_);
        if (!opts_.json.empty()) write_json(opts_.json, rows_);
        std::fprintf(stderr, "%s: wrote the %zu rows measured so far\n", Lib::kProgram, rows_.size());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", Lib::kProgram, e.what());
      }
    } else if (Lib::kStopGraceSeconds > 0) {
      // PE 0 is most likely stuck at the same point: leave it time to write the rows before the
      // launcher, seeing this PE exit, ends the job.
      std::fflush(nullptr);
      std::this_thread::sleep_for(std::chrono::seconds(Lib::kStopGraceSeconds));
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

/// Stops the run when the runner reports no progress before its deadline: a host call inside CUDA or
/// the library (barrier, enqueue, graph capture, setup) that never returns. The runner names the
/// point it works on (point(), optional) and each step in it (step()); the stop line names both.
template <class Lib>
class stall_watchdog {
 public:
  explicit stall_watchdog(results<Lib>& out) : out_(out) {
    step("start");
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; })) {
        if (now_s() > deadline_) {
          const std::string why = Lib::stalled(where_locked(), static_cast<int>(limit_));
          lock.unlock();
          out_.give_up(why);
        }
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

  /// The point being measured, e.g. "allreduce 8 B nccl/graph".
  void point(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    point_ = std::move(what);
  }
  /// Progress: `what` (a string literal) is what the runner does next, within `limit` seconds.
  void step(const char* what, double limit = Lib::kStallSeconds) {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = what;
    limit_ = limit;
    deadline_ = now_s() + limit;
  }
  /// "point: step", or the step alone before any point.
  std::string where() {
    std::lock_guard<std::mutex> lock(mu_);
    return where_locked();
  }

 private:
  std::string where_locked() const { return point_.empty() ? step_ : point_ + ": " + step_; }

  results<Lib>& out_;
  std::mutex mu_;  // everything below
  std::condition_variable cv_;
  std::string point_;
  const char* step_ = "";
  double limit_ = Lib::kStallSeconds;
  double deadline_ = 0;
  bool done_ = false;
  std::thread thread_;
};

/// The base of a collective runner: this PE's stream, events and share buffer, the watchdog, and the
/// steps every point is made of. Every PE calls the collective members (barrier and whatever says
/// "host barrier") the same number of times in the same order.
template <class Lib>
class harness {
 public:
  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;

  /// Some row of this PE failed its data check.
  bool any_check_failed() const { return check_failed_; }

 protected:
  /// Symmetric words for host-side agreement: [0, kVoteWord) PE 0's broadcasts, kVoteWord this PE's vote.
  static constexpr int kShareWords = 64;
  static constexpr int kVoteWord = kShareWords - 1;
  /// Device memory of this PE that the host reads back.
  struct local_words {
    uint32_t copied[kShareWords];
    unsigned long long bad;
  };

  /// Rows carry `backend`; ends with a host barrier.
  harness(const options& opts, std::vector<row>& rows, std::string backend)
      : opts_(opts),
        backend_(std::move(backend)),
        me_(Lib::my_pe()),
        npes_(Lib::n_pes()),
        out_(opts, rows, me_),
        wd_(out_) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    cuda_check(cudaMalloc(&local_, sizeof(local_words)), "cudaMalloc");
    share_ = static_cast<uint32_t*>(Lib::host_malloc(kShareWords * sizeof(uint32_t)));
    if (share_ == nullptr) throw std::runtime_error(std::string(Lib::kName) + "_malloc of the share buffer failed");
    barrier("setup");
  }
  ~harness() {
    // Lib::host_free is collective: while an exception unwinds, the peers are not there to join it (the
    // process exits right after).
    if (share_ != nullptr && std::uncaught_exceptions() == 0) Lib::host_free(share_);
    cudaFree(local_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  /// Frees the share buffer now (collective; the runner's normal end).
  void free_share() {
    if (share_ != nullptr) Lib::host_free(share_);
    share_ = nullptr;
  }

  // ---- plumbing ----

  void barrier(const char* what) {
    wd_.step(what);
    if (const std::string failed = Lib::host_barrier(); !failed.empty()) out_.give_up(wd_.where() + ": " + failed);
    wd_.step(what);
  }

  /// Waits for the stream, polling, at most kKernelTimeoutSeconds; gives up (rows so far written) after.
  void finish(const char* what) {
    wd_.step(what);
    const double t0 = now_s();
    for (unsigned polls = 0;; ++polls) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) cuda_check(e, what);
      if (now_s() - t0 > kKernelTimeoutSeconds)
        out_.give_up(Lib::gpu_timed_out(wd_.where(), static_cast<int>(kKernelTimeoutSeconds)));
      if (polls > 1000) {
        timespec nap{0, 20000};
        nanosleep(&nap, nullptr);
      }
    }
    wd_.step(what);
  }

  /// Microseconds of what enqueue() puts on the stream, behind a short delay kernel.
  template <class Enqueue>
  double timed_us(const char* what, Enqueue&& enqueue) {
    wd_.step(what);
    coll_data::delay_kernel<<<1, 1, 0, stream_>>>(kLaunchCoverNs);
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    enqueue();
    cuda_check(cudaGetLastError(), what);
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    finish(what);
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e3;
  }

  /// This PE's address of symmetric `p` on PE q (q may be this PE); throws where there is none.
  const uint32_t* peer_words(const void* p, int q) const {
    const auto* w = static_cast<const uint32_t*>(q == me_ ? p : Lib::host_ptr(p, q));
    if (w == nullptr)
      throw std::runtime_error("no load/store path to PE " + std::to_string(q) + " (" + Lib::kName + "_ptr)");
    return w;
  }

  /// Reads `words` words of PE q's share buffer (q may be this PE) into `out`.
  void read_share(int q, int first_word, uint32_t* out, int words) {
    coll_data::copy_words_kernel<<<1, 64, 0, stream_>>>(local_->copied, peer_words(share_ + first_word, q), words);
    cuda_check(cudaGetLastError(), "copy share");
    cuda_check(cudaMemcpyAsync(out, local_->copied, words * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_),
               "copy share");
    finish("copy share");
  }

  /// PE 0's `words` words at `data` to every PE (collective; host barriers inside). Stream-ordered
  /// copies only: nothing here waits for the whole device (NCCL's own streams included).
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

  // ---- call counts and timing ----

  int loop_iters() const { return std::max(1, opts_.iterations * 10); }
  int loop_warmup() const { return std::max(1, opts_.warmup * 10); }

  /// Calls per timed run at a point of `bytes` (0: barrier): kBytesPerRun's worth, at most 10 x -n.
  int max_calls(size_t bytes) const {
    if (bytes == 0) return loop_iters();
    return static_cast<int>(std::clamp<size_t>(kBytesPerRun / bytes, 1, static_cast<size_t>(loop_iters())));
  }

  /// A timed warm-up of `warm` calls (enqueue(n) enqueues n); from it PE 0 picks the timed call
  /// count, at most `most`, within the point's budget, and every PE gets it. *slow: one warm-up call
  /// took longer than kSlowCallUs (agreed too).
  template <class Enqueue>
  int decide_calls(const char* what, int warm, int most, bool* slow, Enqueue&& enqueue) {
    const double warm_us = timed_us(what, [&] { enqueue(warm); });
    uint32_t decided[2] = {static_cast<uint32_t>(most), 0};
    if (me_ == 0) {
      const double per_call = warm_us / warm;
      const double budget = kPointBudgetUs / opts_.reps;
      if (per_call * most > budget) decided[0] = static_cast<uint32_t>(std::max(1.0, budget / per_call));
      decided[1] = per_call > kSlowCallUs;
    }
    share_from_pe0(decided, 2);
    if (slow != nullptr) *slow = decided[1] != 0;
    return static_cast<int>(decided[0]);
  }

  /// The call count of a point of shape s: clears this PE's dest (data points), then decide_calls
  /// over a warm-up of up to loop_warmup() calls.
  template <class Enqueue>
  int point_calls(const char* what, char* dst, const shape& s, bool* slow, Enqueue&& enqueue) {
    const int most = max_calls(s.bytes);
    const int warm = std::max(1, std::min(most, loop_warmup()));
    if (s.bytes > 0) clear_dest(dst, s);
    return decide_calls(what, warm, most, slow, enqueue);
  }

  /// The median over reps of timed_us(run()), divided by `calls_per_run` (PE 0; other PEs: 0).
  template <class Run>
  double median_per_call(const char* what, int calls_per_run, Run&& run) {
    std::vector<double> v;
    for (int r = 0; r < opts_.reps; ++r) v.push_back(timed_us(what, run));
    std::sort(v.begin(), v.end());
    return me_ == 0 ? v[v.size() / 2] / calls_per_run : 0;
  }

  /// The row of collective c at shape s: run() makes `calls_per_run` calls, timed over reps (median),
  /// then the data check of every PE's dest (data points).
  template <class Run>
  measured measure(const char* what, coll c, const std::string& impl, const std::string& scope, char* dst,
                   const shape& s, int calls_per_run, Run&& run) {
    const double us = median_per_call(what, calls_per_run, run);
    measured m;
    m.ok = s.bytes == 0 || verify(c, dst, s);
    m.r = make(c, impl, scope, s, calls_per_run, us);
    return m;
  }

  // ---- graphs ----

  /// Captures what enqueue() puts on the stream (in Lib::kCaptureMode) into a graph and instantiates
  /// it. Returns why not, or "" (an exception from enqueue() is a why, not thrown on).
  template <class Enqueue>
  std::string capture(Enqueue&& enqueue, cudaGraphExec_t* exec) {
    cudaError_t e = cudaStreamBeginCapture(stream_, Lib::kCaptureMode);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e);
    }
    std::string why;
    try {
      enqueue();
    } catch (const std::exception& ex) {
      why = std::string(ex.what()) + " while capturing";
    }
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream_, &graph);  // always: leaves the stream out of capture mode
    if (why.empty() && e != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e);
    if (why.empty() && graph == nullptr) why = "cudaStreamEndCapture gave no graph";
    if (why.empty()) {
      e = cudaGraphInstantiate(exec, graph, 0);
      if (e != cudaSuccess) why = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
    }
    if (graph != nullptr) cudaGraphDestroy(graph);  // the exec keeps what it needs (NCCL's user objects too)
    cudaGetLastError();                             // a refused capture leaves no error behind for the next check
    return why;
  }

  /// The graph row of c at shape s from `exec` (a capture of `per_graph` calls, every PE's): uploads
  /// it, clears dest (the check is the graph's alone), replays it once untimed, then measure() with
  /// `replays` replays per timed run. The exec stays the caller's.
  measured replay_graph(const char* what, coll c, const std::string& impl, char* dst, const shape& s,
                        cudaGraphExec_t exec, int per_graph, int replays) {
    wd_.step("cudaGraphUpload");
    cuda_check(cudaGraphUpload(exec, stream_), "cudaGraphUpload");
    finish("graph upload");
    if (s.bytes > 0)
      clear_dest(dst, s);
    else
      barrier("graph upload");
    auto replay = [&](int n) {
      for (int i = 0; i < n; ++i) cuda_check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
    };
    timed_us("graph warm-up", [&] { replay(1); });
    return measure(what, c, impl, scope_label(style::graph), dst, s, replays * per_graph, [&] { replay(replays); });
  }

  // ---- data ----

  /// Clears this PE's dest, then a host barrier: nobody writes a dest before it is cleared.
  void clear_dest(char* dst, const shape& s) {
    cuda_check(cudaMemsetAsync(dst, 0, s.dst_bytes, stream_), "clear dest");
    finish("clear dest");
    barrier("clear dest");
  }

  void fill_source(coll c, char* src, const shape& s) {
    coll_data::fill_source_kernel<<<264, 256, 0, stream_>>>(coll_data::data_of(c), reinterpret_cast<uint32_t*>(src),
                                                            s.src_bytes / 4, std::max<size_t>(s.per_pe / 4, 1), me_,
                                                            npes_);
    cuda_check(cudaGetLastError(), "fill source");
    finish("fill source");
  }

  /// After every PE's calls ended (host barrier), PE 0 checks every PE's dest; then a barrier.
  bool verify(coll c, char* dst, const shape& s) {
    finish("last calls");
    barrier("verify");
    bool ok = true;
    if (me_ == 0) {
      for (int q = 0; q < npes_; ++q) {
        const uint32_t* d = peer_words(dst, q);
        cuda_check(cudaMemsetAsync(&local_->bad, 0, sizeof(unsigned long long), stream_), "verify");
        coll_data::count_bad_kernel<<<264, 256, 0, stream_>>>(
            coll_data::data_of(c), d, s.dst_bytes / 4, std::max<size_t>(s.per_pe / 4, 1), q, npes_, &local_->bad);
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

  // ---- rows ----

  /// Largest size of collective c in style st (-e caps every sweep).
  size_t end_of(coll c, style st) const {
    size_t ceiling = kStreamMaxBytes;
    if (st == style::block)
      ceiling = c == coll::allreduce || c == coll::allreduce_scratch ? kBlockReduceMaxBytes : kBlockMaxBytes;
    return opts_.max_bytes_given ? std::min(opts_.max_bytes, ceiling) : ceiling;
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

  row make(coll c, const std::string& impl, const std::string& scope, const shape& s, int iters, double us) const {
    row r;
    r.benchmark = name_of(c);
    r.impl = impl;
    r.backend = backend_;
    r.num_pes = npes_;
    r.scope = scope;
    r.size_bytes = s.bytes;
    r.iterations = iters;
    r.latency_us = us;
    if (us > 0 && s.bytes > 0) {
      r.bandwidth_gbps = s.bytes / (us * 1e3);
      r.busbw_gbps = r.bandwidth_gbps * coll_data::bus_factor_of(c, npes_);
    }
    return r;
  }

  /// PE 0 keeps the row; a failed data check marks it and the run.
  void add(measured m) {
    if (!m.ok) {
      m.r.baseline = "DATA-CHECK-FAILED";
      m.r.ratio = 0;
      check_failed_ = true;
      std::fprintf(stderr, "%s: %s: the data check failed\n", Lib::kProgram, Lib::failed_row(me_, m.r).c_str());
    }
    if (me_ == 0) out_.add(std::move(m.r));
  }

  Lib lib_;  // first: its setup (e.g. the library's error mode) brackets everything below
  const options& opts_;
  std::string backend_;  // rows' backend column
  int me_ = 0, npes_ = 0;
  results<Lib> out_;
  stall_watchdog<Lib> wd_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  local_words* local_ = nullptr;
  uint32_t* share_ = nullptr;  // symmetric; see kShareWords
  bool check_failed_ = false;
};

}  // namespace shoal::bench::coll_harness
