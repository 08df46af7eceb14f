// NVSHMEM 3.8's extras on GPUs, through the facade: half atomics from every thread of every PE on words of
// every PE (adds exact on small integers, a swap chain that loses nothing, the neighbouring half of the
// 4-byte word untouched, round-to-nearest-even), host half atomics on GPU memory, the double2 maxloc
// reduction at thread/warp/block scope (ties to the smaller index) against a host fold, counted-signal
// reset re-arming a signal from a kernel, shoalx_collective_launch_config (cooperative by default, a grid
// that does not fit and bad arguments refused), SHOALX_TEAM_SAME_MYPE_NODE on the device, and shoalx_team_init on
// GPU heaps (a device reduction over the new team when it is strided). Also run with
// every peer behind the proxy (the 4-byte compare-and-swap path of half atomics).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_env.hpp"
#include "shoal/collective_launch.h"
#include "shoal/device_team.hpp"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

constexpr unsigned kThreads = 128;

/// The proxy variant (SHOAL_GPU_TEST_PROXY=1): device team collectives need load/store peers, so those cases skip.
bool proxy_run() {
  const char* v = std::getenv("SHOAL_GPU_TEST_PROXY");
  return v != nullptr && v[0] == '1';
}

__host__ __device__ inline uint16_t bits_of(__half h) {
  uint16_t b;
  memcpy(&b, &h, sizeof(b));
  return b;
}

// h[0]: add/fetch_add target; h[1]: swap chain (same 4-byte word as h[0]); h[2]: set target; h[3]: left alone.
__global__ void half_amo_kernel(__half* h, int me, int n, int* fetched, int* swapped, device_report* report) {
  const unsigned t = threadIdx.x;
  const int pe = static_cast<int>(t) % n;
  const __half old = shoal_half_atomic_fetch_add(&h[0], __float2half(1.0f), pe);
  const float f = __half2float(old);
  if (f < 0.0f || f >= 2.0f * kThreads * n || f != static_cast<float>(static_cast<int>(f)))
    report_failure(report, 0, t, 0, bits_of(old));
  fetched[t] = static_cast<int>(f);
  shoal_half_atomic_add(&h[0], __float2half(1.0f), pe);
  const int mine = 1 + me * static_cast<int>(kThreads) + static_cast<int>(t);  // <= 1024: exact in half
  swapped[t] =
      static_cast<int>(__half2float(shoal_half_atomic_swap(&h[1], __float2half(static_cast<float>(mine)), pe)));
  if (t == 0) shoal_half_atomic_set(&h[2], __float2half(static_cast<float>(me + 1)), (me + 1) % n);
}

__global__ void half_fetch_kernel(const __half* h, int n, float* out) {
  for (int pe = 0; pe < n; ++pe) out[pe] = __half2float(shoal_half_atomic_fetch(&h[0], pe));
}

// Rounding on the peer's h[5] (h[4] the other half of its word): 1 + 2^-11 stays 1; + 3 * 2^-11 gives 1 + 2^-9.
__global__ void half_round_kernel(__half* h, int peer, unsigned short* out) {
  shoal_half_atomic_set(&h[5], __ushort_as_half(0x3c00), peer);
  out[0] = __half_as_ushort(shoal_half_atomic_fetch_add(&h[5], __ushort_as_half(0x1000), peer));
  shoal_half_atomic_add(&h[5], __ushort_as_half(0x1600), peer);
  out[1] = __half_as_ushort(shoal_half_atomic_fetch(&h[5], peer));
  out[2] = __half_as_ushort(shoal_half_atomic_swap(&h[5], __ushort_as_half(0), peer));
}

