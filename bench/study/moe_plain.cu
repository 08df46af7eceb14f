// shoal-bench-moe's runs on the GPU (moe_plain.hpp): per hidden size the buffers, and per token count each path's
// checked call, timed calls and checked call again. The two paths, the check and the timing are described in
// moe_plain_main.cc; the kernels are in moe_plain_kernels.cuh and moe_plain_check.cuh. No fmt here: nvcc does not
// evaluate fmt's compile-time format strings.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/cuda_util.hpp"
#include "moe_plain.hpp"
#include "moe_plain_check.cuh"
#include "moe_plain_kernels.cuh"
#include "shoal/device/device.cuh"
#include "shoal/shoal.h"
#include "shoal/world.hpp"

namespace {

using shoal::bench::cuda_check;
using shoal::bench::row;
using namespace shoal::bench::moe;

/// printf-style text (this file has no fmt).
template <class... Args>
std::string text(const char* format, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), format, args...);
  return buf;
}

enum class path { device, cpu };

template <class T>
T* device_array(size_t count) {
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc");
  cuda_check(cudaMemset(p, 0, std::max<size_t>(count, 1) * sizeof(T)), "cudaMemset");
  return static_cast<T*>(p);
}

/// Collective: every PE allocates the same arrays in the same order.
template <class T>
T* symmetric_array(size_t count) {
  void* p = shoal_calloc(std::max<size_t>(count, 1), sizeof(T));
  if (p == nullptr) throw std::runtime_error(text("shoal_calloc of %zu bytes failed", count * sizeof(T)));
  return static_cast<T*>(p);
}

unsigned element_blocks(size_t elements) {
  return static_cast<unsigned>(std::min<size_t>((elements + kElementThreads - 1) / kElementThreads, 4096));
}

/// The buffers of one hidden size, for up to max_tokens tokens per PE, and both paths' calls on them.
class moe_run {
 public:
  moe_run(const run_config& cfg, uint32_t hidden, uint32_t max_tokens, int blocks_max)
      : cfg_(cfg), hidden_(hidden), max_tokens_(max_tokens), blocks_max_(blocks_max) {
    world_ = shoal::default_world_device_handle();
    me_ = world_.my_pe;
    num_pes_ = world_.n_pes;
    const size_t slots = static_cast<size_t>(num_pes_) * max_tokens;
    recv_rows_ = symmetric_array<uint16_t>(2 * slots * hidden);  // two halves: the plain kernel's epoch parity
    recv_src_ = symmetric_array<uint64_t>(2 * slots);
    shared_.reserved = symmetric_array<uint64_t>(2);
    shared_.done = symmetric_array<uint64_t>(2 * kMaxPes);
    counts_ = symmetric_array<uint64_t>(num_pes_);
    counts_all_ = symmetric_array<uint64_t>(static_cast<size_t>(num_pes_) * num_pes_);
    fail_in_ = symmetric_array<int>(1);
    fail_out_ = symmetric_array<int>(1);
    rows_ = device_array<uint16_t>(size_t{max_tokens} * hidden);
    rank_mask_ = device_array<uint64_t>(max_tokens);
    masks_ = device_array<uint64_t>(slots);
    position_ = device_array<uint32_t>(slots);
    grouped_ = device_array<uint16_t>(slots * hidden);
    origin_ = device_array<uint64_t>(slots);
    seen_ = device_array<uint32_t>(slots);
    expect_rows_ = device_array<uint32_t>(1);
    check_ = device_array<check_counts>(1);
    local_ = device_array<dispatch_local_words>(1);
    cuda_check(cudaMallocHost(&counts_host_, sizeof(uint64_t) * num_pes_ * num_pes_), "cudaMallocHost");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    // device_array's zeroing runs on the legacy stream, which a non-blocking stream does not wait for: done before
    // any kernel of stream_ reads the arrays (the last-block counter of local_ first of all).
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (set-up)");
  }
  ~moe_run() {
    cudaStreamDestroy(stream_);
    cudaFreeHost(counts_host_);
    for (void* p : {static_cast<void*>(rows_), static_cast<void*>(rank_mask_), static_cast<void*>(masks_),
                    static_cast<void*>(position_), static_cast<void*>(grouped_), static_cast<void*>(origin_),
                    static_cast<void*>(seen_), static_cast<void*>(expect_rows_), static_cast<void*>(check_),
                    static_cast<void*>(local_)})
      cudaFree(p);
    // shoal_free is collective: while an exception unwinds, this PE is on its way to main's _Exit and its peers may
    // be where they cannot agree (in a kernel, in a reduce), so the symmetric arrays stay to the process's end.
    if (std::uncaught_exceptions() > 0) return;
    for (void* p : {static_cast<void*>(fail_out_), static_cast<void*>(fail_in_), static_cast<void*>(counts_all_),
                    static_cast<void*>(counts_), static_cast<void*>(shared_.done), static_cast<void*>(shared_.reserved),
                    static_cast<void*>(recv_src_), static_cast<void*>(recv_rows_)})
      shoal_free(p);
  }
  moe_run(const moe_run&) = delete;
  moe_run& operator=(const moe_run&) = delete;

