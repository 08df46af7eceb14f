// dispatch: even blocks send channel c's tokens, one warp per token, 16-byte stores straight into
// each mapped destination's slab over NVLink (a proxy peer's rows go to its staging slab in this
// rank's buffer); odd blocks receive channel c from every source into recv_x. A sender publishes per
// (source, channel) the slots written so far (fence, then release store; to a proxy peer, one shoal
// put-with-signal of the slots staged since the last step); a receiving warp waits (acquire) for the
// slot of its row, then copies it out.
#include "common.cuh"

namespace shoal_ep {
namespace {

using namespace detail;

struct dispatch_slot {
  std::size_t scales_off, idx_off, weights_off, src_off;
};

__device__ __forceinline__ dispatch_slot slot_layout(const dispatch_args& a) {
  dispatch_slot s;
  s.scales_off = round16(a.hidden_nbytes);
  s.idx_off = s.scales_off + 4u * a.num_scales;
  s.weights_off = s.idx_off + 4u * a.num_topk;
  s.src_off = s.weights_off + 4u * a.num_topk;
  return s;
}

// One warp copies token t to every destination rank that holds one of its experts.
__device__ __forceinline__ void send_token(const dispatch_args& a, const dispatch_slot& L, std::size_t cap,
                                           std::size_t slot_nbytes, int t, int lane) {
  const int my_slot = lane < a.num_ranks ? a.send_slot[static_cast<int64_t>(t) * a.num_ranks + lane] : -1;
  uint8_t* rows[kMaxRanks];
#pragma unroll
  for (int d = 0; d < kMaxRanks; ++d) {
    const int s = __shfl_sync(0xffffffffu, my_slot, d);
    rows[d] = (d < a.num_ranks && s >= 0) ? out_slot_ptr(a.p, a.rank, a.num_ranks, d, cap, s, slot_nbytes) : nullptr;
  }
  const uint4* src = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(a.x) + t * a.hidden_nbytes);
  const int n16 = static_cast<int>(a.hidden_nbytes / 16);
  for (int i = lane; i < n16; i += 32) {
    const uint4 v = __ldg(src + i);
#pragma unroll
    for (int d = 0; d < kMaxRanks; ++d)
      if (rows[d] != nullptr) reinterpret_cast<uint4*>(rows[d])[i] = v;
  }
  for (int i = lane; i < a.num_scales; i += 32) {
    const float v = __ldg(a.x_scales + static_cast<int64_t>(t) * a.num_scales + i);
#pragma unroll
    for (int d = 0; d < kMaxRanks; ++d)
      if (rows[d] != nullptr) reinterpret_cast<float*>(rows[d] + L.scales_off)[i] = v;
  }
  if (lane < a.num_topk) {
    const int64_t e = __ldg(a.topk_idx + static_cast<int64_t>(t) * a.num_topk + lane);
    const float w =
        a.topk_weights != nullptr ? __ldg(a.topk_weights + static_cast<int64_t>(t) * a.num_topk + lane) : 0.f;
#pragma unroll
    for (int d = 0; d < kMaxRanks; ++d) {
      if (rows[d] == nullptr) continue;
      const int64_t first = static_cast<int64_t>(d) * a.num_local_experts;
      const bool local = e >= first && e < first + a.num_local_experts;
      reinterpret_cast<int*>(rows[d] + L.idx_off)[lane] = local ? static_cast<int>(e - first) : -1;
      reinterpret_cast<float*>(rows[d] + L.weights_off)[lane] = local ? w : 0.f;
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int d = 0; d < kMaxRanks; ++d)
      if (rows[d] != nullptr) *reinterpret_cast<int*>(rows[d] + L.src_off) = t;
  }
}

// The last (kLast) or first slot of destination d among tokens [b0, b1), or -1 when none of them goes
// to d. The slots in between are consecutive: send_slot is a scan in token order.
template <bool kLast>
__device__ __forceinline__ int edge_slot(const dispatch_args& a, int d, int b0, int b1) {
  int slot = -1;
  for (int i = 0; i < b1 - b0 && slot < 0; ++i)
    slot = a.send_slot[static_cast<int64_t>(kLast ? b1 - 1 - i : b0 + i) * a.num_ranks + d];
  return slot;
}

__device__ void sender(const dispatch_args& a, uint64_t seq, int c) {
  const dispatch_slot L = slot_layout(a);
  const std::size_t slot_nbytes = a.slot_nbytes, cap = a.capacity;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  // A destination's buffer is free once its kernel of this call has started (its earlier work is done).
  if (threadIdx.x < static_cast<unsigned>(a.num_ranks))
    wait_geq(a.p.world, &mine->entered[threadIdx.x], tag(seq, 0), a.timeout_ns, "shoal_ep dispatch (start)",
             threadIdx.x, c);
  __syncthreads();
  const int t0 = token_begin(a.num_tokens, a.num_channels, c), t1 = token_begin(a.num_tokens, a.num_channels, c + 1);
  const int step = a.tokens_per_signal;
  const bool proxies = any_proxy(a.p, a.num_ranks);
  for (int b0 = t0; b0 < t1; b0 += step) {
    const int b1 = min(b0 + step, t1);
    for (int t = b0 + warp; t < b1; t += num_warps) send_token(a, L, cap, slot_nbytes, t, lane);
    __syncthreads();
    // Slots count from the channel's first one: the progress word holds how many are written.
    if (threadIdx.x < static_cast<unsigned>(a.num_ranks) && !is_proxy(a.p, threadIdx.x)) {
      const int d = threadIdx.x;
      const int last = edge_slot<true>(a, d, b0, b1);
      const int done = last + 1 - chan_begin(a.send_chan_prefix, d, a.num_channels, c);
      if (last >= 0) signal(&ctrl(a.p.base[d])->dispatch_progress[a.rank][c], tag(seq, static_cast<uint32_t>(done)));
    }
    if (proxies && threadIdx.x == 0) {  // the slots staged in this step, one put-with-signal per proxy peer
      bool fenced = false;
      for (int d = 0; d < a.num_ranks; ++d) {
        if (!is_proxy(a.p, d)) continue;
        const int last = edge_slot<true>(a, d, b0, b1);
        if (last < 0) continue;
        if (!fenced) fence_proxies(a.p), fenced = true;
        const int done = last + 1 - chan_begin(a.send_chan_prefix, d, a.num_channels, c);
        put_slots(a.p, a.rank, a.num_ranks, d, cap, edge_slot<false>(a, d, b0, b1), last + 1, slot_nbytes,
                  &ctrl(a.p.base[a.rank])->dispatch_progress[a.rank][c], tag(seq, static_cast<uint32_t>(done)));
      }
    }
  }
  // The staging slabs are rewritten by the next call: its puts from them must be complete first.
  if (proxies && threadIdx.x == 0) quiet_proxies(a.p);
}

__device__ void receiver(const dispatch_args& a, uint64_t seq, int c) {
  const dispatch_slot L = slot_layout(a);
  const std::size_t slot_nbytes = a.slot_nbytes, cap = a.capacity;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  const int C = a.num_channels;
  int total = 0;
  for (int s = 0; s < a.num_ranks; ++s)
    total += chan_begin(a.recv_chan_prefix, s, C, c + 1) - chan_begin(a.recv_chan_prefix, s, C, c);
  uint32_t seen[kMaxRanks] = {};
  int s = 0, s_first = 0;  // the row's source, and the index of its first row in this channel's list
  for (int i = warp; i < total; i += num_warps) {
    int n = chan_begin(a.recv_chan_prefix, s, C, c + 1) - chan_begin(a.recv_chan_prefix, s, C, c);
    while (i >= s_first + n) {
      s_first += n;
      ++s;
      n = chan_begin(a.recv_chan_prefix, s, C, c + 1) - chan_begin(a.recv_chan_prefix, s, C, c);
    }
    const int j = i - s_first;
    if (lane == 0 && seen[s] <= static_cast<uint32_t>(j))
      seen[s] = static_cast<uint32_t>(wait_geq(a.p.world, &mine->dispatch_progress[s][c], tag(seq, j + 1), a.timeout_ns,
                                               "shoal_ep dispatch (receive)", s, c));
    __syncwarp();
    const int slot = chan_begin(a.recv_chan_prefix, s, C, c) + j;
    const int64_t row = recv_offset(a.rank_prefix_matrix, a.num_ranks, a.rank, s) + slot;
    if (row >= a.num_recv) continue;  // more rows than num_worst_tokens: the caller's bound, never overrun
    const uint8_t* in = slot_ptr(a.p.base[a.rank], s, cap, slot, slot_nbytes);
    uint4* out = reinterpret_cast<uint4*>(static_cast<uint8_t*>(a.recv_x) + row * a.hidden_nbytes);
    const int n16 = static_cast<int>(a.hidden_nbytes / 16);
    for (int k = lane; k < n16; k += 32) out[k] = ld_cg(in + 16 * k);
    for (int k = lane; k < a.num_scales; k += 32)
      a.recv_x_scales[row * a.num_scales + k] = __ldcg(reinterpret_cast<const float*>(in + L.scales_off) + k);
    if (lane < a.num_topk) {
      a.recv_topk_idx[row * a.num_topk + lane] = __ldcg(reinterpret_cast<const int*>(in + L.idx_off) + lane);
      a.recv_topk_weights[row * a.num_topk + lane] = __ldcg(reinterpret_cast<const float*>(in + L.weights_off) + lane);
    }
    if (lane == 0) a.recv_src_idx[row] = __ldcg(reinterpret_cast<const int*>(in + L.src_off));
  }
}

}  // namespace

cudaError_t detail::load_dispatch_kernel() { return load_channels<dispatch_args, sender, receiver>(); }

void dispatch(const dispatch_args& args, cudaStream_t stream) {
  dispatch_args a = args;
  a.slot_nbytes = dispatch_slot_nbytes(a.hidden_nbytes, a.num_scales, a.num_topk);
  a.capacity = slot_capacity(a.buffer_nbytes, a.num_ranks, a.slot_nbytes, a.p.staged);
  launch_channels<dispatch_args, sender, receiver>(a, stream);
}

}  // namespace shoal_ep