TEST(nvapi_gpu, half_atomics_device) {
  const int n = npes();
  auto* h = static_cast<__half*>(shoal_calloc(8, sizeof(__half)));
  const __half init[4] = {__float2half(0.0f), __float2half(1000.0f), __float2half(0.0f), __float2half(7.0f)};
  GT_CUDA(cudaMemcpy(h, init, sizeof(init), cudaMemcpyHostToDevice));
  int *fetched = nullptr, *swapped = nullptr;
  float* totals = nullptr;
  unsigned short* rounding = nullptr;
  GT_CUDA(cudaMallocManaged(&fetched, kThreads * sizeof(int)));
  GT_CUDA(cudaMallocManaged(&swapped, kThreads * sizeof(int)));
  GT_CUDA(cudaMallocManaged(&totals, static_cast<size_t>(n) * sizeof(float)));
  GT_CUDA(cudaMallocManaged(&rounding, 3 * sizeof(unsigned short)));
  device_report* report = new_device_report();
  sync_all_pes();
  half_amo_kernel<<<1, kThreads>>>(h, me(), n, fetched, swapped, report);
  GT_LAUNCHED("half_amo_kernel");
  EXPECT_TRUE(device_report_clean("half fetch_add old values", report));
  sync_all_pes();
  half_fetch_kernel<<<1, 1>>>(h, n, totals);
  GT_LAUNCHED("half_fetch_kernel");
  // Every word got 2 adds of 1 from each thread of each PE that targets it: 2 * kThreads in all (kThreads % n == 0).
  for (int pe = 0; pe < n; ++pe)
    if (totals[pe] != 2.0f * kThreads)
      ADD_FAILURE() << format("half word on PE %d is %g, expected %u", pe, totals[pe], 2 * kThreads);
  // The swap chain lost nothing: over all PEs, what came out plus what stayed == what went in plus 1000 per PE.
  long long out = 0, in = 0;
  for (unsigned t = 0; t < kThreads; ++t) {
    out += swapped[t];
    in += 1 + me() * static_cast<long long>(kThreads) + t;
  }
  __half mine[4];
  GT_CUDA(cudaMemcpy(mine, h, sizeof(mine), cudaMemcpyDeviceToHost));
  out += static_cast<long long>(__half2float(mine[1]));
  auto* sums = static_cast<long long*>(shoal_calloc(2, sizeof(long long)));
  sync_all_pes();
  shoal_longlong_atomic_add(&sums[0], out, 0);
  shoal_longlong_atomic_add(&sums[1], in + 1000, 0);
  sync_all_pes();
  if (me() == 0) {
    long long got[2];
    GT_CUDA(cudaMemcpy(got, sums, sizeof(got), cudaMemcpyDeviceToHost));
    if (got[0] != got[1])
      ADD_FAILURE() << format("half swap chain: %lld came out or stayed, %lld went in", got[0], got[1]);
  }
  if (__half2float(mine[2]) != static_cast<float>((me() + n - 1) % n + 1))
    ADD_FAILURE() << format("half set from the previous PE: %g", __half2float(mine[2]));
  if (bits_of(mine[3]) != bits_of(__float2half(7.0f)))
    ADD_FAILURE() << format("the untouched half changed to 0x%x", bits_of(mine[3]));
  sync_all_pes();
  half_round_kernel<<<1, 1>>>(h, peer(), rounding);
  GT_LAUNCHED("half_round_kernel");
  if (rounding[0] != 0x3c00 || rounding[1] != 0x3c02 || rounding[2] != 0x3c02)
    ADD_FAILURE() << format("half rounding: old 0x%x (0x3c00), after 0x%x (0x3c02), swapped out 0x%x (0x3c02)",
                            rounding[0], rounding[1], rounding[2]);
  sync_all_pes();
  GT_CUDA(cudaFree(fetched));
  GT_CUDA(cudaFree(swapped));
  GT_CUDA(cudaFree(totals));
  GT_CUDA(cudaFree(rounding));
  shoal_free(sums);
  shoal_free(h);
}