  /// This PE's routing and rows at num_tokens, and every PE's routing (for the check). Returns the rows it sends.
  uint64_t prepare(uint32_t num_tokens) {
    num_tokens_ = num_tokens;
    route_kernel<<<element_blocks(num_tokens), kElementThreads, 0, stream_>>>(rank_mask_, me_, 1, num_tokens, num_pes_,
                                                                              cfg_.experts_per_rank, cfg_.num_topk);
    route_kernel<<<element_blocks(size_t{num_tokens} * num_pes_), kElementThreads, 0, stream_>>>(
        masks_, 0, num_pes_, num_tokens, num_pes_, cfg_.experts_per_rank, cfg_.num_topk);
    fill_rows_kernel<<<element_blocks(size_t{num_tokens} * hidden_), kElementThreads, 0, stream_>>>(
        rows_, me_, num_tokens, hidden_);
    cuda_check(cudaGetLastError(), "route_kernel / fill_rows_kernel launch");
    std::vector<uint64_t> mask(num_tokens);
    cuda_check(cudaMemcpyAsync(mask.data(), rank_mask_, num_tokens * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync (routing)");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (prepare)");
    uint64_t sent = 0;
    for (uint64_t m : mask) sent += static_cast<uint64_t>(std::popcount(m));
    return sent;
  }

  /// One call of `p`, complete on return (the stream synchronized). Returns the rows received when read_rows (the
  /// device path reads its count from device memory only then: a user's next kernel would read it there).
  uint32_t call(path p, bool read_rows) { return p == path::device ? device_call(read_rows) : cpu_call(); }

  /// Mean wall time of one call (µs) over `iters` after `warmup`, every call complete before the next.
  double time_calls(path p) {
    for (int i = 0; i < cfg_.warmup; ++i) call(p, false);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    shoal_barrier_all();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < cfg_.iters; ++i) call(p, false);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - t0;
    return took.count() / cfg_.iters;
  }

