// What the team collectives use of a world, and nothing more: the team layer (table, per-team host
// sync words), the transport (how bytes reach each member), the symmetric-range checks, and the
// collective lock, timeout and agreement setting. One per call, from the C API's current world.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "runtime/c_api.hpp"
#include "runtime/world_impl.hpp"
#include "team/team_world.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

class coll_world {
 public:
  /// The default world, or throws errc::not_initialized naming `call`.
  static coll_world current(const char* call) { return coll_world(c_api::current(call)); }
  explicit coll_world(world_impl& w) : w_(w), teams_(world_teams::of(w)) {}

  int my_pe() const { return w_.my_pe(); }
  const char* backend_name() const { return w_.backend_name(); }
  const device_world& device_handle() const { return w_.device_handle(); }
  /// world_impl::coll_channel_limit (0: none).
  uint32_t channel_limit() const { return w_.coll_channel_limit(); }
  team_table& teams() const { return teams_.table(); }
  /// `pe`'s host sync words of team slot `slot`; nullptr when that heap is not CPU-addressable here.
  team_sync* team_sync_of(int pe, int slot) const { return teams_.sync_of(pe, slot); }
  /// Heap offset of team slot `slot`'s sync words on every PE (0: none), for members reached through the
  /// transport (proxy members; every member, this PE included, on GPU heaps).
  uint64_t team_sync_offset(int slot) const { return teams_.sync_offset(slot); }
  peer_transport& transport() const { return w_.transport(); }

  /// Validates a symmetric range as the RMA calls do (errors name `call` and `arg`): the heap, or a
  /// global/static variable where those are symmetric. Returns its heap offset, or its data-segment
  /// offset with kDataOffsetBit (peer_transport routes either).
  uint64_t symmetric_offset(std::string_view call, const char* arg, const void* addr, size_t nbytes,
                            size_t align) const {
    return w_.memory().check_rma(call, arg, addr, nbytes, align);
  }
  /// The same for the on-stream calls, which take heap memory only.
  uint64_t heap_offset(std::string_view call, const char* arg, const void* addr, size_t nbytes, size_t align) const {
    return w_.memory().check(call, arg, addr, nbytes, align);
  }
  /// Heap offset of `p` in this PE's heap, or -1 when it is not in the heap.
  int64_t offset_of(const void* p) const { return w_.heap().offset_of(p); }
  /// The data-segment offset of `p` with kDataOffsetBit when it is a symmetric global/static variable, else -1.
  int64_t data_offset_of(const void* p) const {
    const int64_t off = w_.transport().data().offset_of(p);
    return off < 0 ? -1 : static_cast<int64_t>(static_cast<uint64_t>(off) | kDataOffsetBit);
  }

  /// Held for the whole of every collective call.
  std::mutex& collective_mutex() const { return w_.sync().mutex(); }
  std::chrono::milliseconds wait_timeout() const { return w_.sync().wait_timeout(); }
  bool check_collectives() const { return w_.sync().check_collectives(); }

 private:
  world_impl& w_;
  world_teams& teams_;
};

}  // namespace shoal::detail
