#include "team/team_world.hpp"

#include <array>
#include <cstring>
#include <vector>

namespace shoal::detail {

namespace {

const size_t kTeamsKey =
    register_world_extension({"teams", sizeof(team_sync) * SHOAL_MAX_TEAMS,
                              +[](world_impl& world, uint64_t words_offset) -> std::unique_ptr<world_extension> {
                                return std::make_unique<world_teams>(world, words_offset);
                              }});

team_table make_table(world_impl& world) {
  const std::vector<int>& node = world.heap().nodes().pe_of_local;
  std::vector<int32_t> shared;
  for (int pe : node)
    if (world.transport().reachable(pe)) shared.push_back(pe);
  return team_table(world.my_pe(), world.n_pes(), std::vector<int32_t>(node.begin(), node.end()), std::move(shared));
}

}  // namespace

world_teams& world_teams::of(world_impl& world) { return static_cast<world_teams&>(world.extension(kTeamsKey)); }

world_teams::world_teams(world_impl& world, uint64_t words_offset)
    : world_(world), table_(make_table(world)), words_offset_(words_offset) {
  publish_device();
}

team_sync* world_teams::sync_of(int pe, int slot) const {
  if (!world_.transport().direct() || words_offset_ == 0) return nullptr;
  char* base = world_.transport().base_of(pe);
  if (base == nullptr) return nullptr;
  return reinterpret_cast<team_sync*>(base + words_offset_) + slot;
}

uint64_t world_teams::sync_offset(int slot) const {
  if (!world_.transport().direct() || words_offset_ == 0) return 0;
  return words_offset_ + static_cast<uint64_t>(slot) * sizeof(team_sync);
}

void world_teams::publish_device() {
  const device_world& device = world_.device_handle();
  if (device.teams == nullptr) return;
  std::array<device_team, SHOAL_MAX_TEAMS> table{};
  for (int slot = 0; slot < SHOAL_MAX_TEAMS; ++slot) {
    if (!table_.live(slot)) continue;
    try {
      table[slot] = table_.device_handle("shoal_team_split", slot);
    } catch (const error&) {
      table[slot] = device_team{};  // not strided: no device handle (team_of traps on it)
    }
  }
  world_.transport().ops().copy(const_cast<device_team*>(device.teams), table.data(), sizeof(table));
}

team_table::allgather_fn world_teams::exchange(const char* call) {
  return [this, call](const void* mine, void* all, size_t bytes_per_pe) {
    world_.sync().allgather(call, collective_kind::team, mine, all, bytes_per_pe, [this] {
      for (int slot = 0; slot < SHOAL_MAX_TEAMS; ++slot)
        if (team_sync* words = sync_of(world_.my_pe(), slot); words != nullptr && !table_.live(slot))
          std::memset(static_cast<void*>(words), 0, sizeof(team_sync));
    });
  };
}

}  // namespace shoal::detail
