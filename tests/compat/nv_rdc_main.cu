// The other half of the -rdc=true build (see nv_rdc_lib.cu): the kernel calls ring_exchange across translation
// units, which links only through the device linker. Runs on GPU PEs; without a GPU it exits 77 (skipped).
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>

extern __device__ int ring_exchange(int* slot);

__global__ void ring_kernel(int* slot, int* seen) { *seen = ring_exchange(slot); }

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no usable GPU (nv_rdc)\n");
    return 77;
  }
  nvshmem_init();
  const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
  int* slot = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  int* seen = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  void* args[] = {&slot, &seen};
  if (nvshmemx_collective_launch(reinterpret_cast<const void*>(ring_kernel), 1, 1, args, 0, 0) != NVSHMEMX_SUCCESS)
    return 1;
  int host_seen = -1;
  cudaMemcpy(&host_seen, seen, sizeof(int), cudaMemcpyDeviceToHost);
  const int want = (me + npes - 1) % npes;
  std::printf("nv_rdc: PE %d saw %d (want %d)\n", me, host_seen, want);
  nvshmem_free(seen);
  nvshmem_free(slot);
  nvshmem_finalize();
  return host_seen == want ? 0 : 2;
}
