// The device handle of a team: a strided subset of the world's PEs (team PE r is world PE
// start + r * stride), trivially copyable, for kernels to receive by value. Plain C++; get one
// with shoalx_team_device_handle(); <shoal/device/team.cuh> has the device helpers.
#pragma once

#include <cstdint>
#include <type_traits>

#include "shoal/device_world.hpp"

namespace shoal {

/// A team as a kernel sees it. Team PE r (0 <= r < n_pes) is world PE start + r * stride.
struct device_team {
  int32_t my_pe_in_team = -1;  ///< this PE's number in the team
  int32_t n_pes = 0;           ///< PEs in the team
  int32_t start = 0;           ///< world PE of team PE 0
  int32_t stride = 0;          ///< world-PE distance between consecutive team PEs (may be negative; any if n_pes == 1)

  /// World PE of team PE `team_pe`, or -1 when team_pe is out of range.
  SHOAL_HOST_DEVICE int32_t world_pe(int32_t team_pe) const {
    return team_pe >= 0 && team_pe < n_pes ? start + team_pe * stride : -1;
  }
  /// Team number of world PE `pe`, or -1 when it is not in the team.
  SHOAL_HOST_DEVICE int32_t team_pe_of(int32_t pe) const {
    int32_t delta = pe - start;
    if (stride == 0 || n_pes == 1) return delta == 0 && n_pes >= 1 ? 0 : -1;
    if (delta % stride != 0) return -1;
    int32_t r = delta / stride;
    return r >= 0 && r < n_pes ? r : -1;
  }
};
static_assert(std::is_trivially_copyable_v<device_team>);
static_assert(std::is_standard_layout_v<device_team>);

}  // namespace shoal
