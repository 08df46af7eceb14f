// Half of an NVSHMEM-style relocatable-device-code build (-rdc=true + device link, NVSHMEM's way): a __device__
// function defined here and called from a kernel in nv_rdc_main.cu, both using the NVSHMEM device API.
#include <nvshmem.h>

__device__ int ring_exchange(int* slot) {
  const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
  nvshmem_int_p(slot, me, (me + 1) % npes);
  nvshmem_barrier_all();
  return *slot;
}
