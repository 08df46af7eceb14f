// dispatch: even blocks send channel c's tokens, odd blocks receive channel c from every source.
// A sending block's copy warps take its tokens round-robin, one warp per token: the row is read once
// (several 16-byte loads in flight per lane) and stored straight into each mapped destination's slab
// over NVLink (a proxy peer's rows go to its staging slab in this rank's buffer). Its last warp
// publishes, per destination, how many of the channel's slots are written (fence, then release store;
// to a proxy peer, one shoal put-with-signal of the slots staged since the last signal), in order and
// at most every tokens_per_signal tokens. A receiving warp waits (acquire) for the slot of its row,
// then copies it out. The switches of channel_args (docs/ep.md, "Switches") drop read slots from L2, send the
// rank's own tokens past the slab (the receiving block copies them from x), and interleave the sources' rows.
#include "common.cuh"

namespace shoal::ep {
namespace {

using namespace detail;

constexpr int kUnroll = 4;  // 16-byte loads in flight per lane

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

// Expert e as rank d's local expert index, or -1 when d does not hold it.
__device__ __forceinline__ int local_expert(const dispatch_args& a, int64_t e, int d) {
  const int64_t first = static_cast<int64_t>(d) * a.num_local_experts;
  return e >= first && e < first + a.num_local_experts ? static_cast<int>(e - first) : -1;
}

// One warp copies token t to every destination rank that holds one of its experts (with self_direct, every one
// but this rank: this rank's receiving block copies such a token from x straight into recv_x).
template <int kRanks>
__device__ __forceinline__ void send_token(const dispatch_args& a, const dispatch_slot& L, int t, int lane) {
  const int my_slot = lane < a.num_ranks ? a.send_slot[static_cast<int64_t>(t) * a.num_ranks + lane] : -1;
  uint8_t* rows[kRanks];
#pragma unroll
  for (int d = 0; d < kRanks; ++d) {
    const int s = __shfl_sync(0xffffffffu, my_slot, d);
    rows[d] = (d < a.num_ranks && s >= 0 && !(a.sw.self_direct && d == a.rank))
                  ? out_slot_ptr(a.p, a.rank, a.num_ranks, d, a.capacity, s, a.slot_nbytes)
                  : nullptr;
  }
  bool any = false;  // the same on every lane: the pointers come from shuffles
#pragma unroll
  for (int d = 0; d < kRanks; ++d) any |= rows[d] != nullptr;
  if (!any) return;  // a token for no rank, or (self_direct) for this rank alone: nothing to read
  uint4* dst[kRanks];
#pragma unroll
  for (int d = 0; d < kRanks; ++d) dst[d] = reinterpret_cast<uint4*>(rows[d]);
  const auto* src = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(a.x) + t * a.hidden_nbytes);
  warp_copy<kUnroll>(dst, src, static_cast<int>(a.hidden_nbytes / 16), lane, load_input{});
  for (int i = lane; i < a.num_scales; i += 32) {
    const uint32_t v = __ldg(a.x_scales + t * a.scale_token_stride + i * a.scale_hidden_stride);
#pragma unroll
    for (int d = 0; d < kRanks; ++d)
      if (rows[d] != nullptr) reinterpret_cast<uint32_t*>(rows[d] + L.scales_off)[i] = v;
  }
  if (lane < a.num_topk) {
    const int64_t e = __ldg(a.topk_idx + static_cast<int64_t>(t) * a.num_topk + lane);
    const float w =
        a.topk_weights != nullptr ? __ldg(a.topk_weights + static_cast<int64_t>(t) * a.num_topk + lane) : 0.f;
#pragma unroll
    for (int d = 0; d < kRanks; ++d) {
      if (rows[d] == nullptr) continue;
      const int local = local_expert(a, e, d);
      reinterpret_cast<int*>(rows[d] + L.idx_off)[lane] = local;
      reinterpret_cast<float*>(rows[d] + L.weights_off)[lane] = local >= 0 ? w : 0.f;
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int d = 0; d < kRanks; ++d)
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

// The publisher: tokens [t0 + from, t0 + to) of channel c are written. Lane d < R signals a mapped
// destination d (slots written so far, counted from the channel's first); lane 0 puts a proxy peer's
// newly staged slots with the same count as the signal.
__device__ __noinline__ void publish_tokens(const dispatch_args& a, uint64_t seq, int c, int t0, int from, int to,
                                            bool proxies, int lane) {
  // With self_direct no receiver reads this rank's own slots, so nobody waits for their count.
  if (lane < a.num_ranks && !is_proxy(a.p, lane) && !(a.sw.self_direct && lane == a.rank)) {
    const int last = edge_slot<true>(a, lane, t0 + from, t0 + to);
    if (last >= 0) {
      const int done = last + 1 - chan_begin(a.send_chan_prefix, lane, a.num_channels, c);
      signal(&ctrl(a.p.base[lane])->dispatch_progress[a.rank][c], tag(seq, static_cast<uint32_t>(done)));
    }
  }
  if (proxies && lane == 0) {
    bool fenced = false;
    for (int d = 0; d < a.num_ranks; ++d) {
      if (!is_proxy(a.p, d)) continue;
      const int last = edge_slot<true>(a, d, t0 + from, t0 + to);
      if (last < 0) continue;
      if (!fenced) fence_proxies(a.p), fenced = true;
      const int done = last + 1 - chan_begin(a.send_chan_prefix, d, a.num_channels, c);
      put_slots(a.p, a.rank, a.num_ranks, d, a.capacity, edge_slot<false>(a, d, t0 + from, t0 + to), last + 1,
                a.slot_nbytes, &ctrl(a.p.base[a.rank])->dispatch_progress[a.rank][c],
                tag(seq, static_cast<uint32_t>(done)));
    }
  }
}

template <int kRanks>
__device__ void sender(const dispatch_args& a, uint64_t seq, int c) {
  __shared__ send_tracker tracker;
  const dispatch_slot L = slot_layout(a);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  tracker.init();
  wait_entered(a, seq, "shoal_ep dispatch (start)", c);
  const int t0 = token_begin(a.num_tokens, a.num_channels, c), t1 = token_begin(a.num_tokens, a.num_channels, c + 1);
  const int n = t1 - t0;
  if (warp < send_tracker::kCopyWarps) {
    int count = 0;
    for (int i = warp; i < n; i += send_tracker::kCopyWarps) {
      send_token<kRanks>(a, L, t0 + i, lane);
      tracker.record(warp, ++count, lane);
    }
    return;
  }
  if (a.raw_copy) return;
  const bool proxies = any_proxy(a.p, a.num_ranks);
  run_publisher(tracker, n, max(a.tokens_per_signal, 1), lane,
                [&](int from, int to) { publish_tokens(a, seq, c, t0, from, to, proxies, lane); });
  // The staging slabs are rewritten by the next call: its puts from them must be complete first.
  if (proxies && lane == 0) quiet_proxies(a.p);
}

// What channel c's receiving block handles: per source, its rows of this channel; with self_direct, this rank's
// place holds its own tokens of the channel instead (copied from x; those not for this rank are skipped).
template <int kRanks>
__device__ __forceinline__ row_list<kRanks> receive_list(const dispatch_args& a, int c) {
  row_list<kRanks> list;
  list.shift = a.sw.interleave ? kInterleaveShift : 0;
#pragma unroll
  for (int s = 0; s < kRanks; ++s) {
    const int rows = s < a.num_ranks ? chan_begin(a.recv_chan_prefix, s, a.num_channels, c + 1) -
                                           chan_begin(a.recv_chan_prefix, s, a.num_channels, c)
                                     : 0;
    const int own = token_begin(a.num_tokens, a.num_channels, c + 1) - token_begin(a.num_tokens, a.num_channels, c);
    list.n[s] = a.sw.self_direct && s == a.rank ? own : rows;  // one store per s: no index that becomes a.rank
  }
  return list;
}

template <int kRanks>
__device__ void receiver(const dispatch_args& a, uint64_t seq, int c) {
  const dispatch_slot L = slot_layout(a);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  const row_list<kRanks> list = receive_list<kRanks>(a, c);
  const int total = list.total();
  const int self = a.sw.self_direct ? a.rank : -1;
  uint32_t seen = 0;  // lane s < R: slots of source s seen written in this channel
  for (int i = warp; i < total; i += kWarps) {
    int s, j;  // the row's source, and its index among that source's rows of this channel
    list.at(i, s, j);
    const uint8_t* in;  // the row: its slot, or (own token t, self_direct) x's row t
    int64_t row, t = -1;
    if (s == self) {
      t = token_begin(a.num_tokens, a.num_channels, c) + j;
      const int slot = a.send_slot[t * a.num_ranks + a.rank];
      if (slot < 0) continue;  // not for this rank
      row = recv_offset(a.rank_prefix_matrix, a.num_ranks, a.rank, a.rank) + slot;
      in = static_cast<const uint8_t*>(a.x) + t * a.hidden_nbytes;
    } else {
      if (lane == s && seen <= static_cast<uint32_t>(j) && !a.raw_copy)
        seen = static_cast<uint32_t>(wait_geq(a.p.world, &mine->dispatch_progress[s][c], tag(seq, j + 1), a.timeout_ns,
                                              "shoal_ep dispatch (receive)", s, c));
      __syncwarp();
      const int slot = chan_begin(a.recv_chan_prefix, s, a.num_channels, c) + j;
      row = recv_offset(a.rank_prefix_matrix, a.num_ranks, a.rank, s) + slot;
      in = slot_ptr(a.p.base[a.rank], s, a.capacity, slot, a.slot_nbytes);
    }
    if (row >= a.num_recv) continue;  // more rows than num_worst_tokens: the caller's bound, never overrun
    uint4* const out[1] = {reinterpret_cast<uint4*>(static_cast<uint8_t*>(a.recv_x) + row * a.hidden_nbytes)};
    warp_copy<kUnroll>(out, reinterpret_cast<const uint4*>(in), static_cast<int>(a.hidden_nbytes / 16), lane,
                       load_peer{});
    if (t >= 0) {  // an own token: the rest from the caller's inputs, as send_token writes it into a slot
      for (int k = lane; k < a.num_scales; k += 32)
        a.recv_x_scales[row * a.num_scales + k] =
            __ldg(a.x_scales + t * a.scale_token_stride + k * a.scale_hidden_stride);
      if (lane < a.num_topk) {
        const int local = local_expert(a, __ldg(a.topk_idx + t * a.num_topk + lane), a.rank);
        a.recv_topk_idx[row * a.num_topk + lane] = local;
        a.recv_topk_weights[row * a.num_topk + lane] =
            local >= 0 && a.topk_weights != nullptr ? __ldg(a.topk_weights + t * a.num_topk + lane) : 0.f;
      }
      if (lane == 0) a.recv_src_idx[row] = static_cast<int>(t);
      continue;
    }
    for (int k = lane; k < a.num_scales; k += 32)
      a.recv_x_scales[row * a.num_scales + k] = __ldcg(reinterpret_cast<const uint32_t*>(in + L.scales_off) + k);
    if (lane < a.num_topk) {
      a.recv_topk_idx[row * a.num_topk + lane] = __ldcg(reinterpret_cast<const int*>(in + L.idx_off) + lane);
      a.recv_topk_weights[row * a.num_topk + lane] = __ldcg(reinterpret_cast<const float*>(in + L.weights_off) + lane);
    }
    if (lane == 0) a.recv_src_idx[row] = __ldcg(reinterpret_cast<const int*>(in + L.src_off));
    if (a.sw.l2_discard) {
      __syncwarp();
      discard_slot(in, a.slot_nbytes, lane);
    }
  }
}

template <int kRanks>
struct dispatch_kernel {
  static void launch(const dispatch_args& a, cudaStream_t stream) {
    channel_kernel<dispatch_args, sender<kRanks>, receiver<kRanks>>
        <<<2 * a.num_channels, kChannelThreads, 0, stream>>>(a);
  }
  static cudaError_t load() {
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, channel_kernel<dispatch_args, sender<kRanks>, receiver<kRanks>>);
  }
};

}  // namespace

namespace detail {
cudaError_t load_dispatch_kernels() {
  for (cudaError_t err : {dispatch_kernel<2>::load(), dispatch_kernel<4>::load(), dispatch_kernel<8>::load()})
    if (err != cudaSuccess) return err;
  return cudaSuccess;
}
}  // namespace detail

void dispatch(const dispatch_args& args, void* stream) {
  dispatch_args a = args;
  a.slot_nbytes = dispatch_slot_nbytes(a.hidden_nbytes, a.num_scales, a.num_topk);
  a.capacity = slot_capacity(a.buffer_nbytes, a.num_ranks, a.slot_nbytes, a.p.staged);
  launch_by_ranks<dispatch_kernel>(a, stream);
  detail::check_launch("shoal::ep::dispatch");
}

}  // namespace shoal::ep
