#include "team/team_world.hpp"

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "common/check.hpp"
#include "common/env.hpp"
#include "shoal/shoal.h"

namespace shoal::detail {

namespace {

const size_t kTeamsKey =
    register_world_extension({"teams", sizeof(team_sync) * SHOAL_MAX_TEAMS,
                              +[](world_impl& world, uint64_t words_offset) -> std::unique_ptr<world_extension> {
                                return std::make_unique<world_teams>(world, words_offset);
                              }});

// SHOALX_TEAM_SAME_MYPE_NODE: every PE whose index on its own node is this PE's (one per node), by world PE.
std::vector<int32_t> same_mype_node(world_impl& world) {
  const node_map& nodes = world.heap().nodes();
  if (nodes.index_on_node.size() != static_cast<size_t>(world.n_pes())) return {world.my_pe()};
  std::vector<int32_t> members;
  for (int pe = 0; pe < world.n_pes(); ++pe)
    if (nodes.index_on_node[static_cast<size_t>(pe)] == nodes.my_local) members.push_back(pe);
  return members;
}

team_table make_table(world_impl& world) {
  const std::vector<int>& node = world.heap().nodes().pe_of_local;
  std::vector<int32_t> shared;
  for (int pe : node)
    if (world.transport().reachable(pe)) shared.push_back(pe);
  return team_table(world.my_pe(), world.n_pes(), std::vector<int32_t>(node.begin(), node.end()), std::move(shared));
}

bool split_through_words() {
  const std::string how = env::get_string("SHOAL_TEAM_SPLIT_EXCHANGE");
  SHOAL_CHECK_ARG(how == "auto" || how == "bootstrap", "shoal_init",
                  "SHOAL_TEAM_SPLIT_EXCHANGE={} is not auto or bootstrap", how);
  return how == "auto";
}

}  // namespace

world_teams& world_teams::of(world_impl& world) { return static_cast<world_teams&>(world.extension(kTeamsKey)); }

world_teams::world_teams(world_impl& world, uint64_t words_offset)
    : world_(world),
      table_(make_table(world)),
      words_offset_(words_offset),
      split_through_words_(split_through_words()) {
  table_.set_predefined(SHOALX_TEAM_SAME_MYPE_NODE, same_mype_node(world));
  publish_device();
}

team_sync* world_teams::sync_of(int pe, int slot) const {
  if (!world_.transport().direct() || words_offset_ == 0) return nullptr;
  char* base = world_.transport().base_of(pe);
  if (base == nullptr) return nullptr;
  return reinterpret_cast<team_sync*>(base + words_offset_) + slot;
}

uint64_t world_teams::sync_offset(int slot) const {
  if (words_offset_ == 0) return 0;
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

void world_teams::zero_free_slots() {
  if (words_offset_ == 0) return;
  if (world_.transport().direct()) {
    for (int slot = 0; slot < SHOAL_MAX_TEAMS; ++slot)
      if (team_sync* words = sync_of(world_.my_pe(), slot); words != nullptr && !table_.live(slot))
        std::memset(static_cast<void*>(words), 0, sizeof(team_sync));
    return;
  }
  // GPU memory: one synchronous device memset per run of free slots (usually one or two runs).
  char* words = world_.transport().base_of(world_.my_pe()) + words_offset_;
  for (int slot = 0; slot < SHOAL_MAX_TEAMS;) {
    if (table_.live(slot)) {
      ++slot;
      continue;
    }
    int end = slot + 1;
    while (end < SHOAL_MAX_TEAMS && !table_.live(end)) ++end;
    world_.transport().ops().zero(words + static_cast<size_t>(slot) * sizeof(team_sync),
                                  static_cast<size_t>(end - slot) * sizeof(team_sync));
    slot = end;
  }
}

team_table::split_exchange world_teams::exchange(const char* call) {
  team_table::split_exchange out;
  out.gather = [this, call](shoal_team_t parent, const std::vector<int32_t>& members, uint64_t tag, const void* mine,
                            void* all, size_t bytes_per_pe) {
    SHOAL_ASSERT(bytes_per_pe <= team_sync::kPostBytes);
    // The free slots' words are zeroed for the team this split may make there, only once every member
    // has entered the split: a member still inside a collective of a team it has just left (the last
    // barrier of a team_sync lets the first PE out while the others still read its post) may be reading
    // this PE's words of that team's slot until then.
    // Every member takes the same way: whether a heap is mapped is symmetric (same node, P2P allowed
    // by the job-wide SHOAL_DISABLE_P2P), and so is the job-wide SHOAL_TEAM_SPLIT_EXCHANGE.
    bool through_words = split_through_words_;
    for (size_t i = 0; through_words && i < members.size(); ++i) through_words = sync_of(members[i], parent) != nullptr;
    if (!through_words) {
      const std::vector<int> among(members.begin(), members.end());
      world_.boot().allgather_among(among, tag, mine, all, bytes_per_pe, call);
      zero_free_slots();
      // A second round (its own tag, ~tag) so that no member uses a new team's words before every member zeroed them.
      const uint8_t done = 1;
      std::vector<uint8_t> every(among.size());
      world_.boot().allgather_among(among, ~tag, &done, every.data(), sizeof done, call);
      return;
    }
    std::memcpy(sync_of(world_.my_pe(), parent)->split_post, mine, bytes_per_pe);
    // The parent's own team barrier (release/acquire): every member's record is visible after the first
    // and every member's zeroed words after the second; nobody rewrites a record before every member read it
    // after the second.
    auto barrier = [&] {
      if (shoal_team_sync(parent) == SHOAL_OK) return;
      const char* why = nullptr;
      int code = shoal_last_error(&why);
      SHOAL_THROW(static_cast<errc>(code != SHOAL_OK ? code : SHOAL_ERR_INTERNAL), call,
                  "the barrier of parent_team={} failed: {}", parent, why != nullptr ? why : "unknown error");
    };
    barrier();
    zero_free_slots();
    for (size_t i = 0; i < members.size(); ++i)
      std::memcpy(static_cast<char*>(all) + i * bytes_per_pe, sync_of(members[i], parent)->split_post, bytes_per_pe);
    barrier();
  };
  return out;
}

}  // namespace shoal::detail
