// Probe kernels for the codegen test: the facade (<shoal/shoal.h> under nvcc) reads the world from
// this translation unit's __constant__ copy and emits the same instructions as the explicit handle.
#include <shoal/shoal.h>

extern "C" __global__ void probe_facade_int_p(int* dest, int value, int pe) { shoal_int_p(dest, value, pe); }
extern "C" __global__ void probe_facade_putmem_signal_block(void* d, const void* s, size_t n, uint64_t* sig, int pe) {
  shoalx_putmem_signal_block(d, s, n, sig, 1, SHOAL_SIGNAL_ADD, pe);
}
extern "C" __global__ void probe_facade_signal_wait_until(uint64_t* sig, uint64_t v, uint64_t* out) {
  *out = shoal_signal_wait_until(sig, SHOAL_CMP_GE, v);
}
extern "C" __global__ void probe_facade_quiet() { shoal_quiet(); }
extern "C" __global__ void probe_facade_barrier_all() { shoal_barrier_all(); }
extern "C" __global__ void probe_facade_fetch_add(uint64_t* d, uint64_t* out, int pe) {
  *out = shoal_uint64_atomic_fetch_add(d, 1, pe);
}
// Team collectives of the facade: the team's device handle from this unit's world (team_of).
extern "C" __global__ void probe_facade_team_barrier_block(int team) { shoalx_barrier_block(team); }
extern "C" __global__ void probe_facade_int_sum_reduce(int team, int* d, const int* s, size_t n) {
  shoal_int_sum_reduce(team, d, s, n);
}
extern "C" __global__ void probe_facade_half_max_reducescatter_warp(int team, __half* d, const __half* s, size_t n) {
  shoalx_half_max_reducescatter_warp(team, d, s, n);
}
extern "C" __global__ void probe_facade_bfloat16_sum_reduce_block(int team, __nv_bfloat16* d, const __nv_bfloat16* s,
                                                                  size_t n) {
  shoalx_bfloat16_sum_reduce_block(team, d, s, n);
}
extern "C" __global__ void probe_facade_float_fcollect(int team, float* d, const float* s, size_t n) {
  shoal_float_fcollect(team, d, s, n);
}

// Host calls of the same names still reach libshoal's symbols (asm labels / host-pass declarations).
void host_calls(int* d, uint64_t* sig, shoal_half_t* h, cudaStream_t stream) {
  shoal_int_p(d, 1, 0);
  shoal_quiet();
  (void)shoal_signal_fetch(sig);
  (void)shoal_barrier(SHOAL_TEAM_WORLD);
  (void)shoal_int_sum_reduce(SHOAL_TEAM_WORLD, d, d, 1);
  (void)shoal_half_sum_reduce(SHOAL_TEAM_WORLD, h, h, 1);
  (void)shoal_int_collect(SHOAL_TEAM_WORLD, d, d, 1);  // host only
  (void)shoalx_half_sum_reduce_on_stream(SHOAL_TEAM_WORLD, h, h, 1, stream);
}
