// Register-footprint probes, explicit handle: one user kernel per family and scope, written as a user writes them
// (no __launch_bounds__, the call in a loop, as NVSHMEM's perftests do). check_regs.sh compiles this file for sm_90
// and fails when any kernel needs more than 64 registers per thread, the most that lets a 1024-thread block launch.
// Kernel names: regs_<family>_<call>_<scope>.
#include <shoal/device/device.cuh>

namespace dev = shoal::device;
using shoal::device_team;
using shoal::device_world;

namespace {

// --- RMA ---------------------------------------------------------------------------------------------------------
template <class S>
__device__ __forceinline__ void putmem_loop(S s, const device_world& w, char* d, const char* src, size_t n, int pe,
                                            int iters) {
  for (int i = 0; i < iters; ++i) dev::putmem(s, w, d, src, n, pe);
  dev::quiet(w);
}
template <class S>
__device__ __forceinline__ void putmem_nbi_loop(S s, const device_world& w, char* d, const char* src, size_t n, int pe,
                                                int iters) {
  for (int i = 0; i < iters; ++i) dev::putmem_nbi(s, w, d, src, n, pe);
  dev::quiet(w);
}
template <class S>
__device__ __forceinline__ void getmem_loop(S s, const device_world& w, char* d, const char* src, size_t n, int pe,
                                            int iters) {
  for (int i = 0; i < iters; ++i) dev::getmem(s, w, d, src, n, pe);
}
template <class S>
__device__ __forceinline__ void getmem_nbi_loop(S s, const device_world& w, char* d, const char* src, size_t n, int pe,
                                                int iters) {
  for (int i = 0; i < iters; ++i) dev::getmem_nbi(s, w, d, src, n, pe);
  dev::quiet(w);
}
template <class S>
__device__ __forceinline__ void put_double_loop(S s, const device_world& w, double* d, size_t n, int pe, int iters) {
  const size_t part = n / gridDim.x;
  for (int i = 0; i < iters; ++i) dev::put_nbi(s, w, d + blockIdx.x * part, d + blockIdx.x * part, part, pe);
  dev::quiet(w);
}
template <class S>
__device__ __forceinline__ void get_double_loop(S s, const device_world& w, double* d, size_t n, int pe, int iters) {
  const size_t part = n / gridDim.x;
  for (int i = 0; i < iters; ++i) dev::get_nbi(s, w, d + blockIdx.x * part, d + blockIdx.x * part, part, pe);
  dev::quiet(w);
}
template <class S>
__device__ __forceinline__ void iput_loop(S s, const device_world& w, int* d, const int* src, size_t n, int pe,
                                          int iters) {
  for (int i = 0; i < iters; ++i) dev::iput(s, w, d, src, 2, 3, n, pe);
}
template <class S>
__device__ __forceinline__ void iget_loop(S s, const device_world& w, int* d, const int* src, size_t n, int pe,
                                          int iters) {
  for (int i = 0; i < iters; ++i) dev::iget(s, w, d, src, 2, 3, n, pe);
}

// --- signals -----------------------------------------------------------------------------------------------------
template <class S>
__device__ __forceinline__ void put_signal_loop(S s, const device_world& w, char* d, const char* src, size_t n,
                                                uint64_t* sig, int pe, int iters) {
  for (int i = 0; i < iters; ++i) {
    dev::putmem_signal(s, w, d, src, n, sig, i + 1, SHOAL_SIGNAL_SET, pe);
    if (S::rank() == 0) dev::signal_wait_until(w, sig, SHOAL_CMP_GE, static_cast<uint64_t>(i + 1));
    S::sync();
  }
}
template <class S>
__device__ __forceinline__ void put_signal_nbi_loop(S s, const device_world& w, char* d, const char* src, size_t n,
                                                    uint64_t* sig, int pe, int iters) {
  for (int i = 0; i < iters; ++i) dev::putmem_signal_nbi(s, w, d, src, n, sig, 1, SHOAL_SIGNAL_ADD, pe);
  dev::quiet(w);
}

// --- barriers and collectives --------------------------------------------------------------------------------------
template <class S>
__device__ __forceinline__ void barrier_all_loop(S s, const device_world& w, int iters) {
  for (int i = 0; i < iters; ++i) dev::barrier_all(s, w);
}
template <class S>
__device__ __forceinline__ void sync_all_loop(S s, const device_world& w, int iters) {
  for (int i = 0; i < iters; ++i) dev::sync_all(s, w);
}
template <class S>
__device__ __forceinline__ void team_barrier_loop(S s, const device_world& w, device_team t, int iters) {
  for (int i = 0; i < iters; ++i) dev::team_barrier(s, w, t);
}
template <class S>
__device__ __forceinline__ void team_sync_loop(S s, const device_world& w, device_team t, int iters) {
  for (int i = 0; i < iters; ++i) dev::team_sync(s, w, t);
}
template <class S>
__device__ __forceinline__ void broadcast_loop(S s, const device_world& w, device_team t, char* d, const char* src,
                                               size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::broadcastmem(s, w, t, d, src, n, 0);
}
template <class S>
__device__ __forceinline__ void fcollect_loop(S s, const device_world& w, device_team t, char* d, const char* src,
                                              size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::fcollectmem(s, w, t, d, src, n);
}
template <class S>
__device__ __forceinline__ void alltoall_loop(S s, const device_world& w, device_team t, char* d, const char* src,
                                              size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::alltoallmem(s, w, t, d, src, n);
}
template <class S>
__device__ __forceinline__ void collect_loop(S s, const device_world& w, device_team t, char* d, const char* src,
                                             size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::collectmem(s, w, t, d, src, n);
}
template <class S>
__device__ __forceinline__ void reduce_int_loop(S s, const device_world& w, device_team t, int* d, const int* src,
                                                size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::reduce<dev::sum_op>(s, w, t, d, src, n);
}
template <class S>
__device__ __forceinline__ void reduce_float_loop(S s, const device_world& w, device_team t, float* d, const float* src,
                                                  size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::reduce<dev::max_op>(s, w, t, d, src, n);
}
template <class S>
__device__ __forceinline__ void reduce_scratch_loop(S s, const device_world& w, device_team t, double* d,
                                                    const double* src, size_t n, double* scratch, int iters) {
  for (int i = 0; i < iters; ++i) dev::reduce<dev::sum_op>(s, w, t, d, src, n, scratch);
}
template <class S>
__device__ __forceinline__ void reducescatter_loop(S s, const device_world& w, device_team t, int* d, const int* src,
                                                   size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::reducescatter<dev::sum_op>(s, w, t, d, src, n);
}
template <class S>
__device__ __forceinline__ void maxloc_loop(S s, const device_world& w, device_team t, double2* d, const double2* src,
                                            size_t n, int iters) {
  for (int i = 0; i < iters; ++i) dev::maxloc_reduce(s, w, t, d, src, n);
}

}  // namespace

