// The team table: every team this PE belongs to, by handle (slot). Splits are collective over the
// members of the parent team (OpenSHMEM 1.5): each contributes one fixed-size record to an
// all-gather among them, and every member runs the same decision over all records (validate, check
// agreement, pick a slot free on every member), so all succeed or all throw the same error, and
// every member of a new team picks the same slot. Teams that share a slot are disjoint (a slot is
// picked free on every parent member, and a new team's members are parent members).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/device_team.hpp"
#include "shoal/error.hpp"
#include "shoal/team.h"

namespace shoal::detail {

/// What OpenSHMEM answers with a nonzero return, not an error that stops the job: a split of
/// SHOAL_TEAM_INVALID, a split whose triplet (or xrange) names no valid team, a split that finds the
/// team table full, get_config of SHOAL_TEAM_INVALID. A split throws it after its exchange, so on
/// every member of the parent alike; the C entry points return its code in every error mode
/// (team_api.cc), with a warning line in abort mode when `warn` (not for SHOAL_TEAM_INVALID, which
/// programs pass on purpose: the parent's PEs outside a team hold it).
class team_refusal : public shoal::error {
 public:
  team_refusal(errc code, std::string call, std::string message, bool warn)
      : shoal::error(code, std::move(call), std::move(message)), warn_(warn) {}
  bool warn() const noexcept { return warn_; }

 private:
  bool warn_;
};

/// One team as this PE sees it. Team ranks are positions in `members`.
struct team {
  std::vector<int32_t> members;  // world PE of each team rank
  int32_t start = -1;            // members[r] == start + r * stride when strided(); -1 otherwise
  int32_t stride = 0;
  int32_t my_rank = -1;  // this PE's rank (always a member: the table holds only its own teams)
  shoal_team_config_t config{};
  /// Names this team among all teams of the job, the same on every member: a hash of the member list
  /// (predefined teams), or of the split that made it. With `splits` it tags a split's exchange, so
  /// that no two splits a PE takes part in share a tag, even after a slot is reused.
  uint64_t id = 0;
  uint32_t splits = 0;  // splits of this team this PE has entered (the same count on every member)

  bool strided() const { return start >= 0; }
  int32_t n_pes() const { return static_cast<int32_t>(members.size()); }
  int32_t rank_of(int32_t world_pe) const;  // -1 when not a member
};

class team_table {
 public:
  static constexpr int kMaxTeams = SHOAL_MAX_TEAMS;
  static constexpr int kPredefined = 3;  // WORLD, SHARED, NODE
  /// The all-gather a split runs among the parent team's members only: `members` (world PEs in
  /// parent-rank order; records land in that order). `tag` names this split of this parent, the same
  /// on every member (the parent's id and split count, hashed): back-to-back splits of one team,
  /// splits of disjoint teams and splits of a later team in the same slot all differ.
  struct split_exchange {
    std::function<void(shoal_team_t parent, const std::vector<int32_t>& members, uint64_t tag, const void* mine,
                       void* all, size_t bytes_per_pe)>
        gather;
  };

  /// node_pes / shared_pes: world PEs of this PE's node / of the PEs whose heaps it can load/store.
  team_table(int my_pe, int n_pes, std::vector<int32_t> node_pes, std::vector<int32_t> shared_pes);

  int my_pe(std::string_view call, shoal_team_t team) const;  ///< -1 for SHOAL_TEAM_INVALID
  int n_pes(std::string_view call, shoal_team_t team) const;  ///< -1 for SHOAL_TEAM_INVALID
  void get_config(std::string_view call, shoal_team_t team, long mask, shoal_team_config_t* config) const;
  int translate_pe(std::string_view call, shoal_team_t src, int src_pe, shoal_team_t dest) const;
  device_team device_handle(std::string_view call, shoal_team_t team) const;
  /// A copy of `handle`'s team, or throws errc::invalid_argument naming `arg` (for the collectives).
  team lookup(std::string_view call, const char* arg, shoal_team_t handle) const;
  /// True when this PE is a member of a live team in `slot`.
  bool live(int slot) const;

  /// Collective over the parent team's members (see <shoal/team.h> and split_exchange).
  shoal_team_t split_strided(std::string_view call, shoal_team_t parent, int start, int stride, int size,
                             const shoal_team_config_t* config, long mask, bool new_team_null,
                             const split_exchange& exchange);
  /// Returns {x-axis team, y-axis team}. null_out: the name of an output pointer that is null, or nullptr.
  std::pair<shoal_team_t, shoal_team_t> split_2d(std::string_view call, shoal_team_t parent, int xrange,
                                                 const shoal_team_config_t* xconfig, long xmask,
                                                 const shoal_team_config_t* yconfig, long ymask, const char* null_out,
                                                 const split_exchange& exchange);
  void destroy(std::string_view call, shoal_team_t team);

  /// Sets predefined team `handle` (below kPredefined, or SHOALX_TEAM_SAME_MYPE_NODE) to `members`
  /// (world PEs in team-rank order, this PE among them).
  void set_predefined(shoal_team_t handle, std::vector<int32_t> members);
  /// Bit s set for each slot s >= kPredefined with no live team of this PE (shoalx_team_init's candidates).
  uint64_t free_slots() const;
  /// Makes `members` (world PEs in team-rank order, this PE among them) the team in free slot `slot`
  /// (shoalx_team_init, after its members agreed on the slot); returns its handle.
  shoal_team_t adopt(std::string_view call, int slot, std::vector<int32_t> members, const shoal_team_config_t& config);

 private:
  struct split_args;
  /// The shared body of both splits: exchange, decide (identically on every PE), commit.
  std::vector<shoal_team_t> split(std::string_view call, const split_args& args, const split_exchange& exchange);
  /// The team, or throws errc::invalid_argument naming `arg` (out of range, destroyed, or INVALID).
  const team& get(std::string_view call, const char* arg, shoal_team_t handle) const;
  const team* find(shoal_team_t handle) const;

  int my_pe_;
  int n_pes_;
  mutable std::shared_mutex mutex_;
  std::vector<std::optional<team>> slots_;  // kMaxTeams; engaged while this PE is a live member
};

}  // namespace shoal::detail
