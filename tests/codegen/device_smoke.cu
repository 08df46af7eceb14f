// Single-GPU smoke test of the device API, no libshoal needed: two simulated PEs in one cudaMalloc
// (region = base, stride = S), run as two blocks of one kernel where they must interact. Covers the
// copy engines (every scope, sizes, misalignments, TMA, shared-memory source), put_signal ping-pong
// (thread/block), barrier_all_block, atomics, multi-word waits/tests, the facade's __constant__
// world (through a stub registry) and, with argument `timeout`, the timeout report + trap.
// check_ptx.sh compiles it; run it on any sm_90 GPU: ./device_smoke && ./device_smoke timeout
// (passed on one H200 when written: "SMOKE OK", and the timeout line + "unspecified launch failure").
#include <shoal/shoal.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// stub of libshoal's registry, to exercise the facade's __constant__ world
static void (*g_update)(const void*, size_t) = nullptr;
extern "C" void shoal_detail_register_device_facade(void (*u)(const void*, size_t)) { g_update = u; }

using shoal::device_world;
namespace dev = shoal::device;
#define CK(x)                                                             \
  do {                                                                    \
    cudaError_t e = (x);                                                  \
    if (e != cudaSuccess) {                                               \
      printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); \
      exit(2);                                                            \
    }                                                                     \
  } while (0)

constexpr size_t S = 64ull << 20;
int failures = 0;
#define EXPECT(c, ...)                    \
  do {                                    \
    if (!(c)) {                           \
      ++failures;                         \
      printf("FAIL line %d: ", __LINE__); \
      printf(__VA_ARGS__);                \
      printf("\n");                       \
    }                                     \
  } while (0)

__global__ void k_put(device_world w, int mode, char* dst, const char* src, size_t n, int pe) {
  extern __shared__ __align__(128) unsigned char smem[];
  switch (mode) {
    case 0:
      if (threadIdx.x == 0) dev::putmem(shoal::thread, w, dst, src, n, pe);
      break;
    case 1:
      if (threadIdx.x < 32) dev::putmem(shoal::warp, w, dst, src, n, pe);
      break;
    case 2:
      dev::putmem(shoal::block, w, dst, src, n, pe);
      break;
    case 3:
      dev::putmem_tma<4, 16384>(shoal::block, w, dst, src, n, pe, smem);
      break;
    case 4:
      dev::getmem(shoal::block, w, dst, src, n, pe);
      break;  // dst local, src symmetric on pe
    case 5:
      if (threadIdx.x < 32) dev::getmem(shoal::warp, w, dst, src, n, pe);
      break;
    case 6: {
      __shared__ char tmp[4096];
      for (size_t i = threadIdx.x; i < n && i < 4096; i += blockDim.x) tmp[i] = src[i];
      __syncthreads();
      dev::putmem(shoal::block, w, dst, tmp, n < 4096 ? n : 4096, pe);
      break;
    }  // shared-memory source
  }
}

// two blocks = two PEs
__global__ void k_pingpong(device_world w0, device_world w1, int* buf, uint64_t* sig, int iters, int* errors,
                           int scope) {
  const device_world& w = blockIdx.x == 0 ? w0 : w1;
  const int me = w.my_pe, peer = 1 - me;
  int* local_buf = reinterpret_cast<int*>(w.heap_base + (reinterpret_cast<char*>(buf) - w0.heap_base));
  uint64_t* local_sig = reinterpret_cast<uint64_t*>(w.heap_base + (reinterpret_cast<char*>(sig) - w0.heap_base));
  buf = local_buf;  // symmetric addresses are in the caller's own heap
  sig = local_sig;
  __shared__ int src[256];
  for (int it = 1; it <= iters; ++it) {
    if ((it & 1) == (me == 0 ? 1 : 0)) {  // my turn to send
      for (int i = threadIdx.x; i < 256; i += blockDim.x) src[i] = it * 1000 + i;
      __syncthreads();
      if (scope == 2)
        dev::put_signal(shoal::block, w, buf, src, 256, sig, 1, SHOAL_SIGNAL_ADD, peer);
      else if (threadIdx.x == 0)
        dev::put_signal(shoal::thread, w, buf, src, 256, sig, 1, SHOAL_SIGNAL_ADD, peer);
      __syncthreads();
    } else {
      if (threadIdx.x == 0) dev::signal_wait_until(w, local_sig, SHOAL_CMP_GE, (uint64_t)((it + 1) / 2));
      __syncthreads();
      for (int i = threadIdx.x; i < 256; i += blockDim.x)
        if (local_buf[i] != it * 1000 + i) atomicAdd(errors, 1);
      __syncthreads();
    }
  }
}

