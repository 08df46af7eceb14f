// Two translation units that both use the device facade, built WITHOUT -rdc and linked into one
// program (tests/codegen/check_two_tu.sh). On a GPU machine, run it with 2 PEs: each TU's kernel
// writes through its own __constant__ copy of the world; prints "facade two-TU: OK" on success.
#include <shoal/shoal.h>
#include <cstdio>

void run_tu_b(int* symmetric, uint64_t* sig);  // facade_tu_b.cu

__global__ void tu_a_kernel(int* symmetric) {
  const int peer = (shoal_my_pe() + 1) % shoal_n_pes();
  shoal_int_p(symmetric, 100 + shoal_my_pe(), peer);
  shoal_quiet();
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("SKIP: no GPU\n");
    return 0;
  }
  shoal_init();
  int* symmetric = static_cast<int*>(shoal_calloc(4, sizeof(int)));
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  tu_a_kernel<<<1, 1>>>(symmetric);
  cudaDeviceSynchronize();
  shoal_barrier_all();
  run_tu_b(symmetric, sig);  // TU b checks what TU a wrote and does a put_signal round of its own
  int got[2] = {0, 0};
  cudaMemcpy(got, symmetric, sizeof(got), cudaMemcpyDeviceToHost);
  const int me = shoal_my_pe(), n = shoal_n_pes();
  const int from = (me + n - 1) % n;
  const bool ok = got[0] == 100 + from && got[1] == 200 + from;
  printf("PE %d: facade two-TU: %s (got %d %d)\n", me, ok ? "OK" : "FAILED", got[0], got[1]);
  shoal_free(sig);
  shoal_free(symmetric);
  shoal_finalize();
  return ok ? 0 : 1;
}
