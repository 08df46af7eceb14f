// get_dispatch_layout (counts and the token-to-rank map) and notify_dispatch (the count exchange
// that precedes a dispatch; to a proxy peer, one put-with-signal of the staged metadata), plus the
// slot-size arithmetic both sides of a buffer agree on, and the host helpers of shoal/ep/normal.hpp.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <shoal/error.hpp>

#include "common.cuh"

namespace shoal::ep {
namespace {

using namespace detail;

constexpr int kLayoutThreads = 256;

// One thread per token: its rank mask; per-rank and per-expert counts summed in shared memory first.
__global__ void __launch_bounds__(kLayoutThreads) layout_kernel(layout_args a) {
  extern __shared__ int counts[];  // [num_ranks] then [num_experts]
  int* rank_counts = counts;
  int* expert_counts = counts + a.num_ranks;
  for (int i = threadIdx.x; i < a.num_ranks + a.num_experts; i += blockDim.x) counts[i] = 0;
  __syncthreads();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int experts_per_rank = a.num_experts / a.num_ranks;
  if (t < a.num_tokens) {
    uint32_t mask = 0;
    for (int k = 0; k < a.num_topk; ++k) {
      const int64_t e = a.topk_idx[static_cast<int64_t>(t) * a.num_topk + k];
      if (e < 0 || e >= a.num_experts) continue;
      atomicAdd(&expert_counts[e], 1);
      mask |= 1u << (e / experts_per_rank);
    }
    for (int r = 0; r < a.num_ranks; ++r) {
      const bool in = (mask >> r) & 1u;
      a.is_token_in_rank[static_cast<int64_t>(t) * a.num_ranks + r] = in;
      if (in) atomicAdd(&rank_counts[r], 1);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < a.num_ranks; i += blockDim.x)
    if (rank_counts[i] != 0) atomicAdd(&a.num_tokens_per_rank[i], rank_counts[i]);
  for (int i = threadIdx.x; i < a.num_experts; i += blockDim.x)
    if (expert_counts[i] != 0) atomicAdd(&a.num_tokens_per_expert[i], expert_counts[i]);
}

constexpr int kNotifyThreads = 1024;

// Block d < R: scans is_token_in_rank[:, d] into send_slot and the channel prefix, then writes this
// rank's metadata into rank d's buffer and raises its flag. Block R: waits for every source's
// metadata and builds the receive side (channel prefix per source, rank prefix matrix, counts to host).
__global__ void __launch_bounds__(kNotifyThreads) notify_kernel(notify_args a) {
  __shared__ int warp_sums[kNotifyThreads / 32];
  __shared__ int running;
  const int R = a.num_ranks, C = a.num_channels, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  const uint64_t seq = call_seq(mine);
  const int parity = static_cast<int>(shoal::ptx::ld_relaxed_sys(&mine->notify_epoch) & 1u);
  if (blockIdx.x < static_cast<unsigned>(R)) {
    const int d = blockIdx.x;
    int* prefix = a.send_chan_prefix + d * (C + 1);
    if (threadIdx.x == 0) running = 0;
    __syncthreads();
    for (int base = 0; base < a.num_tokens; base += blockDim.x) {
      const int t = base + threadIdx.x;
      const bool in = t < a.num_tokens && a.is_token_in_rank[static_cast<int64_t>(t) * R + d];
      const uint32_t ballot = __ballot_sync(0xffffffffu, in);
      if (lane == 0) warp_sums[warp] = __popc(ballot);
      __syncthreads();
      int before = running;
      for (int w = 0; w < warp; ++w) before += warp_sums[w];
      const int excl = before + __popc(ballot & ((1u << lane) - 1u));
      if (t < a.num_tokens) {
        a.send_slot[static_cast<int64_t>(t) * R + d] = in ? excl : -1;
        // Channels starting at token t (several when there are fewer tokens than channels).
        for (int c = static_cast<int>((static_cast<int64_t>(t) * C + a.num_tokens - 1) / a.num_tokens);
             c < C && token_begin(a.num_tokens, C, c) == t; ++c)
          prefix[c] = excl;
      }
      __syncthreads();
      if (threadIdx.x == blockDim.x - 1) running = excl + (in ? 1 : 0);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      prefix[C] = running;
      if (a.num_tokens == 0)
        for (int c = 0; c < C; ++c) prefix[c] = 0;
    }
    __syncthreads();
    // A proxy peer's metadata is staged here and put (with its flag as the signal) to the same offset there.
    const bool proxy = is_proxy(a.p, d);
    int* meta = proxy ? mine->meta_stage[d] : ctrl(a.p.base[d])->meta[parity][a.rank];
    for (int i = threadIdx.x; i < R; i += blockDim.x) meta[i] = a.num_tokens_per_rank[i];
    for (int i = threadIdx.x; i <= C; i += blockDim.x) meta[kMaxRanks + i] = prefix[i];
    for (int i = threadIdx.x; i < a.num_local_experts; i += blockDim.x)
      meta[kMetaExpertsOffset + i] = a.num_tokens_per_expert[d * a.num_local_experts + i];
    __syncthreads();
    if (threadIdx.x == 0 && !proxy) signal(&ctrl(a.p.base[d])->meta_flag[parity][a.rank], tag(seq, 0));
    if (threadIdx.x == 0 && proxy) {
      // Blocking put (meta_stage[d] is reusable on return); the fence keeps an earlier notify's flag
      // from landing after this one's. Only the ints in use travel (the experts' counts come last).
      fence_proxies(a.p);
      shoal::device::putmem_signal(shoal::thread, a.p.world, mine->meta[parity][a.rank], meta,
                                   sizeof(int) * (kMetaExpertsOffset + a.num_local_experts),
                                   &mine->meta_flag[parity][a.rank], tag(seq, 0), SHOAL_SIGNAL_SET, d);
    }
    finish_block(mine, true);
    return;
  }
  if (threadIdx.x < static_cast<unsigned>(R))
    wait_geq(a.p.world, &mine->meta_flag[parity][threadIdx.x], tag(seq, 0), a.timeout_ns,
             "shoal_ep dispatch (count exchange)", threadIdx.x, -1);
  __syncthreads();
  const volatile int(*meta)[kMetaInts] = mine->meta[parity];
  for (int i = threadIdx.x; i < R * (C + 1); i += blockDim.x)
    a.recv_chan_prefix[i] = meta[i / (C + 1)][kMaxRanks + i % (C + 1)];
  for (int i = threadIdx.x; i < R * R; i += blockDim.x) {
    int sum = 0;
    for (int k = 0; k <= i / R; ++k) sum += meta[k][i % R];
    a.rank_prefix_matrix[i] = sum;
  }
  if (a.host_counts != nullptr) {  // null when the caller gave num_worst_tokens (no host wait)
    if (threadIdx.x == 0) {
      int total = 0, most = 0;
      for (int s = 0; s < R; ++s) {
        total += meta[s][a.rank];
        for (int d = 0; d < R; ++d) most = max(most, meta[s][d]);  // every source's whole row: job-wide
      }
      a.host_counts[1] = total;
      a.host_counts[2] = most;
    }
    for (int e = threadIdx.x; e < a.num_local_experts; e += blockDim.x) {
      int sum = 0;
      for (int s = 0; s < R; ++s) sum += meta[s][kMetaExpertsOffset + e];
      a.host_counts[3 + e] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      shoal::ptx::fence_sc_sys();
      shoal::ptx::st_release_sys(reinterpret_cast<uint32_t*>(a.host_counts), 1u);
    }
  }
  finish_block(mine, true);
}

}  // namespace

std::size_t dispatch_slot_nbytes(std::size_t hidden_nbytes, int num_scales, int num_topk) {
  return detail::round16(detail::round16(hidden_nbytes) + 4u * (num_scales + 2 * num_topk + 1));
}

std::size_t combine_slot_nbytes(int hidden, int num_topk) {
  return detail::round16(detail::round16(2u * hidden) + 4u * num_topk);
}

int num_slabs(int num_ranks, bool staged) { return staged ? 2 * num_ranks - 1 : num_ranks; }

std::size_t slot_capacity(std::size_t buffer_nbytes, int num_ranks, std::size_t slot_nbytes, bool staged) {
  if (buffer_nbytes <= kControlNbytes || num_ranks <= 0 || slot_nbytes == 0) return 0;
  return (buffer_nbytes - kControlNbytes) / (static_cast<std::size_t>(num_slabs(num_ranks, staged)) * slot_nbytes);
}

namespace {
// One switch: unset, empty or "0" is off, "1" on, anything else an error naming the variable.
bool switch_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return false;
  if (std::strcmp(v, "1") == 0) return true;
  throw shoal::error(errc::invalid_argument, "shoal::ep", std::string(name) + " must be 0 or 1, not '" + v + "'");
}
}  // namespace

switches switches_from_env() {
  return {switch_from_env("SHOAL_EP_L2_DISCARD"), switch_from_env("SHOAL_EP_SELF_DIRECT"),
          switch_from_env("SHOAL_EP_INTERLEAVE")};
}

namespace detail {
cudaError_t load_dispatch_kernels();
cudaError_t load_combine_kernels();

void check_launch(const char* call) {
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    throw shoal::error(errc::cuda, call, std::string("kernel launch: ") + cudaGetErrorString(err));
}
}  // namespace detail

namespace {
void cuda_check(cudaError_t err, const char* call, const char* what) {
  if (err != cudaSuccess) throw shoal::error(errc::cuda, call, std::string(what) + ": " + cudaGetErrorString(err));
}
}  // namespace

void get_dispatch_layout(const layout_args& a, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(a.num_tokens_per_rank, 0, sizeof(int) * a.num_ranks, s);
  cudaMemsetAsync(a.num_tokens_per_expert, 0, sizeof(int) * a.num_experts, s);
  if (a.num_tokens > 0) {
    const int blocks = (a.num_tokens + kLayoutThreads - 1) / kLayoutThreads;
    const std::size_t smem = sizeof(int) * (a.num_ranks + a.num_experts);
    layout_kernel<<<blocks, kLayoutThreads, smem, s>>>(a);
  }
  detail::check_launch("shoal::ep::get_dispatch_layout");
}

void notify_dispatch(const notify_args& a, void* stream) {
  notify_kernel<<<a.num_ranks + 1, kNotifyThreads, 0, static_cast<cudaStream_t>(stream)>>>(a);
  detail::check_launch("shoal::ep::notify_dispatch");
}

void load_kernels() {
  cudaFuncAttributes attr{};
  const char* call = "shoal::ep::load_kernels";
  cuda_check(cudaFuncGetAttributes(&attr, layout_kernel), call, "layout kernel");
  cuda_check(cudaFuncGetAttributes(&attr, notify_kernel), call, "notify kernel");
  cuda_check(detail::load_dispatch_kernels(), call, "dispatch kernels");
  cuda_check(detail::load_combine_kernels(), call, "combine kernels");
}

void zero_device(void* addr, std::size_t nbytes) {
  cuda_check(cudaMemset(addr, 0, nbytes), "shoal::ep::zero_device", "cudaMemset");
  cuda_check(cudaDeviceSynchronize(), "shoal::ep::zero_device", "cudaDeviceSynchronize");
}

host_block host_alloc(std::size_t nbytes) {
  host_block h{};
  cuda_check(cudaHostAlloc(&h.host, nbytes, cudaHostAllocMapped), "shoal::ep::host_alloc", "cudaHostAlloc");
  std::memset(h.host, 0, nbytes);
  cuda_check(cudaHostGetDevicePointer(&h.device, h.host, 0), "shoal::ep::host_alloc", "cudaHostGetDevicePointer");
  return h;
}

void host_free(void* host) { cuda_check(cudaFreeHost(host), "shoal::ep::host_free", "cudaFreeHost"); }

void wait_counts(const host_block& h, int num_local_experts, double timeout_s, int* out) {
  auto* counts = static_cast<volatile int*>(h.host);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (std::uint64_t spins = 0; counts[0] == 0; ++spins) {
    if ((spins & 1023) != 0) continue;
    if (std::chrono::steady_clock::now() > deadline)
      throw shoal::error(errc::timeout, "shoal::ep::dispatch",
                         "the receive counts did not arrive within " + std::to_string(timeout_s) +
                             " s (a peer is not dispatching, or a kernel failed)");
    cuda_check(cudaPeekAtLastError(), "shoal::ep::dispatch", "waiting for the receive counts");
    std::this_thread::yield();
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  for (int i = 0; i <= num_local_experts + 1; ++i) out[i] = counts[1 + i];
  counts[0] = 0;
}

}  // namespace shoal::ep
