// A CUDA program built with nvcc against an installed shoal (tests/install/install_test.sh: through
// `pkg-config shoal` and through find_package(shoal)). Each PE passes its number to its right neighbour:
// on GPU heaps a kernel does it with a block-scope put-with-signal (the explicit device handle) and
// waits for its left neighbour's signal; on host-memory PEs (no GPU) the host API does the same ring, so
// the program also compiles, links, loads and runs on a machine without a GPU. Prints
// "device_ring: OK on N PEs (kernel|host PEs)" from PE 0, and exits non-zero on a wrong value.
#include <shoal/shoal.h>
#include <shoal/device/device.cuh>
#include <shoal/world.hpp>

#include <cstdio>

__global__ void pass_right(shoal::device_world w, int* dst, const int* src, uint64_t* flag) {
  const int right = (w.my_pe + 1) % w.n_pes;
  shoal::device::put_signal(shoal::block, w, dst, src, 1, flag, 1, SHOAL_SIGNAL_ADD, right);
  if (threadIdx.x == 0) shoal::device::signal_wait_until(w, flag, SHOAL_CMP_GE, 1);
}

static bool cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "device_ring: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

int main() {
  shoal_init();
  const int me = shoal_my_pe(), n = shoal_n_pes(), left = (me + n - 1) % n;
  const shoal::device_world w = shoal::default_world_device_handle();
  const bool gpu = w.heap_base != nullptr;  // null on host-memory PEs
  int* dst = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  int* src = static_cast<int*>(shoal_malloc(sizeof(int)));
  auto* flag = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  int got = -1;
  bool ok = true;
  if (gpu) {
    ok = cuda_ok(cudaMemcpy(src, &me, sizeof me, cudaMemcpyHostToDevice), "cudaMemcpy to src");
    shoal_barrier_all();  // every PE's dst and flag are zero before any kernel writes them
    pass_right<<<1, 128>>>(w, dst, src, flag);
    ok = ok && cuda_ok(cudaGetLastError(), "launch") && cuda_ok(cudaDeviceSynchronize(), "kernel");
    ok = ok && cuda_ok(cudaMemcpy(&got, dst, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy from dst");
  } else {
    shoal_int_p(dst, me, (me + 1) % n);
    shoal_barrier_all();
    got = *dst;
  }
  if (got != left) {
    std::fprintf(stderr, "device_ring: PE %d got %d, expected %d\n", me, got, left);
    ok = false;
  }
  int* failures = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  if (!ok) shoal_int_atomic_add(failures, 1, 0);
  shoal_barrier_all();
  const int total = shoal_int_g(failures, 0);
  if (me == 0 && total == 0) std::printf("device_ring: OK on %d PEs (%s)\n", n, gpu ? "kernel" : "host PEs");
  shoal_free(failures);
  shoal_free(flag);
  shoal_free(src);
  shoal_free(dst);
  shoal_finalize();
  return total == 0 ? 0 : 1;
}
