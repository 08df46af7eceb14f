// Probe kernels for the codegen test: one extern "C" kernel per primitive, so check_ptx.sh can cut
// each kernel's PTX out of `nvcc -ptx` output and check the instruction it must contain.
#include <shoal/device/device.cuh>

using shoal::device_world;
namespace dev = shoal::device;
namespace ptx = shoal::ptx;

extern "C" __global__ void probe_ld_relaxed_sys(const uint64_t* a, uint64_t* out) { *out = ptx::ld_relaxed_sys(a); }
extern "C" __global__ void probe_ld_acquire_sys(const uint64_t* a, uint64_t* out) { *out = ptx::ld_acquire_sys(a); }
extern "C" __global__ void probe_st_relaxed_sys(uint64_t* a, uint64_t v) { ptx::st_relaxed_sys(a, v); }
extern "C" __global__ void probe_st_release_sys(uint64_t* a, uint64_t v) { ptx::st_release_sys(a, v); }
extern "C" __global__ void probe_red_add_release_sys(uint64_t* a, uint64_t v) { ptx::red_add_release_sys(a, v); }
extern "C" __global__ void probe_red_add_relaxed_sys(uint64_t* a, uint64_t v) { ptx::red_add_relaxed_sys(a, v); }
extern "C" __global__ void probe_ld_acquire_gpu(const uint64_t* a, uint64_t* out) { *out = ptx::ld_acquire_gpu(a); }
extern "C" __global__ void probe_atom_add_relaxed_gpu(uint64_t* a, uint64_t v, uint64_t* out) {
  *out = ptx::atom_add_relaxed_gpu(a, v);
}
extern "C" __global__ void probe_red_max_release_gpu(uint64_t* a, uint64_t v) { ptx::red_max_release_gpu(a, v); }
extern "C" __global__ void probe_red_add_relaxed_gpu(uint64_t* a, uint64_t v) { ptx::red_add_relaxed_gpu(a, v); }
extern "C" __global__ void probe_ld_acquire_sys_v2(const uint64_t* a, uint64_t* out) {
  ptx::ld_acquire_sys_v2(a, out[0], out[1]);
}
extern "C" __global__ void probe_st_relaxed_sys_v2(uint64_t* a, uint64_t x, uint64_t y) {
  ptx::st_relaxed_sys_v2(a, x, y);
}
extern "C" __global__ void probe_fence_acq_rel_sys() { ptx::fence_acq_rel_sys(); }
extern "C" __global__ void probe_fence_sc_sys() { ptx::fence_sc_sys(); }
extern "C" __global__ void probe_globaltimer(uint64_t* out) { *out = ptx::globaltimer(); }

