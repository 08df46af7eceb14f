// Device helpers shared by the low-latency dispatch and combine kernels (ep/low_latency/*.cu only).
#pragma once

#include <cuda_runtime.h>

#include <cuda/atomic>
#include <string>

#include <shoal/device/device.cuh>
#include <shoal/ep/low_latency.hpp>
#include <shoal/error.hpp>

namespace shoal::ep::ll::detail {

inline constexpr int kThreads = 1024;

/// The pieces of one half of the buffer, as local (this PE's) pointers.
struct half_view {
  uint64_t* dispatch_sig;
  uint64_t* combine_flag;
  uint64_t* combine_finish;
  char* dispatch_data;
  char* combine_data;
  char* combine_send;
};

inline half_view view_of(const layout& lay, char* buffer, int half) {
  char* h = buffer + workspace_nbytes(lay.num_experts) + static_cast<size_t>(half) * lay.half_nbytes;
  return {reinterpret_cast<uint64_t*>(h + lay.dispatch_sig),
          reinterpret_cast<uint64_t*>(h + lay.combine_flag),
          reinterpret_cast<uint64_t*>(h + lay.combine_finish),
          h + lay.dispatch_data,
          h + lay.combine_data,
          h + lay.combine_send};
}

inline workspace* workspace_of(char* buffer) { return reinterpret_cast<workspace*>(buffer); }

/// What every kernel of both ops needs besides its arguments (base of their kernel parameters).
struct kernel_common {
  device_world w;
  int num_experts, num_ranks, max_tokens, hidden, num_local;
  half_view h;
  workspace* ws;

  static kernel_common make(const layout& lay, const device_world& w, char* buffer, int half) {
    return {w,
            lay.num_experts,
            lay.num_ranks,
            lay.max_tokens,
            lay.hidden,
            lay.num_experts / lay.num_ranks,
            view_of(lay, buffer, half),
            workspace_of(buffer)};
  }
};

inline int32_t* send_done_of(const layout& lay, char* buffer, int half) {
  return reinterpret_cast<int32_t*>(buffer + sizeof(workspace)) + static_cast<size_t>(half) * lay.num_experts;
}

/// Throws shoal::error naming `call` when a launch failed.
inline void check_launch(const char* call) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw shoal::error(errc::cuda, call, std::string("kernel launch: ") + cudaGetErrorString(err));
}

/// The tag a call on epoch slot `slot` uses: completed calls + 1 (never 0, grows forever).
__device__ __forceinline__ uint64_t call_tag(const workspace* ws, int slot) {
  return *reinterpret_cast<const volatile uint64_t*>(&ws->epoch[slot]) + 1;
}

/// Called at its end by every block of a launch that holds a receive half (all threads): the last block to
/// finish advances the epoch of `slot`, so the next call on that slot waits for the next tag. Every block
/// of the launch, sending ones included, has read the tag at its start by then.
__device__ __forceinline__ void finish_receive(workspace* ws, int slot) {
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> done(ws->blocks_done[slot]);
    if (done.fetch_add(1, cuda::memory_order_acq_rel) + 1 == gridDim.x) {
      done.store(0, cuda::memory_order_relaxed);
      ws->epoch[slot] += 1;
    }
  }
}

/// Waits (bounded, acquire) until the tagged word `sig` reaches `tag` (compared on the tag part, above bit
/// 31 for a tag << 32 | count word) and returns it. A value from a later call (a peer a whole call ahead on
/// this half: a CUDA graph replayed, or calls out of docs/ep.md's order) is reported through the world's report
/// box, as a stall is, and traps: its counts or rows belong to the other call.
__device__ __forceinline__ uint64_t wait_tag(const device_world& w, uint64_t* sig, uint64_t tag, int tag_shift,
                                             const char* what, int peer, int channel) {
  const uint64_t v = shoal::device::signal_wait_until(w, sig, SHOAL_CMP_GE, tag);
  if ((v >> tag_shift) != (tag >> tag_shift)) shoal::device::report_stall(w, what, peer, channel, sig, v, tag, 0);
  return v;
}

/// Adds the nanoseconds since `start` to stats[rank] when stats is given.
__device__ __forceinline__ void add_wait_cost(int64_t* stats, int rank, uint64_t start) {
  if (stats != nullptr) atomicAdd(reinterpret_cast<unsigned long long*>(stats + rank), ptx::globaltimer() - start);
}

}  // namespace shoal::ep::ll::detail
