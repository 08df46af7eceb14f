// Team splits on GPU heaps are collective over the parent team's members only (the exchange runs
// through the bootstrap there, as GPU heaps have no host team words): the odd PEs split their team
// reversed, then a team of its first PE alone, check its device handle and reduce on it, while the
// even PEs run barriers on their own team (PE 0 sleeping first: it relays the bootstrap's mail on
// its monitor thread, never on its own). Then a split of WORLD where one PE disagrees fails on every
// PE alike, and the job goes on. At 2 PEs the odd team is PE 1 alone (its splits need no exchange);
// at 4 and 8 (SHOAL_GPU_TEST_PES) they run among the odd PEs only.
#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include "gpu_env.hpp"
#include "shoal/device_team.hpp"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

TEST(team_gpu, splits_by_the_parents_members_only) {
  const int n = npes();
  auto* buf = static_cast<int*>(shoal_malloc(2 * sizeof(int)));
  if (buf == nullptr) {
    ADD_FAILURE() << "shoal_malloc returned NULL";
    return;
  }
  // parity: the odd PEs' team on the odd PEs, the even PEs' team on the even ones (one handle).
  shoal_team_t row = SHOAL_TEAM_INVALID, parity = SHOAL_TEAM_INVALID;
  if (shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &parity) != 0) {
    ADD_FAILURE() << "split_2d(WORLD, 2) failed";
    return;
  }
  const int size = shoal_team_n_pes(parity);
  if (me() % 2 == 1) {
    shoal_team_t reversed = SHOAL_TEAM_INVALID, first = SHOAL_TEAM_INVALID;
    if (shoal_team_split_strided(parity, size - 1, -1, size, nullptr, 0, &reversed) != 0 ||
        reversed == SHOAL_TEAM_INVALID)
      ADD_FAILURE() << format("split_strided(odd PEs, %d, -1, %d) failed", size - 1, size);
    if (shoal_team_split_strided(reversed, 0, 1, 1, nullptr, 0, &first) != 0)
      ADD_FAILURE() << "split of the reversed team";
    if ((first != SHOAL_TEAM_INVALID) != (me() == 2 * size - 1))
      ADD_FAILURE() << format("PE %d got team %d from the split of the reversed team's first PE", me(), first);
    shoal::device_team d{};
    if (shoalx_team_device_handle(reversed, &d, sizeof d) != 0) {
      ADD_FAILURE() << "no device handle for the reversed team";
    } else if (d.n_pes != size || d.world_pe(0) != 2 * size - 1 || d.world_pe(d.my_pe_in_team) != me()) {
      ADD_FAILURE() << format("device handle of the reversed team: n_pes %d, PE 0 is %d, this PE %d", d.n_pes,
                              d.world_pe(0), d.world_pe(d.my_pe_in_team));
    }
    const int mine = me();
    GT_CUDA(cudaMemcpy(&buf[0], &mine, sizeof mine, cudaMemcpyHostToDevice));
    if (shoal_int_sum_reduce(reversed, &buf[1], &buf[0], 1) != 0) ADD_FAILURE() << "sum_reduce on the reversed team";
    int sum = 0;
    GT_CUDA(cudaMemcpy(&sum, &buf[1], sizeof sum, cudaMemcpyDeviceToHost));
    if (sum != size * size)
      ADD_FAILURE() << format("sum of the odd PEs is %d, expected %d", sum, size * size);  // 1 + 3 + ...
    shoal_team_destroy(first);
    shoal_team_destroy(reversed);
  } else {
    if (me() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int i = 0; i < 10; ++i)
      if (shoal_barrier(parity) != 0) ADD_FAILURE() << format("barrier %d of the even PEs' team", i);
  }
  // One PE disagrees on the size: every PE fails with a mismatch, no team is made.
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_team_t t = 12345;
  const int rc = shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 1, me() == n - 1 ? 1 : n, nullptr, 0, &t);
  if (rc != SHOAL_ERR_MISMATCH || t != SHOAL_TEAM_INVALID)
    ADD_FAILURE() << format("mismatched split gave %d and team %d", rc, t);
  shoal_clear_error();
  shoal_set_error_mode(old_mode);
  shoal_team_destroy(row);
  shoal_team_destroy(parity);
  sync_all_pes();
  shoal_free(buf);
}

}  // namespace
}  // namespace shoal_test
