#include "team/team.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "common/check.hpp"

namespace shoal::detail {

namespace {

constexpr int kWords = team_table::kMaxTeams / 64;
static_assert(team_table::kMaxTeams % 64 == 0);

[[noreturn]] void refuse(std::string_view call, errc code, std::string message, bool warn = true) {
  throw team_refusal(code, std::string(call), std::move(message), warn);
}

const char* predefined_name(shoal_team_t handle) {
  switch (handle) {
    case SHOAL_TEAM_WORLD:
      return "SHOAL_TEAM_WORLD";
    case SHOAL_TEAM_SHARED:
      return "SHOAL_TEAM_SHARED";
    case SHOALX_TEAM_NODE:
      return "SHOALX_TEAM_NODE";
    case SHOALX_TEAM_SAME_MYPE_NODE:
      return "SHOALX_TEAM_SAME_MYPE_NODE";
    default:
      return nullptr;
  }
}

// splitmix64's finalizer: a 64-bit mix for team ids and split tags.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Builds a team from world PEs in team-rank order; this PE (my_pe) must be among them. Its id is a
// hash of the members until the caller names it better (splits do).
team make_team(std::vector<int32_t> members, int my_pe, const shoal_team_config_t& config) {
  team t;
  t.id = mix(members.size());
  for (int32_t pe : members) t.id = mix(t.id ^ static_cast<uint32_t>(pe));
  t.members = std::move(members);
  t.config = config;
  t.my_rank = static_cast<int32_t>(std::find(t.members.begin(), t.members.end(), my_pe) - t.members.begin());
  SHOAL_ASSERT(t.my_rank < t.n_pes());
  int32_t stride = t.members.size() >= 2 ? t.members[1] - t.members[0] : 1;
  bool strided = stride != 0;
  for (size_t r = 1; strided && r < t.members.size(); ++r) strided = t.members[r] - t.members[r - 1] == stride;
  if (strided) {
    t.start = t.members[0];
    t.stride = stride;
  }
  return t;
}

shoal_team_config_t config_of(const shoal_team_config_t* config, long mask) {
  shoal_team_config_t out{};
  if (config != nullptr && (mask & SHOAL_TEAM_NUM_CONTEXTS) != 0) out.num_contexts = config->num_contexts;
  return out;
}

// What a bad local argument was, for the record (every PE then throws the same error).
enum bad_local : int32_t { ok = 0, out_null = 1, config_null = 2, mask_bits = 3, contexts_negative = 4 };

int32_t check_config(const shoal_team_config_t* config, long mask) {
  if ((mask & ~SHOAL_TEAM_NUM_CONTEXTS) != 0) return mask_bits;
  if (mask != 0 && config == nullptr) return config_null;
  if ((mask & SHOAL_TEAM_NUM_CONTEXTS) != 0 && config->num_contexts < 0) return contexts_negative;
  return ok;
}

}  // namespace

int32_t team::rank_of(int32_t world_pe) const {
  if (strided()) {
    int32_t delta = world_pe - start;
    if (n_pes() == 1) return delta == 0 ? 0 : -1;
    if (delta % stride != 0) return -1;
    int32_t r = delta / stride;
    return r >= 0 && r < n_pes() ? r : -1;
  }
  auto it = std::find(members.begin(), members.end(), world_pe);
  return it == members.end() ? -1 : static_cast<int32_t>(it - members.begin());
}

team_table::team_table(int my_pe, int n_pes, std::vector<int32_t> node_pes, std::vector<int32_t> shared_pes)
    : my_pe_(my_pe), n_pes_(n_pes), slots_(kMaxTeams) {
  std::vector<int32_t> world(n_pes);
  for (int pe = 0; pe < n_pes; ++pe) world[pe] = pe;
  std::sort(node_pes.begin(), node_pes.end());
  std::sort(shared_pes.begin(), shared_pes.end());
  slots_[SHOAL_TEAM_WORLD] = make_team(std::move(world), my_pe, {});
  slots_[SHOAL_TEAM_SHARED] = make_team(std::move(shared_pes), my_pe, {});
  slots_[SHOALX_TEAM_NODE] = make_team(std::move(node_pes), my_pe, {});
  for (int s = 0; s < kPredefined; ++s) slots_[s]->id = mix(slots_[s]->id ^ s);  // WORLD, SHARED, NODE may be alike
}

const team* team_table::find(shoal_team_t handle) const {
  if (handle < 0 || handle >= kMaxTeams || !slots_[handle]) return nullptr;
  return &*slots_[handle];
}

const team& team_table::get(std::string_view call, const char* arg, shoal_team_t handle) const {
  SHOAL_CHECK_ARG(handle != SHOAL_TEAM_INVALID, call, "{} is SHOAL_TEAM_INVALID", arg);
  SHOAL_CHECK_ARG(handle >= 0 && handle < kMaxTeams, call,
                  "{}={} is not a team handle (handles are 0..{}, or SHOAL_TEAM_INVALID)", arg, handle, kMaxTeams - 1);
  const team* t = find(handle);
  SHOAL_CHECK_ARG(t != nullptr, call, "{}={} is not a team of PE {} (destroyed, or never created here)", arg, handle,
                  my_pe_);
  return *t;
}

team team_table::lookup(std::string_view call, const char* arg, shoal_team_t handle) const {
  std::shared_lock lock(mutex_);
  return get(call, arg, handle);
}

bool team_table::live(int slot) const {
  std::shared_lock lock(mutex_);
  return find(slot) != nullptr;
}

int team_table::my_pe(std::string_view call, shoal_team_t handle) const {
  if (handle == SHOAL_TEAM_INVALID) return -1;
  std::shared_lock lock(mutex_);
  return get(call, "team", handle).my_rank;
}

int team_table::n_pes(std::string_view call, shoal_team_t handle) const {
  if (handle == SHOAL_TEAM_INVALID) return -1;
  std::shared_lock lock(mutex_);
  return get(call, "team", handle).n_pes();
}

void team_table::get_config(std::string_view call, shoal_team_t handle, long mask, shoal_team_config_t* config) const {
  if (handle == SHOAL_TEAM_INVALID) refuse(call, errc::invalid_argument, "team is SHOAL_TEAM_INVALID", false);
  std::shared_lock lock(mutex_);
  const team& t = get(call, "team", handle);
  SHOAL_CHECK_ARG((mask & ~SHOAL_TEAM_NUM_CONTEXTS) == 0, call,
                  "config_mask=0x{:x} has bits other than SHOAL_TEAM_NUM_CONTEXTS", mask);
  SHOAL_CHECK_ARG(config != nullptr, call, "config is null");
  if ((mask & SHOAL_TEAM_NUM_CONTEXTS) != 0) config->num_contexts = t.config.num_contexts;
}

int team_table::translate_pe(std::string_view call, shoal_team_t src, int src_pe, shoal_team_t dest) const {
  if (src == SHOAL_TEAM_INVALID || dest == SHOAL_TEAM_INVALID) return -1;
  std::shared_lock lock(mutex_);
  const team& from = get(call, "src_team", src);
  const team& to = get(call, "dest_team", dest);
  if (src_pe < 0 || src_pe >= from.n_pes()) return -1;
  return to.rank_of(from.members[src_pe]);
}

device_team team_table::device_handle(std::string_view call, shoal_team_t handle) const {
  std::shared_lock lock(mutex_);
  const team& t = get(call, "team", handle);
  if (!t.strided())
    SHOAL_THROW(errc::unsupported, call, "team={} is not strided in world PEs, so it has no device handle yet", handle);
  device_team d;
  d.my_pe_in_team = t.my_rank;
  d.n_pes = t.n_pes();
  d.start = t.start;
  d.stride = t.stride;
  return d;
}

void team_table::destroy(std::string_view call, shoal_team_t handle) {
  if (handle == SHOAL_TEAM_INVALID) return;
  std::unique_lock lock(mutex_);
  get(call, "team", handle);
  const char* name = predefined_name(handle);
  SHOAL_CHECK_ARG(name == nullptr, call, "team={} ({}) is predefined and cannot be destroyed", handle,
                  name != nullptr ? name : "");
  slots_[handle].reset();
}

void team_table::set_predefined(shoal_team_t handle, std::vector<int32_t> members) {
  SHOAL_ASSERT((handle >= 0 && handle < kPredefined) || handle == SHOALX_TEAM_SAME_MYPE_NODE);
  std::unique_lock lock(mutex_);
  slots_[handle] = make_team(std::move(members), my_pe_, {});
}

uint64_t team_table::free_slots() const {
  static_assert(kMaxTeams <= 64, "one bit per team slot in a uint64_t");
  std::shared_lock lock(mutex_);
  uint64_t mask = 0;
  for (int s = kPredefined; s < kMaxTeams; ++s)
    if (!slots_[s]) mask |= uint64_t{1} << s;
  return mask;
}

shoal_team_t team_table::adopt(std::string_view call, int slot, std::vector<int32_t> members,
                               const shoal_team_config_t& config) {
  std::unique_lock lock(mutex_);
  SHOAL_ASSERT(slot >= kPredefined && slot < kMaxTeams);
  if (slots_[slot])
    SHOAL_THROW(errc::internal, call, "team slot {} was taken on PE {} while the team was being made", slot, my_pe_);
  slots_[slot] = make_team(std::move(members), my_pe_, config);
  return slot;
}

// ---------------------------------------------------------------------------------------------
// splits

enum class split_kind : int32_t { strided = 1, two_d = 2 };

struct team_table::split_args {
  split_kind kind;
  shoal_team_t parent;
  int32_t arg[3];  // strided: start, stride, size; 2d: xrange
  shoal_team_config_t config[2];
  long mask[2];
  int32_t bad_local;
  const char* bad_arg;  // names the argument bad_local is about
};

namespace {

/// One PE's contribution to a split's all-gather. Fixed size, no pointers.
struct split_record {
  int32_t parent;        // the handle as passed
  int32_t parent_first;  // world PE of the parent's rank 0 as this PE sees it (tells apart the disjoint teams that
                         // share one slot, e.g. the rows of a split_2d)
  int32_t parent_size;
  int32_t arg[3];
  int32_t config[4];  // mask and num_contexts of the (x-axis, y-axis) configs
  int32_t bad_local;
  int32_t bad_arg;        // index into kBadArgs
  int32_t kind;           // split_kind: a PE in split_strided while another is in split_2d is a mismatch
  uint64_t live[kWords];  // slots in which this PE is a member of a live team
};
static_assert(std::is_trivially_copyable_v<split_record>);

constexpr const char* kBadArgs[] = {"",           "new_team",     "xaxis_team",   "yaxis_team",
                                    "config",     "xaxis_config", "yaxis_config", "config_mask",
                                    "xaxis_mask", "yaxis_mask"};

int32_t bad_arg_index(const char* name) {
  for (int32_t i = 0; i < static_cast<int32_t>(std::size(kBadArgs)); ++i)
    if (name != nullptr && std::strcmp(kBadArgs[i], name) == 0) return i;
  return 0;
}

const char* kind_call(int32_t kind) {
  return kind == static_cast<int32_t>(split_kind::strided) ? "shoal_team_split_strided" : "shoal_team_split_2d";
}

std::string describe(split_kind kind, const split_record& r) {
  if (kind == split_kind::strided)
    return fmt::format("(parent_team={}, start={}, stride={}, size={}, config_mask={}, num_contexts={})", r.parent,
                       r.arg[0], r.arg[1], r.arg[2], r.config[0], r.config[1]);
  return fmt::format(
      "(parent_team={}, xrange={}, xaxis_mask={}, xaxis num_contexts={}, yaxis_mask={}, "
      "yaxis num_contexts={})",
      r.parent, r.arg[0], r.config[0], r.config[1], r.config[2], r.config[3]);
}

}  // namespace

std::vector<shoal_team_t> team_table::split(std::string_view call, const split_args& args,
                                            const split_exchange& exchange) {
  int needed = args.kind == split_kind::strided ? 1 : 2;
  std::vector<shoal_team_t> out(needed, SHOAL_TEAM_INVALID);
  // Only the parent's members call (OpenSHMEM 1.5): a bad parent is this PE's own error, and
  // SHOAL_TEAM_INVALID makes no team without any communication and returns nonzero (9.4.4).
  if (args.parent == SHOAL_TEAM_INVALID)
    refuse(call, errc::invalid_argument, "parent_team is SHOAL_TEAM_INVALID: no team is made", false);
  SHOAL_CHECK_ARG(args.parent >= 0 && args.parent < kMaxTeams, call,
                  "parent_team={} is not a team handle (handles are 0..{}, or SHOAL_TEAM_INVALID)", args.parent,
                  kMaxTeams - 1);

  split_record mine{};
  mine.parent = args.parent;
  mine.kind = static_cast<int32_t>(args.kind);
  std::copy(std::begin(args.arg), std::end(args.arg), mine.arg);
  for (int i = 0; i < 2; ++i) {
    mine.config[2 * i] = static_cast<int32_t>(args.mask[i]);
    mine.config[2 * i + 1] = config_of(&args.config[i], args.mask[i]).num_contexts;
  }
  mine.bad_local = args.bad_local;
  mine.bad_arg = bad_arg_index(args.bad_arg);
  std::vector<int32_t> members;  // world PE of each record: the parent's members
  uint64_t tag = 0;
  {
    std::unique_lock lock(mutex_);
    team* p = slots_[args.parent] ? &*slots_[args.parent] : nullptr;
    SHOAL_CHECK_ARG(p != nullptr, call,
                    "parent_team={} is not a team of PE {} (destroyed, never created, or this PE is not a member)",
                    args.parent, my_pe_);
    mine.parent_first = p->members[0];
    mine.parent_size = p->n_pes();
    members = p->members;
    tag = mix(p->id ^ mix(p->splits++));
    for (int s = 0; s < kMaxTeams; ++s)
      if (slots_[s]) mine.live[s / 64] |= uint64_t{1} << (s % 64);
  }

  const int n = static_cast<int>(members.size());
  std::vector<split_record> all(n);
  exchange.gather(args.parent, members, tag, &mine, all.data(), sizeof(split_record));

  // From here on every caller runs the same decision over the same records: all throw the same
  // error, or all reach the same slots. Errors name world PEs.
  for (int i = 0; i < n; ++i) {
    const split_record& r = all[i];
    const int pe = members[i];
    const char* arg = kBadArgs[r.bad_arg];
    switch (r.bad_local) {
      case ok:
        break;
      case out_null:
        SHOAL_THROW(errc::invalid_argument, call, "{} is null on PE {}", arg, pe);
      case config_null:
        SHOAL_THROW(errc::invalid_argument, call, "{} is null on PE {} but its mask is not 0", arg, pe);
      case mask_bits:
        SHOAL_THROW(errc::invalid_argument, call, "{} on PE {} has bits other than SHOAL_TEAM_NUM_CONTEXTS", arg, pe);
      case contexts_negative:
        SHOAL_THROW(errc::invalid_argument, call, "{}->num_contexts is negative on PE {}", arg, pe);
      default:
        SHOAL_THROW(errc::internal, call, "PE {} sent bad_local={}", pe, r.bad_local);
    }
  }
  for (int i = 0; i < n; ++i) {
    const split_record& r = all[i];
    if (r.kind != mine.kind)
      SHOAL_THROW(errc::mismatch, call, "PEs of parent_team={} disagree: PE {} called {}, PE {} called {}", args.parent,
                  my_pe_, call, members[i], kind_call(r.kind));
    // A member that passed another handle is in another exchange (and this one times out), so these
    // cannot differ here; checked all the same, the records being other PEs' word.
    SHOAL_CHECK_ARG(r.parent == args.parent && r.parent_first == mine.parent_first && r.parent_size == mine.parent_size,
                    call, "PEs of parent_team={} disagree: PE {} passed parent_team={}", args.parent, members[i],
                    r.parent);
  }
  const split_record& lead = all[0];
  for (int i = 0; i < n; ++i) {
    const split_record& r = all[i];
    if (std::memcmp(r.arg, lead.arg, sizeof r.arg) != 0 || std::memcmp(r.config, lead.config, sizeof r.config) != 0)
      SHOAL_THROW(errc::mismatch, call, "PEs of parent_team={} disagree: PE {} called {}{}, PE {} called {}{}",
                  args.parent, members[0], call, describe(args.kind, lead), members[i], call, describe(args.kind, r));
  }
  // A triplet (or xrange) that names no team, and a full table, are the specification's nonzero
  // returns on every member (team_refusal), not errors that stop the job.
  const int32_t psize = lead.parent_size;
  if (args.kind == split_kind::strided) {
    int64_t start = lead.arg[0], stride = lead.arg[1], size = lead.arg[2];
    if (size < 1) refuse(call, errc::invalid_argument, fmt::format("size={} must be at least 1", size));
    if (start < 0 || start >= psize)
      refuse(call, errc::invalid_argument,
             fmt::format("start={} is out of range [0, {}) of parent_team={}", start, psize, args.parent));
    if (size != 1 && stride == 0)
      refuse(call, errc::invalid_argument, fmt::format("stride=0 with size={} names one PE several times", size));
    int64_t last = start + (size - 1) * (size == 1 ? 0 : stride);
    if (last < 0 || last >= psize)
      refuse(call, errc::invalid_argument,
             fmt::format("stride={} with start={} and size={} leaves parent_team={}: its last PE would be {} of {}",
                         stride, start, size, args.parent, last, psize));
  } else if (lead.arg[0] < 1) {
    refuse(call, errc::invalid_argument, fmt::format("xrange={} must be at least 1", lead.arg[0]));
  }

  uint64_t used[kWords] = {};
  for (const split_record& r : all)
    for (int w = 0; w < kWords; ++w) used[w] |= r.live[w];
  std::vector<shoal_team_t> slot;
  for (int s = kPredefined; s < kMaxTeams && static_cast<int>(slot.size()) < needed; ++s)
    if ((used[s / 64] >> (s % 64) & 1) == 0) slot.push_back(s);
  if (static_cast<int>(slot.size()) < needed)
    refuse(
        call, errc::out_of_memory,
        fmt::format("the team table is full: {} handles (SHOAL_MAX_TEAMS) are in use on some PE; destroy teams first",
                    kMaxTeams));

  std::unique_lock lock(mutex_);
  const team* parent = find(args.parent);
  SHOAL_ASSERT(parent != nullptr && parent->n_pes() == psize);
  auto members_of = [&](int32_t first, int32_t step, int32_t count) {
    std::vector<int32_t> m;
    for (int32_t i = 0; i < count; ++i) m.push_back(parent->members[first + i * step]);
    return m;
  };
  if (args.kind == split_kind::strided) {
    int32_t start = args.arg[0], stride = args.arg[1], size = args.arg[2];
    int32_t my_index = -1;
    for (int32_t i = 0; i < size && my_index < 0; ++i)
      if (start + i * (size == 1 ? 0 : stride) == parent->my_rank) my_index = i;
    if (my_index < 0) return out;
    slots_[slot[0]] = make_team(members_of(start, size == 1 ? 0 : stride, size), my_pe_, args.config[0]);
    slots_[slot[0]]->id = mix(tag ^ 1);
    out[0] = slot[0];
  } else {
    int32_t xr = std::min(args.arg[0], psize);
    int32_t x = parent->my_rank % xr, y = parent->my_rank / xr;
    int32_t row = std::min(xr, psize - y * xr);
    int32_t column = (psize - x + xr - 1) / xr;
    team xteam = make_team(members_of(y * xr, 1, row), my_pe_, args.config[0]);
    team yteam = make_team(members_of(x, xr, column), my_pe_, args.config[1]);
    xteam.id = mix(tag ^ 1);  // every row alike: the rows are disjoint, and so are the columns
    yteam.id = mix(tag ^ 2);
    slots_[slot[0]] = std::move(xteam);
    slots_[slot[1]] = std::move(yteam);
    out = {slot[0], slot[1]};
  }
  return out;
}

shoal_team_t team_table::split_strided(std::string_view call, shoal_team_t parent, int start, int stride, int size,
                                       const shoal_team_config_t* config, long mask, bool new_team_null,
                                       const split_exchange& exchange) {
  split_args args{};
  args.kind = split_kind::strided;
  args.parent = parent;
  args.arg[0] = start;
  args.arg[1] = stride;
  args.arg[2] = size;
  args.mask[0] = mask;
  args.config[0] = config_of(config, mask);
  if (new_team_null) {
    args.bad_local = out_null;
    args.bad_arg = "new_team";
  } else if ((args.bad_local = check_config(config, mask)) != ok) {
    args.bad_arg = args.bad_local == config_null || args.bad_local == contexts_negative ? "config" : "config_mask";
  }
  return split(call, args, exchange)[0];
}

std::pair<shoal_team_t, shoal_team_t> team_table::split_2d(std::string_view call, shoal_team_t parent, int xrange,
                                                           const shoal_team_config_t* xconfig, long xmask,
                                                           const shoal_team_config_t* yconfig, long ymask,
                                                           const char* null_out, const split_exchange& exchange) {
  split_args args{};
  args.kind = split_kind::two_d;
  args.parent = parent;
  args.arg[0] = xrange;
  args.mask[0] = xmask;
  args.mask[1] = ymask;
  args.config[0] = config_of(xconfig, xmask);
  args.config[1] = config_of(yconfig, ymask);
  int32_t bad_x = check_config(xconfig, xmask), bad_y = check_config(yconfig, ymask);
  if (null_out != nullptr) {
    args.bad_local = out_null;
    args.bad_arg = null_out;
  } else if (bad_x != ok) {
    args.bad_local = bad_x;
    args.bad_arg = bad_x == mask_bits ? "xaxis_mask" : "xaxis_config";
  } else if (bad_y != ok) {
    args.bad_local = bad_y;
    args.bad_arg = bad_y == mask_bits ? "yaxis_mask" : "yaxis_config";
  }
  auto teams = split(call, args, exchange);
  return {teams[0], teams[1]};
}

}  // namespace shoal::detail
