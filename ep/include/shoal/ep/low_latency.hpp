// shoal's expert-parallel (EP) layer, low-latency mode: DeepEP-style low-latency dispatch/combine built
// on shoal's public device API only. Plain C++ (no CUDA types): the nanobind module shoal._ep and C++
// users call these; the kernels live in ep/low_latency/*.cu. See docs/ep.md (low-latency mode).
#pragma once

#include <cstddef>
#include <cstdint>

#include <shoal/device_world.hpp>

namespace shoal::ep::ll {

/// Largest top-k and rank count the kernels hold in shared memory.
inline constexpr int kMaxTopk = 32;
inline constexpr int kMaxRanks = 1024;

/// Where everything sits in the symmetric buffer (byte offsets from its base, identical on every
/// PE). A workspace, then two halves that alternate between calls (dispatch and combine each keep
/// their own alternation). Indices: l local expert, r rank, e global expert (= r_owner*L + l),
/// t source token, M = max tokens per rank.
struct layout {
  int num_experts = 0, num_ranks = 0, max_tokens = 0, hidden = 0;
  size_t msg_nbytes = 0;    ///< one dispatch message: 16-byte header (source token), payload, scales
  size_t half_nbytes = 0;   ///< one half
  size_t dispatch_sig = 0;  ///< in a half: uint64 [L][R], (epoch tag << 32) | token count from r
  size_t combine_flag = 0;  ///< in a half: uint64 [E][M], epoch tag once slot (e, t) has arrived
  /// In a half: uint64 [E], written by expert e's owner (tag, set) when its combine-send block for this PE
  /// has finished, rows or none; a receiving PE waits for all E before its combine completes (all-to-all).
  size_t combine_finish = 0;
  size_t dispatch_data = 0;  ///< in a half: [L][R][M] messages
  size_t combine_data = 0;   ///< in a half: bf16 [E][M][hidden], expert e's output for token t
  size_t combine_send = 0;   ///< in a half: bf16 [L][R*M][hidden], the zero-copy combine buffer
  size_t total_nbytes = 0;   ///< workspace + two halves
};

/// Local workspace at the buffer's base (never touched by peers).
struct workspace {
  uint64_t epoch[4];        ///< completed calls per (dispatch half 0/1, combine half 0/1)
  uint32_t blocks_done[4];  ///< receive-kernel blocks finished, per epoch slot (reset by the last)
  uint32_t pad[4];
  // followed by int32 send_done[2][num_experts]: dispatch-send tokens finished per expert
};
size_t workspace_nbytes(int num_experts);

/// The layout for these shapes; throws shoal::error on bad shapes (names the argument).
layout make_layout(int max_tokens, int hidden, int num_ranks, int num_experts);

/// The default world's device handle (shoal::default_world_device_handle, <shoal/world.hpp>).
/// Throws shoal::error: not_initialized before shoal_init, unsupported on a host-memory heap.
device_world default_world();

/// Pointers and shapes of one dispatch (both kernels). Device pointers unless said otherwise.
struct dispatch_args {
  const void* x = nullptr;            ///< bf16 [T][hidden]
  const int64_t* topk_idx = nullptr;  ///< [T][K], -1 = none
  int num_tokens = 0, num_topk = 0;
  bool fp8 = true, round_scale = false, ue8m0 = false;
  char* buffer = nullptr;  ///< this PE's symmetric buffer (its base)
  int half = 0;
  // receive side
  void* recv_x = nullptr;                    ///< bf16 or fp8 [L][R*M][hidden]
  void* recv_scales = nullptr;               ///< float [L][H/128][R*M] or int32 [L][H/512][R*M] (ue8m0)
  int32_t* recv_src_info = nullptr;          ///< [L][R*M] source token of each row
  int64_t* layout_range = nullptr;           ///< [L][R] (begin << 32) | count
  int32_t* recv_count = nullptr;             ///< [L]
  int32_t* cumulative_recv_stats = nullptr;  ///< optional [L], += recv_count
  int64_t* wait_recv_cost_stats = nullptr;   ///< optional [R], += ns waited per source rank
  int recv_blocks = 64;                      ///< most receiving blocks (they poll: leave SMs to PEs sharing the GPU)
  /// Measurement only: the receiving half waits for nothing and takes the counts the last call left, so it
  /// moves the same rows with the same blocks and no protocol (the bound a real call is judged against).
  bool raw_copy = false;
};

/// Pointers and shapes of one combine (both kernels).
struct combine_args {
  const void* x = nullptr;                ///< bf16 [L][R*M][hidden] expert outputs
  const int32_t* src_info = nullptr;      ///< from dispatch
  const int64_t* layout_range = nullptr;  ///< from dispatch
  const int64_t* topk_idx = nullptr;      ///< [T][K] of the tokens this PE dispatched
  const float* topk_weights = nullptr;    ///< [T][K]
  int num_tokens = 0, num_topk = 0;
  char* buffer = nullptr;
  int half = 0;
  void* out = nullptr;                      ///< bf16 [T][hidden]
  int64_t* wait_recv_cost_stats = nullptr;  ///< optional [R]
  int recv_blocks = 64;                     ///< most receiving blocks
  bool raw_copy = false;                    ///< measurement only: the receiving half waits for no flag
};

/// One dispatch, as one kernel, `dispatch_kernel` (profilers find it by its name, as DeepEP's tests do). Send half
/// (`send`): FP8 cast (if fp8), one message per (token, selected expert) stored into the owner's slot, then per
/// (expert, this rank) the count signal after the data. Receive half (`recv`): waits (bounded) for every source rank's
/// count and packs the rows into recv_x. Both halves: one launch whose receiving blocks follow the sending ones; one
/// half: a launch of that half only (DeepEP's two-phase hook: send now, receive later).
void dispatch(const layout& lay, const device_world& w, const dispatch_args& a, bool send, bool recv, void* stream);
/// One combine, as one kernel, `combine_kernel`, halves as in dispatch. Send half: every received row goes
/// back to its source rank's slot with a flag, then each (expert, rank) block sets that rank's finish word of
/// the expert. Receive half: waits for every expert's finish word and each token's slots, out = sum_k
/// weight_k * expert_k(token) in FP32.
void combine(const layout& lay, const device_world& w, const combine_args& a, bool send, bool recv, void* stream);

/// Loads both low-latency kernels on the current device now (cudaFuncGetAttributes), not at their first
/// launch: under lazy module loading a first launch waits for the context's running kernels, e.g. a peer's
/// kernel spinning on this PE. Once per process and device (LowLatency's constructor); throws shoal::error.
void load_kernels();

}  // namespace shoal::ep::ll
