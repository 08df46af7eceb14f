// The host side of the device-initiated benchmarks, shared by shoal-bench and shoal-bench-nvshmem: the class
// driver<Api> with sizes, iteration counts, CUDA-event timing (median of reps), the data spot check, the pairs and
// the rows. The benchmarks are its members, defined with their kernels and same-run baselines by family:
// bench/rma/rma.cuh (put_bw, get_bw, put_bw_bidir, put_quiet_latency, p_ping_pong), bench/amo/amo.cuh
// (atomic_latency), bench/sync/sync.cuh (put_signal_ping_pong, barrier_latency), bench/order/order.cuh
// (quiet_after_k, fence_cost, signal_vs_flag); a translation unit that runs the set includes the four
// (bench/device_set.cu, bench/nvshmem/nvshmem_bench.cu).
//
// Templated on the API adapter (bench/common/shoal_api.cuh, bench/nvshmem/nvshmem_api.cuh), whose host part is
//   kName, host_malloc/host_calloc/host_free (collective), host_barrier, host_ptr(addr, pe),
//   my_pe, n_pes; optionally `using tma = <adapter>` and kTmaName: a second block-put path, and
//   `using block_put_variants = std::tuple<adapters...>` (each with its own kName): more block puts measured beside
//   it in put_bw (shoal: the generic copy, and the probe rows below; skipped where their kernel's registers do not
//   allow -t threads). put_bw's block grids also get "raw_block" rows (raw_block_put_kernel). SHOAL_BENCH_PROBE=1
//   adds the block put's bisection rows (probe-*, bench/rma/shoal_put_paths.cuh) and barrier_latency's
//   (probe-acq/red/count/call: raw-fenced plus shoal's barrier ingredients, probe_barrier_kernel; shoal-relaxed: the
//   library barrier with relaxed polls); SHOAL_BENCH_VARIANTS=0 leaves out the other block-put paths' rows and
//   barrier_latency's shoal-epochs row (the epoch protocol beside the count protocol).
//
// Roles: the pair benchmarks (RMA, ping-pongs, atomics) run once per pair of --pairs (0:1 by
// default). The pair's initiator measures: it fills, clears and checks every buffer involved, its
// target's through the raw peer pointer, so the target only runs its side of two-sided benchmarks
// (ping-pongs, bidirectional traffic); the other PEs only join the host barriers. The all-PE
// barrier is measured by PE 0 with every PE taking part. Rows measured elsewhere move to PE 0 at the
// end. Every PE calls host_barrier the same number of times in the same order.
//
// Never hangs: device spins are bounded (kernel_ctx), and the host gives every kernel
// kKernelTimeoutSeconds before it reports and exits (a stuck kernel dies with the process).
//
// Pairs with no load/store path between them (the proxy path: Api::host_ptr null either way; only
// adapters with host RMA, Api::host_getmem/host_putmem/host_quiet): the API rows only (no sm_copy,
// copy_engine, raw or raw-fenced rows, said once per pair on stderr); the initiator fills, clears and
// checks the target's buffers through host puts and gets staged in local device memory; latency
// loops at most kProxyLoopIters timed iterations, bandwidth points at most kProxyBwBytesPerKernel per
// timed kernel after a warm-up bounded in time, and fewer repetitions where one iteration is slow (a
// proxy operation takes tens of microseconds, and a thread-scope grid issues one per thread).
// Adapters without host RMA (NVSHMEM) need the peer pointer.
#pragma once

#include <time.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <cuda_runtime.h>

#include "common/cuda_util.hpp"
#include "common/kernels.cuh"
#include "common/options.hpp"
#include "common/report.hpp"
#include "shoal/device/scope.cuh"

