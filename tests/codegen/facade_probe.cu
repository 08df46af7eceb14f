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

// Host calls of the same names still reach libshoal's symbols (asm labels / host-pass declarations).
void host_calls(int* d, uint64_t* sig) {
  shoal_int_p(d, 1, 0);
  shoal_quiet();
  (void)shoal_signal_fetch(sig);
}
