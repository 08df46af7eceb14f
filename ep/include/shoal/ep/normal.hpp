// shoal's expert-parallel (EP) layer, normal mode: the host entry points that launch its kernels.
// Every rank holds one buffer of the same size in shoal's symmetric heap; `peers` holds each rank's
// buffer as this rank addresses it (shoal_ptr), so kernels store straight into a mapped receiver's
// buffer over NVLink. A rank that is not mapped (base null: reached through shoal's proxy path) gets
// its rows written into a staging slab of this rank's own buffer, laid out like its slab in the
// receiver's buffer, and sent with shoal's device put-with-signal (docs/ep.md, "Proxy peers").
// Layout of a buffer: a control block of kControlNbytes (flags, progress counters, metadata), then a
// data region of fixed worst-case slots: one slab per source rank, then (staged buffers only) one
// staging slab per other rank.
// All calls are asynchronous on `stream` (a cudaStream_t) and throw shoal::error when a launch fails;
// waits on peers are bounded (timeout_ns): a stalled one reports through the world's report box (the
// host prints it) and traps. Sequence numbers are counted in the control block by the kernels
// themselves (each notify, dispatch and combine is one call; every rank makes the same calls), so a
// replayed CUDA graph stays right. Plain C++: no CUDA header needed.
#pragma once

#include <shoal/device_world.hpp>

#include <cstddef>
#include <cstdint>