namespace shoal::bench::dev {

inline constexpr double kKernelTimeoutSeconds = 30;
inline constexpr uint64_t kSpinTimeoutNs = 10'000'000'000ull;
/// GPU busy time enqueued ahead of every timed region (covers the host's enqueue of event + kernel).
inline constexpr uint64_t kLaunchCoverNs = 50'000;
/// Time budget of one bandwidth point's timed reps: fewer iterations where the warm-up shows a path
/// too slow for the default count (keeps the whole sweep's runtime bounded).
inline constexpr double kPointBudgetUs = 200'000;
/// At most this many bytes move in one timed bandwidth kernel (fewer iterations for large sizes).
inline constexpr size_t kBwBytesPerKernel = size_t{2} << 30;
inline constexpr size_t kDefaultDeviceMaxBytes = size_t{256} << 20;
/// Pairs on the proxy path: timed iterations (and warm-up) of a latency loop at most, whatever -n says.
inline constexpr int kProxyLoopIters = 200;
inline constexpr int kProxyLoopWarmup = 20;
/// Pairs on the proxy path: at most this many bytes move in one timed bandwidth kernel.
inline constexpr size_t kProxyBwBytesPerKernel = size_t{64} << 20;
/// Pairs on the proxy path: a bandwidth point's warm-up is one iteration, then at most this long.
inline constexpr double kProxyWarmUs = 20'000;
/// Pairs on the proxy path: the largest host put/get that moves a buffer to or from the peer.
inline constexpr size_t kProxyCopyBytes = size_t{8} << 20;

/// The adapter can reach a peer's memory from the host (the proxy path's data checks and fills).
template <class Api>
concept host_rma_api = requires(void* dest, const void* source) {
  Api::host_getmem(dest, source, size_t{1}, 0);
  Api::host_putmem(dest, source, size_t{1}, 0);
  Api::host_quiet();
};

/// put_bw_bidir's start/stop protocol of background traffic (bench/rma/rma_kernels.cuh).
struct background;

template <class Api>
class driver {
 public:
  driver(const options& opts, std::vector<row>& rows, std::string backend)
      : opts_(opts), rows_(rows), backend_(std::move(backend)) {
    me_ = Api::my_pe();
    npes_ = Api::n_pes();
    std::string error;
    pairs_ = parse_pairs(opts_.pairs, npes_, error);
    if (!error.empty()) throw std::runtime_error("shoal-bench: " + error);
    if constexpr (host_rma_api<Api>) find_paths();
    select_all_pes();
    max_bytes_ = opts_.max_bytes_given ? opts_.max_bytes : kDefaultDeviceMaxBytes;
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    cuda_check(cudaMalloc(&scratch_, sizeof(scratch)), "cudaMalloc");
    cuda_check(cudaMemset(scratch_, 0, sizeof(scratch)), "cudaMemset");
    int device = 0;
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    cuda_check(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    ctx_ = kernel_ctx{&scratch_->status, kSpinTimeoutNs};
  }
  ~driver() {
    cudaFree(stage_);
    cudaFreeHost(started_);
    cudaFree(scratch_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;

  /// Runs the named benchmarks (all when empty), in a fixed order so every PE agrees: the pair
  /// benchmarks once per pair of --pairs (the pair's initiator measures, the other PEs wait), then
  /// the all-PE barrier. Rows measured on PEs other than 0 then move to PE 0, and PE 0's rows of
  /// this run are ordered by benchmark, then pair.
  void run(const std::vector<std::string>& which) {
    auto wanted = [&](const char* name) {
      return which.empty() || std::find(which.begin(), which.end(), name) != which.end();
    };
    const size_t first = rows_.size();
    bool any_pair_benchmark = false;
    for (const char* name : {"put_bw", "get_bw", "put_bw_bidir", "p_ping_pong", "put_signal_ping_pong",
                             "put_quiet_latency", "atomic_latency", "quiet_after_k", "fence_cost", "signal_vs_flag"})
      any_pair_benchmark |= wanted(name);
    for (const auto& [a, b] : pairs_) {
      select_pair(a, b);
      if (proxy_ && me_ == init_ && any_pair_benchmark) announce_proxy_pair();
      if (wanted("put_bw")) bandwidth("put_bw", /*get=*/false);
      if (wanted("get_bw")) bandwidth("get_bw", /*get=*/true);
      if (wanted("put_bw_bidir")) bandwidth_bidir();
      if (wanted("p_ping_pong")) p_ping_pong();
      if (wanted("put_signal_ping_pong")) put_signal_ping_pong();
      if (wanted("put_quiet_latency")) put_quiet_latency();
      if (wanted("atomic_latency")) atomic_latency();
      if (wanted("quiet_after_k")) quiet_after_k();
      if (wanted("fence_cost")) fence_cost();
      if (wanted("signal_vs_flag")) signal_vs_flag();
    }
    select_all_pes();
    if (wanted("barrier_latency")) barrier_latency();
    gather_rows(first);
    if (me_ == 0) order_rows(first);
  }

  /// Some point's data did not check out (its row says so); the run should exit non-zero.
  bool any_check_failed() const { return check_failed_; }

 private:
  /// Device memory of this PE that bench kernels write and the host reads back.
  struct scratch {
    status_word status;
    unsigned long long mismatches;
    uint64_t word;
    uint64_t sink;
  };

  /// The scope a bandwidth grid runs at, as its type (std::visit gives the kernel's template argument).
  using scope_choice = std::variant<shoal::thread_scope, shoal::warp_scope, shoal::block_scope>;

  struct grid {
    scope_choice s;
    int ctas;
    int threads;
    bool is_block() const { return std::holds_alternative<shoal::block_scope>(s); }
    std::string label() const {
      const char* name = is_block() ? "block" : (std::holds_alternative<shoal::warp_scope>(s) ? "warp" : "thread");
      return std::string(name) + "/" + std::to_string(ctas) + "x" + std::to_string(threads);
    }
    size_t units() const {
      const size_t total = static_cast<size_t>(ctas) * threads;
      if (is_block()) return static_cast<size_t>(ctas);
      return std::holds_alternative<shoal::warp_scope>(s) ? total / 32 : total;
    }
    /// Bytes per scope instance: the message split evenly, rounded up to 16 bytes.
    size_t chunk(size_t nbytes) const {
      const size_t per = (nbytes + units() - 1) / units();
      return (per + 15) / 16 * 16;
    }
  };

  // ---- plumbing ----

  /// The pair benchmarks' roles: PE a initiates toward PE b; every other PE only joins the host
  /// barriers. Rows made from now on carry "a-b".
  void select_pair(int a, int b) {
    init_ = a;
    target_ = b;
    peer_ = me_ == a ? b : (me_ == b ? a : -1);
    pair_ = std::to_string(a) + "-" + std::to_string(b);
    direct_ = linked(a, b);
    proxy_ = !direct_;
  }
  /// All-PE benchmarks: PE 0 measures, PE 1 is the raw baselines' peer, rows carry no pair.
  void select_all_pes() {
    init_ = 0;
    target_ = 1;
    peer_ = me_ == 0 ? 1 : (me_ == 1 ? 0 : -1);
    pair_.clear();
    direct_ = npes_ < 2 || linked(0, 1);
    proxy_ = false;
    for (int a = 0; a < npes_; ++a)
      for (int b = 0; b < npes_; ++b) proxy_ |= !linked(a, b);
  }

  bool active() const { return peer_ >= 0; }

  /// Every PE learns which PEs reach which by load/store: each probes its own row (Api::host_ptr on a
  /// symmetric word), publishes it in a symmetric buffer, and reads every other row (through the
  /// peer pointer or a host get). Collective; all PEs end with the same matrix, so the two PEs of a
  /// pair agree on whether it runs the raw baselines (which both of them take part in).
  void find_paths() {
    const size_t row_bytes = static_cast<size_t>(npes_);
    auto* probe = static_cast<uint8_t*>(Api::host_calloc(row_bytes));
    std::vector<uint8_t> mine(row_bytes);
    for (int pe = 0; pe < npes_; ++pe) mine[pe] = pe == me_ || Api::host_ptr(probe, pe) != nullptr;
    cuda_check(cudaMemcpy(probe, mine.data(), row_bytes, cudaMemcpyHostToDevice), "publish paths");
    Api::host_barrier();
    reach_.assign(row_bytes * row_bytes, 0);
    for (int pe = 0; pe < npes_; ++pe) {
      uint8_t* row_of_pe = reach_.data() + static_cast<size_t>(pe) * row_bytes;
      if (mine[pe])
        cuda_check(cudaMemcpy(row_of_pe, remote(probe, pe), row_bytes, cudaMemcpyDefault), "read paths");
      else
        Api::host_getmem(row_of_pe, probe, row_bytes, pe);
    }
    Api::host_barrier();
    Api::host_free(probe);
  }

  /// PE a has a peer pointer to PE b's heap (true without find_paths: the adapter needs one).
  bool reaches(int a, int b) const { return reach_.empty() || reach_[static_cast<size_t>(a) * npes_ + b] != 0; }
  /// PEs a and b reach each other by load/store, the raw baselines' requirement.
  bool linked(int a, int b) const { return reaches(a, b) && reaches(b, a); }

  /// Said once by the initiator of a pair on the proxy path (stderr), before its benchmarks.
  void announce_proxy_pair() const {
    std::fprintf(stderr,
                 "shoal-bench: pair %s: no load/store path between PE %d and PE %d (the proxy path): no raw "
                 "load/store baseline rows (sm_copy, copy_engine, raw); the target's memory is filled, cleared and "
                 "checked through %s host puts and gets\n",
                 pair_.c_str(), init_, target_, Api::kName);
    std::fprintf(stderr,
                 "shoal-bench: pair %s (proxy): latency loops run %d timed iterations per repetition (-n x 10 = %d) "
                 "after %d warm-up; bandwidth points move at most %zu MiB per timed kernel after a warm-up of one "
                 "iteration plus at most %.0f ms, with fewer repetitions than -r where one iteration takes over "
                 "%.0f ms; get_bw reads one slice of the source (no rotation)\n",
                 pair_.c_str(), loop_iters(), std::max(1, opts_.iterations * 10), loop_warmup(),
                 kProxyBwBytesPerKernel >> 20, kProxyWarmUs / 1e3, kPointBudgetUs / 1e3 / opts_.reps);
    std::fflush(stderr);
  }

  /// Moves the rows that PEs other than 0 appended from index `first` on to the end of PE 0's rows
  /// (and their data-check failures with them). Collective: every PE calls it.
  void gather_rows(size_t first) {
    if (npes_ < 2) return;
    std::string mine;
    if (me_ != 0) {
      mine = pack_rows(std::vector<row>(rows_.begin() + static_cast<std::ptrdiff_t>(first), rows_.end()));
      rows_.resize(first);
    }
    auto* lengths = static_cast<uint64_t*>(Api::host_calloc(sizeof(uint64_t)));
    const uint64_t my_length = mine.size();
    cuda_check(cudaMemcpy(lengths, &my_length, sizeof(my_length), cudaMemcpyHostToDevice), "gather rows");
    Api::host_barrier();
    std::vector<uint64_t> length(npes_, 0);
    uint64_t longest = 1;
    for (int pe = 0; pe < npes_; ++pe) {
      read_from(&length[pe], lengths, sizeof(uint64_t), pe, "gather rows");
      longest = std::max(longest, length[pe]);
    }
    char* text = static_cast<char*>(Api::host_malloc(longest));  // the same size on every PE
    if (!mine.empty()) cuda_check(cudaMemcpy(text, mine.data(), mine.size(), cudaMemcpyHostToDevice), "gather rows");
    Api::host_barrier();
    if (me_ == 0) {
      for (int pe = 1; pe < npes_; ++pe) {
        if (length[pe] == 0) continue;
        std::string packed(length[pe], '\0');
        read_from(packed.data(), text, length[pe], pe, "gather rows");
        for (row& r : unpack_rows(packed)) {
          check_failed_ |= r.baseline == "DATA-CHECK-FAILED";
          rows_.push_back(std::move(r));
        }
      }
    }
    Api::host_barrier();
    Api::host_free(text);
    Api::host_free(lengths);
  }

  /// Orders rows [first, end) by benchmark (run order), then pair (--pairs order); stable otherwise.
  void order_rows(size_t first) {
    const std::vector<std::string> names = device_benchmark_names();
    std::map<std::string, size_t> pair_order;  // "a-b" -> position in --pairs; all-PE rows ("") last
    for (size_t k = 0; k < pairs_.size(); ++k)
      pair_order[std::to_string(pairs_[k].first) + "-" + std::to_string(pairs_[k].second)] = k;
    auto key = [&](const row& r) {
      const auto name = std::find(names.begin(), names.end(), r.benchmark) - names.begin();
      const auto pair = pair_order.find(r.pair);
      return std::pair<std::ptrdiff_t, size_t>(name, pair == pair_order.end() ? pairs_.size() : pair->second);
    };
    std::stable_sort(rows_.begin() + static_cast<std::ptrdiff_t>(first), rows_.end(),
                     [&](const row& x, const row& y) { return key(x) < key(y); });
  }

  void launched(const char* what) { cuda_check(cudaGetLastError(), what); }

  /// Waits for the stream with a watchdog; then checks this PE's status word.
  void finish(const char* what) {
    timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned polls = 0;; ++polls) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) cuda_check(e, what);
      timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      const double waited = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9;
      if (waited > kKernelTimeoutSeconds) {
        std::fprintf(stderr, "shoal-bench: PE %d: %s (%s) did not finish within %.0f s; stopping\n", me_, what,
                     Api::kName, kKernelTimeoutSeconds);
        std::fflush(nullptr);
        std::_Exit(3);
      }
      if (polls > 1000) {
        timespec nap{0, 20000};
        nanosleep(&nap, nullptr);
      }
    }
    status_word st{};
    cuda_check(cudaMemcpy(&st, &scratch_->status, sizeof(st), cudaMemcpyDeviceToHost), "read status");
    if (st.code != 0)
      throw cuda_failure(std::string(what) + " (" + Api::kName + "): a bounded device wait timed out (tag " +
                         std::to_string(st.where) + ")");
  }

