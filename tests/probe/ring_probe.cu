// shoal-ring-probe: what one device-initiated operation over the proxy pays before UCX sees it. The ring's
// host-memory words cost a PCIe round trip per read or atomic from a kernel; this probe times those
// primitives one at a time from a single GPU thread, then the full round trip of a waiting descriptor
// through the real ring code (ring_post + ring_wait, through the ring gate, as device_proxy.cuh posts it)
// against a host thread that answers at once with the real consumer (ring_consumer) -- no UCX, no peer.
// The same round trip from a host producer is the host path's floor. Prints one table (markdown).
// A probe of an internal protocol (the ring's detail headers and src/transport/proxy/ring_consumer.hpp),
// hence under tests/; it prints figures, not a verdict, and ctest does not run it.
//
//   shoal-ring-probe [-n ITERATIONS]      (default 2000; needs a GPU, no launcher)
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shoal/detail/device_proxy.cuh"
#include "shoal/detail/proxy_ring.hpp"
#include "transport/proxy/ring_consumer.hpp"

namespace {

using namespace shoal::detail;
namespace ptx = shoal::ptx;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "shoal-ring-probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// What one kernel times, single thread, `n` times in a loop; the kernel writes the mean in ns.
enum class prim : int {
  ld_acquire_sys,  // ld.acquire.sys of a host word
  ld_relaxed_sys,  // ld.relaxed.sys of a host word
  ld_v2_volatile,  // ld.volatile.v2.u64 of a host line (one 16-byte read)
  atom_add_sys,    // atom.relaxed.sys.add of a host word (ring_post's ticket)
  st_release_sys,  // st.release.sys to a host word
  st_relaxed_sys,  // st.relaxed.sys to a host word
  fence_sc_sys,    // fence.sc.sys after a store to host memory
  fence_acq_rel,   // fence.acq_rel.sys after a store to host memory
  nanosleep_1024,  // __nanosleep(1024)
  gate_atomics,    // the two gate atomics of a lone waiter (enter + done, device memory)
  post_nowait,     // ring_post of a non-waiting descriptor (the host thread frees each)
  roundtrip,       // proxy_post_to with kProxyWait: post, wait, read the reply (the device path)
};

__global__ void probe(prim what, int n, uint64_t* host_word, proxy_ring* ring, ring_gate* gate, uint64_t* out_ns,
                      uint64_t* sink) {
  uint64_t acc = 0;
  const uint64_t t0 = ptx::globaltimer();
  for (int i = 0; i < n; ++i) {
    switch (what) {
      case prim::ld_acquire_sys:
        acc += ptx::ld_acquire_sys(host_word);
        break;
      case prim::ld_relaxed_sys:
        acc += ptx::ld_relaxed_sys(host_word);
        break;
      case prim::ld_v2_volatile: {
        uint64_t a, b;
        ptx::ld_volatile_v2_b64(host_word, a, b);
        acc += a + b;
        break;
      }
      case prim::atom_add_sys:
        acc += ptx::atom_add_relaxed_sys(host_word + 8, 1);
        break;
      case prim::st_release_sys:
        ptx::st_release_sys(host_word + 16, static_cast<uint64_t>(i));
        break;
      case prim::st_relaxed_sys:
        ptx::st_relaxed_sys(host_word + 16, static_cast<uint64_t>(i));
        break;
      case prim::fence_sc_sys:
        ptx::st_relaxed_sys(host_word + 16, static_cast<uint64_t>(i));
        ptx::fence_sc_sys();
        break;
      case prim::fence_acq_rel:
        ptx::st_relaxed_sys(host_word + 16, static_cast<uint64_t>(i));
        ptx::fence_acq_rel_sys();
        break;
      case prim::nanosleep_1024:
        __nanosleep(1024);
        break;
      case prim::gate_atomics: {
        ring_gated watch{gate};
        acc += watch.enter();
        watch.leave();
        watch.done();
        break;
      }
      case prim::post_nowait: {
        ring_clock clock{0};
        ring_gated watch{gate};
        proxy_desc d{};
        d.op = proxy_op::p;
        d.pe = 1;
        d.operand = static_cast<uint64_t>(i);
        acc += ring_post(ring, d, clock, watch);
        watch.done();
        break;
      }
      case prim::roundtrip: {
        proxy_desc d{};
        d.op = proxy_op::g;
        d.flags = kProxyWait;
        d.pe = 1;
        d.operand = static_cast<uint64_t>(i);
        const proxy_call call{d, ring, gate, nullptr, 0, 0};  // no report box, no timeout, PE 0
        const uint64_t r = proxy_post_to(&call, "probe");
        if (r != static_cast<uint64_t>(i) + 1) __trap();
        acc += r;
        break;
      }
    }
  }
  const uint64_t t1 = ptx::globaltimer();
  *out_ns = (t1 - t0) / static_cast<uint64_t>(n);
  *sink = acc;
}

// The stand-in proxy: answers every waiting descriptor with operand + 1 and frees the others, at once.
struct echo {
  proxy_ring* ring;
  std::atomic<bool> stop{false};
  std::thread thread;
  explicit echo(proxy_ring* r) : ring(r) {
    thread = std::thread([this] {
      ring_consumer consumer(ring);
      while (!stop.load(std::memory_order_relaxed)) {
        proxy_desc d;
        uint64_t ticket;
        while (consumer.take(&d, &ticket)) {
          if ((d.flags & kProxyWait) != 0)
            consumer.reply(ticket, d.operand + 1);
          else
            consumer.finish(ticket);
        }
        consumer.reclaim();
      }
    });
  }
  ~echo() {
    stop = true;
    thread.join();
  }
};

// A host producer's round trip through the same ring and echo (ring_direct), in ns.
double host_roundtrip(proxy_ring* ring, int n) {
  struct no_clock {
    __host__ __device__ bool operator()() { return false; }
  } clock;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    proxy_desc d{};
    d.op = proxy_op::g;
    d.flags = kProxyWait;
    d.pe = 1;
    d.operand = static_cast<uint64_t>(i);
    const uint64_t ticket = ring_post(ring, d, clock);
    uint64_t r = 0;
    int64_t status = 0;
    ring_wait(ring, ticket, &r, &status, clock);
    if (r != static_cast<uint64_t>(i) + 1) {
      std::fprintf(stderr, "shoal-ring-probe: host round trip: wrong reply\n");
      std::exit(1);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 2000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "-n") == 0) n = std::atoi(argv[i + 1]);
  if (n <= 0) {
    std::fprintf(stderr, "shoal-ring-probe: -n must be positive\n");
    return 2;
  }
  constexpr uint32_t kSlots = 256;
  void* ring_mem = nullptr;
  check(cudaHostAlloc(&ring_mem, proxy_ring::nbytes_for(kSlots), cudaHostAllocMapped), "cudaHostAlloc ring");
  std::memset(ring_mem, 0, proxy_ring::nbytes_for(kSlots));
  auto* ring = static_cast<proxy_ring*>(ring_mem);
  ring->slots = kSlots;
  void* words = nullptr;
  check(cudaHostAlloc(&words, 4096, cudaHostAllocMapped), "cudaHostAlloc words");
  std::memset(words, 0, 4096);
  ring_gate* gate = nullptr;
  uint64_t* out = nullptr;
  check(cudaMalloc(&gate, sizeof(ring_gate)), "cudaMalloc gate");
  check(cudaMemset(gate, 0, sizeof(ring_gate)), "cudaMemset gate");
  check(cudaMallocManaged(&out, 2 * sizeof(uint64_t)), "cudaMallocManaged");
  proxy_ring* ring_dev = nullptr;
  uint64_t* words_dev = nullptr;
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&ring_dev), ring_mem, 0), "ring device pointer");
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&words_dev), words, 0), "words device pointer");

  struct item {
    prim p;
    const char* name;
  };
  const std::vector<item> items = {
      {prim::ld_acquire_sys, "ld.acquire.sys, host word"},
      {prim::ld_relaxed_sys, "ld.relaxed.sys, host word"},
      {prim::ld_v2_volatile, "ld.volatile.v2.u64, host line (16 B)"},
      {prim::atom_add_sys, "atom.relaxed.sys.add, host word"},
      {prim::st_release_sys, "st.release.sys, host word"},
      {prim::st_relaxed_sys, "st.relaxed.sys, host word"},
      {prim::fence_sc_sys, "st.relaxed.sys + fence.sc.sys"},
      {prim::fence_acq_rel, "st.relaxed.sys + fence.acq_rel.sys"},
      {prim::nanosleep_1024, "__nanosleep(1024)"},
      {prim::gate_atomics, "ring gate: enter + leave + done (lone waiter)"},
      {prim::post_nowait, "ring_post, not waiting (echo frees it)"},
      {prim::roundtrip, "proxy_post_to, waiting (the device path)"},
  };
  std::printf("| step (one GPU thread, mean of %d) | ns |\n|---|---|\n", n);
  {
    echo proxy(ring);
    for (const item& it : items) {
      probe<<<1, 1>>>(it.p, 20, words_dev, ring_dev, gate, out, out + 1);  // warm-up
      probe<<<1, 1>>>(it.p, n, words_dev, ring_dev, gate, out, out + 1);
      check(cudaDeviceSynchronize(), it.name);
      std::printf("| %s | %llu |\n", it.name, static_cast<unsigned long long>(out[0]));
    }
    host_roundtrip(ring, 100);
    std::printf("| host producer: ring_post + ring_wait (ring_direct) | %.0f |\n", host_roundtrip(ring, n));
  }
  return 0;
}
