// combine: even blocks send channel c's received rows back to their source ranks, into the slot the
// row had in dispatch (one copy warp per row, several 16-byte loads in flight per lane, NVLink stores;
// a proxy source's rows are staged and put with a signal, as in dispatch); the block's last warp
// publishes per source how many of its rows are written, in order. Odd blocks reduce channel c's own
// tokens: one warp per token waits for each rank's row, sums in FP32 (plus up to two biases) and
// writes BF16, and sums the returned top-k weights. The switches of channel_args (docs/ep.md, "Switches") drop
// read slots from L2, let the receiver read the rank's own rows from x, and interleave the sources' rows.
#include <cuda_bf16.h>

#include "common.cuh"

namespace shoal::ep {
namespace {

using namespace detail;

constexpr int kUnroll = 4;  // 16-byte loads in flight per lane when returning a row

__device__ __forceinline__ int rows_in_channel(const combine_args& a, int s, int c) {
  return chan_begin(a.recv_chan_prefix, s, a.num_channels, c + 1) -
         chan_begin(a.recv_chan_prefix, s, a.num_channels, c);
}

// Channel c's rows to every source (the own rank's too, unless self_direct lets its receiver read them from x).
template <int kRanks>
__device__ __forceinline__ row_list<kRanks> return_list(const combine_args& a, int c) {
  row_list<kRanks> list;
  list.shift = a.sw.interleave ? kInterleaveShift : 0;
#pragma unroll
  for (int s = 0; s < kRanks; ++s)
    list.n[s] = (s < a.num_ranks && !(a.sw.self_direct && s == a.rank)) ? rows_in_channel(a, s, c) : 0;
  return list;
}

// Row j of source s's rows in channel c goes back to s, into the slot the row had in dispatch. A row past
// num_recv (the dispatch was cut at num_worst_tokens, so x has no such row) goes back as zeros: nothing is read
// past x, the slot is still written and counted, and the token's sum lacks that rank's part.
__device__ __forceinline__ void send_row(const combine_args& a, int c, int s, int j, int lane) {
  const std::size_t row_nbytes = 2u * a.hidden, weights_off = round16(row_nbytes);
  const int slot = chan_begin(a.recv_chan_prefix, s, a.num_channels, c) + j;
  const int64_t row = recv_offset(a.rank_prefix_matrix, a.num_ranks, a.rank, s) + slot;
  uint8_t* out = out_slot_ptr(a.p, a.rank, a.num_ranks, s, a.capacity, slot, a.slot_nbytes);
  if (row >= a.num_recv) {
    for (int k = lane; k < static_cast<int>(row_nbytes / 16); k += 32) reinterpret_cast<uint4*>(out)[k] = uint4{};
    if (lane < a.num_topk && a.topk_weights != nullptr) reinterpret_cast<float*>(out + weights_off)[lane] = 0.f;
    return;
  }
  uint4* const dst[1] = {reinterpret_cast<uint4*>(out)};
  const auto* in = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(a.x) + row * row_nbytes);
  warp_copy<kUnroll>(dst, in, static_cast<int>(row_nbytes / 16), lane, load_input{});
  if (lane < a.num_topk && a.topk_weights != nullptr)
    reinterpret_cast<float*>(out + weights_off)[lane] = __ldg(a.topk_weights + row * a.num_topk + lane);
}

// The publisher: list positions [from, to) of channel c are written. Lane s < R signals a mapped source s (its
// rows written so far); lane 0 puts a proxy source's newly staged rows with the same count.
template <int kRanks>
__device__ __noinline__ void publish_rows(const combine_args& a, uint64_t seq, int c, int from, int to, bool proxies,
                                          int lane) {
  const row_list<kRanks> list = return_list<kRanks>(a, c);
  if (lane < a.num_ranks && !is_proxy(a.p, lane)) {
    const int before = list.count_before(lane, from), now = list.count_before(lane, to);
    if (now > before) signal(&ctrl(a.p.base[lane])->combine_progress[a.rank][c], tag(seq, static_cast<uint32_t>(now)));
  }
  if (proxies && lane == 0) {
    bool fenced = false;
    for (int s = 0; s < a.num_ranks; ++s) {
      const int before = list.count_before(s, from), now = list.count_before(s, to);
      if (!is_proxy(a.p, s) || now <= before) continue;
      if (!fenced) fence_proxies(a.p), fenced = true;
      const std::size_t slot0 = chan_begin(a.recv_chan_prefix, s, a.num_channels, c);
      put_slots(a.p, a.rank, a.num_ranks, s, a.capacity, slot0 + before, slot0 + now, a.slot_nbytes,
                &ctrl(a.p.base[a.rank])->combine_progress[a.rank][c], tag(seq, static_cast<uint32_t>(now)));
    }
  }
}

template <int kRanks>
__device__ void sender(const combine_args& a, uint64_t seq, int c) {
  __shared__ send_tracker tracker;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  tracker.init();
  wait_entered(a, seq, "shoal_ep combine (start)", c);
  const row_list<kRanks> list = return_list<kRanks>(a, c);
  const int total = list.total();
  if (warp < send_tracker::kCopyWarps) {
    int count = 0;
    for (int i = warp; i < total; i += send_tracker::kCopyWarps) {
      int s, j;
      list.at(i, s, j);
      send_row(a, c, s, j, lane);
      tracker.record(warp, ++count, lane);
    }
    return;
  }
  if (a.raw_copy) return;
  const bool proxies = any_proxy(a.p, a.num_ranks);
  run_publisher(tracker, total, max(a.tokens_per_signal, 1), lane,
                [&](int from, int to) { publish_rows<kRanks>(a, seq, c, from, to, proxies, lane); });
  // The staging slabs are rewritten by the next call: its puts from them must be complete first.
  if (proxies && lane == 0) quiet_proxies(a.p);
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

__device__ __forceinline__ uint4 to_bf16x8(const float (&acc)[8]) {
  uint4 o;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(acc[2 * i], acc[2 * i + 1]);
  return o;
}

// One warp: token t's rows from every rank it went to, summed in rank order in FP32 (then the biases).
// kUnroll 16-byte chunks of every row are loaded before the first add: kUnroll * kRanks loads in flight.
template <int kRanks>
__device__ __forceinline__ void reduce_token(const combine_args& a, const uint8_t* const (&rows)[kRanks], int t,
                                             int lane) {
  constexpr int kUnrollRecv = kRanks >= 8 ? 1 : 8 / kRanks;
  const int n8 = a.hidden / 8;
  for (int base = lane; base < n8; base += 32 * kUnrollRecv) {
    uint4 v[kUnrollRecv][kRanks];
#pragma unroll
    for (int u = 0; u < kUnrollRecv; ++u)
#pragma unroll
      for (int d = 0; d < kRanks; ++d)
        v[u][d] = (rows[d] != nullptr && base + 32 * u < n8)
                      ? __ldcg(reinterpret_cast<const uint4*>(rows[d]) + base + 32 * u)
                      : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kUnrollRecv; ++u) {
      const int k = base + 32 * u;
      if (k >= n8) continue;
      float acc[8] = {};
#pragma unroll
      for (int d = 0; d < kRanks; ++d)
        if (rows[d] != nullptr) add_bf16x8(acc, v[u][d]);
      const int64_t at = static_cast<int64_t>(t) * n8 + k;
      if (a.bias0 != nullptr) add_bf16x8(acc, __ldg(static_cast<const uint4*>(a.bias0) + at));
      if (a.bias1 != nullptr) add_bf16x8(acc, __ldg(static_cast<const uint4*>(a.bias1) + at));
      __stcs(static_cast<uint4*>(a.combined_x) + at, to_bf16x8(acc));
    }
  }
}

template <int kRanks>
__device__ void receiver(const combine_args& a, uint64_t seq, int c) {
  const std::size_t weights_off = round16(2u * a.hidden);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  control* mine = ctrl(a.p.base[a.rank]);
  const int t0 = token_begin(a.num_tokens, a.num_channels, c), t1 = token_begin(a.num_tokens, a.num_channels, c + 1);
  // With self_direct, this rank's own part of token t is row self_base + slot of x, read in place (no wait).
  const int64_t self_base = recv_offset(a.rank_prefix_matrix, a.num_ranks, a.rank, a.rank);
  const int self = a.sw.self_direct ? a.rank : -1;
  uint32_t seen = 0;  // lane d < R: rows of rank d seen written in this channel
  for (int t = t0 + warp; t < t1; t += kWarps) {
    const int my_slot = lane < a.num_ranks ? a.send_slot[static_cast<int64_t>(t) * a.num_ranks + lane] : -1;
    if (my_slot >= 0 && !a.raw_copy && lane != self) {
      const uint32_t need = my_slot + 1 - chan_begin(a.send_chan_prefix, lane, a.num_channels, c);
      if (seen < need)
        seen = static_cast<uint32_t>(wait_geq(a.p.world, &mine->combine_progress[lane][c], tag(seq, need), a.timeout_ns,
                                              "shoal_ep combine (receive)", lane, c));
    }
    __syncwarp();
    const uint8_t* rows[kRanks];
    int64_t self_row = -1;  // x's row of the own part, when read in place
#pragma unroll
    for (int d = 0; d < kRanks; ++d) {
      const int s = __shfl_sync(0xffffffffu, my_slot, d);
      const bool own = d == self;
      const uint8_t* row = nullptr;
      if (d < a.num_ranks && s >= 0 && !own) row = slot_ptr(a.p.base[a.rank], d, a.capacity, s, a.slot_nbytes);
      // A row past num_recv (dispatch cut at num_worst_tokens) adds nothing, as its zeroed slot would.
      if (d < a.num_ranks && s >= 0 && own && self_base + s < a.num_recv) {
        self_row = self_base + s;
        row = static_cast<const uint8_t*>(a.x) + self_row * 2 * a.hidden;
      }
      rows[d] = row;  // one store per d: no index the compiler could turn into `self`
    }
    // The weights first: nothing of them stays live across the row sums.
    if (lane < a.num_topk && a.combined_topk_weights != nullptr) {
      float w = 0.f;
#pragma unroll
      for (int d = 0; d < kRanks; ++d) {
        if (rows[d] == nullptr) continue;
        if (d != self)
          w += __ldcg(reinterpret_cast<const float*>(rows[d] + weights_off) + lane);
        else if (a.topk_weights != nullptr)
          w += __ldg(a.topk_weights + self_row * a.num_topk + lane);
      }
      a.combined_topk_weights[static_cast<int64_t>(t) * a.num_topk + lane] = w;
    }
    reduce_token<kRanks>(a, rows, t, lane);
    if (a.sw.l2_discard) {
      __syncwarp();
#pragma unroll
      for (int d = 0; d < kRanks; ++d)
        if (rows[d] != nullptr && d != self) discard_slot(rows[d], a.slot_nbytes, lane);  // never the caller's x
    }
  }
}

template <int kRanks>
struct combine_kernel {
  static void launch(const combine_args& a, cudaStream_t stream) {
    channel_kernel<combine_args, sender<kRanks>, receiver<kRanks>>
        <<<2 * a.num_channels, kChannelThreads, 0, stream>>>(a);
  }
  static cudaError_t load() {
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, channel_kernel<combine_args, sender<kRanks>, receiver<kRanks>>);
  }
};

}  // namespace

namespace detail {
cudaError_t load_combine_kernels() {
  for (cudaError_t err : {combine_kernel<2>::load(), combine_kernel<4>::load(), combine_kernel<8>::load()})
    if (err != cudaSuccess) return err;
  return cudaSuccess;
}
}  // namespace detail

void combine(const combine_args& args, void* stream) {
  combine_args a = args;
  a.slot_nbytes = combine_slot_nbytes(a.hidden, a.num_topk);
  a.capacity = slot_capacity(a.buffer_nbytes, a.num_ranks, a.slot_nbytes, a.p.staged);
  launch_by_ranks<combine_kernel>(a, stream);
  detail::check_launch("shoal::ep::combine");
}

}  // namespace shoal::ep