TEST(nvapi_gpu, half_atomics_host_on_gpu_memory) {
  const int n = npes();
  auto* h = static_cast<__half*>(shoal_calloc(2, sizeof(__half)));
  const __half seven = __float2half(7.0f);
  GT_CUDA(cudaMemcpy(&h[1], &seven, sizeof(seven), cudaMemcpyHostToDevice));
  sync_all_pes();
  for (int k = 0; k < n; ++k) {
    const int pe = (me() + k) % n;
    shoal_half_atomic_fetch_add(&h[0], __float2half(1.0f), pe);
    shoal_half_atomic_add(&h[0], __float2half(2.0f), pe);
  }
  sync_all_pes();
  const float got = __half2float(shoal_half_atomic_fetch(&h[0], peer()));
  if (got != 3.0f * n) ADD_FAILURE() << format("host half adds on GPU memory: %g, expected %d", got, 3 * n);
  sync_all_pes();  // every PE has read its peer's word before any PE changes its own
  if (bits_of(shoal_half_atomic_swap(&h[0], __float2half(0.5f), me())) != bits_of(__float2half(3.0f * n)))
    ADD_FAILURE() << "host half swap returned the wrong old value";
  shoal_half_atomic_set(&h[0], __float2half(-2.0f), me());
  if (__half2float(shoal_half_atomic_fetch(&h[0], me())) != -2.0f) ADD_FAILURE() << "host half set/fetch";
  if (bits_of(shoal_half_atomic_fetch(&h[1], me())) != bits_of(seven)) ADD_FAILURE() << "the neighbouring half changed";
  sync_all_pes();
  shoal_free(h);
}

// ---- maxloc ----

constexpr size_t kMaxloc = 1003;  // vector path plus a tail

__host__ __device__ inline double maxloc_value(int pe, size_t i) { return static_cast<double>((i + 2 * pe) % 5); }

template <int kScope>  // 0 thread, 1 warp, 2 block
__global__ void maxloc_kernel(double2* dest, double2* src, int me, int rounds, device_report* report) {
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = threadIdx.x; i < kMaxloc; i += blockDim.x) src[i] = make_double2(maxloc_value(me, i) + r, me);
    __syncthreads();
    if constexpr (kScope == 0) {
      if (threadIdx.x == 0) shoal_double2_maxloc_reduce(SHOAL_TEAM_WORLD, dest, src, kMaxloc);
    } else if constexpr (kScope == 1) {
      if (threadIdx.x < 32) shoalx_double2_maxloc_reduce_warp(SHOAL_TEAM_WORLD, dest, src, kMaxloc);
    } else {
      shoalx_double2_maxloc_reduce_block(SHOAL_TEAM_WORLD, dest, src, kMaxloc);
    }
    __syncthreads();
    const int n = shoal_n_pes();
    for (size_t i = threadIdx.x; i < kMaxloc; i += blockDim.x) {
      double best = maxloc_value(0, i);
      int where = 0;
      for (int pe = 1; pe < n; ++pe) {
        if (maxloc_value(pe, i) > best) {
          best = maxloc_value(pe, i);
          where = pe;
        }
      }
      if (dest[i].x != best + r || dest[i].y != where)
        report_failure(report, r, i, static_cast<unsigned long long>(where),
                       static_cast<unsigned long long>(dest[i].y));
    }
    __syncthreads();
  }
}

template <int kScope>
void maxloc_case(const char* what) {
  if (proxy_run()) return;  // device collectives: load/store peers only
  auto* dest = static_cast<double2*>(shoal_calloc(kMaxloc, sizeof(double2)));
  auto* src = static_cast<double2*>(shoal_calloc(kMaxloc, sizeof(double2)));
  device_report* report = new_device_report();
  sync_all_pes();
  maxloc_kernel<kScope><<<1, 256>>>(dest, src, me(), rounds(20), report);
  GT_LAUNCHED(what);
  EXPECT_TRUE(device_report_clean(what, report));
  sync_all_pes();
  shoal_free(src);
  shoal_free(dest);
}

TEST(nvapi_gpu, maxloc_thread) { maxloc_case<0>("shoal_double2_maxloc_reduce"); }
TEST(nvapi_gpu, maxloc_warp) { maxloc_case<1>("shoalx_double2_maxloc_reduce_warp"); }
TEST(nvapi_gpu, maxloc_block) { maxloc_case<2>("shoalx_double2_maxloc_reduce_block"); }

// ---- counted signals ----

__global__ void counted_kernel(uint64_t* sig, int me, int n, int rounds, device_report* report) {
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < n; ++k) shoalx_signal_op(sig, 1, SHOAL_SIGNAL_ADD, (me + k) % n);
    const uint64_t seen = shoal_signal_wait_until(sig, SHOAL_CMP_GE, static_cast<uint64_t>(n));
    if (seen != static_cast<uint64_t>(n)) report_failure(report, r, 0, n, seen);
    shoalx_signal_counted_reset(sig);
    if (shoal_signal_fetch(sig) != 0) report_failure(report, r, 1, 0, shoal_signal_fetch(sig));
    shoal_barrier_all();  // every signal is reset before anyone counts into it again
  }
}