__global__ void k_barrier(device_world w0, device_world w1, int* ctr, int iters, int* errors) {
  const device_world& w = blockIdx.x == 0 ? w0 : w1;
  const int me = w.my_pe, peer = 1 - me;
  int* local_ctr = reinterpret_cast<int*>(w.heap_base + (reinterpret_cast<char*>(ctr) - w0.heap_base));
  ctr = local_ctr;
  for (int it = 1; it <= iters; ++it) {
    if (threadIdx.x == 0) dev::p(w, ctr, it, peer);  // weak-ish flag, ordered by the barrier
    dev::barrier_all(shoal::block, w);
    if (threadIdx.x == 0 && *local_ctr != it) atomicAdd(errors, 1);
    dev::barrier_all(shoal::block, w);
  }
}

__global__ void k_atomics(device_world w0, device_world w1, unsigned long long* c, double* d, int iters) {
  const device_world& w = blockIdx.x == 0 ? w0 : w1;
  c = reinterpret_cast<unsigned long long*>(w.heap_base + (reinterpret_cast<char*>(c) - w0.heap_base));
  d = reinterpret_cast<double*>(w.heap_base + (reinterpret_cast<char*>(d) - w0.heap_base));
  for (int i = 0; i < iters; ++i) {
    dev::atomic_fetch_add(w, c, 1ull, 0);
    dev::atomic_add(w, c + 1, 2ull, 0);
    dev::atomic_inc(w, c + 2, 0);
    dev::atomic_add(w, d, 0.5, 0);
    dev::atomic_fetch_or(w, c + 3, 1ull << (threadIdx.x % 64), 0);
    unsigned long long old;
    do {
      old = dev::atomic_fetch(w, c + 4, 0);
    } while (dev::atomic_compare_swap(w, c + 4, old, old + 1, 0) != old);
  }
}

__global__ void k_wait_multi(device_world w, int* ivars, int* out) {
  ivars[3] = 7;
  __threadfence();
  out[0] = (int)dev::wait_until_any(w, ivars, 8, nullptr, SHOAL_CMP_EQ, 7);
  size_t idx[8];
  out[1] = (int)dev::test_some(w, ivars, 8, idx, nullptr, SHOAL_CMP_EQ, 7);
  out[2] = (int)idx[0];
  out[3] = dev::test_all(w, ivars, 8, nullptr, SHOAL_CMP_EQ, 7);
  int status[8] = {1, 1, 1, 0, 1, 1, 1, 1};
  out[4] = dev::test_all(w, ivars, 8, status, SHOAL_CMP_EQ, 7);
  dev::wait_until(w, ivars + 3, SHOAL_CMP_GE, 7);
  out[5] = dev::test(w, ivars + 3, SHOAL_CMP_NE, 7);
}

__global__ void k_timeout(device_world w, uint64_t* sig) { dev::signal_wait_until(w, sig, SHOAL_CMP_EQ, 5); }

__global__ void k_facade(int* dst, int* out) {
  shoal_int_p(dst, 42, 1);
  shoal_quiet();
  out[0] = shoal_int_g(dst, 1);
  out[1] = shoal_my_pe();
  out[2] = shoal_n_pes();
  out[3] = shoal_ptr(dst, 1) != nullptr;
  out[4] = shoal_ptr(dst, 2) == nullptr;
}
__global__ void k_facade_block(char* dst, const char* src, size_t n) { shoalx_putmem_block(dst, src, n, 1); }