  /// A call on a cleared receive buffer, then the check, agreed by every PE (collective). Returns "" or what this PE
  /// found wrong ("another PE" when only others did).
  std::string checked_call(path p) {
    const size_t slots = static_cast<size_t>(num_pes_) * num_tokens_;
    const uint32_t half = p == path::device ? (epoch_ + 1) & 1u : 0u;  // where the call's rows will land
    cuda_check(cudaMemsetAsync(half_rows(half), 0xff, slots * hidden_ * sizeof(uint16_t), stream_), "cudaMemsetAsync");
    cuda_check(cudaMemsetAsync(half_src(half), 0xff, slots * sizeof(uint64_t), stream_), "cudaMemsetAsync");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (clear)");
    shoal_barrier_all();  // no PE puts before every PE has cleared
    const uint32_t rows = call(p, true);
    std::string what = check(p, rows);
    const int failed = what.empty() ? 0 : 1;
    cuda_check(cudaMemcpy(fail_in_, &failed, sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    if (shoal_int_max_reduce(SHOAL_TEAM_WORLD, fail_out_, fail_in_, 1) != 0)
      throw std::runtime_error("shoal_int_max_reduce failed");
    int any = 0;
    cuda_check(cudaMemcpy(&any, fail_out_, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (any != 0 && what.empty()) what = "another PE's check failed";
    return what;
  }

 private:
  /// Half `half` of the receive buffer (the CPU form uses half 0; the plain kernel half epoch % 2).
  uint16_t* half_rows(uint32_t half) const { return recv_rows_ + half * recv_slots() * hidden_; }
  uint64_t* half_src(uint32_t half) const { return recv_src_ + half * recv_slots(); }
  uint64_t recv_slots() const { return static_cast<uint64_t>(num_pes_) * max_tokens_; }

  uint32_t device_call(bool read_rows) {
    plain_dispatch_args a{};
    a.world = world_;
    a.rows = rows_;
    a.rank_mask = rank_mask_;
    a.num_tokens = num_tokens_;
    a.hidden = hidden_;
    a.recv_rows = recv_rows_;
    a.recv_src = recv_src_;
    a.recv_slots = recv_slots();
    a.shared = shared_;
    a.local = local_;
    a.epoch = ++epoch_;
    last_half_ = a.epoch & 1u;
    const uint32_t blocks = std::clamp<uint32_t>((num_tokens_ + kDispatchWarps - 1) / kDispatchWarps, 1u,
                                                 static_cast<uint32_t>(blocks_max_));
    plain_dispatch_kernel<<<blocks, kDispatchWarps * 32, 0, stream_>>>(a);
    cuda_check(cudaGetLastError(), "plain_dispatch_kernel launch");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (plain dispatch)");
    if (!read_rows) return 0;
    dispatch_local_words words{};
    cuda_check(cudaMemcpy(&words, local_, sizeof(words), cudaMemcpyDeviceToHost), "cudaMemcpy (dispatch words)");
    bad_epoch_ = words.bad_epoch != 0;  // in this launch or any since the last read
    cuda_check(cudaMemset(&local_->bad_epoch, 0, sizeof(uint32_t)), "cudaMemset (bad_epoch)");
    return words.rows_received;
  }

  uint32_t cpu_call() {
    const int n = num_pes_;
    last_half_ = 0;
    group_positions_kernel<<<n, kScanThreads, 0, stream_>>>(rank_mask_, num_tokens_, position_, counts_);
    const unsigned blocks = std::max(1u, std::min(4096u, (num_tokens_ + kGroupWarps - 1) / kGroupWarps));
    group_rows_kernel<<<blocks, kGroupWarps * 32, 0, stream_>>>(rows_, rank_mask_, position_, num_tokens_, hidden_,
                                                                grouped_);
    cuda_check(cudaGetLastError(), "group kernels launch");
    if (shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, counts_all_, counts_, sizeof(uint64_t) * n, stream_) != 0)
      throw std::runtime_error("shoalx_fcollectmem_on_stream failed");
    // The round trip: the counts to the host, then one put per peer at the offset they give.
    cuda_check(cudaMemcpyAsync(counts_host_, counts_all_, sizeof(uint64_t) * n * n, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync (counts)");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (counts)");
    const size_t row_bytes = size_t{hidden_} * sizeof(uint16_t);
    for (int k = 1; k <= n; ++k) {
      const int j = (me_ + k) % n;
      const uint64_t rows = counts_host_[static_cast<size_t>(me_) * n + j];  // row s: what PE s sends each PE
      if (rows == 0) continue;
      uint64_t at = 0;  // my rows land after those of the lower PEs at PE j
      for (int s = 0; s < me_; ++s) at += counts_host_[static_cast<size_t>(s) * n + j];
      shoalx_putmem_on_stream(half_rows(0) + at * hidden_,
                              grouped_ + size_t{static_cast<uint32_t>(j)} * num_tokens_ * hidden_, rows * row_bytes, j,
                              stream_);
    }
    shoalx_barrier_all_on_stream(stream_);
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (cpu dispatch)");
    uint64_t received = 0;
    for (int s = 0; s < n; ++s) received += counts_host_[static_cast<size_t>(s) * n + me_];
    return static_cast<uint32_t>(received);
  }

  /// This PE's check of the rows `rows` slots hold after a call of `p`: "" or what is wrong.
  std::string check(path p, uint32_t rows) {
    const size_t slots = static_cast<size_t>(num_pes_) * num_tokens_;
    std::string what;
    if (p == path::device && bad_epoch_)  // `rows` then counts a stale word's rows too: this is the error to name
      return "a done word of another epoch, or reserved slots not matching the rows signalled (this call or a timed "
             "one before it)";
    if (rows > slots) return text("%u rows received, more than the %zu the buffer has", rows, slots);
    const uint64_t* origin = half_src(last_half_);  // the device path sends each row's origin
    if (p == path::cpu) {                           // the CPU-orchestrated form's layout is known to its receiver
      expected_layout_kernel<<<1, kScanThreads, 0, stream_>>>(masks_, num_pes_, num_tokens_, me_, origin_,
                                                              expect_rows_);
      origin = origin_;
    }
    check_counts zero{};
    zero.first_wrong = UINT64_MAX;
    cuda_check(cudaMemcpyAsync(check_, &zero, sizeof(zero), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    cuda_check(cudaMemsetAsync(seen_, 0, slots * sizeof(uint32_t), stream_), "cudaMemsetAsync");
    if (rows > 0)  // a PE that receives nothing has no row to check (a grid of 0 blocks is a launch error)
      check_rows_kernel<<<element_blocks(size_t{rows} * 32), kElementThreads, 0, stream_>>>(
          half_rows(last_half_), origin, rows, hidden_, masks_, num_pes_, num_tokens_, me_, seen_, check_);
    check_coverage_kernel<<<element_blocks(slots), kElementThreads, 0, stream_>>>(masks_, seen_, num_pes_, num_tokens_,
                                                                                  me_, check_);
    cuda_check(cudaGetLastError(), "check kernels launch");
    check_counts got{};
    uint32_t expect_rows = rows;
    cuda_check(cudaMemcpyAsync(&got, check_, sizeof(got), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    if (p == path::cpu)
      cuda_check(cudaMemcpyAsync(&expect_rows, expect_rows_, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpyAsync");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (check)");
    if (got.wrong_rows || got.bad_origin || got.duplicates || got.missing)
      what = text("%u of %u rows wrong (first at slot %llu), %u with a bad origin, %u tokens twice, %u missing",
                  got.wrong_rows, rows, static_cast<unsigned long long>(got.first_wrong), got.bad_origin,
                  got.duplicates, got.missing);
    if (expect_rows != rows)
      what += text("%s%u rows received, %u expected", what.empty() ? "" : "; ", rows, expect_rows);
    return what;
  }

  const run_config& cfg_;
  uint32_t hidden_;
  uint32_t max_tokens_;
  int blocks_max_;
  shoal::device_world world_{};
  int me_ = 0;
  int num_pes_ = 0;
  uint32_t num_tokens_ = 0;
  uint32_t epoch_ = 0;      // the plain kernel's launches so far: the same on every PE
  uint32_t last_half_ = 0;  // the receive buffer's half of the last call
  bool bad_epoch_ = false;
  cudaStream_t stream_ = nullptr;
  // Symmetric.
  uint16_t* recv_rows_ = nullptr;
  uint64_t* recv_src_ = nullptr;
  dispatch_shared_words shared_{};
  uint64_t* counts_ = nullptr;      // this PE's rows per destination (the CPU form's fcollect source)
  uint64_t* counts_all_ = nullptr;  // row s: PE s's counts
  int* fail_in_ = nullptr;
  int* fail_out_ = nullptr;
  // Local.
  uint16_t* rows_ = nullptr;
  uint64_t* rank_mask_ = nullptr;
  uint64_t* masks_ = nullptr;  // every PE's routing, [pe][token]
  uint32_t* position_ = nullptr;
  uint16_t* grouped_ = nullptr;  // [destination][token][hidden]
  uint64_t* origin_ = nullptr;
  uint32_t* seen_ = nullptr;
  uint32_t* expect_rows_ = nullptr;
  check_counts* check_ = nullptr;
  dispatch_local_words* local_ = nullptr;
  uint64_t* counts_host_ = nullptr;  // pinned
};

}  // namespace

namespace shoal::bench::moe {

int max_pes() { return kMaxPes; }
int max_topk() { return kMaxTopk; }
bool select_gpu() { return select_gpu_from_env(); }

/// Every benchmark point of the run; returns false when a check failed (every PE agrees). Rows on PE 0.
bool run_points(const run_config& cfg, std::vector<row>& rows) {
  const int me = shoal_my_pe();
  const int num_pes = shoal_n_pes();
  int device = 0;
  int sms = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  const int blocks_max = cfg.ctas > 0 ? cfg.ctas : sms;
  const uint32_t max_tokens = *std::max_element(cfg.tokens.begin(), cfg.tokens.end());
  bool ok = true;
  for (uint32_t hidden : cfg.hidden) {
    moe_run m(cfg, hidden, max_tokens, blocks_max);
    for (uint32_t tokens : cfg.tokens) {
      const uint64_t sent = m.prepare(tokens);
      double cpu_us = 0;
      std::vector<row> here;
      for (const std::string& name : cfg.paths) {
        const path p = name == "device" ? path::device : path::cpu;
        std::string what = m.checked_call(p);
        double us = 0;
        if (what.empty()) {
          us = m.time_calls(p);
          what = m.checked_call(p);  // a second call after many must give the same rows
        }
        if (!what.empty()) {
          std::fprintf(stderr, "shoal-bench-moe: PE %d: %s path, %u tokens, hidden %u: check failed: %s\n", me,
                       name.c_str(), tokens, hidden, what.c_str());
          ok = false;
          continue;
        }
        row r;
        r.benchmark = text("moe_dispatch_h%u", hidden);
        r.impl = p == path::device ? "shoal" : "cpu";
        r.scope = p == path::device ? "device" : "copy_engine_plain";
        r.backend = "cuda";
        r.num_pes = num_pes;
        r.size_bytes = size_t{tokens} * hidden * 2;
        r.iterations = cfg.iters;
        r.latency_us = us;
        r.bandwidth_gbps = us > 0 ? static_cast<double>(sent) * hidden * 2 / us / 1e3 : 0;
        if (p == path::cpu) cpu_us = us;
        here.push_back(r);
      }
      for (row& r : here) {
        if (r.impl != "cpu" && cpu_us > 0) r.ratio = r.latency_us / cpu_us, r.baseline = "cpu";
        if (me == 0) rows.push_back(r);
      }
      if (me == 0)
        for (const row& r : here)
          std::printf("%18s %6s/%-18s %8u tokens %12.1f us %8.1f GB/s\n", r.benchmark.c_str(), r.impl.c_str(),
                      r.scope.c_str(), tokens, r.latency_us, r.bandwidth_gbps);
      std::fflush(stdout);
    }
  }
  return ok;
}

}  // namespace shoal::bench::moe
