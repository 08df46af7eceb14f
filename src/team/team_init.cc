// shoalx_team_get_uniqueid / shoalx_team_init: a team over any set of the world's PEs, gathered without a
// parent team (NVSHMEM's nvshmemx_team_init). An id names a rendezvous record in the reserved words of the PE
// that made it (its maker, who need not join); the members meet there through the transport's atomics, which
// reach any PE on any heap and path, so the protocol is one-sided and only the members take part:
//   1. each member zeroes its team words of every slot free here, ANDs its free-slot mask into the record,
//      claims its index (compare-and-swap of its PE into members[index]), then counts itself in (arrived);
//   2. each waits until n_pes_in_team members arrived (or one of them reported a bad call), reads the record,
//      and takes the lowest slot free on every member: all read the same record, so all decide alike;
//   3. each counts itself out (left); the maker reuses a record once every member that came in went out.
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/check.hpp"
#include "runtime/c_api.hpp"
#include "runtime/world_impl.hpp"
#include "shoal/shoal.h"
#include "team/team_world.hpp"
#include "transport/scalar.hpp"

namespace shoal::detail {

namespace {

constexpr int kIds = SHOALX_TEAM_INIT_IDS;
constexpr int kMaxMembers = SHOALX_TEAM_INIT_MAX_PES;

/// One id's rendezvous record, in its maker's reserved words (every heap kind; GPU memory on GPU heaps). Every
/// word is read and written with the transport's sequentially consistent atomics, except members[], read whole
/// once arrived says every member wrote its entry.
struct rendezvous {
  /// The id this record belongs to: written by the maker (get_uniqueid, before the id leaves it), read by each
  /// member first (a stale id, or one whose record was reused, does not match).
  uint64_t id;
  /// n_pes_in_team of the first member in (compare-and-swap from 0); a member passing another count sets bad.
  uint64_t n_pes;
  /// Members in so far (fetch-add by each, after its entry and free mask): n_pes_in_team means all are in.
  uint64_t arrived;
  /// AND of the members' free-slot masks (the maker starts it all ones): the slots free on every member.
  uint64_t free_slots;
  /// Nonzero once a member found a mismatch (bit 0: an index claimed twice; bit 1: a different member count),
  /// set before it counts itself in; every member then fails alike.
  uint64_t bad;
  /// Members out (fetch-add by each once it read the record): == arrived when nobody reads the record any more.
  uint64_t left;
  /// World PE + 1 of team index i (0: not yet claimed), compare-and-swapped from 0 by the member of index i.
  int32_t members[kMaxMembers];
};
static_assert(sizeof(rendezvous) % 8 == 0);

constexpr size_t kWordsBytes = sizeof(rendezvous) * kIds;
constexpr scalar kU64 = scalar_of<uint64_t>();
constexpr scalar kI32 = scalar_of<int32_t>();

/// id: the maker's PE + 1 (bits 40..63), a sequence number (bits 8..39, never 0) and the record's index (bits 0..7).
uint64_t make_id(int maker, uint64_t seq, int record) {
  return (static_cast<uint64_t>(maker + 1) << 40) | ((seq & 0xffffffffu) << 8) | static_cast<uint64_t>(record);
}

class team_init_words final : public world_extension {
 public:
  team_init_words(world_impl& world, uint64_t offset) : world_(world), offset_(offset) {
    // Fresh heap memory may hold anything (GPU heaps): a zero record is an unused one.
    if (offset_ != 0) world_.transport().ops().zero(world_.transport().base_of(world_.my_pe()) + offset_, kWordsBytes);
  }

  uint64_t get_uniqueid(const char* call) {
    check_words(call);
    std::lock_guard lock(mutex_);  // threads of this PE make ids one at a time (SHOAL_THREAD_MULTIPLE)
    const int me = world_.my_pe();
    for (int k = 0; k < kIds; ++k) {
      const int record = static_cast<int>((next_ + static_cast<uint64_t>(k)) % kIds);
      uint64_t head[6];
      world_.transport().get(call, head, me, field(record, offsetof(rendezvous, id)), sizeof(head));
      const uint64_t id = head[0], arrived = head[2], left = head[5];
      if (id != 0 && (arrived == 0 || left < arrived)) continue;  // pending, or members still in it
      const uint64_t seq = ++seq_;
      const uint64_t new_id = make_id(me, seq == 0 ? ++seq_ : seq, record);
      auto fresh = std::make_unique<rendezvous>();
      std::memset(fresh.get(), 0, sizeof(rendezvous));
      fresh->free_slots = ~uint64_t{0};
      world_.transport().put(call, me, field(record, 0), fresh.get(), sizeof(rendezvous));
      world_.transport().atomic(call, me, field(record, offsetof(rendezvous, id)), amo_op::set, kU64, &new_id, nullptr,
                                nullptr);
      next_ = static_cast<uint64_t>(record) + 1;
      return new_id;
    }
    SHOAL_THROW(errc::out_of_memory, call,
                "PE {} has {} team ids pending (made by shoalx_team_get_uniqueid and not yet used by every member of "
                "their shoalx_team_init); use or finish one first",
                me, kIds);
  }

