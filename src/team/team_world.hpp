// A world's teams: the team table, the per-team host sync words that the host team collectives
// (src/coll) run on, and the device team table kernels read. Kept per world as a runtime extension
// (runtime/extension.hpp), made at the end of every world's init, so the runtime never includes the
// team layer.
#pragma once

#include <cstdint>

#include "runtime/extension.hpp"
#include "runtime/world_impl.hpp"
#include "team/team.hpp"

namespace shoal::detail {

/// One team slot's synchronization words for the host team collectives (per PE, in the team layer's
/// words of the reserved block: host memory on host backends, where mapped peers load/store them;
/// GPU memory on GPU heaps, where every PE reaches them through the transport only). The team layer
/// zeroes the slots this PE is not a member of before every split, so a team made in a reused slot
/// starts from zero on every member.
struct team_sync {
  static constexpr int kMaxRounds = 32;
  static constexpr size_t kPostBytes = 256;
  /// Dissemination barrier of the team: round r written (release) by the team PE 2^r ranks below.
  uint64_t barrier_round[kMaxRounds];
  uint64_t epoch;  ///< barriers this PE has entered on this team (written by this PE only)
  uint64_t seq;    ///< collectives this PE has entered on this team (written by this PE only)
  /// This PE's description of its current collective, by seq parity; read by the team's peers.
  alignas(64) unsigned char post[2][kPostBytes];
  /// This PE's record of a split of this team (team layer), read by the team's members between the
  /// split's two team barriers.
  alignas(64) unsigned char split_post[kPostBytes];
};

class world_teams final : public world_extension {
 public:
  /// The teams of `world` (made at its init).
  static world_teams& of(world_impl& world);

  /// `words_offset`: heap offset of the team_sync blocks (SHOAL_MAX_TEAMS of them) on every PE, or 0.
  world_teams(world_impl& world, uint64_t words_offset);

  team_table& table() { return table_; }
  /// `pe`'s team_sync block of team slot `slot`; nullptr when that heap is not CPU-addressable here.
  team_sync* sync_of(int pe, int slot) const;
  /// Heap offset (the same on every PE) of team slot `slot`'s team_sync block, for the words reached
  /// through the transport (proxy peers; every PE's on GPU heaps); 0 when this world has none.
  uint64_t sync_offset(int slot) const;
  /// Zeroes this PE's team_sync words of every slot it does not hold (a memset, or on GPU heaps one
  /// device memset per run of free slots), so that no team later made in one starts with old counts.
  void zero_free_slots();
  /// Writes every live slot's device handle into the device team table (device_world::teams) after
  /// teams are created or destroyed. No-op on host-memory heaps.
  void publish_device();
  /// The all-gather a split runs, among the parent team's members only. When every member's team
  /// words are load/store-addressable here (host heaps, one node, P2P allowed), through them: each
  /// writes its record into its split_post of the parent's slot, team barrier, each reads every
  /// member's, team barrier. Otherwise (GPU heaps, proxy peers), or under
  /// SHOAL_TEAM_SPLIT_EXCHANGE=bootstrap, through the bootstrap (allgather_among, with the split's
  /// tag). Either first zeroes this PE's words of every
  /// slot it is not a member of, so no new member can have written into them yet.
  team_table::split_exchange exchange(const char* call);

 private:
  world_impl& world_;
  team_table table_;
  uint64_t words_offset_;
  bool split_through_words_;  // SHOAL_TEAM_SPLIT_EXCHANGE=auto: through the team words where they are in reach
};

}  // namespace shoal::detail
