// collect (per-member sizes, NVSHMEM has none) on GPU heaps, in its three forms: the blocking host
// call (shoal_collectmem: sizes and arguments agreed by an LL exchange, copy-engine pulls), the
// on-stream call (shoalx_collectmem_on_stream: one CTA, sizes by LL, then pushes) and the device
// block-scope call (shoal::device::collectmem(shoal::block, ...)). Member r contributes a size that depends on r
// (one member contributes nothing in some cases); dest must be every member's pattern, in team
// order, followed by untouched poison. Teams: WORLD and WORLD reversed (start n-1, stride -1).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_env.hpp"
#include "shoal/device/coll.cuh"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

constexpr size_t kGuard = 64;

__global__ void collect_block_kernel(shoal::device_world w, shoal::device_team t, void* dest, const void* source,
                                     size_t bytes) {
  shoal::device::collectmem(shoal::block, w, t, dest, source, bytes);
}

/// Bytes team PE r contributes in case c.
size_t size_of(int c, int r, int n) {
  switch (c) {
    case 0:
      return static_cast<size_t>(7 + 3 * r);
    case 1:
      return r == n - 1 ? 0 : static_cast<size_t>(65537 + 1000 * r);  // the last member sends nothing
    default:
      return static_cast<size_t>((1u << 20) + 13 * r);
  }
}

struct team_case {
  shoal_team_t handle;
  const char* name;
  int rank_of_pe(int pe) const { return shoal_team_translate_pe(SHOAL_TEAM_WORLD, pe, handle); }
};

void run_case(const team_case& tc, int c, int form, uint8_t* src, uint8_t* dst, size_t dst_cap, cudaStream_t s) {
  const int n = npes();
  const int my_rank = tc.rank_of_pe(me());
  const uint32_t salt = static_cast<uint32_t>(c * 16 + form * 4 + (tc.handle == SHOAL_TEAM_WORLD ? 0 : 1));
  const size_t mine = size_of(c, my_rank, n);
  const std::vector<uint8_t> pat = pattern(me(), salt, mine);
  GT_CUDA(cudaMemset(dst, kPoison, dst_cap));
  if (mine > 0) GT_CUDA(cudaMemcpy(src, pat.data(), mine, cudaMemcpyHostToDevice));
  GT_CUDA(cudaDeviceSynchronize());
  sync_all_pes();  // every dest poisoned and every source filled before anyone writes
  int rc = 0;
  if (form == 0) {
    rc = shoal_collectmem(tc.handle, dst, src, mine);
  } else if (form == 1) {
    rc = shoalx_collectmem_on_stream(tc.handle, dst, src, mine, s);
    GT_CUDA(cudaStreamSynchronize(s));
  } else {
    shoal::device_team t{};
    if (shoalx_team_device_handle(tc.handle, &t, sizeof t) != 0)
      ADD_FAILURE() << format("shoalx_team_device_handle(%d)", tc.handle);
    collect_block_kernel<<<1, 256, 0, s>>>(device_handle(), t, dst, src, mine);
    GT_LAUNCHED("collect_block_kernel");
    GT_CUDA(cudaStreamSynchronize(s));
  }
  if (rc != 0) ADD_FAILURE() << format("%s form %d case %d: returned %d", tc.name, form, c, rc);
  std::vector<uint8_t> expected;
  for (int r = 0; r < n; ++r) {
    int pe = -1;
    for (int q = 0; q < n; ++q)
      if (tc.rank_of_pe(q) == r) pe = q;
    const std::vector<uint8_t> p = pattern(pe, salt, size_of(c, r, n));
    expected.insert(expected.end(), p.begin(), p.end());
  }
  expected.insert(expected.end(), kGuard, kPoison);
  std::vector<uint8_t> seen(expected.size());
  GT_CUDA(cudaMemcpy(seen.data(), dst, seen.size(), cudaMemcpyDeviceToHost));
  static const char* const forms[] = {"shoal_collectmem (blocking, GPU heap)", "shoalx_collectmem_on_stream",
                                      "device collectmem_block"};
  EXPECT_TRUE(bytes_equal(format("%s, team %s, case %d", forms[form], tc.name, c).c_str(), seen.data(), expected.data(),
                          expected.size()));
  sync_all_pes();  // nobody re-poisons a dest another member may still be writing
}

TEST(coll_collect_gpu, collect_three_forms) {
  const int n = npes();
  size_t max_total = 0;
  for (int c = 0; c < 3; ++c) {
    size_t total = 0;
    for (int r = 0; r < n; ++r) total += size_of(c, r, n);
    if (total > max_total) max_total = total;
  }
  const size_t dst_cap = max_total + kGuard;
  auto* src = static_cast<uint8_t*>(shoal_malloc(size_of(2, n - 1, n)));
  auto* dst = static_cast<uint8_t*>(shoal_malloc(dst_cap));
  if (src == nullptr || dst == nullptr) ADD_FAILURE() << "shoal_malloc returned NULL";
  shoal_team_t reversed = SHOAL_TEAM_INVALID;
  if (shoal_team_split_strided(SHOAL_TEAM_WORLD, n - 1, -1, n, nullptr, 0, &reversed) != 0)
    ADD_FAILURE() << "split reversed";
  const team_case teams[] = {{SHOAL_TEAM_WORLD, "WORLD"}, {reversed, "WORLD-reversed"}};
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const team_case& tc : teams)
    for (int c = 0; c < 3; ++c)
      for (int form = 0; form < 3; ++form) run_case(tc, c, form, src, dst, dst_cap, s);
  GT_CUDA(cudaStreamDestroy(s));
  shoal_team_destroy(reversed);
  shoal_free(dst);
  shoal_free(src);
}

}  // namespace
}  // namespace shoal_test
