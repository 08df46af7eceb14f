// The device facade in two translation units of one program, built without -rdc: each unit has its
// own __constant__ copy of the world, registered at static init and filled by shoal_init. Kernels
// in both units must see the right my_pe/n_pes and be able to put to the peer (and ptr must agree).
// This unit holds the test; multi_tu_gpu_test_b.cu holds the second unit's kernel. Also: the host's
// shoal::default_world_device_handle() is the handle the facade kernels read (what ep/ passes to kernels).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "gpu_env.hpp"
#include "multi_tu_gpu_test.hpp"
#include "shoal/shoal.h"
#include "shoal/world.hpp"

namespace shoal_test {

namespace {

/// Unit A: one thread reports what the facade says, then the block puts `words` words to the peer.
__global__ void unit_a_kernel(int* identity, uint32_t* dst, const uint32_t* src, size_t words) {
  if (threadIdx.x == 0) {
    identity[0] = shoal_my_pe();
    identity[1] = shoal_n_pes();
    identity[2] = shoal_ptr(dst, (shoal_my_pe() + 1) % shoal_n_pes()) != nullptr ? 1 : 0;
  }
  shoalx_putmem_block(dst, src, words * sizeof(uint32_t), (shoal_my_pe() + 1) % shoal_n_pes());
  if (threadIdx.x == 0) shoal_quiet();
}

void check_identity(const char* unit, const int* dev_identity) {
  int seen[3];
  GT_CUDA(cudaMemcpy(seen, dev_identity, sizeof(seen), cudaMemcpyDeviceToHost));
  if (seen[0] != me() || seen[1] != npes() || seen[2] != 1)
    ADD_FAILURE() << format(
        "%s: the facade in this translation unit says my_pe=%d n_pes=%d ptr(peer)%s; expected my_pe=%d n_pes=%d "
        "and a peer mapping (is its __constant__ world filled?)",
        unit, seen[0], seen[1], seen[2] == 1 ? "!=NULL" : "==NULL", me(), npes());
}

TEST(multi_tu_gpu, facade_in_two_translation_units) {
  constexpr size_t kWords = 1000;
  auto* dst = static_cast<uint32_t*>(shoal_malloc(2 * kWords * sizeof(uint32_t)));
  auto* src = static_cast<uint32_t*>(shoal_malloc(2 * kWords * sizeof(uint32_t)));
  int* identity = nullptr;
  GT_CUDA(cudaMalloc(&identity, 6 * sizeof(int)));
  GT_CUDA(cudaMemset(identity, 0xff, 6 * sizeof(int)));
  GT_CUDA(cudaMemset(dst, kPoison, 2 * kWords * sizeof(uint32_t)));
  std::vector<uint32_t> mine(2 * kWords);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = 0x01000000u * (me() + 1) + static_cast<uint32_t>(i);
  GT_CUDA(cudaMemcpy(src, mine.data(), mine.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  sync_all_pes();
  unit_a_kernel<<<1, 128>>>(identity, dst, src, kWords);
  GT_LAUNCHED("unit A kernel (shoalx_putmem_block)");
  run_unit_b_kernel(identity + 3, dst + kWords, src + kWords, kWords);  // the other translation unit
  GT_LAUNCHED("unit B kernel (shoal_uint32_put)");
  sync_all_pes();
  check_identity("unit A (multi_tu_gpu_test.cu)", identity);
  check_identity("unit B (multi_tu_gpu_test_b.cu)", identity + 3);
  std::vector<uint32_t> seen(2 * kWords), expected(2 * kWords);
  const int from = (me() + npes() - 1) % npes();
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = 0x01000000u * (from + 1) + static_cast<uint32_t>(i);
  GT_CUDA(cudaMemcpy(seen.data(), dst, seen.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal("words put by unit A's kernel", seen.data(), expected.data(), kWords * sizeof(uint32_t)));
  EXPECT_TRUE(bytes_equal("words put by unit B's kernel", seen.data() + kWords, expected.data() + kWords,
                          kWords * sizeof(uint32_t)));
  sync_all_pes();
  GT_CUDA(cudaFree(identity));
  shoal_free(src);
  shoal_free(dst);
}

/// Copies this translation unit's facade world (the __constant__ copy) to `out`.
__global__ void facade_world_kernel(shoal::device_world* out) { *out = shoal::device::facade_world(); }

/// Field by field (the struct has padding): records a failure naming `what` and the first field that differs.
void expect_same_world(const char* what, const shoal::device_world& a, const shoal::device_world& b) {
  const char* field = nullptr;
  if (a.my_pe != b.my_pe || a.n_pes != b.n_pes)
    field = "my_pe/n_pes";
  else if (a.heap_base != b.heap_base || a.region != b.region || a.stride != b.stride)
    field = "heap";
  else if (a.local_of_pe != b.local_of_pe || a.path_of_pe != b.path_of_pe)
    field = "peer tables";
  else if (a.sync_offset != b.sync_offset || a.wait_timeout_ns != b.wait_timeout_ns || a.flags != b.flags)
    field = "sync_offset/wait_timeout_ns/flags";
  else if (a.teams != b.teams || a.max_teams != b.max_teams || a.n_local != b.n_local)
    field = "teams/n_local";
  else if (a.coll_offset != b.coll_offset || a.coll_channels != b.coll_channels || a.coll_ll_bytes != b.coll_ll_bytes)
    field = "collective workspace";
  else if (a.proxy_ring != b.proxy_ring)
    field = "proxy_ring";
  if (field != nullptr) ADD_FAILURE() << format("%s: %s differ", what, field);
}

TEST(multi_tu_gpu, default_world_device_handle_is_the_facade_world) {
  const shoal::device_world host = shoal::default_world_device_handle();
  if (host.my_pe != me() || host.n_pes != npes() || host.heap_base == nullptr)
    ADD_FAILURE() << format(
        "default_world_device_handle: my_pe=%d n_pes=%d heap_base=%p; expected my_pe=%d n_pes=%d and a GPU heap",
        host.my_pe, host.n_pes, static_cast<void*>(host.heap_base), me(), npes());
  shoal::device_world* dev = nullptr;
  GT_CUDA(cudaMalloc(&dev, sizeof(shoal::device_world)));
  facade_world_kernel<<<1, 1>>>(dev);
  GT_LAUNCHED("facade_world kernel");
  shoal::device_world seen{};
  GT_CUDA(cudaMemcpy(&seen, dev, sizeof(seen), cudaMemcpyDeviceToHost));
  GT_CUDA(cudaFree(dev));
  expect_same_world("default_world_device_handle() vs the facade's __constant__ world", host, seen);
  expect_same_world("default_world_device_handle() vs the registry's copy", host, device_handle());
}

}  // namespace
}  // namespace shoal_test