// One kernel per scope for each scoped family.
#define SHOAL_REGS_SCOPED(scope)                                                                                     \
  extern "C" __global__ void regs_rma_putmem_##scope(device_world w, char* d, const char* s, size_t n, int pe,       \
                                                     int it) {                                                       \
    putmem_loop(shoal::scope, w, d, s, n, pe, it);                                                                   \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_putmem_nbi_##scope(device_world w, char* d, const char* s, size_t n, int pe,   \
                                                         int it) {                                                   \
    putmem_nbi_loop(shoal::scope, w, d, s, n, pe, it);                                                               \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_getmem_##scope(device_world w, char* d, const char* s, size_t n, int pe,       \
                                                     int it) {                                                       \
    getmem_loop(shoal::scope, w, d, s, n, pe, it);                                                                   \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_getmem_nbi_##scope(device_world w, char* d, const char* s, size_t n, int pe,   \
                                                         int it) {                                                   \
    getmem_nbi_loop(shoal::scope, w, d, s, n, pe, it);                                                               \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_double_put_nbi_##scope(device_world w, double* d, size_t n, int pe, int it) {  \
    put_double_loop(shoal::scope, w, d, n, pe, it);                                                                  \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_double_get_nbi_##scope(device_world w, double* d, size_t n, int pe, int it) {  \
    get_double_loop(shoal::scope, w, d, n, pe, it);                                                                  \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_iput_##scope(device_world w, int* d, const int* s, size_t n, int pe, int it) { \
    iput_loop(shoal::scope, w, d, s, n, pe, it);                                                                     \
  }                                                                                                                  \
  extern "C" __global__ void regs_rma_iget_##scope(device_world w, int* d, const int* s, size_t n, int pe, int it) { \
    iget_loop(shoal::scope, w, d, s, n, pe, it);                                                                     \
  }                                                                                                                  \
  extern "C" __global__ void regs_signal_putmem_signal_##scope(device_world w, char* d, const char* s, size_t n,     \
                                                               uint64_t* sig, int pe, int it) {                      \
    put_signal_loop(shoal::scope, w, d, s, n, sig, pe, it);                                                          \
  }                                                                                                                  \
  extern "C" __global__ void regs_signal_putmem_signal_nbi_##scope(device_world w, char* d, const char* s, size_t n, \
                                                                   uint64_t* sig, int pe, int it) {                  \
    put_signal_nbi_loop(shoal::scope, w, d, s, n, sig, pe, it);                                                      \
  }                                                                                                                  \
  extern "C" __global__ void regs_sync_barrier_all_##scope(device_world w, int it) {                                 \
    barrier_all_loop(shoal::scope, w, it);                                                                           \
  }                                                                                                                  \
  extern "C" __global__ void regs_sync_sync_all_##scope(device_world w, int it) {                                    \
    sync_all_loop(shoal::scope, w, it);                                                                              \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_team_barrier_##scope(device_world w, device_team t, int it) {                 \
    team_barrier_loop(shoal::scope, w, t, it);                                                                       \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_team_sync_##scope(device_world w, device_team t, int it) {                    \
    team_sync_loop(shoal::scope, w, t, it);                                                                          \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_broadcastmem_##scope(device_world w, device_team t, char* d, const char* s,   \
                                                            size_t n, int it) {                                      \
    broadcast_loop(shoal::scope, w, t, d, s, n, it);                                                                 \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_fcollectmem_##scope(device_world w, device_team t, char* d, const char* s,    \
                                                           size_t n, int it) {                                       \
    fcollect_loop(shoal::scope, w, t, d, s, n, it);                                                                  \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_alltoallmem_##scope(device_world w, device_team t, char* d, const char* s,    \
                                                           size_t n, int it) {                                       \
    alltoall_loop(shoal::scope, w, t, d, s, n, it);                                                                  \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_collectmem_##scope(device_world w, device_team t, char* d, const char* s,     \
                                                          size_t n, int it) {                                        \
    collect_loop(shoal::scope, w, t, d, s, n, it);                                                                   \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_int_sum_reduce_##scope(device_world w, device_team t, int* d, const int* s,   \
                                                              size_t n, int it) {                                    \
    reduce_int_loop(shoal::scope, w, t, d, s, n, it);                                                                \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_float_max_reduce_##scope(device_world w, device_team t, float* d,             \
                                                                const float* s, size_t n, int it) {                  \
    reduce_float_loop(shoal::scope, w, t, d, s, n, it);                                                              \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_double_sum_reduce_scratch_##scope(                                            \
      device_world w, device_team t, double* d, const double* s, size_t n, double* scratch, int it) {                \
    reduce_scratch_loop(shoal::scope, w, t, d, s, n, scratch, it);                                                   \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_int_sum_reducescatter_##scope(device_world w, device_team t, int* d,          \
                                                                     const int* s, size_t n, int it) {               \
    reducescatter_loop(shoal::scope, w, t, d, s, n, it);                                                             \
  }                                                                                                                  \
  extern "C" __global__ void regs_coll_maxloc_reduce_##scope(device_world w, device_team t, double2* d,              \
                                                             const double2* s, size_t n, int it) {                   \
    maxloc_loop(shoal::scope, w, t, d, s, n, it);                                                                    \
  }