  shoal_team_t init(const char* call, uint64_t id, const shoal_team_config_t& config, int n_pes_in_team, int my_index) {
    check_words(call);
    const int n_pes = world_.n_pes();
    const int me = world_.my_pe();
    const int maker = static_cast<int>(id >> 40) - 1;
    const int record = static_cast<int>(id & 0xff);
    SHOAL_CHECK_ARG(id != 0 && maker >= 0 && maker < n_pes && record < kIds && ((id >> 8) & 0xffffffffu) != 0, call,
                    "uniqueid=0x{:x} is not an id from shoalx_team_get_uniqueid", id);
    SHOAL_CHECK_ARG(n_pes_in_team >= 1 && n_pes_in_team <= n_pes && n_pes_in_team <= kMaxMembers, call,
                    "n_pes_in_team={} must be in 1..{} (the world's PEs, at most SHOALX_TEAM_INIT_MAX_PES={})",
                    n_pes_in_team, n_pes < kMaxMembers ? n_pes : kMaxMembers, kMaxMembers);
    SHOAL_CHECK_ARG(my_index >= 0 && my_index < n_pes_in_team, call, "my_index={} is not in 0..{}", my_index,
                    n_pes_in_team - 1);
    peer_transport& tp = world_.transport();
    auto word = [&](size_t off) { return field(record, off); };
    auto fetch = [&](size_t off) {
      uint64_t v = 0;
      tp.atomic(call, maker, word(off), amo_op::fetch, kU64, nullptr, nullptr, &v);
      return v;
    };
    // A member that left a record with no mismatch means every member had come: a later call with this id is one
    // too many. (After a mismatch the members leave early; the late ones still come in, to fail alike.)
    SHOAL_CHECK_ARG(fetch(offsetof(rendezvous, id)) == id &&
                        (fetch(offsetof(rendezvous, left)) == 0 || fetch(offsetof(rendezvous, bad)) != 0),
                    call,
                    "uniqueid=0x{:x} is not live on PE {}: already used by a complete shoalx_team_init, or its record "
                    "was reused for a later id",
                    id, maker);

    // 1. in: team words of the candidate slots zeroed, free mask, index, count, then arrival.
    world_teams& teams = world_teams::of(world_);
    const uint64_t mine = teams.table().free_slots();
    teams.zero_free_slots();  // every slot in `mine` (and the other slots this PE does not hold)
    tp.atomic(call, maker, word(offsetof(rendezvous, free_slots)), amo_op::and_, kU64, &mine, nullptr, nullptr);
    uint64_t bad = 0;
    const auto count = static_cast<uint64_t>(n_pes_in_team);
    const uint64_t zero = 0;
    uint64_t seen_count = 0;
    tp.atomic(call, maker, word(offsetof(rendezvous, n_pes)), amo_op::compare_swap, kU64, &count, &zero, &seen_count);
    if (seen_count != 0 && seen_count != count) bad |= 2;
    const int32_t me_plus_1 = me + 1, none = 0;
    int32_t holder = 0;
    tp.atomic(call, maker, word(offsetof(rendezvous, members) + sizeof(int32_t) * static_cast<size_t>(my_index)),
              amo_op::compare_swap, kI32, &me_plus_1, &none, &holder);
    if (holder != 0) bad |= 1;
    if (bad != 0) tp.atomic(call, maker, word(offsetof(rendezvous, bad)), amo_op::or_, kU64, &bad, nullptr, nullptr);
    const uint64_t one = 1;
    tp.atomic(call, maker, word(offsetof(rendezvous, arrived)), amo_op::add, kU64, &one, nullptr, nullptr);

    // 2. wait for every member (or a reported mismatch), bounded by SHOAL_WAIT_TIMEOUT.
    const auto timeout = world_.sync().wait_timeout();
    const auto start = std::chrono::steady_clock::now();
    uint64_t arrived = 0;
    for (int polls = 0;; ++polls) {
      arrived = fetch(offsetof(rendezvous, arrived));
      bad = fetch(offsetof(rendezvous, bad));
      if (arrived >= count || bad != 0) break;
      if (timeout.count() > 0 && std::chrono::steady_clock::now() - start > timeout) {
        tp.atomic(call, maker, word(offsetof(rendezvous, left)), amo_op::add, kU64, &one, nullptr, nullptr);
        SHOAL_THROW(errc::timeout, call,
                    "{} of n_pes_in_team={} PEs called with uniqueid=0x{:x} within SHOAL_WAIT_TIMEOUT ({} ms)", arrived,
                    count, id, timeout.count());
      }
      if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(polls > 1024 ? 1000 : 50));
    }
    std::vector<int32_t> slots(static_cast<size_t>(n_pes_in_team));
    tp.get(call, slots.data(), maker, word(offsetof(rendezvous, members)), sizeof(int32_t) * slots.size());
    const uint64_t common = fetch(offsetof(rendezvous, free_slots));
    // 3. out: nobody of this team reads the record after this.
    tp.atomic(call, maker, word(offsetof(rendezvous, left)), amo_op::add, kU64, &one, nullptr, nullptr);

