// On-stream operations captured in a CUDA graph and replayed: one replay is
//   fill src (kernel, from a device-side replay counter) -> shoalx_putmem_on_stream(dst on peer)
//   -> shoalx_p_on_stream(word on peer) -> shoalx_quiet_on_stream -> shoalx_signal_op_on_stream(SET 1
//   on peer) -> shoalx_signal_wait_until_on_stream(own signal == 1) -> check dst and word in a kernel
//   (the peer's data of this replay) -> shoalx_getmem_on_stream(the peer's src) -> check it in a
//   kernel -> reset own signal and word, bump the counter -> shoalx_barrier_all_on_stream
// captured once on a non-blocking stream, replayed 100 times; after each replay the host checks the
// data too. Registered only when <shoal/shoal.h> declares the *_on_stream functions (CMakeLists).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "gpu_env.hpp"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

constexpr size_t kWords = 4099;  // odd: not a multiple of any vector width
const int kReplays = rounds(100);

__host__ __device__ uint32_t word_of(int pe, unsigned long long replay, size_t i) {
  return 0x9E3779B9u * static_cast<uint32_t>(i + 1) ^ static_cast<uint32_t>(replay * 7919u) ^
         (static_cast<uint32_t>(pe) << 28);
}

__global__ void fill_kernel(uint32_t* src, const unsigned long long* replay, int me) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < kWords; i += gridDim.x * blockDim.x)
    src[i] = word_of(me, *replay, i);
}

constexpr uint64_t kWordPoison = 0xA5A5A5A5A5A5A5A5ull;
__host__ __device__ uint64_t p_value_of(int pe) { return 0xC0FFEE00ull + static_cast<uint64_t>(pe); }

/// Checks the peer's words of this replay in `dst`; index kWords stands for the p'd word.
__global__ void check_kernel(const uint32_t* dst, const uint64_t* word, const unsigned long long* replay, int from,
                             device_report* report) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < kWords; i += gridDim.x * blockDim.x) {
    const uint32_t want = word_of(from, *replay, i);
    if (dst[i] != want) report_failure(report, *replay, i, want, dst[i]);
  }
  if (word != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && *word != p_value_of(from))
    report_failure(report, *replay, kWords, p_value_of(from), *word);
}

__global__ void next_replay_kernel(unsigned long long* replay, uint64_t* sig, uint64_t* word) {
  *sig = 0;  // the peer signals (and p's) again only after the barrier that follows
  *word = kWordPoison;
  *replay += 1;
}

TEST(stream_gpu, on_stream_ops_in_cuda_graph) {
  auto* src = static_cast<uint32_t*>(shoal_malloc(kWords * sizeof(uint32_t)));
  auto* dst = static_cast<uint32_t*>(shoal_malloc(kWords * sizeof(uint32_t)));
  auto* got = static_cast<uint32_t*>(shoal_malloc(kWords * sizeof(uint32_t)));  // getmem's destination
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  auto* word = static_cast<uint64_t*>(shoal_malloc(sizeof(uint64_t)));
  GT_CUDA(cudaMemset(word, 0xA5, sizeof(uint64_t)));
  GT_CUDA(cudaMemset(got, kPoison, kWords * sizeof(uint32_t)));
  unsigned long long* replay = nullptr;
  GT_CUDA(cudaMalloc(&replay, sizeof(*replay)));
  GT_CUDA(cudaMemset(replay, 0, sizeof(*replay)));
  GT_CUDA(cudaMemset(dst, kPoison, kWords * sizeof(uint32_t)));
  device_report* report = new_device_report();
  device_report* get_report = new_device_report();
  const int from = (me() + npes() - 1) % npes();
  sync_all_pes();

  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  GT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  fill_kernel<<<8, 256, 0, s>>>(src, replay, me());
  shoalx_putmem_on_stream(dst, src, kWords * sizeof(uint32_t), peer(), s);
  shoalx_p_on_stream(word, p_value_of(me()), sizeof(uint64_t), peer(), s);
  shoalx_quiet_on_stream(s);
  shoalx_signal_op_on_stream(sig, 1, SHOAL_SIGNAL_SET, peer(), s);
  shoalx_signal_wait_until_on_stream(sig, SHOAL_CMP_EQ, 1, s);
  check_kernel<<<8, 256, 0, s>>>(dst, word, replay, from, report);
  // The peer filled its src before it signalled: get it back and check it.
  shoalx_getmem_on_stream(got, src, kWords * sizeof(uint32_t), peer(), s);
  check_kernel<<<8, 256, 0, s>>>(got, nullptr, replay, peer(), get_report);
  next_replay_kernel<<<1, 1, 0, s>>>(replay, sig, word);
  shoalx_barrier_all_on_stream(s);
  GT_CUDA(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  size_t nodes = 0;
  GT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (me() == 0) std::printf("captured graph: %zu nodes\n", nodes);

  std::vector<uint32_t> seen(kWords), want(kWords);
  for (int k = 0; k < kReplays; ++k) {
    GT_CUDA(cudaGraphLaunch(exec, s));
    GT_CUDA(cudaStreamSynchronize(s));
    GT_CUDA(cudaGetLastError());
    GT_CUDA(cudaMemcpy(seen.data(), dst, kWords * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kWords; ++i) want[i] = word_of(from, static_cast<unsigned long long>(k), i);
    // No early exit on a mismatch: the peer replays (and meets the graph's barrier) all kReplays times.
    EXPECT_TRUE(bytes_equal(format("replay %d: data put by PE %d", k, from).c_str(), seen.data(), want.data(),
                            kWords * sizeof(uint32_t)));
    GT_CUDA(cudaMemcpy(seen.data(), got, kWords * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kWords; ++i) want[i] = word_of(peer(), static_cast<unsigned long long>(k), i);
    EXPECT_TRUE(bytes_equal(format("replay %d: data got from PE %d", k, peer()).c_str(), seen.data(), want.data(),
                            kWords * sizeof(uint32_t)));
    sync_all_pes();  // the peer's next replay writes into dst only after this PE has checked it
  }
  EXPECT_TRUE(device_report_clean(
      "the graph's check of each replay's put and p data (iteration = replay; index 4099 = p word)", report));
  EXPECT_TRUE(device_report_clean("the graph's check of each replay's getmem data (iteration = replay)", get_report));
  unsigned long long replays = 0;
  GT_CUDA(cudaMemcpy(&replays, replay, sizeof(replays), cudaMemcpyDeviceToHost));
  if (replays != static_cast<unsigned long long>(kReplays))
    ADD_FAILURE() << format("the replay counter is %llu after %d replays", replays, kReplays);
  sync_all_pes();
  GT_CUDA(cudaGraphExecDestroy(exec));
  GT_CUDA(cudaGraphDestroy(graph));
  GT_CUDA(cudaStreamDestroy(s));
  GT_CUDA(cudaFree(replay));
  shoal_free(word);
  shoal_free(sig);
  shoal_free(got);
  shoal_free(dst);
  shoal_free(src);
}

}  // namespace
}  // namespace shoal_test
