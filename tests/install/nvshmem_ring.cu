// An NVSHMEM-spelled CUDA program built with nvcc against an installed shoal's compat headers
// (tests/install/install_test.sh: through `pkg-config shoal-nvshmem` and find_package(shoal) ->
// shoal::nvshmem). Each PE passes its number to its right neighbour: on GPU heaps a kernel with
// nvshmem_int_p and a barrier on the stream; on host-memory PEs (no GPU) the same calls from the host.
// Prints "nvshmem_ring: OK on N PEs (kernel|host PEs)" from PE 0, and exits non-zero on a wrong value.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>

__global__ void pass_right(int* dst) {
  const int me = nvshmem_my_pe();
  nvshmem_int_p(dst, me, (me + 1) % nvshmem_n_pes());
}

int main() {
  nvshmem_init();
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes(), left = (me + n - 1) % n;
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  int* dst = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  int got = -1;
  if (gpu) {
    nvshmem_barrier_all();
    pass_right<<<1, 1>>>(dst);
    nvshmemx_barrier_all_on_stream(0);
    if (cudaMemcpy(&got, dst, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) got = -2;
  } else {
    nvshmem_int_p(dst, me, (me + 1) % n);
    nvshmem_barrier_all();
    got = *dst;
  }
  const bool ok = got == left;
  if (!ok) std::fprintf(stderr, "nvshmem_ring: PE %d got %d, expected %d\n", me, got, left);
  int* failures = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  if (!ok) nvshmem_int_atomic_add(failures, 1, 0);
  nvshmem_barrier_all();
  const int total = nvshmem_int_g(failures, 0);
  if (me == 0 && total == 0) std::printf("nvshmem_ring: OK on %d PEs (%s)\n", n, gpu ? "kernel" : "host PEs");
  nvshmem_free(failures);
  nvshmem_free(dst);
  nvshmem_finalize();
  return total == 0 ? 0 : 1;
}
