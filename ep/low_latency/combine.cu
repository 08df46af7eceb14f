// Low-latency combine, one kernel (`combine_kernel`) of two halves: a sending block returns every row an
// expert received to its source token's slot on the source rank with a tagged flag (put-with-signal:
// data before flag); a receiving block waits for the slots of each token and sums weight_k * row_k in
// FP32, rounding once to BF16. A launch runs either half or both (receiving blocks after sending ones).
#include <cuda_bf16.h>

#include <algorithm>

#include "common.cuh"

namespace shoal::ep::ll {
namespace {

using detail::kThreads;

struct combine_params : detail::kernel_common {
  combine_args a;
  int epoch_slot;
};

/// The sending block of (local expert l, destination rank r) = (b / R, b % R); each warp sends whole rows, then
/// the block sets r's finish word of expert e (every block, zero rows included: r's combine waits for all E).
__device__ void send_pair(const combine_params& p, int b) {
  const combine_args& a = p.a;
  const int l = b / p.num_ranks, r = b % p.num_ranks;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int64_t range = a.layout_range[static_cast<size_t>(l) * p.num_ranks + r];
  const int begin = static_cast<int>(range >> 32), count = static_cast<int>(range & 0xffffffff);
  const uint64_t tag = detail::call_tag(p.ws, p.epoch_slot);
  const size_t rm = static_cast<size_t>(p.num_ranks) * p.max_tokens;
  const size_t row_nbytes = static_cast<size_t>(p.hidden) * 2;
  const int e = p.w.my_pe * p.num_local + l;
  for (int i = warp; i < count; i += warps) {
    const size_t row = static_cast<size_t>(l) * rm + begin + i;
    const int t = a.src_info[row];
    const size_t slot = static_cast<size_t>(e) * p.max_tokens + t;
    shoal::device::putmem_signal(shoal::warp, p.w, p.h.combine_data + slot * row_nbytes,
                                 static_cast<const char*>(a.x) + row * row_nbytes, row_nbytes, p.h.combine_flag + slot,
                                 tag, SHOAL_SIGNAL_SET, r);
  }
  __syncthreads();
  if (threadIdx.x == 0) shoal::device::signal_op(p.w, p.h.combine_finish + e, tag, SHOAL_SIGNAL_SET, r);
}

/// One token: waits for its experts' slots, then the weighted FP32 sum.
__device__ void recv_token(const combine_params& p, int t, uint64_t tag, int* s_expert, float* s_weight) {
  const combine_args& a = p.a;
  const int K = a.num_topk, tid = threadIdx.x;
  if (tid < K) {
    const int64_t e64 = a.topk_idx[static_cast<size_t>(t) * K + tid];
    const int e = (e64 >= 0 && e64 < p.num_experts) ? static_cast<int>(e64) : -1;
    s_expert[tid] = e;
    s_weight[tid] = a.topk_weights[static_cast<size_t>(t) * K + tid];
    if (e >= 0 && !a.raw_copy) {  // raw_copy (measurement): no wait
      const uint64_t start = ptx::globaltimer();
      detail::wait_tag(p.w, p.h.combine_flag + static_cast<size_t>(e) * p.max_tokens + t, tag, 0,
                       "shoal::ep::ll combine (receive): row from a later call", e / p.num_local, e);
      detail::add_wait_cost(a.wait_recv_cost_stats, e / p.num_local, start);
    }
  }
  __syncthreads();
  const size_t row_nbytes = static_cast<size_t>(p.hidden) * 2;
  const int chunks = p.hidden / 8;
  for (int c = tid; c < chunks; c += blockDim.x) {
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < K; ++k) {
      const int e = s_expert[k];
      if (e < 0) continue;
      const char* src = p.h.combine_data + (static_cast<size_t>(e) * p.max_tokens + t) * row_nbytes;
      const int4 raw = reinterpret_cast<const int4*>(src)[c];
      const auto* v = reinterpret_cast<const __nv_bfloat162*>(&raw);
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(v[i]);
        acc[2 * i] += s_weight[k] * f.x;
        acc[2 * i + 1] += s_weight[k] * f.y;
      }
    }
    int4 out;
    auto* o = reinterpret_cast<__nv_bfloat162*>(&out);
    for (int i = 0; i < 4; ++i) o[i] = __floats2bfloat162_rn(acc[2 * i], acc[2 * i + 1]);
    reinterpret_cast<int4*>(static_cast<__nv_bfloat16*>(a.out) + static_cast<size_t>(t) * p.hidden)[c] = out;
  }
  __syncthreads();  // s_expert / s_weight are reused by the next token
}

/// Blocks [0, send_blocks) send pair blockIdx.x; the next recv_blocks blocks take tokens in turn. A launch
/// with receiving blocks advances the epoch when its last block finishes.
__global__ void __launch_bounds__(kThreads)
    combine_kernel(const __grid_constant__ combine_params p, int send_blocks, int recv_blocks) {
  __shared__ int s_expert[kMaxTopk];
  __shared__ float s_weight[kMaxTopk];
  const uint64_t tag = detail::call_tag(p.ws, p.epoch_slot);
  if (static_cast<int>(blockIdx.x) < send_blocks) {
    send_pair(p, blockIdx.x);
  } else {
    if (static_cast<int>(blockIdx.x) == send_blocks && !p.a.raw_copy) {
      // Every expert's owner has finished its combine send for this PE, so has finished its dispatch receive of
      // this half (stream order): this PE's next dispatch or combine, after this kernel, cannot overwrite a half
      // a peer still reads. Zero-row pairs signal too, so the dependency is all-to-all.
      for (int e = threadIdx.x; e < p.num_experts; e += blockDim.x)
        detail::wait_tag(p.w, p.h.combine_finish + e, tag, 0, "shoal::ep::ll combine (finish)", e / p.num_local, e);
    }
    for (int t = blockIdx.x - send_blocks; t < p.a.num_tokens; t += recv_blocks)
      recv_token(p, t, tag, s_expert, s_weight);
  }
  if (recv_blocks > 0) detail::finish_receive(p.ws, p.epoch_slot);
}

combine_params params_of(const layout& lay, const device_world& w, const combine_args& a) {
  combine_params p{};
  static_cast<detail::kernel_common&>(p) = detail::kernel_common::make(lay, w, a.buffer, a.half);
  p.a = a;
  p.epoch_slot = 2 + a.half;  // combine's epochs follow dispatch's two
  return p;
}

}  // namespace

void combine(const layout& lay, const device_world& w, const combine_args& a, bool send, bool recv, void* stream) {
  const combine_params p = params_of(lay, w, a);
  const int send_blocks = send ? lay.num_experts : 0;
  const int recv_blocks = recv ? std::max(1, std::min(a.num_tokens, a.recv_blocks)) : 0;
  if (send_blocks + recv_blocks == 0) return;
  combine_kernel<<<send_blocks + recv_blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, send_blocks,
                                                                                                recv_blocks);
  detail::check_launch("shoal::ep::ll::combine");
}

namespace detail {
cudaError_t load_combine_kernel() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, combine_kernel);
}
}  // namespace detail

}  // namespace shoal::ep::ll
