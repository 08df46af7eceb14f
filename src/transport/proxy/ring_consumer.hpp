// The proxy thread's side of the request ring (shoal/detail/proxy_ring.hpp): takes committed
// descriptors in ticket order, answers waiting ones, and hands credits back to the producers.
// Used by one thread at a time (whoever holds the engine's worker); pending() may be asked by any
// thread. No UCX here, so CPU tests drive it with a stand-in engine.
#pragma once

#include <atomic>
#include <cstdint>

#include "shoal/detail/proxy_ring.hpp"

namespace shoal::detail {

class ring_consumer {
 public:
  explicit ring_consumer(proxy_ring* ring) : ring_(ring) {}

  /// The next committed descriptor (a copy; its ticket in `ticket`), or false when there is none.
  /// Every descriptor taken must be finished exactly once: reply() for waiting ones (kProxyWait),
  /// finish() for the others, in any order.
  bool take(proxy_desc* out, uint64_t* ticket) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    proxy_desc* s = ring_->slot(head);
    if (ring_atomic::load_acquire(&s->state) != head * 4 + kSlotCommitted) return false;
    *out = *s;
    *ticket = head;
    head_.store(head + 1, std::memory_order_relaxed);
    return true;
  }

  /// A quiet `ticket` completed (every earlier descriptor is complete): raises ring->quiet_done, which
  /// producers waiting in ring_quiet_shared read. Call before reply() answers it.
  void answered_quiet(uint64_t ticket) {
    if (ticket + 1 > quiet_done_) {
      quiet_done_ = ticket + 1;
      ring_atomic::store_release(&ring_->quiet_done, quiet_done_);
    }
  }

  /// Frees a non-waiting descriptor's slot (its contents were copied by take()).
  void finish(uint64_t ticket) {
    ring_atomic::store_release(&ring_->slot(ticket)->state, ticket * 4 + kSlotDone);
    reclaim();
  }

  /// Answers a waiting descriptor with `value` and `status` (0: success) in its reply line (each word a half
  /// under the ticket's flag; a failure sends the status instead of the value); the producer frees the slot
  /// when it has read them.
  void reply(uint64_t ticket, uint64_t value, int64_t status = 0) {
    ring_atomic::store_line(ring_->reply_line(ticket), proxy_reply::answer(ticket, value, status));
  }

  /// Advances `released` over consecutive freed slots (producers' acknowledgements included).
  void reclaim() {
    const uint64_t before = tail_;
    const uint64_t head = head_.load(std::memory_order_relaxed);
    while (tail_ < head && ring_atomic::load_acquire(&ring_->slot(tail_)->state) == tail_ * 4 + kSlotDone) ++tail_;
    if (tail_ != before) ring_atomic::store_release(&ring_->released, tail_);
  }

  /// True when a producer has reserved a ticket not taken yet (its descriptor may still be in the
  /// making): the proxy's cue, without a doorbell, that work is coming.
  bool pending() const { return ring_atomic::load_acquire(&ring_->reserved) != head_.load(std::memory_order_relaxed); }

  /// The next ticket to take, and how far credits were handed back (for reports).
  uint64_t head() const { return head_.load(std::memory_order_relaxed); }
  uint64_t released() const { return tail_; }

  /// True while some taken descriptor's slot is not free yet (a reply not acknowledged).
  bool holding() const { return tail_ != head_.load(std::memory_order_relaxed); }

 private:
  proxy_ring* ring_;
  std::atomic<uint64_t> head_{0};  // next ticket to take (written by the holder, read by pending())
  uint64_t tail_ = 0;              // every ticket below is free (published as ring->released)
  uint64_t quiet_done_ = 0;        // published as ring->quiet_done
};

}  // namespace shoal::detail
