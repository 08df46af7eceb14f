// Second translation unit of the two-TU facade program (see facade_tu_a.cu).
#include <shoal/shoal.h>

__global__ void tu_b_kernel(int* symmetric, uint64_t* sig) {
  const int peer = (shoal_my_pe() + 1) % shoal_n_pes();
  const int value = 200 + shoal_my_pe();
  shoal_int_put_signal(symmetric + 1, &value, 1, sig, 1, SHOAL_SIGNAL_ADD, peer);
  shoal_signal_wait_until(sig, SHOAL_CMP_GE, 1);
}

void run_tu_b(int* symmetric, uint64_t* sig) {
  tu_b_kernel<<<1, 1>>>(symmetric, sig);
  cudaDeviceSynchronize();
  shoal_barrier_all();
}
