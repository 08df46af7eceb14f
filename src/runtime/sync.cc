#include "runtime/sync.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/check.hpp"
#include "runtime/wait.hpp"

namespace shoal::detail {

collective_sync::collective_sync(bootstrap& boot, peer_transport& transport, bool check_collectives,
                                 std::chrono::milliseconds wait_timeout)
    : boot_(boot),
      transport_(transport),
      my_pe_(boot.rank()),
      n_pes_(boot.size()),
      check_collectives_(check_collectives),
      wait_timeout_(wait_timeout) {}

void collective_sync::post(collective_kind kind) {
  ++collective_seq_;
  current_kind_ = kind;
  if (area_ != nullptr)
    std::atomic_ref<uint64_t>(area_->posted)
        .store(collective_seq_ << 8 | static_cast<uint64_t>(kind), std::memory_order_release);
}

void collective_sync::finalize_barrier(std::string_view call) {
  post(collective_kind::finalize);
  boot_.barrier(call);
}

void collective_sync::check_posted(std::string_view call) {
  uint64_t mine = collective_seq_ << 8 | static_cast<uint64_t>(current_kind_);
  for (int pe = 0; pe < n_pes_; ++pe) {
    auto* peer = reinterpret_cast<sync_area*>(transport_.base_of(pe));
    if (peer == nullptr) continue;
    uint64_t theirs = std::atomic_ref<uint64_t>(peer->posted).load(std::memory_order_acquire);
    if ((theirs >> 8) == collective_seq_ && theirs != mine) {
      // The peer waits in the bootstrap for this PE; meet it there, so that the round fails on every
      // PE with both calls named (agree throws errc::mismatch).
      --collective_seq_;  // agree() posts again
      agree(call, current_kind_, fmt::format("{}()", call));
      SHOAL_THROW(errc::mismatch, call, "PE {} is in another collective call than {}", pe, call);
    }
  }
}

void collective_sync::agree(std::string_view call, collective_kind kind, const std::string& args) {
  post(kind);
  // Every PE contributes its view of the call; all compare all, so all throw together.
  constexpr size_t kBytes = 120;
  char mine[kBytes] = {};
  std::snprintf(mine, kBytes, "%s", args.c_str());
  std::vector<char> all(kBytes * n_pes_);
  boot_.allgather(mine, all.data(), kBytes, call);
  if (!check_collectives_) return;
  for (int pe = 0; pe < n_pes_; ++pe) {
    const char* theirs = all.data() + pe * kBytes;
    if (std::strncmp(theirs, all.data(), kBytes) != 0)
      SHOAL_THROW(errc::mismatch, call, "PEs disagree on a collective call: PE 0 called {}, PE {} called {}",
                  std::string_view(all.data()), pe, std::string_view(theirs));
  }
}

void collective_sync::allgather(std::string_view call, collective_kind kind, const void* mine, void* all,
                                size_t bytes_per_pe, const std::function<void()>& before) {
  std::lock_guard lock(mutex_);
  if (before) before();
  post(kind);
  boot_.allgather(mine, all, bytes_per_pe, call);
}

void collective_sync::barrier(std::string_view call) {
  uint64_t epoch = ++barrier_epoch_;
  post(collective_kind::barrier);
  // GPU heaps are not for the CPU to poll: their host barrier goes through the bootstrap.
  if (!transport_.direct()) {
    boot_.barrier(call);
    return;
  }
  // Fall back to the bootstrap when some PE cannot be reached through shared memory.
  if (!transport_.all_load_store()) {
    boot_.barrier(call);
    return;
  }
  for (int round = 0, dist = 1; dist < n_pes_; ++round, dist <<= 1) {
    int to = (my_pe_ + dist) % n_pes_;
    auto* peer_sync = reinterpret_cast<sync_area*>(transport_.base_of(to));
    std::atomic_ref<uint64_t>(peer_sync->barrier_round[round]).store(epoch, std::memory_order_release);
    std::atomic_ref<uint64_t> mine(area_->barrier_round[round]);
    backoff pause(wait_timeout_, call);
    for (unsigned polls = 1; mine.load(std::memory_order_acquire) < epoch; ++polls) {
      if (polls % 1024 == 0) check_posted(call);
      if (!pause.pause()) {
        int from = (my_pe_ - dist % n_pes_ + n_pes_) % n_pes_;
        SHOAL_THROW(errc::timeout, call,
                    "PE {} waited {} ms (SHOAL_WAIT_TIMEOUT) in barrier {} round {} for PE {} (it has reached "
                    "barrier {})",
                    my_pe_, wait_timeout_.count(), epoch, round, from, mine.load());
      }
    }
  }
}

void collective_sync::barrier_all(std::string_view call) {
  std::lock_guard lock(mutex_);
  transport_.quiet();
  barrier(call);
}

void collective_sync::sync_all(std::string_view call) {
  std::lock_guard lock(mutex_);
  barrier(call);
}

}  // namespace shoal::detail
