// Message-passing litmus tests on 2 GPUs: each PE is writer to its peer and reader of its peer at
// once. Iteration i: the writer fills a data slot with i and raises the flag to i, by
//   (a) put -> fence -> p(flag, i)                        ("put_fence_p")
//   (b) putmem_signal(flag, i, SHOAL_SIGNAL_SET)          ("put_signal_set")
//   (c) putmem_signal(flag, 1, SHOAL_SIGNAL_ADD)          ("put_signal_add", flag counts to i)
// at thread, warp and block scope; the reader waits until flag >= i (acquire), then its whole scope
// reads the slot. A violation is seeing the flag but not the data (any word != i): the memory model
// forbids it. Every iteration is checked: the writer keeps at most kSlots iterations ahead, using
// the reader's acknowledgements (reader: reads -> fence -> p(ack, i), every 4th i). One persistent kernel per PE
// runs all iterations; >= 1,000,000 per variant (SHOAL_LITMUS_ITERATIONS may raise it; 10,000 in quick mode,
// SHOAL_GPU_TEST_QUICK=1, for PEs time-sliced on one GPU).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "facade_api.cuh"
#include "gpu_env.hpp"
#include "handle_api.cuh"

namespace shoal_test {
namespace {

constexpr int kSlots = 16;      // iterations the writer may run ahead of the reader's acks
constexpr int kAckEvery = 4;    // the reader acknowledges every 4th iteration (and the last)
constexpr int kMaxWords = 256;  // data words per iteration (block scope: one per thread)
constexpr uint64_t kMinIterations = 1'000'000;

enum class variant { put_fence_p, put_signal_set, put_signal_add };
const char* variant_name(variant v) {
  return v == variant::put_fence_p ? "put_fence_p"
                                   : (v == variant::put_signal_set ? "put_signal_set" : "put_signal_add");
}

/// Symmetric: what the peer writes here (data slots and flag) and acknowledges (ack).
struct litmus_shared {
  uint64_t data[kSlots][kMaxWords];  // written by the peer's writer (put), read by this PE's reader
  uint64_t flag;                     // written by the peer's writer (p or signal), waited on by this reader
  uint64_t pad0[15];
  uint64_t ack;  // written by the peer's reader (p after fence), waited on by this writer
  uint64_t pad1[15];
};

uint64_t iterations() {
  const char* v = std::getenv("SHOAL_LITMUS_ITERATIONS");
  const uint64_t n = v != nullptr ? std::strtoull(v, nullptr, 10) : 0;
  const uint64_t floor = quick() ? kMinIterations / 100 : kMinIterations;  // quick: time-sliced runs
  return n > floor ? n : floor;
}

/// Scope rank and barrier of the scope that runs one side (block 0: writer; block 1: reader).
template <class Scope>
__device__ unsigned rank_in() {
  return is_thread<Scope> ? 0 : (is_warp<Scope> ? threadIdx.x % 32 : threadIdx.x);
}

/// words per iteration: thread scope 8, warp 32, block = blockDim.x (256).
template <class Scope>
__host__ __device__ constexpr int words_of() {
  return is_thread<Scope> ? 8 : (is_warp<Scope> ? 32 : kMaxWords);
}

template <class Api, class Scope, variant V>
__global__ void litmus_kernel(Api api, litmus_shared* sh, uint64_t* staging, uint64_t n, int pe, device_report* report,
                              unsigned long long* checked) {
  constexpr int kWords = words_of<Scope>();
  const unsigned r = rank_in<Scope>();
  // Thread scope: only thread 0 of each block works; warp scope: warp 0 of each block.
  const bool active = is_thread<Scope> ? threadIdx.x == 0 : (is_warp<Scope> ? threadIdx.x < 32 : true);
  if (blockIdx.x == 0) {
    // ---- writer ----
    for (uint64_t i = 1; i <= n; ++i) {
      const int slot = static_cast<int>(i % kSlots);
      if (i > kSlots) {  // the reader has finished iteration i - kSlots (the slot's last use)
        if (r == 0 && active) api.wait_until(&sh->ack, SHOAL_CMP_GE, i - kSlots);
        if constexpr (!is_thread<Scope>) Scope::sync();
      }
      if (active) {
        uint64_t* src = staging + slot * kMaxWords;
        for (int w = r; w < kWords; w += Scope::size()) src[w] = i;
        Scope::sync();
        if constexpr (V == variant::put_fence_p) {
          api.template putmem<Scope>(sh->data[slot], src, kWords * sizeof(uint64_t), pe, false);
          if (r == 0) {
            api.fence();
            api.p(&sh->flag, i, pe);
          }
        } else {
          const bool set = V == variant::put_signal_set;
          api.template putmem_signal<Scope>(sh->data[slot], src, kWords * sizeof(uint64_t), &sh->flag, set ? i : 1,
                                            set ? SHOAL_SIGNAL_SET : SHOAL_SIGNAL_ADD, pe, false);
        }
      }
    }
  } else {
    // ---- reader ----
    for (uint64_t i = 1; i <= n; ++i) {
      const int slot = static_cast<int>(i % kSlots);
      if (active && r == 0) {
        if constexpr (V == variant::put_fence_p) {
          api.wait_until(&sh->flag, SHOAL_CMP_GE, i);
        } else {
          api.signal_wait_until(&sh->flag, SHOAL_CMP_GE, i);
        }
      }
      if constexpr (!is_thread<Scope>) Scope::sync();  // the scope reads after rank 0's acquire
      if (active) {
        for (int w = r; w < kWords; w += Scope::size()) {
          const uint64_t seen = sh->data[slot][w];
          if (seen != i) report_failure(report, i, w, i, seen);
        }
      }
      if constexpr (!is_thread<Scope>) Scope::sync();  // every read done before the ack
      if (active && r == 0) {
        if (i % kAckEvery == 0 || i == n) {  // reads of iterations <= i done before the writer reuses their slots
          api.fence();
          api.p(&sh->ack, i, pe);
        }
        atomicAdd(checked, 1ull);
      }
    }
  }
}

struct litmus_buffers {
  litmus_shared* sh = nullptr;
  uint64_t* staging = nullptr;
  device_report* report = nullptr;
  unsigned long long* checked = nullptr;
};

litmus_buffers& bufs() {
  static litmus_buffers b = [] {
    litmus_buffers x;
    x.sh = static_cast<litmus_shared*>(shoal_malloc(sizeof(litmus_shared)));
    if (x.sh == nullptr) ADD_FAILURE() << format("shoal_malloc(%zu) returned NULL", sizeof(litmus_shared));
    GT_CUDA(cudaMalloc(&x.staging, kSlots * kMaxWords * sizeof(uint64_t)));
    x.report = new_device_report();
    GT_CUDA(cudaMalloc(&x.checked, sizeof(unsigned long long)));
    return x;
  }();
  return b;
}

template <class Api, class Scope, variant V>
void litmus(Api api) {
  litmus_buffers& b = bufs();
  const uint64_t n = iterations();
  const unsigned threads = is_thread<Scope> ? 1 : (is_warp<Scope> ? 32 : kMaxWords);
  const std::string what = format("litmus %s %s-scope %s (%d words per message)", variant_name(V), scope_name<Scope>,
                                  Api::kName, words_of<Scope>());
  // Nothing the model forbids can be hidden by zeros: slots start as poison, flag and ack at 0.
  GT_CUDA(cudaMemset(b.sh, kPoison, sizeof(litmus_shared)));
  GT_CUDA(cudaMemset(&b.sh->flag, 0, sizeof(uint64_t)));
  GT_CUDA(cudaMemset(&b.sh->ack, 0, sizeof(uint64_t)));
  GT_CUDA(cudaMemset(b.checked, 0, sizeof(unsigned long long)));
  reset_device_report(b.report);
  sync_all_pes();
  auto start = std::chrono::steady_clock::now();
  litmus_kernel<Api, Scope, V><<<2, threads>>>(api, b.sh, b.staging, n, peer(), b.report, b.checked);
  GT_LAUNCHED(what.c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  unsigned long long checked = 0;
  GT_CUDA(cudaMemcpy(&checked, b.checked, sizeof(checked), cudaMemcpyDeviceToHost));
  unsigned long long violations = 0;
  EXPECT_TRUE(device_report_clean(what.c_str(), b.report, &violations));
  std::printf("PE %d %s: %llu iterations written, %llu checked, %llu violation(s), %.2f s\n", me(), what.c_str(),
              static_cast<unsigned long long>(n), checked, violations, s);
  if (checked != n)
    ADD_FAILURE() << format("%s: the reader checked %llu iterations, expected %llu", what.c_str(), checked,
                            static_cast<unsigned long long>(n));
  sync_all_pes();
}

template <class Api, variant V>
void litmus_scopes(Api api) {
  litmus<Api, thread_scope, V>(api);
  litmus<Api, warp_scope, V>(api);
  litmus<Api, block_scope, V>(api);
}

TEST(litmus_gpu, mp_put_fence_p_handle) {
  litmus_scopes<handle_api, variant::put_fence_p>(handle_api{device_handle()});
}
TEST(litmus_gpu, mp_put_signal_set_handle) {
  litmus_scopes<handle_api, variant::put_signal_set>(handle_api{device_handle()});
}
TEST(litmus_gpu, mp_put_signal_add_handle) {
  litmus_scopes<handle_api, variant::put_signal_add>(handle_api{device_handle()});
}
// The facade forwards to the same code; one variant per scope checks the forwarding.
TEST(litmus_gpu, mp_put_fence_p_facade) { litmus_scopes<facade_api, variant::put_fence_p>(facade_api{}); }

}  // namespace
}  // namespace shoal_test
