// combine: even blocks send channel c's received rows back to their source ranks, into the slot the
// row had in dispatch (16-byte NVLink stores, progress per (sender, channel) as in dispatch; a proxy
// source's rows are staged and put with a signal, as in dispatch); odd
// blocks reduce channel c's own tokens: one warp per token waits for each rank's row, sums in FP32
// (plus up to two biases) and writes BF16, and sums the returned top-k weights.
#include <cuda_bf16.h>

#include "common.cuh"

namespace shoal_ep {
namespace {

using namespace detail;

__device__ __forceinline__ int rows_in_channel(const combine_args& a, int s, int c) {
  return chan_begin(a.recv_chan_prefix, s, a.num_channels, c + 1) -
         chan_begin(a.recv_chan_prefix, s, a.num_channels, c);
}

__device__ void sender(const combine_args& a, uint64_t seq, int c) {
  const std::size_t slot_nbytes = a.slot_nbytes, cap = a.capacity;
  const std::size_t row_nbytes = 2u * a.hidden, weights_off = round16(row_nbytes);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  if (threadIdx.x < static_cast<unsigned>(a.num_ranks))
    wait_geq(a.p.world, &mine->entered[threadIdx.x], tag(seq, 0), a.timeout_ns, "shoal_ep combine (start)", threadIdx.x,
             c);
  __syncthreads();
  // Rows of every source, source by source, in batches; after each batch the sources it touched learn
  // how many of their rows are written.
  int total = 0;
  for (int s = 0; s < a.num_ranks; ++s) total += rows_in_channel(a, s, c);
  const int step = a.tokens_per_signal;
  const bool proxies = any_proxy(a.p, a.num_ranks);
  for (int b0 = 0; b0 < total; b0 += step) {
    const int b1 = min(b0 + step, total);
    for (int i = b0 + warp; i < b1; i += num_warps) {
      int s = 0, first = 0;
      while (i >= first + rows_in_channel(a, s, c)) first += rows_in_channel(a, s++, c);
      const int slot = chan_begin(a.recv_chan_prefix, s, a.num_channels, c) + (i - first);
      const int64_t row = recv_offset(a.rank_prefix_matrix, a.num_ranks, a.rank, s) + slot;
      uint8_t* out = out_slot_ptr(a.p, a.rank, a.num_ranks, s, cap, slot, slot_nbytes);
      const uint4* in = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(a.x) + row * row_nbytes);
      for (int k = lane; k < static_cast<int>(row_nbytes / 16); k += 32)
        reinterpret_cast<uint4*>(out)[k] = __ldg(in + k);
      if (lane < a.num_topk)
        reinterpret_cast<float*>(out + weights_off)[lane] = __ldg(a.topk_weights + row * a.num_topk + lane);
    }
    __syncthreads();
    if (threadIdx.x < static_cast<unsigned>(a.num_ranks) && !is_proxy(a.p, threadIdx.x)) {
      const int s = threadIdx.x;
      int first = 0;
      for (int r = 0; r < s; ++r) first += rows_in_channel(a, r, c);
      const int n = rows_in_channel(a, s, c);
      if (b1 > first && b0 < first + n)
        signal(&ctrl(a.p.base[s])->combine_progress[a.rank][c], tag(seq, static_cast<uint32_t>(min(b1 - first, n))));
    }
    if (proxies && threadIdx.x == 0) {
      // Proxy sources touched by this batch: their rows [lo, hi) of the channel sit in consecutive slots.
      bool fenced = false;
      for (int s = 0, first = 0; s < a.num_ranks; first += rows_in_channel(a, s++, c)) {
        const int n = rows_in_channel(a, s, c);
        if (!is_proxy(a.p, s) || b1 <= first || b0 >= first + n) continue;
        if (!fenced) fence_proxies(a.p), fenced = true;
        const int lo = max(b0 - first, 0), hi = min(b1 - first, n);
        const std::size_t slot0 = chan_begin(a.recv_chan_prefix, s, a.num_channels, c);
        put_slots(a.p, a.rank, a.num_ranks, s, cap, slot0 + lo, slot0 + hi, slot_nbytes,
                  &ctrl(a.p.base[a.rank])->combine_progress[a.rank][c], tag(seq, static_cast<uint32_t>(hi)));
      }
    }
  }
  // The staging slabs are rewritten by the next call: its puts from them must be complete first.
  if (proxies && threadIdx.x == 0) quiet_proxies(a.p);
}

__device__ __forceinline__ void add_bf16x8(float (&acc)[8], uint4 v) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    acc[2 * i] += f.x;
    acc[2 * i + 1] += f.y;
  }
}