int main(int argc, char** argv) {
  char* base;
  CK(cudaMalloc(&base, 2 * S));
  CK(cudaMemset(base, 0, 2 * S));
  device_world w[2];
  for (int pe = 0; pe < 2; ++pe) {
    w[pe].my_pe = pe;
    w[pe].n_pes = 2;
    w[pe].heap_base = base + pe * S;
    w[pe].region = base;
    w[pe].stride = S;
    w[pe].local_of_pe = nullptr;
    w[pe].sync_offset = S - 4096;
    w[pe].wait_timeout_ns = 2000000000ull;
  }
  if (argc > 1 && !strcmp(argv[1], "timeout")) {
    w[0].wait_timeout_ns = 50000000;  // 50 ms
    k_timeout<<<1, 1>>>(w[0], (uint64_t*)(base + 4096));
    cudaError_t e = cudaDeviceSynchronize();
    printf("timeout kernel returned: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess ? 1 : 0;
  }
  CK(cudaFuncSetAttribute(k_put, cudaFuncAttributeMaxDynamicSharedMemorySize, 70000));
  const size_t tma_smem = dev::tma_workspace_bytes<4, 16384>;
  // RMA: sizes x misalignments x modes
  std::vector<char> h(8 << 20), r(8 << 20);
  for (size_t i = 0; i < h.size(); ++i) h[i] = (char)(i * 131 + 7);
  CK(cudaMemcpy(base + (1 << 20), h.data(), h.size(), cudaMemcpyHostToDevice));  // PE0 src at 1 MiB
  const size_t sizes[] = {0, 1, 7, 16, 33, 255, 4096, 4099, 65536, 65536 + 48, 1 << 20, (1 << 20) + 5, (3 << 20) + 17};
  const int offs[][2] = {{0, 0}, {1, 1}, {3, 0}, {0, 8}, {5, 9}, {16, 16}, {4, 12}};
  const int threads[] = {1, 32, 128, 512, 1024};
  int checked = 0;
  for (int mode = 0; mode <= 6; ++mode)
    for (size_t n : sizes)
      for (auto& o : offs)
        for (int t : threads) {
          if (mode == 1 || mode == 5) {
            if (t < 32) continue;
          }
          if (mode == 0 && n > (1 << 20)) continue;
          if (mode == 6 && n > 4096) continue;
          if (t != 512 && !(mode == 3 || mode == 2)) {
            if (t != 32 && t != 1) continue;
          }
          if (mode == 6 && t < 32) continue;
          char* dst_sym = base + (16 << 20) + o[1];  // symmetric address (PE0 view)
          CK(cudaMemset(base + S + (16 << 20), 0, 4 << 20));
          CK(cudaMemset(base + (32 << 20), 0, 4 << 20));
          if (mode == 4 || mode == 5) {
            // get: PE0 gets from PE1's src (copy h to PE1 at 1 MiB) into PE0 local at 32 MiB
            CK(cudaMemcpy(base + S + (1 << 20), h.data(), 4 << 20, cudaMemcpyHostToDevice));
            k_put<<<1, t, 0>>>(w[0], mode, base + (32 << 20) + o[1], base + (1 << 20) + o[0], n, 1);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(r.data(), base + (32 << 20), n + 32, cudaMemcpyDeviceToHost));
          } else {
            k_put<<<1, t, mode == 3 ? tma_smem : 0>>>(w[0], mode, dst_sym, base + (1 << 20) + o[0], n, 1);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(r.data(), base + S + (16 << 20), n + 32, cudaMemcpyDeviceToHost));
          }
          bool ok = true;
          for (int i = 0; i < o[1]; ++i) ok &= r[i] == 0;
          ok &= memcmp(r.data() + o[1], h.data() + o[0], n) == 0;
          for (int i = 0; i < 16; ++i) ok &= r[o[1] + n + i] == 0;
          EXPECT(ok, "mode %d n %zu offs %d/%d threads %d", mode, n, o[0], o[1], t);
          ++checked;
        }
  printf("rma: %d cases\n", checked);
  int* errors;
  CK(cudaMalloc(&errors, 64));
  CK(cudaMemset(errors, 0, 64));
  // put_signal ping-pong between two blocks
  for (int scope : {0, 2}) {
    CK(cudaMemset(base + 8192, 0, 8));
    CK(cudaMemset(base + S + 8192, 0, 8));
    CK(cudaMemset(errors, 0, 4));
    k_pingpong<<<2, 256>>>(w[0], w[1], (int*)(base + (40 << 20)), (uint64_t*)(base + 8192), 20000, errors, scope);
    CK(cudaDeviceSynchronize());
    int e;
    CK(cudaMemcpy(&e, errors, 4, cudaMemcpyDeviceToHost));
    EXPECT(e == 0, "pingpong scope %d: %d data errors", scope, e);
  }
  CK(cudaMemset(errors, 0, 4));
  k_barrier<<<2, 128>>>(w[0], w[1], (int*)(base + 12288), 20000, errors);
  CK(cudaDeviceSynchronize());
  {
    int e;
    CK(cudaMemcpy(&e, errors, 4, cudaMemcpyDeviceToHost));
    EXPECT(e == 0, "barrier: %d errors", e);
  }
  unsigned long long* c = (unsigned long long*)(base + 16384);
  double* d = (double*)(base + 16384 + 64);
  k_atomics<<<2, 64>>>(w[0], w[1], c, d, 100);
  CK(cudaDeviceSynchronize());
  {
    unsigned long long hc[5];
    double hd;
    CK(cudaMemcpy(hc, c, 40, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hd, d, 8, cudaMemcpyDeviceToHost));
    EXPECT(hc[0] == 12800 && hc[1] == 25600 && hc[2] == 12800 && hc[3] == ~0ull && hc[4] == 12800 && hd == 6400.0,
           "atomics %llu %llu %llu %llx %llu %f", hc[0], hc[1], hc[2], hc[3], hc[4], hd);
  }
  int* out;
  CK(cudaMalloc(&out, 64));
  k_wait_multi<<<1, 1>>>(w[0], (int*)(base + 20480), out);
  CK(cudaDeviceSynchronize());
  {
    int ho[6];
    CK(cudaMemcpy(ho, out, 24, cudaMemcpyDeviceToHost));
    EXPECT(ho[0] == 3 && ho[1] == 1 && ho[2] == 3 && ho[3] == 0 && ho[4] == 1 && ho[5] == 0,
           "wait_multi %d %d %d %d %d %d", ho[0], ho[1], ho[2], ho[3], ho[4], ho[5]);
  }
  // facade
  if (g_update == nullptr) {
    ++failures;
    printf("FAIL: facade did not register\n");
  } else {
    g_update(&w[0], sizeof(device_world));
    k_facade<<<1, 1>>>((int*)(base + 24576), out);
    CK(cudaDeviceSynchronize());
    int ho[5];
    CK(cudaMemcpy(ho, out, 20, cudaMemcpyDeviceToHost));
    EXPECT(ho[0] == 42 && ho[1] == 0 && ho[2] == 2 && ho[3] == 1 && ho[4] == 1, "facade %d %d %d %d %d", ho[0], ho[1],
           ho[2], ho[3], ho[4]);
    CK(cudaMemset(base + S + (16 << 20), 0, 1 << 20));
    k_facade_block<<<1, 512>>>(base + (16 << 20), base + (1 << 20), 100000);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(r.data(), base + S + (16 << 20), 100000, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(r.data(), h.data(), 100000) == 0, "facade putmem_block");
  }
  printf("rma+sync done\n");
  printf("%s (%d failures)\n", failures ? "SMOKE FAILED" : "SMOKE OK", failures);
  return failures ? 1 : 0;
}