TEST(nvapi_gpu, signal_counted_reset_device) {
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  device_report* report = new_device_report();
  sync_all_pes();
  counted_kernel<<<1, 1>>>(sig, me(), npes(), rounds(50), report);
  GT_LAUNCHED("counted_kernel");
  EXPECT_TRUE(device_report_clean("shoalx_signal_counted_reset", report));
  sync_all_pes();
  shoalx_signal_counted_reset(sig);  // the host form on GPU memory
  if (shoal_signal_fetch(sig) != 0)
    ADD_FAILURE() << format("host shoalx_signal_counted_reset left %llu", (unsigned long long)shoal_signal_fetch(sig));
  sync_all_pes();
  shoal_free(sig);
}

// ---- collective launch with a launch configuration, and SHOALX_TEAM_SAME_MYPE_NODE on the device ----

__global__ void launched_kernel(int* blocks_seen, int* same_mype) {
  if (threadIdx.x == 0) atomicAdd(blocks_seen, 1);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    shoal_barrier_all();
    same_mype[0] = shoal_team_n_pes(SHOALX_TEAM_SAME_MYPE_NODE);
    same_mype[1] = shoal_team_my_pe(SHOALX_TEAM_SAME_MYPE_NODE);
  }
}

TEST(nvapi_gpu, collective_launch_config) {
  int* seen = nullptr;
  GT_CUDA(cudaMallocManaged(&seen, 3 * sizeof(int)));
  std::memset(seen, 0, 3 * sizeof(int));
  int* same = seen + 1;
  void* args[] = {&seen, &same};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(64);
  config.stream = nullptr;
  sync_all_pes();
  if (shoalx_collective_launch_config(&config, reinterpret_cast<const void*>(launched_kernel), args) != SHOAL_OK)
    ADD_FAILURE() << "shoalx_collective_launch_config refused a grid of 4 blocks";
  GT_LAUNCHED("launched_kernel");
  if (seen[0] != 4) ADD_FAILURE() << format("launched_kernel ran %d blocks, expected 4", seen[0]);
  if (same[0] != shoal_team_n_pes(SHOALX_TEAM_SAME_MYPE_NODE) ||
      same[1] != shoal_team_my_pe(SHOALX_TEAM_SAME_MYPE_NODE))
    ADD_FAILURE() << format("SHOALX_TEAM_SAME_MYPE_NODE on the device: %d PEs, me %d; host says %d, %d", same[0],
                            same[1], shoal_team_n_pes(SHOALX_TEAM_SAME_MYPE_NODE),
                            shoal_team_my_pe(SHOALX_TEAM_SAME_MYPE_NODE));
  // Refused before launching: a grid that cannot be co-resident, too many attributes, null arguments.
  config.gridDim = dim3(1u << 20);
  if (shoalx_collective_launch_config(&config, reinterpret_cast<const void*>(launched_kernel), args) !=
      SHOAL_ERR_INVALID_ARGUMENT)
    ADD_FAILURE() << "a grid of 2^20 blocks was not refused";
  config.gridDim = dim3(1);
  cudaLaunchAttribute many[SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS + 1] = {};
  config.attrs = many;
  config.numAttrs = SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS + 1;
  if (shoalx_collective_launch_config(&config, reinterpret_cast<const void*>(launched_kernel), args) !=
      SHOAL_ERR_INVALID_ARGUMENT)
    ADD_FAILURE() << "numAttrs above SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS was not refused";
  if (shoalx_collective_launch_config(nullptr, reinterpret_cast<const void*>(launched_kernel), args) !=
      SHOAL_ERR_INVALID_ARGUMENT)
    ADD_FAILURE() << "a null config was not refused";
  GT_CUDA(cudaDeviceSynchronize());
  sync_all_pes();
  GT_CUDA(cudaFree(seen));
}