SHOAL_REGS_SCOPED(thread)
SHOAL_REGS_SCOPED(warp)
SHOAL_REGS_SCOPED(block)

// --- thread-only families ------------------------------------------------------------------------------------------
extern "C" __global__ void regs_rma_p_thread(device_world w, int* d, int pe, int it) {
  for (int i = 0; i < it; ++i) dev::p(w, d, i, pe);
  dev::quiet(w);
}
extern "C" __global__ void regs_rma_g_thread(device_world w, const long* s, long* out, int pe, int it) {
  long sum = 0;
  for (int i = 0; i < it; ++i) sum += dev::g(w, s + i, pe);
  *out = sum;
}
extern "C" __global__ void regs_amo_fetch_add_thread(device_world w, unsigned long long* d, unsigned long long* out,
                                                     int pe, int it) {
  unsigned long long v = 0;
  for (int i = 0; i < it; ++i) v += dev::atomic_fetch_add(w, d, 1ull, pe);
  *out = v;
}
extern "C" __global__ void regs_amo_add_thread(device_world w, int* d, int pe, int it) {
  for (int i = 0; i < it; ++i) dev::atomic_add(w, d, 1, pe);
  dev::quiet(w);
}
extern "C" __global__ void regs_amo_compare_swap_thread(device_world w, uint64_t* d, uint64_t* out, int pe, int it) {
  uint64_t v = 0;
  for (int i = 0; i < it; ++i) v = dev::atomic_compare_swap(w, d, v, v + 1, pe);
  *out = v;
}
extern "C" __global__ void regs_amo_fetch_set_swap_thread(device_world w, long* d, long* out, int pe, int it) {
  long v = 0;
  for (int i = 0; i < it; ++i) {
    v += dev::atomic_fetch(w, d, pe);
    dev::atomic_set(w, d, v, pe);
    v += dev::atomic_swap(w, d, v, pe);
  }
  *out = v;
}
extern "C" __global__ void regs_amo_bitwise_thread(device_world w, uint32_t* d, uint32_t* out, int pe, int it) {
  uint32_t v = 0;
  for (int i = 0; i < it; ++i) {
    v ^= dev::atomic_fetch_and(w, d, v, pe);
    v ^= dev::atomic_fetch_or(w, d, v, pe);
    dev::atomic_xor(w, d, v, pe);
  }
  *out = v;
}
extern "C" __global__ void regs_amo_inc_thread(device_world w, int* d, int* out, int pe, int it) {
  int v = 0;
  for (int i = 0; i < it; ++i) {
    v += dev::atomic_fetch_inc(w, d, pe);
    dev::atomic_inc(w, d, pe);
  }
  *out = v;
}
extern "C" __global__ void regs_amo_float_fetch_add_thread(device_world w, double* d, double* out, int pe, int it) {
  double v = 0;
  for (int i = 0; i < it; ++i) v += dev::atomic_fetch_add(w, d, 1.0, pe);
  *out = v;
}
extern "C" __global__ void regs_amo_half_thread(device_world w, __half* d, __half* out, int pe, int it) {
  __half v = __float2half(0.f);
  for (int i = 0; i < it; ++i) {
    v = __hadd(v, dev::atomic_fetch_add(w, d, v, pe));
    v = __hadd(v, dev::atomic_swap(w, d, v, pe));
  }
  *out = v;
}
extern "C" __global__ void regs_signal_signal_op_thread(device_world w, uint64_t* sig, int pe, int it) {
  for (int i = 0; i < it; ++i) dev::signal_op(w, sig, 1, SHOAL_SIGNAL_ADD, pe);
}
extern "C" __global__ void regs_signal_fetch_wait_thread(device_world w, uint64_t* sig, uint64_t* out, int it) {
  uint64_t v = 0;
  for (int i = 0; i < it; ++i) v += dev::signal_wait_until(w, sig, SHOAL_CMP_GE, v) + dev::signal_fetch(w, sig);
  *out = v;
}
extern "C" __global__ void regs_wait_wait_until_thread(device_world w, int* ivar, int* out, int it) {
  int v = 0;
  for (int i = 0; i < it; ++i) v += dev::wait_until(w, ivar, SHOAL_CMP_EQ, i) + dev::test(w, ivar, SHOAL_CMP_NE, v);
  *out = v;
}
extern "C" __global__ void regs_wait_multi_thread(device_world w, uint64_t* ivars, size_t n, size_t* idx,
                                                  const int* status, uint64_t* vals, size_t* out) {
  dev::wait_until_all(w, ivars, n, status, SHOAL_CMP_GE, vals[0]);
  size_t r = dev::wait_until_any(w, ivars, n, status, SHOAL_CMP_GE, vals[0]);
  r += dev::wait_until_some(w, ivars, n, idx, status, SHOAL_CMP_GE, vals[0]);
  dev::wait_until_all_vector(w, ivars, n, status, SHOAL_CMP_GE, vals);
  r += dev::wait_until_any_vector(w, ivars, n, status, SHOAL_CMP_GE, vals);
  r += dev::wait_until_some_vector(w, ivars, n, idx, status, SHOAL_CMP_GE, vals);
  r += dev::test_all(w, ivars, n, status, SHOAL_CMP_GE, vals[0]) +
       dev::test_any(w, ivars, n, status, SHOAL_CMP_GE, vals[0]);
  r += dev::test_some_vector(w, ivars, n, idx, status, SHOAL_CMP_GE, vals);
  *out = r;
}
extern "C" __global__ void regs_sync_fence_quiet_thread(device_world w, int* d, int pe, int it) {
  for (int i = 0; i < it; ++i) {
    dev::p(w, d, i, pe);
    dev::fence(w);
    dev::p(w, d + 1, i, pe);
    dev::quiet(w);
  }
}