  /// Runs `launch` (which enqueues one kernel or copy loop) between two events; microseconds. A delay
  /// kernel ahead keeps the host's launch latency out of the figure.
  template <class Launch>
  double timed_us(const char* what, Launch&& launch) {
    delay_kernel<<<1, 1, 0, stream_>>>(kLaunchCoverNs);
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    launch();
    launched(what);
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    finish(what);
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e3;
  }

  /// Median over reps (default -r) of timed_us.
  template <class Launch>
  double median_us(const char* what, Launch&& launch, int reps = 0) {
    std::vector<double> v;
    for (int r = 0; r < (reps > 0 ? reps : opts_.reps); ++r) v.push_back(timed_us(what, launch));
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

  /// Bandwidth loops: a timed warm-up of `warm` iterations, then before_timed(), then the median of
  /// reps runs of `iters` iterations (fewer when the warm-up says they would exceed kPointBudgetUs;
  /// `iters` is updated). Proxy: the warm-up is one iteration plus at most kProxyWarmUs, and fewer
  /// reps where one iteration each would exceed kPointBudgetUs. launch(n) enqueues n iterations.
  /// Returns microseconds per iteration.
  template <class Launch, class Between>
  double per_iter_us(const char* what, int warm, int& iters, Launch&& launch, Between&& before_timed) {
    double per_iter = 0;
    if (!proxy_) {
      const double warm_us = timed_us(what, [&] { launch(warm); });
      per_iter = warm_us / warm;
    } else {
      // One iteration can take a large part of a second over the proxy (a thread-scope grid posts one
      // ring operation per thread): one first, then as many more as kProxyWarmUs allows.
      per_iter = timed_us(what, [&] { launch(1); });
      const int more = std::min(warm - 1, static_cast<int>(kProxyWarmUs / std::max(per_iter, 1.0)));
      if (more > 0) per_iter = timed_us(what, [&] { launch(more); }) / more;
    }
    const double budget = kPointBudgetUs / opts_.reps;
    if (per_iter * iters > budget) iters = std::max(1, static_cast<int>(budget / per_iter));
    // Proxy: where even one iteration per repetition overruns the point's budget, fewer repetitions.
    const int reps =
        proxy_ ? std::clamp(static_cast<int>(kPointBudgetUs / std::max(per_iter, 1.0)), 1, opts_.reps) : opts_.reps;
    before_timed();
    return median_us(
               what, [&] { launch(iters); }, reps) /
           iters;
  }

  template <class Launch>
  void untimed(const char* what, Launch&& launch) {
    launch();
    launched(what);
    finish(what);
  }

  int aux_blocks() const { return sms_ * 4; }

  uint32_t fill(char* buf, size_t nbytes) {
    const uint32_t seed = ++seed_;
    untimed("fill", [&] { fill_pattern_kernel<<<aux_blocks(), 256, 0, stream_>>>(buf, nbytes, seed); });
    return seed;
  }
  /// `slices` copies of one new pattern, nbytes each, back to back from buf.
  uint32_t fill(char* buf, size_t nbytes, size_t slices) {
    if (slices <= 1) return fill(buf, nbytes);
    const uint32_t seed = ++seed_;
    untimed("fill", [&] { fill_pattern_slices_kernel<<<aux_blocks(), 256, 0, stream_>>>(buf, nbytes, slices, seed); });
    return seed;
  }
  void clear(char* buf, size_t nbytes) {
    untimed("clear", [&] { clear_kernel<<<aux_blocks(), 256, 0, stream_>>>(buf, nbytes); });
  }
  /// true if buf[0, nbytes) holds pattern `seed`.
  bool holds(const char* buf, size_t nbytes, uint32_t seed) {
    untimed("verify", [&] {
      cudaMemsetAsync(&scratch_->mismatches, 0, sizeof(unsigned long long), stream_);
      verify_pattern_kernel<<<aux_blocks(), 256, 0, stream_>>>(buf, nbytes, seed, &scratch_->mismatches);
    });
    unsigned long long bad = 0;
    cuda_check(cudaMemcpy(&bad, &scratch_->mismatches, sizeof(bad), cudaMemcpyDeviceToHost), "read mismatches");
    return bad == 0;
  }
  /// Reads a (possibly remote) 64-bit word.
  uint64_t read_word(const uint64_t* word) {
    untimed("read word", [&] { read_u64_kernel<<<1, 1, 0, stream_>>>(word, &scratch_->word); });
    uint64_t v = 0;
    cuda_check(cudaMemcpy(&v, &scratch_->word, sizeof(v), cudaMemcpyDeviceToHost), "read word");
    return v;
  }

  template <class T>
  T* remote(T* symmetric, int pe) {
    void* p = Api::host_ptr(symmetric, pe);
    if (p == nullptr)
      throw std::runtime_error(std::string(Api::kName) + ": no load/store path from PE " + std::to_string(me_) +
                               " to PE " + std::to_string(pe) +
                               " (the device benchmarks need NVLink or PCIe peer access)");
    return static_cast<T*>(p);
  }

  // ---- a buffer of this PE or of the peer: by peer pointer where the pair is direct_, else host RMA ----

  /// A symmetric buffer on PE pe (this PE or the current peer), as the initiator fills, clears and checks it.
  struct at {
    char* sym;
    int pe;
  };
  /// Its load/store address; only where pe is this PE or the pair is direct_.
  char* raw(at a) { return a.pe == me_ ? a.sym : remote(a.sym, a.pe); }
  bool through_api(at a) const { return a.pe != me_ && !direct_; }

  /// Local device memory (not symmetric) of at least nbytes that stages the peer's bytes on the proxy path.
  char* stage(size_t nbytes) {
    if (nbytes > stage_bytes_) {
      cuda_check(cudaFree(stage_), "cudaFree");
      stage_ = nullptr;
      stage_bytes_ = 0;
      cuda_check(cudaMalloc(&stage_, nbytes), "cudaMalloc (staging)");
      stage_bytes_ = nbytes;
    }
    return stage_;
  }
  /// Host RMA in pieces of kProxyCopyBytes; put_to is complete at the target on return (quiet).
  void put_to(void* sym, int pe, const void* local, size_t nbytes) {
    if constexpr (host_rma_api<Api>) {
      for (size_t off = 0; off < nbytes; off += kProxyCopyBytes)
        Api::host_putmem(static_cast<char*>(sym) + off, static_cast<const char*>(local) + off,
                         std::min(kProxyCopyBytes, nbytes - off), pe);
      Api::host_quiet();
    } else {
      throw std::logic_error("host RMA without an adapter that has it");
    }
  }
  void get_from(void* local, const void* sym, int pe, size_t nbytes) {
    if constexpr (host_rma_api<Api>) {
      for (size_t off = 0; off < nbytes; off += kProxyCopyBytes)
        Api::host_getmem(static_cast<char*>(local) + off, static_cast<const char*>(sym) + off,
                         std::min(kProxyCopyBytes, nbytes - off), pe);
    } else {
      throw std::logic_error("host RMA without an adapter that has it");
    }
  }
  /// nbytes of symmetric `sym` on PE pe (this PE included) into `out` (host or device memory): through
  /// the peer pointer where this PE has one, else a host get.
  template <class T>
  void read_from(void* out, T* sym, size_t nbytes, int pe, const char* what) {
    if (reaches(me_, pe))
      cuda_check(cudaMemcpy(out, remote(sym, pe), nbytes, cudaMemcpyDefault), what);
    else
      get_from(out, sym, pe, nbytes);
  }

  uint32_t fill_at(at a, size_t nbytes, size_t slices = 1) {
    if (!through_api(a)) return fill(raw(a), nbytes, slices);
    const uint32_t seed = fill(stage(nbytes * slices), nbytes, slices);
    put_to(a.sym, a.pe, stage_, nbytes * slices);
    return seed;
  }
  void clear_at(at a, size_t nbytes) {
    if (!through_api(a)) return clear(raw(a), nbytes);
    clear(stage(nbytes), nbytes);
    put_to(a.sym, a.pe, stage_, nbytes);
  }
  bool holds_at(at a, size_t nbytes, uint32_t seed) {
    if (!through_api(a)) return holds(raw(a), nbytes, seed);
    get_from(stage(nbytes), a.sym, a.pe, nbytes);
    return holds(stage_, nbytes, seed);
  }
  uint64_t read_word_at(uint64_t* sym, int pe) {
    if (!through_api({reinterpret_cast<char*>(sym), pe})) return read_word(pe == me_ ? sym : remote(sym, pe));
    uint64_t v = 0;
    get_from(&v, sym, pe, sizeof(v));
    return v;
  }
  void write_word_at(uint64_t* sym, int pe, uint64_t value, const char* what) {
    if (!through_api({reinterpret_cast<char*>(sym), pe})) {
      untimed(what, [&] { store_u64_kernel<<<1, 1, 0, stream_>>>(pe == me_ ? sym : remote(sym, pe), value); });
      return;
    }
    put_to(sym, pe, &value, sizeof(value));
  }

  /// Timed iterations of one device loop: 10 x -n for latency loops (proxy: at most kProxyLoopIters).
  int loop_iters() const {
    const int n = std::max(1, opts_.iterations * 10);
    return proxy_ ? std::min(n, kProxyLoopIters) : n;
  }
  int loop_warmup() const {
    const int n = std::max(1, opts_.warmup * 10);
    return proxy_ ? std::min(n, kProxyLoopWarmup) : n;
  }
  /// Bandwidth: at most kBwBytesPerKernel per timed kernel, at least 4 iterations (proxy: at most
  /// kProxyBwBytesPerKernel, at least 1).
  int bw_iters(size_t nbytes) const {
    if (proxy_) {
      const size_t by_bytes = kProxyBwBytesPerKernel / std::max<size_t>(nbytes, 1);
      return static_cast<int>(std::clamp<size_t>(by_bytes, 1, static_cast<size_t>(loop_iters())));
    }
    const size_t by_bytes = kBwBytesPerKernel / std::max<size_t>(nbytes, 1);
    return static_cast<int>(std::clamp<size_t>(by_bytes, 4, static_cast<size_t>(std::max(loop_iters(), 4))));
  }

  row make(const std::string& bench, const std::string& impl, const std::string& scope_label, size_t nbytes, int iters,
           double us_per_iter) const {
    row r;
    r.benchmark = bench;
    r.impl = impl;
    r.backend = backend_;
    r.num_pes = npes_;
    r.scope = scope_label;
    r.size_bytes = nbytes;
    r.iterations = iters;
    r.latency_us = us_per_iter;
    r.pair = pair_;
    return r;
  }

  /// A measured row; `ok` false marks it as failing its data check (and the run as failed).
  void add(row r, bool ok) {
    if (!ok) {
      r.baseline = "DATA-CHECK-FAILED";
      r.ratio = 0;
      check_failed_ = true;
      std::fprintf(stderr, "shoal-bench: %s %s %s %zu bytes: the data check failed\n", r.benchmark.c_str(),
                   r.impl.c_str(), r.scope.c_str(), r.size_bytes);
    }
    rows_.push_back(std::move(r));
  }

  /// Ping-pong protocol of p_ping_pong and put_signal_ping_pong (defined below the class).
  template <class Launch>
  double ping_pong_run(const char* what, int iters, int warm, Launch&& launch, uint64_t first_seq = 1);

  // ---- the benchmarks, defined with their kernels, one folder per family ----
  // bench/rma/rma.cuh: put_bw, get_bw, put_bw_bidir, put_quiet_latency, p_ping_pong
  std::vector<grid> bw_grids(bool block_only) const;
  template <class A, class S, bool kGet>
  void launch_rma_bw(const grid& g, char* dst, const char* src, size_t nbytes, int iters, background bg,
                     size_t slices = 1);
  template <class A, bool kGet>
  void launch_rma_bw_any(const grid& g, char* dst, const char* src, size_t nbytes, int iters, background bg,
                         size_t slices);
  void bandwidth(const char* name, bool get);
  template <class A>
  void measure_rma(const char* name, const char* impl, const grid& g, bool get, char* src, char* dst, at data_src,
                   at data_dst, size_t nbytes, size_t slices, int iters, int warm, double copy_bw);
  template <class A>
  void measure_rma_variant(const char* name, const grid& g, char* src, char* dst, at data_src, at data_dst,
                           size_t nbytes, size_t slices, int iters, int warm, double copy_bw);
  void bandwidth_bidir();
  template <class Launch>
  void bidir_point(const std::string& impl, const std::string& label, char* src, char* dst, uint64_t* ctrl,
                   size_t nbytes, int iters, int warm, double copy_bw, Launch&& launch, double* bw_out);
  void wait_started(uint64_t value);
  void put_quiet_latency();
  void p_ping_pong();
  // bench/amo/amo.cuh: atomic_latency
  void atomic_latency();
  // bench/sync/sync.cuh: put_signal_ping_pong, barrier_latency
  void put_signal_ping_pong();
  void barrier_latency();
  template <class Launch>
  double barrier_run(const char* what, int iters, int warm, Launch&& launch);
  // bench/order/order.cuh: quiet_after_k, fence_cost, signal_vs_flag
  template <class Launch, class Check>
  void order_pair(const char* bench, const char* const labels[2], char* src, char* dst, size_t nbytes, Launch&& launch,
                  Check&& check);
  void quiet_after_k();
  void fence_cost();
  void signal_vs_flag();

  const options& opts_;
  std::vector<row>& rows_;
  std::string backend_;
  int me_ = 0, npes_ = 0, peer_ = -1, sms_ = 0;
  int init_ = 0, target_ = 1;               // the current pair: initiator and target (select_pair)
  std::string pair_;                        // "init-target" on the pair benchmarks' rows
  std::vector<std::pair<int, int>> pairs_;  // --pairs
  size_t max_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  scratch* scratch_ = nullptr;
  kernel_ctx ctx_{};
  // SHOAL_BENCH_PROBE=1: put_bw also runs the block put's bisection rows (shoal_api.cuh, probe_put_path).
  bool probe_rows_ = [] {
    const char* v = std::getenv("SHOAL_BENCH_PROBE");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  // SHOAL_BENCH_VARIANTS=0: put_bw leaves out the rows of the other block-put paths (TMA, block_put_variants), e.g.
  // over the proxy, where each costs a sweep of its own and they all take the same cold path.
  bool variant_rows_ = [] {
    const char* v = std::getenv("SHOAL_BENCH_VARIANTS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  uint32_t seed_ = 0;
  uint64_t generation_ = 0;
  // Which PE reaches which by load/store (n_pes x n_pes, row = from; find_paths); empty: all, the
  // adapter has no host RMA. direct_: the current pair is linked both ways (raw baselines, peer
  // pointers); proxy_: some operation of the current benchmark goes over the proxy (capped loops).
  std::vector<uint8_t> reach_;
  bool direct_ = true;
  bool proxy_ = false;
  char* stage_ = nullptr;  // local device memory staging the peer's bytes on the proxy path (stage())
  size_t stage_bytes_ = 0;
  uint64_t* started_ = nullptr;  // pinned: put_bw_bidir's background kernel has started (proxy path)
  row pending_;
  bool check_failed_ = false;
};

/// Ping-pong protocol: the target (responder) runs all warm + reps*iters rounds in one kernel; the initiator runs
/// a warm-up kernel, then reps timed kernels of iters rounds. Sequence numbers go on from 1.
/// launch(first, count, initiator). Returns the initiator's median half round trip in microseconds.
template <class Api>
template <class Launch>
double driver<Api>::ping_pong_run(const char* what, int iters, int warm, Launch&& launch, uint64_t first_seq) {
  Api::host_barrier();
  double us = 0;
  if (me_ == target_) {
    untimed(what, [&] { launch(static_cast<int>(first_seq), warm + opts_.reps * iters, false); });
  } else if (me_ == init_) {
    untimed(what, [&] { launch(static_cast<int>(first_seq), warm, true); });
    int next = static_cast<int>(first_seq) + warm;
    us = median_us(what,
                   [&] {
                     launch(next, iters, true);
                     next += iters;
                   }) /
         iters / 2;
  }
  Api::host_barrier();
  return us;
}

}  // namespace shoal::bench::dev
