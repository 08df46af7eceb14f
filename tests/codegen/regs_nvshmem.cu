// Register-footprint probes, NVSHMEM names (<nvshmem.h>, <nvshmemx.h> of include/compat/nvshmem, on shoal's
// facade): one user kernel per family and scope in the shape of NVSHMEM's perftests (no __launch_bounds__, the call in
// a loop over iterations; the bandwidth tests launch blocks of 1024 threads). check_regs.py compiles this file for
// sm_90 and compares every kernel's register count with its bound. Kernel names: regs_nv_<family>_<call>_<scope>.
#include <nvshmem.h>
#include <nvshmemx.h>

// --- RMA: put_bw / get_bw shapes (each block moves its slice, then a quiet) --------------------------------------
extern "C" __global__ void regs_nv_rma_double_put_nbi_block(double* data, int len, int pe, int iter) {
  const int part = len / static_cast<int>(gridDim.x);
  for (int i = 0; i < iter; ++i)
    nvshmemx_double_put_nbi_block(data + blockIdx.x * part, data + blockIdx.x * part, part, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_double_get_nbi_block(double* data, int len, int pe, int iter) {
  const int part = len / static_cast<int>(gridDim.x);
  for (int i = 0; i < iter; ++i)
    nvshmemx_double_get_nbi_block(data + blockIdx.x * part, data + blockIdx.x * part, part, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_double_put_nbi_warp(double* data, int len, int pe, int iter) {
  const int warps = static_cast<int>(blockDim.x * gridDim.x / 32);
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int part = len / warps;
  for (int i = 0; i < iter; ++i) nvshmemx_double_put_nbi_warp(data + warp * part, data + warp * part, part, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_double_get_nbi_warp(double* data, int len, int pe, int iter) {
  const int warps = static_cast<int>(blockDim.x * gridDim.x / 32);
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int part = len / warps;
  for (int i = 0; i < iter; ++i) nvshmemx_double_get_nbi_warp(data + warp * part, data + warp * part, part, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_double_put_nbi_thread(double* data, int len, int pe, int iter) {
  const int threads = static_cast<int>(blockDim.x * gridDim.x);
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int part = len / threads;
  for (int i = 0; i < iter; ++i) nvshmem_double_put_nbi(data + t * part, data + t * part, part, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_double_get_nbi_thread(double* data, int len, int pe, int iter) {
  const int threads = static_cast<int>(blockDim.x * gridDim.x);
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int part = len / threads;
  for (int i = 0; i < iter; ++i) nvshmem_double_get_nbi(data + t * part, data + t * part, part, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_putmem_block(char* dst, const char* src, size_t n, int pe, int iter) {
  for (int i = 0; i < iter; ++i) nvshmemx_putmem_block(dst, src, n, pe);
}
extern "C" __global__ void regs_nv_rma_getmem_thread(char* dst, const char* src, size_t n, int pe, int iter) {
  for (int i = 0; i < iter; ++i) nvshmem_getmem(dst, src, n, pe);
}
// put_bw / get_bw at thread scope: every thread of 1024-thread blocks moves its slice with _nbi calls, then a quiet.
extern "C" __global__ void regs_nv_rma_putmem_nbi_thread(char* dst, const char* src, size_t n, int pe, int iter) {
  const size_t t = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < iter; ++i) nvshmem_putmem_nbi(dst + t * n, src + t * n, n, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_getmem_nbi_thread(char* dst, const char* src, size_t n, int pe, int iter) {
  const size_t t = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < iter; ++i) nvshmem_getmem_nbi(dst + t * n, src + t * n, n, pe);
  nvshmem_quiet();
}
// put_bw's grid shape: a block put_nbi per iteration, then the blocks meet on a counter in global memory.
extern "C" __global__ void regs_nv_rma_put_bw_block(double* data, unsigned* counter, int len, int pe, int iter) {
  const int part = len / static_cast<int>(gridDim.x);
  int i = 0;
  for (; i < iter; ++i) {
    nvshmemx_double_put_nbi_block(data + blockIdx.x * part, data + blockIdx.x * part, part, pe);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      if (atomicInc(counter, ~0u) == gridDim.x * (i + 1) - 1) atomicAdd(counter + 1, 1u);
      while (atomicAdd(counter + 1, 0u) != static_cast<unsigned>(i + 1)) {
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) nvshmem_quiet();
}
// shmem_put_bw's and shmem_get_bw's `bw` kernel as NVSHMEM writes it (4 blocks of 1024 threads): the slice's
// offset from a 3-d thread index and the block count, blocks meeting on a volatile counter after each iteration, and
// the last block's quiet inside that meeting after the loop. The counter's volatile accesses and the quiet's place
// keep more of the loop's values live across the put's cold call than in regs_nv_rma_put_bw_block.
template <bool kGet>
__device__ void bw_shape(double* data, volatile unsigned* counter, int len, int pe, int iter) {
  const int tid = static_cast<int>(threadIdx.x * blockDim.y * blockDim.z + threadIdx.y * blockDim.z + threadIdx.z);
  const int bid = static_cast<int>(blockIdx.x), nblocks = static_cast<int>(gridDim.x);
  const int peer = !pe;
  int i = 0;
  for (; i < iter; ++i) {
    double* slice = data + bid * (len / nblocks);
    if constexpr (kGet)
      nvshmemx_double_get_nbi_block(slice, slice, len / nblocks, peer);
    else
      nvshmemx_double_put_nbi_block(slice, slice, len / nblocks, peer);
    __syncthreads();
    if (!tid) {
      __threadfence();
      if (atomicInc(const_cast<unsigned*>(counter), ~0u) == gridDim.x * (i + 1) - 1) counter[1] += 1;
      while (counter[1] != static_cast<unsigned>(i + 1)) {
      }
    }
    __syncthreads();
  }
  __syncthreads();
  if (!tid) {
    __threadfence();
    if (atomicInc(const_cast<unsigned*>(counter), ~0u) == gridDim.x * (i + 1) - 1) {
      nvshmem_quiet();
      counter[1] += 1;
    }
    while (counter[1] != static_cast<unsigned>(i + 1)) {
    }
  }
  __syncthreads();
}
extern "C" __global__ void regs_nv_rma_put_bw_grid_block(double* data, volatile unsigned* counter, int len, int pe,
                                                         int iter) {
  bw_shape<false>(data, counter, len, pe, iter);
}
extern "C" __global__ void regs_nv_rma_get_bw_grid_block(double* data, volatile unsigned* counter, int len, int pe,
                                                         int iter) {
  bw_shape<true>(data, counter, len, pe, iter);
}
// get_latency / put_latency shapes: one thread's blocking get of one element, and a block's blocking put, per
// iteration.
extern "C" __global__ void regs_nv_rma_get_latency_thread(double* dst, const double* src, int pe, int iter) {
  for (int i = 0; i < iter; ++i) nvshmem_double_get(dst, src, 1, pe);
}
extern "C" __global__ void regs_nv_rma_put_latency_block(char* dst, const char* src, size_t n, int pe, int iter) {
  for (int i = 0; i < iter; ++i) {
    nvshmemx_putmem_block(dst, src, n, pe);
    if (threadIdx.x == 0) nvshmem_quiet();
    __syncthreads();
  }
}
// p_bw / g_bw: every thread one element.
extern "C" __global__ void regs_nv_rma_p_thread(int* data, int len, int pe, int iter) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  for (int i = 0; i < iter; ++i) nvshmem_int_p(data + (t % len), t, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_rma_g_thread(int* data, int* out, int len, int pe, int iter) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  int sum = 0;
  for (int i = 0; i < iter; ++i) sum += nvshmem_int_g(data + (t % len), pe);
  out[t] = sum;
}

// --- AMO: atomic_bw / atomic_latency shapes ------------------------------------------------------------------------
extern "C" __global__ void regs_nv_amo_fetch_add_thread(unsigned long long* flag, unsigned long long* out, int pe,
                                                        int iter) {
  unsigned long long v = 0;
  for (int i = 0; i < iter; ++i) v += nvshmem_ulonglong_atomic_fetch_add(flag, 1, pe);
  *out = v;
}
extern "C" __global__ void regs_nv_amo_add_thread(unsigned int* flag, int pe, int iter) {
  for (int i = 0; i < iter; ++i) nvshmem_uint_atomic_add(flag, 1, pe);
  nvshmem_quiet();
}
extern "C" __global__ void regs_nv_amo_compare_swap_thread(uint64_t* flag, uint64_t* out, int pe, int iter) {
  uint64_t v = 0;
  for (int i = 0; i < iter; ++i) v = nvshmem_uint64_atomic_compare_swap(flag, v, v + 1, pe);
  *out = v;
}
extern "C" __global__ void regs_nv_amo_bitwise_thread(uint32_t* flag, uint32_t* out, int pe, int iter) {
  uint32_t v = 0;
  for (int i = 0; i < iter; ++i) {
    v ^= nvshmem_uint32_atomic_fetch_and(flag, v, pe);
    nvshmem_uint32_atomic_or(flag, v, pe);
  }
  *out = v;
}

// --- signals: put_signal_ping_pong, signal_ping_pong shapes
// -----------------------------------------------------------
extern "C" __global__ void regs_nv_signal_putmem_signal_block(char* dst, const char* src, size_t n, uint64_t* sig,
                                                              int pe, int iter) {
  for (int i = 0; i < iter; ++i) {
    nvshmemx_putmem_signal_nbi_block(dst, src, n, sig, i + 1, NVSHMEM_SIGNAL_SET, pe);
    if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, static_cast<uint64_t>(i + 1));
    __syncthreads();
  }
}
extern "C" __global__ void regs_nv_signal_putmem_signal_warp(char* dst, const char* src, size_t n, uint64_t* sig,
                                                             int pe, int iter) {
  for (int i = 0; i < iter; ++i) nvshmemx_putmem_signal_warp(dst, src, n, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
}
extern "C" __global__ void regs_nv_signal_putmem_signal_thread(char* dst, const char* src, size_t n, uint64_t* sig,
                                                               int pe, int iter) {
  for (int i = 0; i < iter; ++i) nvshmem_putmem_signal(dst, src, n, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
}
extern "C" __global__ void regs_nv_signal_signal_op_thread(uint64_t* sig, int pe, int iter) {
  for (int i = 0; i < iter; ++i) {
    nvshmemx_signal_op(sig, i + 1, NVSHMEM_SIGNAL_SET, pe);
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, static_cast<uint64_t>(i + 1));
  }
}

// --- wait, ordering -------------------------------------------------------------------------------------------------
extern "C" __global__ void regs_nv_wait_wait_until_thread(int* flag, int* out, int iter) {
  int v = 0;
  for (int i = 0; i < iter; ++i) {
    nvshmem_int_wait_until(flag, NVSHMEM_CMP_EQ, i);
    v += nvshmem_int_test(flag, NVSHMEM_CMP_NE, v);
  }
  *out = v;
}
extern "C" __global__ void regs_nv_sync_fence_quiet_thread(int* data, int pe, int iter) {
  for (int i = 0; i < iter; ++i) {
    nvshmem_int_p(data, i, pe);
    nvshmem_fence();
    nvshmem_int_p(data + 1, i, pe);
    nvshmem_quiet();
  }
}

// --- barriers and collectives: barrier_latency, reduction_latency, ... shapes
// ------------------------------------------
extern "C" __global__ void regs_nv_sync_barrier_all_thread(int iter) {
  for (int i = 0; i < iter; ++i) nvshmem_barrier_all();
}
extern "C" __global__ void regs_nv_sync_barrier_all_block(int iter) {
  for (int i = 0; i < iter; ++i) nvshmemx_barrier_all_block();
}
extern "C" __global__ void regs_nv_coll_team_sync_warp(nvshmem_team_t team, int iter) {
  for (int i = 0; i < iter; ++i) nvshmemx_team_sync_warp(team);
}
extern "C" __global__ void regs_nv_coll_int_sum_reduce_block(nvshmem_team_t team, int* dst, const int* src, size_t n,
                                                             int iter) {
  for (int i = 0; i < iter; ++i) nvshmemx_int_sum_reduce_block(team, dst, src, n);
}
extern "C" __global__ void regs_nv_coll_alltoallmem_block(nvshmem_team_t team, char* dst, const char* src, size_t n,
                                                          int iter) {
  for (int i = 0; i < iter; ++i) nvshmemx_alltoallmem_block(team, dst, src, n);
}
extern "C" __global__ void regs_nv_coll_broadcastmem_thread(nvshmem_team_t team, char* dst, const char* src, size_t n,
                                                            int iter) {
  for (int i = 0; i < iter; ++i) nvshmem_broadcastmem(team, dst, src, n, 0);
}
