// The world's collective synchronization: the lock every collective call holds, the posted word
// (which collective this PE is in, so a mismatch is reported instead of timing out), agreement on a
// collective's arguments, and the world barrier (dissemination over shared memory, or the bootstrap).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "bootstrap/bootstrap.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

/// Shoal's own words at the start of every PE's heap on host backends (allocated first, so at the
/// same offset on every PE). Written by peers with host atomics, read by the owner. The words of
/// the layers above (world_extension::host_words_nbytes) follow it in the reserved block.
struct sync_area {
  static constexpr int kMaxRounds = 32;
  /// barrier_all / sync_all (dissemination): word r is written by PE (me - 2^r) mod n with the
  /// barrier epoch it has reached (release store); read (acquire) by this PE, which waits until
  /// it is >= its own epoch. Epochs only grow, so nothing is ever reset.
  uint64_t barrier_round[kMaxRounds];
  /// The collective this PE is in: (sequence number << 8) | kind, written (release) by this PE on
  /// entry to every collective, read by peers waiting in a barrier, so a PE in barrier_all while
  /// another is in shoal_malloc sees the mismatch instead of waiting out its timeout.
  uint64_t posted;
};

/// Kinds of collective calls, for the posted word (sync_area::posted).
enum class collective_kind : uint8_t { alloc = 1, release = 2, resize = 3, barrier = 4, team = 5, finalize = 6 };

class collective_sync {
 public:
  /// `wait_timeout` (SHOAL_WAIT_TIMEOUT) bounds every barrier wait; `check_collectives`
  /// (SHOAL_CHECK_COLLECTIVES) compares every collective's arguments across PEs.
  collective_sync(bootstrap& boot, peer_transport& transport, bool check_collectives,
                  std::chrono::milliseconds wait_timeout);

  /// This PE's host sync words (host backends; null for GPU heaps: their barrier uses the bootstrap).
  void set_area(sync_area* area) { area_ = area; }
  /// Held for the whole of every collective call (collectives are not concurrent, per OpenSHMEM,
  /// but must not corrupt if they are).
  std::mutex& mutex() { return mutex_; }
  std::chrono::milliseconds wait_timeout() const { return wait_timeout_; }
  bool check_collectives() const { return check_collectives_; }

  /// Exchanges a description of a collective call; throws errc::mismatch on every PE if any differ.
  void agree(std::string_view call, collective_kind kind, const std::string& args);
  /// All-gather over every PE, posted as a collective of `kind` (so that a PE waiting in a barrier
  /// meanwhile reports the mismatch). `before` runs under the lock, before the exchange.
  void allgather(std::string_view call, collective_kind kind, const void* mine, void* all, size_t bytes_per_pe,
                 const std::function<void()>& before);
  /// quiet, then barrier (shoal_barrier_all); sync_all skips the quiet.
  void barrier_all(std::string_view call);
  void sync_all(std::string_view call);
  /// The closing barrier of finalize (also the implicit one at exit), posted as a collective so that
  /// a peer waiting in a barrier meanwhile reports the mismatch instead of waiting for this PE.
  void finalize_barrier(std::string_view call);

 private:
  void barrier(std::string_view call);
  void post(collective_kind kind);
  /// Slow path of a barrier wait: if a peer is in a different collective at the same sequence
  /// number, joins the bootstrap round with this call's name so that every PE gets errc::mismatch.
  void check_posted(std::string_view call);

  bootstrap& boot_;
  peer_transport& transport_;
  const int my_pe_;
  const int n_pes_;
  std::mutex mutex_;
  sync_area* area_ = nullptr;
  uint64_t barrier_epoch_ = 0;
  uint64_t collective_seq_ = 0;  // collectives entered by this PE (all kinds)
  collective_kind current_kind_ = collective_kind::barrier;
  bool check_collectives_ = true;
  std::chrono::milliseconds wait_timeout_{0};
};

}  // namespace shoal::detail
