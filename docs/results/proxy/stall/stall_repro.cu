// The proxy stall in isolation (docs/results/proxy/analysis.md, "The stall"): does a helper thread's copy or
// one-thread kernel, on its own non-blocking stream, complete while a kernel of the same process spins
// waiting for it? Built by no target; run.sh compiles and runs every variant on one GPU in about a minute.
//
//   stall_repro PENDING OP POLLERS FENCE
//   PENDING  work the main thread queues behind the spinning kernel before the helper starts:
//            none | d2h_A | h2d_A (a pinned copy on the kernel's stream) | d2h_legacy (a pinned copy on the
//            legacy stream after cudaStreamWaitEvent on the kernel) | kern_A (a kernel) | event_A (a timing
//            event recorded behind the kernel, as shoal-bench's timed loops do) |
//            d2h_pageable_A (a pageable copy, from another thread: it blocks its caller) |
//            d2h_pageable_legacy (cudaMemcpy to pageable memory on the legacy stream after an event wait on
//            the kernel, from another thread: what tensor.cpu() after EventOverlap.current_stream_wait() does)
//   OP       what the helper thread does on its own stream, then waits for: d2h | h2d (64 KiB, pinned) | kern
//   POLLERS  threads of the spinning kernel that poll the pinned flag (1..1024; shoal's ring waits poll
//            pinned host memory)
//   FENCE    1: each poll round also issues fence.sc.sys (as ring_post does before posting)
//   HELPER   how the helper issues and waits for its operation (default rt):
//            rt (runtime API on the primary context, cudaStreamSynchronize: the proxy before session 15) |
//            rt_query (the same, polling cudaStreamQuery) | drv (driver API on the primary context,
//            polling cuStreamQuery) | ctx (runtime API inside a private context of the same GPU, made with
//            cuCtxCreate, on virtual-memory device memory mapped in the primary one, as shoal's heap is)
// The spinning kernel gives up after 2 s, so a helper that waits for it reports about 2000 ms.
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(x)                                             \
  do {                                                    \
    cudaError_t e = (x);                                  \
    if (e != cudaSuccess) {                               \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                       \
    }                                                     \
  } while (0)

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(const int* flag, unsigned long long timeout_ns, int pollers, int fence, int* result) {
  if (static_cast<int>(threadIdx.x) >= pollers) return;
  const unsigned long long start = now_ns();
  for (;;) {
    int v;
    asm volatile("ld.acquire.sys.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    if (v != 0) break;
    if (fence) asm volatile("fence.sc.sys;" ::: "memory");
    if (now_ns() - start > timeout_ns) {
      if (threadIdx.x == 0) *result = -1;
      return;
    }
  }
  if (threadIdx.x == 0) *result = 1;
}

__global__ void tiny(int* p) { *p += 1; }

#define CU(x)                                   \
  do {                                          \
    CUresult r = (x);                           \
    if (r != CUDA_SUCCESS) {                    \
      const char* m = nullptr;                  \
      cuGetErrorString(r, &m);                  \
      std::printf("%s: %s\n", #x, m ? m : "?"); \
      std::exit(1);                             \
    }                                           \
  } while (0)

// nbytes of device memory made as shoal's heap is (cuMemCreate + cuMemMap + cuMemSetAccess).
static char* vmm_alloc(size_t nbytes) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  nbytes = (nbytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h;
  CU(cuMemCreate(&h, nbytes, &prop, 0));
  CUdeviceptr p;
  CU(cuMemAddressReserve(&p, nbytes, 0, 0, 0));
  CU(cuMemMap(p, nbytes, 0, h, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU(cuMemSetAccess(p, nbytes, &access, 1));
  return reinterpret_cast<char*>(p);
}

int main(int argc, char** argv) {
  const char* pending = argc > 1 ? argv[1] : "none";
  const char* op = argc > 2 ? argv[2] : "d2h";
  const int pollers = argc > 3 ? std::atoi(argv[3]) : 1;
  const int fence = argc > 4 ? std::atoi(argv[4]) : 0;
  const char* how = argc > 5 ? argv[5] : "rt";
  const size_t nbytes = size_t{1} << 20;
  cudaStream_t a, b;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  int *flag, *result, *word;
  char *pinned1, *pinned2, *dev1, *dev2;
  CK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  CK(cudaHostAlloc(&result, sizeof(int), cudaHostAllocMapped));
  *flag = 0, *result = 0;
  CK(cudaHostAlloc(&pinned1, nbytes, 0));
  CK(cudaHostAlloc(&pinned2, nbytes, 0));
  CK(cudaMalloc(&dev1, nbytes));
  CK(cudaMalloc(&dev2, nbytes));
  CK(cudaMalloc(&word, sizeof(int)));
  // HELPER=ctx: the helper's own context, stream and pinned buffer; its device memory is VMM memory.
  CUcontext primary = nullptr, own = nullptr;
  CUstream own_stream = nullptr;
  char* own_pinned = nullptr;
  int* own_word = nullptr;
  char* vmm = nullptr;
  if (!std::strcmp(how, "ctx")) {
    CU(cuCtxGetCurrent(&primary));
    vmm = vmm_alloc(nbytes);
    own_word = reinterpret_cast<int*>(vmm + 65536);
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CU(cuCtxCreate(&own, nullptr, 0, dev));  // becomes current
    CK(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(&own_stream), cudaStreamNonBlocking));
    CK(cudaHostAlloc(&own_pinned, 65536, 0));
    tiny<<<1, 1, 0, reinterpret_cast<cudaStream_t>(own_stream)>>>(own_word);  // loaded in this context too
    CK(cudaMemcpyAsync(own_pinned, vmm, 4096, cudaMemcpyDeviceToHost, reinterpret_cast<cudaStream_t>(own_stream)));
    CK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(own_stream)));
    CU(cuCtxPopCurrent(&own));
    CU(cuCtxSetCurrent(primary));
  }
  std::vector<char> pageable(nbytes);
  // Everything the helper uses is loaded and warm before the spin (no lazy loading on its path).
  tiny<<<1, 1, 0, b>>>(word);
  CK(cudaMemcpyAsync(pinned2, dev2, 4096, cudaMemcpyDeviceToHost, b));
  CK(cudaDeviceSynchronize());

  spin<<<1, 1024, 0, a>>>(flag, 2'000'000'000ull, pollers, fence, result);
  CK(cudaGetLastError());
  cudaEvent_t after;
  CK(cudaEventCreateWithFlags(&after, cudaEventDisableTiming));
  CK(cudaEventRecord(after, a));
  std::thread blocked;
  if (!std::strcmp(pending, "d2h_A")) {
    CK(cudaMemcpyAsync(pinned1, dev1, nbytes, cudaMemcpyDeviceToHost, a));
  } else if (!std::strcmp(pending, "h2d_A")) {
    CK(cudaMemcpyAsync(dev1, pinned1, nbytes, cudaMemcpyHostToDevice, a));
  } else if (!std::strcmp(pending, "d2h_legacy")) {
    CK(cudaStreamWaitEvent(nullptr, after, 0));
    CK(cudaMemcpyAsync(pinned1, dev1, nbytes, cudaMemcpyDeviceToHost, nullptr));
  } else if (!std::strcmp(pending, "event_A")) {  // shoal-bench's timed loop: an event recorded behind the kernel
    cudaEvent_t stop;
    CK(cudaEventCreate(&stop));
    CK(cudaEventRecord(stop, a));
  } else if (!std::strcmp(pending, "kern_A")) {
    tiny<<<1, 1, 0, a>>>(word);
  } else if (!std::strcmp(pending, "d2h_pageable_A")) {
    blocked = std::thread([&] { cudaMemcpyAsync(pageable.data(), dev1, nbytes, cudaMemcpyDeviceToHost, a); });
  } else if (!std::strcmp(pending, "d2h_pageable_legacy")) {  // what tensor.cpu() after an event wait does
    CK(cudaStreamWaitEvent(nullptr, after, 0));
    blocked = std::thread([&] { cudaMemcpy(pageable.data(), dev1, nbytes, cudaMemcpyDeviceToHost); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  const auto t0 = std::chrono::steady_clock::now();
  std::thread helper([&] {
    if (!std::strcmp(how, "ctx")) {
      CU(cuCtxPushCurrent(own));
      auto st = reinterpret_cast<cudaStream_t>(own_stream);
      if (!std::strcmp(op, "d2h"))
        CK(cudaMemcpyAsync(own_pinned, vmm, 65536, cudaMemcpyDeviceToHost, st));
      else if (!std::strcmp(op, "h2d"))
        CK(cudaMemcpyAsync(vmm, own_pinned, 65536, cudaMemcpyHostToDevice, st));
      else
        tiny<<<1, 1, 0, st>>>(own_word);
      CK(cudaStreamSynchronize(st));
      CU(cuCtxPopCurrent(&own));
    } else if (!std::strcmp(how, "drv")) {
      CU(cuCtxSetCurrent(nullptr));
      CUcontext ctx;
      CU(cuDevicePrimaryCtxRetain(&ctx, 0));
      CU(cuCtxSetCurrent(ctx));
      auto st = reinterpret_cast<CUstream>(b);
      if (!std::strcmp(op, "d2h")) {
        CU(cuMemcpyDtoHAsync(pinned2, reinterpret_cast<CUdeviceptr>(dev2), 65536, st));
      } else if (!std::strcmp(op, "h2d")) {
        CU(cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dev2), pinned2, 65536, st));
      } else {
        cudaFunction_t f;
        CK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(tiny)));
        void* args[] = {&word};
        CU(cuLaunchKernel(reinterpret_cast<CUfunction>(f), 1, 1, 1, 1, 1, 1, 0, st, args, nullptr));
      }
      CUresult done;
      while ((done = cuStreamQuery(st)) == CUDA_ERROR_NOT_READY) std::this_thread::yield();
      CU(done);
    } else {
      if (!std::strcmp(op, "d2h"))
        CK(cudaMemcpyAsync(pinned2, dev2, 65536, cudaMemcpyDeviceToHost, b));
      else if (!std::strcmp(op, "h2d"))
        CK(cudaMemcpyAsync(dev2, pinned2, 65536, cudaMemcpyHostToDevice, b));
      else
        tiny<<<1, 1, 0, b>>>(word);
      if (!std::strcmp(how, "rt_query")) {
        cudaError_t done;
        while ((done = cudaStreamQuery(b)) == cudaErrorNotReady) std::this_thread::yield();
        CK(done);
      } else {
        CK(cudaStreamSynchronize(b));
      }
    }
    *reinterpret_cast<volatile int*>(flag) = 1;
  });
  helper.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (blocked.joinable()) blocked.join();
  CK(cudaDeviceSynchronize());
  std::printf("pending=%-15s helper=%-4s/%-8s pollers=%-4d fence=%d: helper took %8.2f ms; the spin %s\n", pending, op,
              how, pollers, fence, ms, *result == 1 ? "saw the flag" : "gave up after 2 s");
  return 0;
}
