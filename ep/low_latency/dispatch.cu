// Low-latency dispatch, one kernel (`dispatch_kernel`) of two halves: a sending block stores one message per
// (token, selected expert) straight into the expert owner's receive slot (FP8 cast on the way), then
// publishes per (expert, this rank) a tagged count after the data; a receiving block waits for the
// counts and packs the rows. A launch runs either half or both (receiving blocks after sending ones).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "common.cuh"

namespace shoal::ep::ll {
namespace {

using detail::kThreads;

struct dispatch_params : detail::kernel_common {
  dispatch_args a;
  size_t msg_nbytes;
  int32_t* send_done;
  int epoch_slot;
};

/// FP8 e4m3 of 8 BF16 values with the scale of their 128-channel group (16 lanes share one group).
/// Returns the 8 bytes; *scale_inv is what the receiver multiplies by to dequantize.
__device__ __forceinline__ uint2 to_fp8(const int4 raw, bool round_scale, float* scale_inv) {
  const auto* v = reinterpret_cast<const __nv_bfloat162*>(&raw);
  float2 f[4];
  float amax = 0.f;
  for (int i = 0; i < 4; ++i) {
    f[i] = __bfloat1622float2(v[i]);
    amax = fmaxf(amax, fmaxf(fabsf(f[i].x), fabsf(f[i].y)));
  }
  const unsigned mask = 0xffffu << (threadIdx.x & 16u);
  for (int off = 8; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(mask, amax, off));
  float inv = fmaxf(amax, 1e-4f) / 448.f;
  if (round_scale) inv = exp2f(ceilf(log2f(inv)));
  const float scale = 1.f / inv;
  *scale_inv = inv;
  uint2 out;
  auto* o = reinterpret_cast<__nv_fp8x2_storage_t*>(&out);
  for (int i = 0; i < 4; ++i) {
    o[i] = __nv_cvt_float2_to_fp8x2(make_float2(f[i].x * scale, f[i].y * scale), __NV_SATFINITE, __NV_E4M3);
  }
  return out;
}

/// The sending block of token t (t == num_tokens: the block of a PE with no tokens, which only signals).
__device__ void send_token(const dispatch_params& p, int t) {
  extern __shared__ int s_count[];  // [num_experts]: tokens of this PE per expert
  __shared__ int s_before[kMaxTopk];
  __shared__ int s_expert[kMaxTopk];
  __shared__ char* s_dst[kMaxTopk];
  const dispatch_args& a = p.a;
  const int K = a.num_topk, tid = threadIdx.x;
  const bool has_token = t < a.num_tokens;
  for (int i = tid; i < p.num_experts; i += blockDim.x) s_count[i] = 0;
  if (tid < K) {
    const int64_t e = has_token ? a.topk_idx[static_cast<size_t>(t) * K + tid] : -1;
    s_expert[tid] = (e >= 0 && e < p.num_experts) ? static_cast<int>(e) : -1;
    s_before[tid] = 0;
  }
  __syncthreads();
  // Every block counts all tokens per expert; the slot of (t, k) is the number of earlier tokens
  // of this PE that chose the same expert (experts of one token are distinct).
  const int total = a.num_tokens * K;
  for (int j = tid; j < total; j += blockDim.x) {
    const int64_t e = a.topk_idx[j];
    if (e < 0 || e >= p.num_experts) continue;
    atomicAdd(&s_count[e], 1);
    if (j / K < t) {
      for (int k = 0; k < K; ++k) {
        if (s_expert[k] == e) atomicAdd(&s_before[k], 1);
      }
    }
  }
  __syncthreads();
  const uint64_t tag = detail::call_tag(p.ws, p.epoch_slot) << 32;
  if (has_token && tid < K && s_expert[tid] >= 0) {
    const int e = s_expert[tid], owner = e / p.num_local, l = e % p.num_local;
    char* local = p.h.dispatch_data +
                  ((static_cast<size_t>(l) * p.num_ranks + p.w.my_pe) * p.max_tokens + s_before[tid]) * p.msg_nbytes;
    char* dst = shoal::device::ptr(p.w, local, owner);
    // The host refuses worlds with such peers at construction; this is the kernel's own check (report + trap).
    if (dst == nullptr)
      shoal::device::report_unreachable(p.w, "shoal::ep::ll dispatch (low-latency EP needs load/store peers)", owner);
    s_dst[tid] = dst;
    *reinterpret_cast<int4*>(dst) = make_int4(t, 0, 0, 0);
  }
  __syncthreads();
  if (has_token) {
    const int chunks = p.hidden / 8;  // 8 channels (one int4 of BF16) per chunk
    const auto* row =
        reinterpret_cast<const int4*>(static_cast<const __nv_bfloat16*>(a.x) + static_cast<size_t>(t) * p.hidden);
    for (int c = tid; c < chunks; c += blockDim.x) {
      const int4 raw = row[c];
      if (a.fp8) {
        float scale_inv;
        const uint2 q = to_fp8(raw, a.round_scale, &scale_inv);
        for (int k = 0; k < K; ++k) {
          if (s_expert[k] < 0) continue;
          *reinterpret_cast<uint2*>(s_dst[k] + 16 + static_cast<size_t>(c) * 8) = q;
          if ((c & 15) == 0) *reinterpret_cast<float*>(s_dst[k] + 16 + p.hidden + (c / 16) * 4) = scale_inv;
        }
      } else {
        for (int k = 0; k < K; ++k) {
          if (s_expert[k] >= 0) *reinterpret_cast<int4*>(s_dst[k] + 16 + static_cast<size_t>(c) * 16) = raw;
        }
      }
    }
  }
  __syncthreads();  // every thread's stores come before the releases below (barrier + fence)
  if (has_token && tid < K && s_expert[tid] >= 0) {
    const int e = s_expert[tid];
    __threadfence_system();
    cuda::atomic_ref<int32_t, cuda::thread_scope_system> done(p.send_done[e]);
    if (done.fetch_add(1, cuda::memory_order_acq_rel) + 1 == s_count[e]) {
      // The last token of this PE for expert e: every block's data for e is ordered before this
      // point (their fence + add, our acquire); publish the count after it.
      done.store(0, cuda::memory_order_relaxed);
      __threadfence_system();
      const int owner = e / p.num_local, l = e % p.num_local;
      shoal::device::signal_op(p.w, p.h.dispatch_sig + static_cast<size_t>(l) * p.num_ranks + p.w.my_pe,
                               tag | static_cast<uint32_t>(s_count[e]), SHOAL_SIGNAL_SET, owner);
    }
  }
  if (t == 0) {  // experts this PE sends nothing: a zero count, no data to order
    for (int e = tid; e < p.num_experts; e += blockDim.x) {
      if (s_count[e] != 0) continue;
      const int owner = e / p.num_local, l = e % p.num_local;
      shoal::device::signal_op(p.w, p.h.dispatch_sig + static_cast<size_t>(l) * p.num_ranks + p.w.my_pe, tag,
                               SHOAL_SIGNAL_SET, owner);
    }
  }
}

/// One (local expert l, source rank r): waits for the counts of every source rank for l (the offset
/// of r's rows is the sum of the counts before it), then copies r's rows.
__device__ void recv_pair(const dispatch_params& p, int l, int r, uint64_t tag, int* s_count) {
  const dispatch_args& a = p.a;
  const int tid = threadIdx.x;
  for (int j = tid; j < p.num_ranks; j += blockDim.x) {
    const uint64_t start = ptx::globaltimer();
    uint64_t* sig = p.h.dispatch_sig + static_cast<size_t>(l) * p.num_ranks + j;
    // raw_copy (measurement): no wait; the counts are whatever the last call left (same routing, same rows).
    const uint64_t v = a.raw_copy ? ptx::ld_relaxed_sys(sig)
                                  : detail::wait_tag(p.w, sig, tag, 32,
                                                     "shoal::ep::ll dispatch (receive): count from a later call", j, l);
    s_count[j] = static_cast<int>(v & 0xffffffffu);
    if (j == r) detail::add_wait_cost(a.wait_recv_cost_stats, j, start);
  }
  __syncthreads();
  int begin = 0, all = 0;
  for (int j = 0; j < p.num_ranks; ++j) {
    begin += j < r ? s_count[j] : 0;
    all += s_count[j];
  }
  const int count = s_count[r];
  const size_t rm = static_cast<size_t>(p.num_ranks) * p.max_tokens;
  if (tid == 0) {
    a.layout_range[static_cast<size_t>(l) * p.num_ranks + r] = (static_cast<int64_t>(begin) << 32) | count;
    if (r == 0) {
      a.recv_count[l] = all;
      if (a.cumulative_recv_stats != nullptr) atomicAdd(a.cumulative_recv_stats + l, all);
    }
  }
  const char* msgs = p.h.dispatch_data + (static_cast<size_t>(l) * p.num_ranks + r) * p.max_tokens * p.msg_nbytes;
  const int H = p.hidden;
  const int chunks = a.fp8 ? H / 16 : H / 8;  // int4 chunks of the payload
  for (int idx = tid; idx < count * chunks; idx += blockDim.x) {
    const int i = idx / chunks, c = idx % chunks;
    const char* msg = msgs + static_cast<size_t>(i) * p.msg_nbytes;
    const size_t row = static_cast<size_t>(l) * rm + begin + i;
    const int4 v = *reinterpret_cast<const int4*>(msg + 16 + static_cast<size_t>(c) * 16);
    reinterpret_cast<int4*>(static_cast<char*>(a.recv_x) + row * (a.fp8 ? H : 2 * H))[c] = v;
    if (c == 0) a.recv_src_info[row] = *reinterpret_cast<const int*>(msg);
  }
  if (a.fp8) {
    const int groups = H / 128, packed = H / 512;
    const int per_row = a.ue8m0 ? packed : groups;
    for (int idx = tid; idx < count * per_row; idx += blockDim.x) {
      const int i = idx / per_row, g = idx % per_row;
      const auto* scales = reinterpret_cast<const float*>(msgs + static_cast<size_t>(i) * p.msg_nbytes + 16 + H);
      const size_t row = begin + i;
      if (a.ue8m0) {  // four UE8M0 exponents per int32, group 4g in the lowest byte
        uint32_t word = 0;
        for (int b = 0; b < 4; ++b) word |= ((__float_as_uint(scales[g * 4 + b]) >> 23) & 0xffu) << (8 * b);
        static_cast<int32_t*>(a.recv_scales)[(static_cast<size_t>(l) * packed + g) * rm + row] =
            static_cast<int32_t>(word);
      } else {
        static_cast<float*>(a.recv_scales)[(static_cast<size_t>(l) * groups + g) * rm + row] = scales[g];
      }
    }
  }
}

/// Blocks [0, send_blocks) send token blockIdx.x; the next recv_blocks blocks take (local expert, source
/// rank) pairs in turn. A launch with receiving blocks advances the epoch when its last block finishes.
__global__ void __launch_bounds__(kThreads)
    dispatch_kernel(const __grid_constant__ dispatch_params p, int send_blocks, int recv_blocks) {
  __shared__ int s_count[kMaxRanks];
  const uint64_t tag = detail::call_tag(p.ws, p.epoch_slot) << 32;
  if (static_cast<int>(blockIdx.x) < send_blocks) {
    send_token(p, blockIdx.x);
  } else {
    for (int pair = blockIdx.x - send_blocks; pair < p.num_experts; pair += recv_blocks) {
      recv_pair(p, pair / p.num_ranks, pair % p.num_ranks, tag, s_count);
      __syncthreads();  // s_count is reused by the next pair
    }
  }
  if (recv_blocks > 0) detail::finish_receive(p.ws, p.epoch_slot);
}

dispatch_params params_of(const layout& lay, const device_world& w, const dispatch_args& a) {
  dispatch_params p{};
  static_cast<detail::kernel_common&>(p) = detail::kernel_common::make(lay, w, a.buffer, a.half);
  p.a = a;
  p.msg_nbytes = lay.msg_nbytes;
  p.send_done = detail::send_done_of(lay, a.buffer, a.half);
  p.epoch_slot = a.half;
  return p;
}

}  // namespace

void dispatch(const layout& lay, const device_world& w, const dispatch_args& a, bool send, bool recv, void* stream) {
  const dispatch_params p = params_of(lay, w, a);
  const int send_blocks = send ? std::max(a.num_tokens, 1) : 0;
  const int recv_blocks = recv ? std::max(1, std::min(lay.num_experts, a.recv_blocks)) : 0;
  if (send_blocks + recv_blocks == 0) return;
  const size_t smem = send ? sizeof(int) * static_cast<size_t>(lay.num_experts) : 0;
  if (smem > 48 * 1024) {
    cudaFuncSetAttribute(dispatch_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  }
  dispatch_kernel<<<send_blocks + recv_blocks, kThreads, smem, static_cast<cudaStream_t>(stream)>>>(p, send_blocks,
                                                                                                    recv_blocks);
  detail::check_launch("shoal::ep::ll::dispatch");
}

namespace detail {
cudaError_t load_combine_kernel();
}  // namespace detail

void load_kernels() {
  cudaFuncAttributes attr{};
  for (cudaError_t err : {cudaFuncGetAttributes(&attr, dispatch_kernel), detail::load_combine_kernel()}) {
    if (err != cudaSuccess)
      throw shoal::error(errc::cuda, "shoal::ep::ll::load_kernels",
                         std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(err));
  }
}

}  // namespace shoal::ep::ll