    if (bad & 2)
      SHOAL_THROW(errc::mismatch, call, "the members of uniqueid=0x{:x} passed different n_pes_in_team (this PE: {})",
                  id, count);
    if (bad & 1)
      SHOAL_THROW(errc::mismatch, call, "two members of uniqueid=0x{:x} passed the same my_index (this PE: {})", id,
                  my_index);
    std::vector<int32_t> members(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i] < 1 || slots[i] > n_pes)
        SHOAL_THROW(errc::internal, call, "team index {} of uniqueid=0x{:x} holds no PE after every member arrived", i,
                    id);
      members[i] = slots[i] - 1;
    }
    if (common == 0)
      SHOAL_THROW(errc::out_of_memory, call,
                  "no team slot is free on every member of uniqueid=0x{:x} (team table is full: SHOAL_MAX_TEAMS={})",
                  id, SHOAL_MAX_TEAMS);
    const int slot = std::countr_zero(common);
    const shoal_team_t handle = teams.table().adopt(call, slot, std::move(members), config);
    teams.publish_device();
    return handle;
  }

 private:
  void check_words(const char* call) const {
    if (offset_ == 0) SHOAL_THROW(errc::unsupported, call, "this world has no team-init words (reserved block)");
  }
  uint64_t field(int record, size_t off) const {
    return offset_ + static_cast<uint64_t>(record) * sizeof(rendezvous) + off;
  }

  world_impl& world_;
  uint64_t offset_;
  std::mutex mutex_;
  uint64_t seq_ = 0;   // ids made by this PE (under mutex_)
  uint64_t next_ = 0;  // the record to try first (under mutex_)
};

const size_t kTeamInitKey = register_world_extension(
    {"team_init", kWordsBytes, +[](world_impl& world, uint64_t offset) -> std::unique_ptr<world_extension> {
       return std::make_unique<team_init_words>(world, offset);
     }});

team_init_words& words_of(world_impl& world) { return static_cast<team_init_words&>(world.extension(kTeamInitKey)); }

}  // namespace

}  // namespace shoal::detail

namespace capi = shoal::detail::c_api;

using capi::status_of;

extern "C" {

int shoalx_team_get_uniqueid(shoal_team_uniqueid_t* uniqueid) {
  const char* call = "shoalx_team_get_uniqueid";
  const bool ok = capi::guarded(
      call,
      [&] {
        SHOAL_CHECK_ARG(uniqueid != nullptr, call, "uniqueid is null");
        *uniqueid = shoal::detail::words_of(capi::current(call)).get_uniqueid(call);
        return true;
      },
      false);
  return status_of(ok);
}

int shoalx_team_init(shoal_team_t* team, shoal_team_uniqueid_t uniqueid, const shoal_team_config_t* config,
                     long config_mask, int n_pes_in_team, int my_index) {
  const char* call = "shoalx_team_init";
  if (team != nullptr) *team = SHOAL_TEAM_INVALID;
  const bool ok = capi::guarded(
      call,
      [&] {
        SHOAL_CHECK_ARG(team != nullptr, call, "team is null");
        SHOAL_CHECK_ARG((config_mask & ~SHOAL_TEAM_NUM_CONTEXTS) == 0, call,
                        "config_mask=0x{:x} has bits other than SHOAL_TEAM_NUM_CONTEXTS", config_mask);
        SHOAL_CHECK_ARG(config_mask == 0 || config != nullptr, call, "config is null but config_mask is 0x{:x}",
                        config_mask);
        shoal_team_config_t c{};
        if ((config_mask & SHOAL_TEAM_NUM_CONTEXTS) != 0) {
          SHOAL_CHECK_ARG(config->num_contexts >= 0, call, "config->num_contexts={} is negative", config->num_contexts);
          c.num_contexts = config->num_contexts;
        }
        *team = shoal::detail::words_of(capi::current(call)).init(call, uniqueid, c, n_pes_in_team, my_index);
        return true;
      },
      false);
  return status_of(ok);
}

}  // extern "C"