__device__ void receiver(const combine_args& a, uint64_t seq, int c) {
  const std::size_t slot_nbytes = a.slot_nbytes, cap = a.capacity;
  const std::size_t weights_off = round16(2u * a.hidden);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  const int t0 = token_begin(a.num_tokens, a.num_channels, c), t1 = token_begin(a.num_tokens, a.num_channels, c + 1);
  uint32_t seen = 0;  // lane d < R: rows of rank d seen written in this channel
  for (int t = t0 + warp; t < t1; t += num_warps) {
    const int my_slot = lane < a.num_ranks ? a.send_slot[static_cast<int64_t>(t) * a.num_ranks + lane] : -1;
    if (my_slot >= 0) {
      const uint32_t need = my_slot + 1 - chan_begin(a.send_chan_prefix, lane, a.num_channels, c);
      if (seen < need)
        seen = static_cast<uint32_t>(wait_geq(a.p.world, &mine->combine_progress[lane][c], tag(seq, need), a.timeout_ns,
                                              "shoal_ep combine (receive)", lane, c));
    }
    __syncwarp();
    const uint8_t* rows[kMaxRanks];
#pragma unroll
    for (int d = 0; d < kMaxRanks; ++d) {
      const int s = __shfl_sync(0xffffffffu, my_slot, d);
      rows[d] = (d < a.num_ranks && s >= 0) ? slot_ptr(a.p.base[a.rank], d, cap, s, slot_nbytes) : nullptr;
    }
    const int n8 = a.hidden / 8;
    for (int k = lane; k < n8; k += 32) {
      float acc[8] = {};
#pragma unroll
      for (int d = 0; d < kMaxRanks; ++d)
        if (rows[d] != nullptr) add_bf16x8(acc, ld_cg(rows[d] + 16 * k));
      const int64_t at = static_cast<int64_t>(t) * n8 + k;
      if (a.bias0 != nullptr) add_bf16x8(acc, __ldg(static_cast<const uint4*>(a.bias0) + at));
      if (a.bias1 != nullptr) add_bf16x8(acc, __ldg(static_cast<const uint4*>(a.bias1) + at));
      uint4 o;
      __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
      for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(acc[2 * i], acc[2 * i + 1]);
      static_cast<uint4*>(a.combined_x)[at] = o;
    }
    if (lane < a.num_topk && a.combined_topk_weights != nullptr) {
      float w = 0.f;
#pragma unroll
      for (int d = 0; d < kMaxRanks; ++d)
        if (rows[d] != nullptr) w += __ldcg(reinterpret_cast<const float*>(rows[d] + weights_off) + lane);
      a.combined_topk_weights[static_cast<int64_t>(t) * a.num_topk + lane] = w;
    }
  }
}

}  // namespace

cudaError_t detail::load_combine_kernel() { return load_channels<combine_args, sender, receiver>(); }

void combine(const combine_args& args, cudaStream_t stream) {
  combine_args a = args;
  a.slot_nbytes = combine_slot_nbytes(a.hidden, a.num_topk);
  a.capacity = slot_capacity(a.buffer_nbytes, a.num_ranks, a.slot_nbytes, a.p.staged);
  launch_channels<combine_args, sender, receiver>(a, stream);
}

}  // namespace shoal_ep
