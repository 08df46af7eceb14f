// Bounded device waits: PE 1 waits (signal_wait_until, EQ 4242) on a signal word that holds 777 and
// that nobody will change. With SHOAL_WAIT_TIMEOUT=200ms the wait must print what it waited for
// (address, expected, seen, PE) and trap; this program prints the address it waits on and how
// long the kernel ran, and exits 3 once the kernel has failed as it should. Run by
// wait_timeout_gpu_test.sh, which checks the report; argv[1]: "handle" or "facade".
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "shoal/shoal.h"

namespace {

__global__ void wait_handle_kernel(shoal::device_world w, uint64_t* sig) {
  shoal::device::signal_wait_until(w, sig, SHOAL_CMP_EQ, 4242);
}
__global__ void wait_facade_kernel(uint64_t* sig) { shoal_signal_wait_until(sig, SHOAL_CMP_EQ, 4242); }

shoal::device_world g_world{};
void capture(const void* world, size_t bytes) {
  if (bytes == sizeof(g_world)) std::memcpy(&g_world, world, bytes);
}

#define CHECK(expr)                                                                                              \
  do {                                                                                                           \
    cudaError_t e_ = (expr);                                                                                     \
    if (e_ != cudaSuccess) {                                                                                     \
      std::printf("wait_timeout_gpu_test: %s failed: %s at line %d\n", #expr, cudaGetErrorString(e_), __LINE__); \
      std::fflush(stdout);                                                                                       \
      std::_Exit(1);                                                                                             \
    }                                                                                                            \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool facade = argc > 1 && std::strcmp(argv[1], "facade") == 0;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIP: no usable GPU\n");
    return 77;
  }
  const char* lr = std::getenv("SHOAL_LOCAL_RANK");
  const char* ls = std::getenv("SHOAL_LOCAL_SIZE");
  // More PEs than GPUs: PEs share GPUs round-robin when SHOAL_GPU_TEST_SHARE_GPUS=1 (best under MPS; the
  // one waiting kernel runs alone on its GPU either way, the other PE only sleeps on the host).
  const char* share = std::getenv("SHOAL_GPU_TEST_SHARE_GPUS");
  if (ls != nullptr && std::atoi(ls) > count && (share == nullptr || std::atoi(share) == 0)) {
    std::printf("SKIP: no usable GPU for each PE (%s PEs, %d GPU(s); SHOAL_GPU_TEST_SHARE_GPUS=1 shares them)\n", ls,
                count);
    return 77;
  }
  CHECK(cudaSetDevice((lr != nullptr ? std::atoi(lr) : 0) % count));
  CHECK(cudaFree(nullptr));
  shoal_detail_register_device_facade(capture);
  shoal_init();
  const int me = shoal_my_pe();
  auto* sig = static_cast<uint64_t*>(shoal_malloc(sizeof(uint64_t)));
  const uint64_t initial = 777;
  CHECK(cudaMemcpy(sig, &initial, sizeof(initial), cudaMemcpyHostToDevice));
  CHECK(cudaDeviceSynchronize());
  shoal_barrier_all();  // the last collective: from here on, no PE waits for another on the host
  if (me != 1) {
    // Stay alive (a PE that leaves early would stop PE 1 through the liveness monitor) until shoalrun
    // stops this PE when PE 1 ends; never wait on anything that has a timeout.
    std::this_thread::sleep_for(std::chrono::seconds(20));
    std::printf("wait_timeout_gpu_test: PE %d: PE 1 did not end within 20 s\n", me);
    std::_Exit(1);
  }
  std::printf("wait_timeout_gpu_test: PE 1 (%s form) waiting on sig_addr=%p for == 4242; it holds 777\n",
              facade ? "facade" : "handle", static_cast<void*>(sig));
  auto start = std::chrono::steady_clock::now();
  if (facade) {
    wait_facade_kernel<<<1, 1>>>(sig);
  } else {
    wait_handle_kernel<<<1, 1>>>(g_world, sig);
  }
  CHECK(cudaGetLastError());
  const cudaError_t err = cudaDeviceSynchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("wait_timeout_gpu_test: PE 1 wait kernel ended after trap_after_ms=%.0f with %s (%s)\n", ms,
              cudaGetErrorName(err), cudaGetErrorString(err));
  std::fflush(stdout);
  std::fflush(stderr);
  // The trap leaves the CUDA context unusable: no finalize. 3 = "failed as it should".
  std::_Exit(err == cudaSuccess ? 1 : 3);
}