// Device API calls: their ordering instructions.
extern "C" __global__ void probe_fence(device_world w) { dev::fence(w); }
extern "C" __global__ void probe_quiet(device_world w) { dev::quiet(w); }
extern "C" __global__ void probe_p(device_world w, int* dst, int v, int pe) { dev::p(w, dst, v, pe); }
extern "C" __global__ void probe_g(device_world w, const long* src, long* out, int pe) { *out = dev::g(w, src, pe); }
extern "C" __global__ void probe_put_signal_set(device_world w, char* d, const char* s, size_t n, uint64_t* sig,
                                                int pe) {
  dev::putmem_signal(shoal::thread, w, d, s, n, sig, 1, SHOAL_SIGNAL_SET, pe);
}
extern "C" __global__ void probe_put_signal_add_block(device_world w, char* d, const char* s, size_t n, uint64_t* sig,
                                                      int pe) {
  dev::putmem_signal(shoal::block, w, d, s, n, sig, 1, SHOAL_SIGNAL_ADD, pe);
}
extern "C" __global__ void probe_signal_wait_until(device_world w, uint64_t* sig, uint64_t v, uint64_t* out) {
  *out = dev::signal_wait_until(w, sig, SHOAL_CMP_GE, v);
}
extern "C" __global__ void probe_wait_until_all(device_world w, int* ivars, size_t n, int v) {
  dev::wait_until_all(w, ivars, n, nullptr, SHOAL_CMP_EQ, v);
}
extern "C" __global__ void probe_atomic_fetch_add(device_world w, uint64_t* d, uint64_t v, uint64_t* out, int pe) {
  *out = dev::atomic_fetch_add(w, d, v, pe);
}
extern "C" __global__ void probe_atomic_add(device_world w, uint64_t* d, uint64_t v, int pe) {
  dev::atomic_add(w, d, v, pe);
}
extern "C" __global__ void probe_atomic_float_add(device_world w, float* d, float v, int pe) {
  dev::atomic_add(w, d, v, pe);
}
extern "C" __global__ void probe_atomic_compare_swap(device_world w, int* d, int c, int v, int* out, int pe) {
  *out = dev::atomic_compare_swap(w, d, c, v, pe);
}
extern "C" __global__ void probe_atomic_half_add(device_world w, __half* d, __half v, int pe) {
  dev::atomic_add(w, d, v, pe);
}
extern "C" __global__ void probe_atomic_half_fetch_add(device_world w, __half* d, __half v, __half* out, int pe) {
  *out = dev::atomic_fetch_add(w, d, v, pe);
}
extern "C" __global__ void probe_atomic_half_swap(device_world w, __half* d, __half v, __half* out, int pe) {
  *out = dev::atomic_swap(w, d, v, pe);
}
extern "C" __global__ void probe_barrier_all_block(device_world w) { dev::barrier_all(shoal::block, w); }
extern "C" __global__ void probe_put_block_vec(device_world w, void* d, const void* s, size_t n, int pe) {
  dev::putmem(shoal::block, w, d, s, n, pe);
}
extern "C" __global__ void probe_put_warp(device_world w, void* d, const void* s, size_t n, int pe) {
  dev::putmem(shoal::warp, w, d, s, n, pe);
}
extern "C" __global__ void probe_put_warps4(device_world w, void* d, const void* s, size_t n, int pe) {
  dev::putmem(shoal::warps<4>, w, d, s, n, pe);
}
extern "C" __global__ void probe_get_block(device_world w, void* d, const void* s, size_t n, int pe) {
  dev::getmem(shoal::block, w, d, s, n, pe);
}
extern "C" __global__ void probe_put_block_tma(device_world w, void* d, const void* s, size_t n, int pe) {
  extern __shared__ __align__(128) unsigned char smem[];
  dev::putmem_tma<4, 16384>(shoal::block, w, d, s, n, pe, smem);
}
extern "C" __global__ void probe_iput_block(device_world w, double* d, const double* s, size_t n, int pe) {
  dev::iput(shoal::block, w, d, s, 2, 3, n, pe);
}
extern "C" __global__ void probe_test_some_vector(device_world w, long long* iv, size_t n, size_t* idx, long long* cmps,
                                                  size_t* out) {
  *out = dev::test_some_vector(w, iv, n, idx, nullptr, SHOAL_CMP_GT, cmps);
}

// Team collectives (<shoal/device/coll.cuh>): the LL reduce carries flags in its data lines (no
// fence, no acquire/release); the channel team barrier orders as barrier_all; the two-shot reduce
// moves 16-byte vectors.
extern "C" __global__ void probe_reduce_ll_block(device_world w, shoal::device_team t, float* d, const float* s,
                                                 size_t n) {
  shoal::detail::reduce_ll<shoal::block_scope, dev::sum_op, float, false>(w, t, d, s, n, "probe");
}
extern "C" __global__ void probe_team_barrier_channel(device_world w, shoal::device_team t) {
  shoal::detail::team_barrier<shoal::block_scope>(w, t, "probe", 3);
}
extern "C" __global__ void probe_reduce_direct_block(device_world w, shoal::device_team t, float* d, const float* s,
                                                     size_t n) {
  shoal::detail::reduce_direct<shoal::block_scope, dev::sum_op, float, false>(w, t, d, s, n, 0, 1, "probe");
}
// The public entries: a world with proxy peers takes the proxy path, an out-of-line call chosen once
// per call (the load/store paths stay inline).
extern "C" __global__ void probe_reduce_sym_block(device_world w, shoal::device_team t, float* d, const float* s,
                                                  size_t n) {
  dev::reduce<dev::sum_op>(shoal::block, w, t, d, s, n);
}
extern "C" __global__ void probe_broadcast_block(device_world w, shoal::device_team t, void* d, const void* s,
                                                 size_t n) {
  dev::broadcastmem(shoal::block, w, t, d, s, n, 0);
}
