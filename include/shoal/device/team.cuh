// Team helpers for kernels: translate between a team's PE numbers and world PEs with the
// trivially-copyable shoal::device_team (<shoal/device_team.hpp>). No memory access, no ordering.
#pragma once

#include <cstdint>

#include "shoal/device_team.hpp"

namespace shoal::device {

/// World PE of `team_pe` in `team`, or -1 when team_pe is out of [0, team.n_pes). Any thread.
__device__ inline int team_translate(const device_team& team, int team_pe) { return team.world_pe(team_pe); }

/// Number in `team` of world PE `pe`, or -1 when pe is not a member. Any thread.
__device__ inline int team_pe_of_world(const device_team& team, int pe) { return team.team_pe_of(pe); }

/// This PE's number in `team`.
__device__ inline int team_my_pe(const device_team& team) { return team.my_pe_in_team; }

/// Number of PEs in `team`.
__device__ inline int team_n_pes(const device_team& team) { return team.n_pes; }

}  // namespace shoal::device