namespace shoal::ep {

inline constexpr int kMaxRanks = 8;      ///< NVLink peers of one buffer (DeepEP's NUM_MAX_NVL_PEERS)
inline constexpr int kMaxChannels = 64;  ///< channels = num_sms / 2
inline constexpr int kMetaInts = 4096;   ///< metadata ints one source sends one receiver per dispatch
inline constexpr int kMetaExpertsOffset = kMaxRanks + kMaxChannels + 1;
inline constexpr int kMaxLocalExperts = kMetaInts - kMetaExpertsOffset;
inline constexpr std::size_t kControlNbytes = std::size_t{1} << 20;
/// Threads of every dispatch and combine block (32 warps; the sender's last warp publishes progress).
inline constexpr int kChannelThreads = 1024;

/// Each rank's buffer as this rank addresses it; base[rank] is the local one. base[r] null: rank r is
/// not load/store-reachable and is reached through `world` (shoal's proxy path; the buffer is at the
/// same symmetric offset on every rank). `staged` must be the same on every rank: true when any rank
/// of the job has such a peer (the buffers then hold the staging slabs; slot_capacity's `staged`).
struct peers {
  void* base[kMaxRanks];
  shoal::device_world world;  ///< shoal::default_world_device_handle(): puts towards null bases, and stall reports
  bool staged = false;
};

/// Bytes of one dispatch slot: the row, its scales, top-k indices and weights, source index (16-aligned).
std::size_t dispatch_slot_nbytes(std::size_t hidden_nbytes, int num_scales, int num_topk);
/// Bytes of one combine slot: the BF16 row and its top-k weights (16-aligned).
std::size_t combine_slot_nbytes(int hidden, int num_topk);
/// Slabs in a buffer's data region: num_ranks receive slabs, plus num_ranks - 1 staging slabs when staged.
int num_slabs(int num_ranks, bool staged);
/// Slots per slab a buffer of buffer_nbytes holds at slot_nbytes each (0 when too small).
std::size_t slot_capacity(std::size_t buffer_nbytes, int num_ranks, std::size_t slot_nbytes, bool staged);

struct layout_args {
  const int64_t* topk_idx;  ///< [num_tokens, num_topk], -1 = no expert
  int num_tokens, num_topk, num_experts, num_ranks;
  int* num_tokens_per_rank;    ///< out [num_ranks]
  int* num_tokens_per_expert;  ///< out [num_experts]
  bool* is_token_in_rank;      ///< out [num_tokens, num_ranks]
};
/// Counts tokens per rank and expert and marks which ranks each token goes to.
void get_dispatch_layout(const layout_args& a, void* stream);

struct notify_args {
  peers p;
  int rank, num_ranks, num_channels, num_tokens, num_local_experts;
  const bool* is_token_in_rank;      ///< [T, R]
  const int* num_tokens_per_rank;    ///< [R]
  const int* num_tokens_per_expert;  ///< [R * num_local_experts]
  int* send_slot;                    ///< out [T, R]: slot of token t in rank r's slab from us, -1 if not sent
  int* send_chan_prefix;             ///< out [R, C+1]: slots before channel c, per destination
  int* recv_chan_prefix;             ///< out [R, C+1]: the same, per source, for us as destination
  int* rank_prefix_matrix;           ///< out [R, R]: [i][j] = tokens ranks 0..i send rank j
  /// Mapped host memory: [0] ready (set to 1 last; the host clears it), [1] received tokens, [2] the
  /// most tokens any rank sends any one rank (the whole job's; the same on every rank: the host checks it
  /// against the slab capacity, so every rank raises alike), [3..] per local expert. Null: no host counts
  /// (num_worst_tokens given).
  int* host_counts;
  uint64_t timeout_ns;
};
/// Exchanges counts with every peer and fills the handle's matrices; publishes the receive counts to host.
void notify_dispatch(const notify_args& a, void* stream);

/// Changes to what this rank's own blocks do in a dispatch or combine (docs/ep.md, "Switches"). None changes what
/// a peer's blocks expect, so ranks, and calls, that set them differently still work together.
struct switches {
  /// SHOAL_EP_L2_DISCARD: receivers drop each slot's L2 lines once they have read it (discard.global.L2): a
  /// slot's bytes are dead then, and without it every one is written back to memory when L2 evicts it.
  bool l2_discard = false;
  /// SHOAL_EP_SELF_DIRECT: this rank's rows for itself skip the slab. Dispatch's receiver copies them from x
  /// straight into recv_x (with scales, top-k and source index from the inputs), and combine's receiver reads
  /// them from x in place.
  bool self_direct = false;
  /// SHOAL_EP_INTERLEAVE: a channel's rows of several ranks (dispatch's receiver, combine's sender) are handled
  /// part by part (64 parts per rank, detail::row_list), not rank after rank.
  bool interleave = false;
};

/// The switches as the environment sets them now (SHOAL_EP_L2_DISCARD, SHOAL_EP_SELF_DIRECT, SHOAL_EP_INTERLEAVE:
/// unset, empty or "0" is off, "1" on). Any other value throws shoal::error (invalid_argument) naming the variable.
switches switches_from_env();

/// What dispatch and combine share: the buffers, the handle's layout and the tuning.
struct channel_args {
  peers p;
  int rank, num_ranks, num_channels, num_tokens, num_recv, num_topk;
  std::size_t buffer_nbytes;
  const int* send_slot;           ///< [T, R] (handle)
  const int* send_chan_prefix;    ///< [R, C+1] (handle)
  const int* recv_chan_prefix;    ///< [R, C+1] (handle)
  const int* rank_prefix_matrix;  ///< [R, R] (handle)
  int tokens_per_signal;          ///< most tokens (rows) a sending channel completes between two progress signals
  uint64_t timeout_ns;
  /// Measurement only: skip every progress wait and signal, so the kernel moves the same bytes with the
  /// same SMs and no protocol (its output is garbage). The bound a real call is judged against. The start
  /// handshake (`entered`) stays: a raw call never overwrites a slab a peer's earlier call still reads.
  bool raw_copy = false;
  /// The switches of this call (docs/ep.md, "Switches"), set by the caller: shoal.ep's Buffer takes them from the
  /// environment when it is built (switches_from_env) and Buffer.set_switches changes them for its later calls.
  switches sw{};
  std::size_t slot_nbytes = 0, capacity = 0;  ///< filled by dispatch() / combine()
};

struct dispatch_args : channel_args {
  int num_local_experts;
  std::size_t hidden_nbytes;                        ///< one row of x (multiple of 16)
  int num_scales;                                   ///< 4-byte scales per row (float32 or int32), 0 when absent
  int64_t scale_token_stride, scale_hidden_stride;  ///< of x_scales, in elements (any layout)
  const void* x;                                    ///< [T, hidden_nbytes]
  const uint32_t* x_scales;                         ///< [T, num_scales] at the strides above
  const int64_t* topk_idx;                          ///< [T, num_topk]
  const float* topk_weights;                        ///< [T, num_topk]
  void* recv_x;                                     ///< out [num_recv, hidden_nbytes]
  uint32_t* recv_x_scales;                          ///< out [num_recv, num_scales], contiguous
  int64_t* recv_topk_idx;                           ///< out [num_recv, num_topk] (local expert index or -1)
  float* recv_topk_weights;                         ///< out [num_recv, num_topk]
  int* recv_src_idx;                                ///< out [num_recv]
};
/// Moves every token to each rank that needs it (2 * num_channels blocks: senders and receivers).
/// Towards a proxy peer a sending channel stages the rows and puts each chunk's slots with a signal.
void dispatch(const dispatch_args& a, void* stream);

struct combine_args : channel_args {
  int hidden;
  const void* x;              ///< [num_recv, hidden] BF16
  const float* topk_weights;  ///< [num_recv, num_topk] or null
  const void* bias0;          ///< [T, hidden] BF16 or null
  const void* bias1;
  void* combined_x;              ///< out [T, hidden] BF16
  float* combined_topk_weights;  ///< out [T, num_topk] or null
};
/// Sends every received row back to its source rank, which sums them in FP32 (plus bias) into BF16.
void combine(const combine_args& a, void* stream);

/// Loads every normal-mode kernel on the current device now (cudaFuncGetAttributes), not at its first
/// launch: under lazy module loading (PyTorch's setting) a first launch waits for the context's running
/// kernels, here an earlier EP kernel that may be waiting on this rank's proxy thread. Once per process
/// and device, before the first launch (Buffer's constructor); throws shoal::error on failure.
void load_kernels();

/// Zeroes nbytes of device memory at `addr` and waits for the device (a new buffer, before the barrier
/// that lets peers write into it). Throws shoal::error on failure.
void zero_device(void* addr, std::size_t nbytes);

/// Mapped, zeroed pinned host memory for notify's counts: {host address, device address}.
struct host_block {
  void* host;
  void* device;
};
host_block host_alloc(std::size_t nbytes);
void host_free(void* host);

/// Waits until notify has published its counts in the host block (ready word 1) or timeout_s passes,
/// clears the ready word and copies [received tokens, most tokens one rank sends one rank, tokens per local
/// expert...] to out (2 + num_local_experts ints). Throws shoal::error on a timeout or a failed kernel.
void wait_counts(const host_block& h, int num_local_experts, double timeout_s, int* out);

}  // namespace shoal::ep