// ---- shoalx_team_init on GPU heaps (its rendezvous words are GPU memory, reached through the transport) ----

__global__ void team_sum_kernel(shoal_team_t team, int* dst, const int* src, int* info) {
  shoal_int_sum_reduce(team, dst, src, 1);
  info[0] = shoal_team_my_pe(team);
  info[1] = shoal_team_n_pes(team);
}

/// The team of `order` (world PEs by team index) made with shoalx_team_init by its members, every PE a member.
shoal_team_t init_team(const std::vector<int>& order) {
  auto* slot = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  if (me() == npes() - 1) {
    shoal_team_uniqueid_t id = 0;
    if (shoalx_team_get_uniqueid(&id) != 0 || id == 0) ADD_FAILURE() << "shoalx_team_get_uniqueid on a GPU heap";
    for (int pe = 0; pe < npes(); ++pe) shoal_uint64_p(slot, id, pe);
  }
  sync_all_pes();
  uint64_t id = 0;
  GT_CUDA(cudaMemcpy(&id, slot, sizeof(id), cudaMemcpyDeviceToHost));
  int index = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] == me()) index = static_cast<int>(i);
  shoal_team_t team = SHOAL_TEAM_INVALID;
  if (shoalx_team_init(&team, id, nullptr, 0, static_cast<int>(order.size()), index) != 0)
    ADD_FAILURE() << "shoalx_team_init on a GPU heap failed";
  sync_all_pes();
  shoal_free(slot);
  return team;
}

TEST(nvapi_gpu, team_init_on_gpu_heaps) {
  const int n = npes();
  // The world reversed (strided, stride -1): a device handle, and a reduction over it in a kernel.
  std::vector<int> reversed;
  for (int i = 0; i < n; ++i) reversed.push_back(n - 1 - i);
  const shoal_team_t team = init_team(reversed);
  if (shoal_team_my_pe(team) != n - 1 - me())
    ADD_FAILURE() << format("team_init: my_pe %d, expected %d", shoal_team_my_pe(team), n - 1 - me());
  auto* buf = static_cast<int*>(shoal_calloc(2, sizeof(int)));
  int* info = nullptr;
  GT_CUDA(cudaMallocManaged(&info, 2 * sizeof(int)));
  const int mine = me() + 1;
  GT_CUDA(cudaMemcpy(buf, &mine, sizeof(mine), cudaMemcpyHostToDevice));
  sync_all_pes();
  if (!proxy_run()) {  // device collectives: load/store peers only
    team_sum_kernel<<<1, 1>>>(team, buf + 1, buf, info);
    GT_LAUNCHED("team_sum_kernel");
    int sum = 0;
    GT_CUDA(cudaMemcpy(&sum, buf + 1, sizeof(sum), cudaMemcpyDeviceToHost));
    if (sum != n * (n + 1) / 2)
      ADD_FAILURE() << format("sum over the team_init team: %d, expected %d", sum, n * (n + 1) / 2);
    if (info[0] != n - 1 - me() || info[1] != n)
      ADD_FAILURE() << format("device view of the team: my_pe %d, n_pes %d", info[0], info[1]);
  }
  sync_all_pes();
  shoal_team_destroy(team);
  // Not strided (n >= 4): host queries work, no device handle.
  if (n >= 4) {
    std::vector<int> order;
    for (int i = 0; i < n; ++i) order.push_back((3 * i + 1) % n);
    const shoal_team_t mixed = init_team(order);
    for (int i = 0; i < n; ++i)
      if (shoal_team_translate_pe(mixed, i, SHOAL_TEAM_WORLD) != order[i])
        ADD_FAILURE() << format("team_init order at %d", i);
    shoal::device_team d{};
    const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
    if (shoalx_team_device_handle(mixed, &d, sizeof d) != SHOAL_ERR_UNSUPPORTED)
      ADD_FAILURE() << "a non-strided device handle";
    shoal_clear_error();
    shoal_set_error_mode(old_mode);
    shoal_team_destroy(mixed);
  }
  sync_all_pes();
  GT_CUDA(cudaFree(info));
  shoal_free(buf);
}

}  // namespace
}  // namespace shoal_test
