// The proxy's request ring (shoal/detail/proxy_ring.hpp + ring_consumer.hpp) with host threads as
// producers and a stand-in proxy that applies descriptors to a local array: wrap-around and
// back-pressure on a 4-slot ring, many producers, fetching replies, quiet covering every earlier
// descriptor while the stand-in completes puts late and out of order, and the shared quiet
// (ring_quiet_shared) covering many producers with one quiet.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "transport/proxy/ring_consumer.hpp"

namespace shoal::detail {
namespace {

using namespace std::chrono_literals;

struct ring_memory {
  explicit ring_memory(uint32_t slots, uint32_t payload = 0)
      : bytes(static_cast<char*>(std::aligned_alloc(64, proxy_ring::nbytes_for(slots, payload)))) {
    std::memset(bytes, 0, proxy_ring::nbytes_for(slots, payload));
    ring()->slots = slots;
    ring()->payload = payload;
  }
  ~ring_memory() { std::free(bytes); }
  proxy_ring* ring() { return reinterpret_cast<proxy_ring*>(bytes); }
  char* bytes;
};

// Yields while waiting (more threads than cores here) and ends a wait after 20 s (a lost reply
// fails the test instead of hanging it).
struct test_clock {
  std::chrono::steady_clock::time_point end = std::chrono::steady_clock::now() + 20s;
  bool operator()() const {
    std::this_thread::yield();
    return std::chrono::steady_clock::now() > end;
  }
};

// The stand-in proxy: the "remote heap" is `memory`; puts complete late, in random order.
class fake_proxy {
 public:
  fake_proxy(proxy_ring* ring, size_t words) : memory(words), consumer_(ring), ring_(ring) {}
  ~fake_proxy() { stop(); }

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  std::vector<uint64_t> memory;
  std::vector<uint64_t> taken;  // tickets in the order they were taken
  uint64_t max_pending = 0;
  std::atomic<int> quiets{0};       // quiet descriptors taken
  std::atomic<int> carried{0};      // puts and gets carried in payload areas
  std::atomic<int> bad_payload{0};  // carried puts whose payload was not the producer's pattern

 private:
  struct pending_put {
    uint64_t offset, value;
  };

  void complete_some(bool all) {
    std::shuffle(pending_.begin(), pending_.end(), rng_);
    size_t keep = all || pending_.empty() ? 0 : rng_() % pending_.size();
    for (size_t i = keep; i < pending_.size(); ++i)  // atomic: producers read the words after a shared quiet
      __atomic_store_n(&memory[pending_[i].offset / 8], pending_[i].value, __ATOMIC_RELAXED);
    pending_.resize(keep);
  }

  void run() {
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (!done_.load() || consumer_.holding()) {
      if (std::chrono::steady_clock::now() > end) break;
      proxy_desc d;
      uint64_t ticket;
      consumer_.reclaim();
      if (!consumer_.take(&d, &ticket)) {
        complete_some(false);
        std::this_thread::yield();
        continue;
      }
      taken.push_back(ticket);
      uint64_t reply = 0;
      switch (d.op) {
        case proxy_op::p:
          pending_.push_back({d.offset, d.operand});
          max_pending = std::max<uint64_t>(max_pending, pending_.size());
          break;
        case proxy_op::amo:  // fetch_add, applied at once
          reply = memory[d.offset / 8];
          memory[d.offset / 8] += d.operand;
          break;
        case proxy_op::g:
          reply = memory[d.offset / 8];
          break;
        case proxy_op::put: {  // carried: every byte is the low byte of operand (the producer's pattern)
          const char* area = ring_->payload_of(ticket);
          const bool ok = (d.flags & kProxyPayload) != 0 && d.nbytes <= ring_->payload &&
                          std::all_of(area, area + d.nbytes, [&](char c) { return c == static_cast<char>(d.operand); });
          if (!ok) ++bad_payload;
          ++carried;
          break;
        }
        case proxy_op::get:  // carried: the answer's bytes into the payload area, then the reply
          std::memset(ring_->payload_of(ticket), static_cast<int>(d.operand & 0xff), d.nbytes);
          ++carried;
          break;
        case proxy_op::fence:
          complete_some(true);
          break;
        case proxy_op::quiet:
          complete_some(true);
          ++quiets;
          consumer_.answered_quiet(ticket);  // as the engine does before it answers a quiet
          break;
        default:
          ADD_FAILURE() << "unexpected op " << static_cast<int>(d.op);
      }
      if (d.flags & kProxyWait)
        consumer_.reply(ticket, reply);
      else
        consumer_.finish(ticket);
    }
    complete_some(true);
  }

  ring_consumer consumer_;
  proxy_ring* ring_;
  std::vector<pending_put> pending_;
  std::mt19937_64 rng_{42};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

template <class Watch = ring_direct>
uint64_t post(proxy_ring* ring, proxy_op op, uint64_t offset, uint64_t operand, bool wait, Watch&& watch = Watch{}) {
  proxy_desc d{};
  d.op = op;
  d.flags = wait ? kProxyWait : 0;
  d.offset = offset;
  d.operand = operand;
  d.nbytes = 8;
  test_clock clock;
  const uint64_t ticket = ring_post(ring, d, clock, watch);
  EXPECT_NE(ticket, ~uint64_t{0}) << "no credit within 20 s: reserved " << ring->reserved << " released "
                                  << ring->released << " states " << ring->slot(0)->state << " " << ring->slot(1)->state
                                  << " " << ring->slot(2)->state << " " << ring->slot(3)->state;
  uint64_t reply = 0;
  int64_t status = -1;
  if (wait) {
    EXPECT_TRUE(ring_wait(ring, ticket, &reply, &status, clock, watch))
        << "no reply within 20 s: ticket " << ticket << " reserved " << ring->reserved << " released " << ring->released
        << " state " << ring->slot(ticket)->state;
    EXPECT_EQ(status, 0);
  }
  watch.done();
  return reply;
}

TEST(ProxyRing, ManyProducersWrapATinyRing) {
  constexpr int kProducers = 8, kOps = 2000;
  ring_memory mem(4);
  fake_proxy proxy(mem.ring(), 1 + kProducers * 16);
  proxy.start();
  std::vector<std::vector<uint64_t>> fetched(kProducers);
  std::vector<std::thread> producers;
  for (int t = 0; t < kProducers; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        fetched[t].push_back(post(mem.ring(), proxy_op::amo, 0, 1, true));  // fetch_add on word 0
        post(mem.ring(), proxy_op::p, 8 * (1 + t * 16 + i % 16), i, false);
      }
      post(mem.ring(), proxy_op::quiet, 0, 0, true);
      // After quiet every earlier put of this producer is visible: the last value of each word.
      for (int w = 0; w < 16; ++w) {
        uint64_t seen = post(mem.ring(), proxy_op::g, 8 * (1 + t * 16 + w), 0, true);
        EXPECT_EQ(seen, static_cast<uint64_t>(kOps - 16 + w)) << "producer " << t << " word " << w;
      }
    });
  for (auto& p : producers) p.join();
  proxy.stop();
  // Every fetch_add saw a distinct old value: 0 .. total-1 exactly once.
  std::set<uint64_t> all;
  for (auto& f : fetched) all.insert(f.begin(), f.end());
  EXPECT_EQ(all.size(), size_t{kProducers * kOps});
  EXPECT_EQ(*all.rbegin(), uint64_t{kProducers * kOps - 1});
  EXPECT_EQ(proxy.memory[0], uint64_t{kProducers * kOps});
  // Tickets were taken in order, none skipped or taken twice, far past the 4 slots.
  for (size_t i = 0; i < proxy.taken.size(); ++i) ASSERT_EQ(proxy.taken[i], i);
  EXPECT_EQ(proxy.taken.size(), size_t{kProducers * (2 * kOps + 17)});
  EXPECT_EQ(mem.ring()->released, mem.ring()->reserved);
}

TEST(ProxyRing, FullRingBackPressuresInsteadOfOverwriting) {
  ring_memory mem(4);
  proxy_ring* ring = mem.ring();
  std::atomic<int> posted{0};
  std::thread producer([&] {
    for (int i = 0; i < 6; ++i) {
      post(ring, proxy_op::p, 8 * i, 100 + i, false);
      posted.fetch_add(1);
    }
  });
  // No proxy yet: four descriptors fit, the fifth waits for a credit.
  auto until = std::chrono::steady_clock::now() + 5s;
  while (posted.load() < 4 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(posted.load(), 4);
  for (uint64_t t = 0; t < 4; ++t) {
    EXPECT_EQ(ring->slot(t)->state, t * 4 + kSlotCommitted) << "slot of ticket " << t;
    EXPECT_EQ(ring->slot(t)->operand, 100 + t) << "slot of ticket " << t << " overwritten";
  }
  fake_proxy proxy(ring, 8);
  proxy.start();
  producer.join();
  until = std::chrono::steady_clock::now() + 5s;
  while (std::atomic_ref(ring->released).load() < 6 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  proxy.stop();
  ASSERT_EQ(proxy.taken.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(proxy.memory[i], uint64_t(100 + i));
}

// A producer whose wait for credit expires gets an error and writes nothing (the caller reports
// and stops the job: its reserved ticket is never committed, so the ring cannot go on).
TEST(ProxyRing, CreditWaitEnds) {
  ring_memory mem(4);
  proxy_ring* ring = mem.ring();
  for (int i = 0; i < 4; ++i) post(ring, proxy_op::p, 8 * i, 100 + i, false);
  int polls = 0;
  auto give_up = [&] { return ++polls > 1000; };
  proxy_desc extra{};
  extra.op = proxy_op::p;
  extra.operand = 999;
  EXPECT_EQ(ring_post(ring, extra, give_up), ~uint64_t{0});
  EXPECT_EQ(polls, 1001);
  for (uint64_t t = 0; t < 4; ++t) EXPECT_EQ(ring->slot(t)->operand, 100 + t);
}

// The reply line: a value's two halves and a failure's status arrive whole; a line left from an earlier lap of
// the slot, or with only one word written, is not taken for the answer.
TEST(ProxyRing, ReplyLineCarriesWholeValuesAndNothingStale) {
  ring_memory mem(4);
  proxy_ring* ring = mem.ring();
  ring_consumer consumer(ring);
  auto post_waiting = [&] {
    proxy_desc d{};
    d.op = proxy_op::g;
    d.flags = kProxyWait;
    test_clock clock;
    return ring_post(ring, d, clock);
  };
  auto take = [&](uint64_t expect) {
    proxy_desc d{};
    uint64_t ticket = ~uint64_t{0};
    EXPECT_TRUE(consumer.take(&d, &ticket));
    EXPECT_EQ(ticket, expect);
    return d;
  };
  int polls = 0;
  auto few_polls = [&] { return ++polls > 50; };
  uint64_t reply = 0;
  int64_t status = 0;

  // A value wider than 32 bits, then a failure.
  const uint64_t t0 = post_waiting();
  take(t0);
  consumer.reply(t0, 0x89abcdef01234567u);
  test_clock clock;
  ASSERT_TRUE(ring_wait(ring, t0, &reply, &status, clock));
  EXPECT_EQ(reply, 0x89abcdef01234567u);
  EXPECT_EQ(status, 0);
  const uint64_t t1 = post_waiting();
  take(t1);
  consumer.reply(t1, 5, -7);
  ASSERT_TRUE(ring_wait(ring, t1, &reply, &status, clock));
  EXPECT_EQ(status, -7);
  EXPECT_EQ(reply, 0u);

  // Ticket t0 + 4 reuses t0's slot, whose line still holds t0's answer until the producer clears it.
  for (int i = 0; i < 2; ++i) post(ring, proxy_op::p, 0, 1, false);
  take(t1 + 1), consumer.finish(t1 + 1);
  take(t1 + 2), consumer.finish(t1 + 2);
  consumer.reclaim();
  const uint64_t t4 = post_waiting();
  ASSERT_EQ(t4, t0 + 4);
  EXPECT_FALSE(ring_wait(ring, t4, &reply, &status, few_polls)) << "took an earlier lap's answer";
  // Only one word of the answer written (as a reader between the proxy's two stores sees it): not yet.
  take(t4);
  proxy_reply* line = ring->reply_line(t4);
  line->lo = (uint64_t{reply_flag(t4, true)} << 32) | 0x1111u;
  polls = 0;
  EXPECT_FALSE(ring_wait(ring, t4, &reply, &status, few_polls)) << "took half an answer";
  consumer.reply(t4, 0xfedcba9876543210u);
  ASSERT_TRUE(ring_wait(ring, t4, &reply, &status, clock));
  EXPECT_EQ(reply, 0xfedcba9876543210u);
  EXPECT_EQ(status, 0);
  consumer.reclaim();
  EXPECT_EQ(ring->released, t4 + 1);
}

// Payload areas: many producers carry puts in their slots' areas between reserve and commit on a tiny ring that
// wraps many times (the proxy sees each producer's own bytes, never a later lap's), and carry blocking gets whose
// answer the producer reads out of the area before acknowledging; until it does, the slot (and its area) is not
// handed to a later ticket.
TEST(ProxyRing, PayloadAreasStayTheProducersUntilCommitOrAcknowledgement) {
  constexpr int kProducers = 6, kOps = 600;
  constexpr uint32_t kPayload = 192;
  static_assert(proxy_ring::payload_offset(4) % 64 == 0);
  EXPECT_EQ(proxy_ring::nbytes_for(4, kPayload), proxy_ring::payload_offset(4) + 4 * kPayload);
  ring_memory mem(4, kPayload);
  proxy_ring* ring = mem.ring();
  fake_proxy proxy(ring, 1);
  proxy.start();
  std::atomic<int> wrong_answers{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      test_clock clock;
      for (int i = 0; i < kOps; ++i) {
        const auto pattern = static_cast<uint8_t>(p * 37 + i);
        const uint64_t nbytes = 1 + (i * 7 + p) % kPayload;
        proxy_desc d{};
        d.nbytes = nbytes;
        d.operand = pattern;
        if (i % 3 != 2) {  // a carried put
          const uint64_t ticket = ring_reserve(ring, clock);
          ASSERT_NE(ticket, ~uint64_t{0});
          char* area = ring->payload_of(ticket);
          for (uint64_t b = 0; b < nbytes; ++b) {  // byte by byte, yielding: the proxy must wait for the commit
            area[b] = static_cast<char>(pattern);
            if (b % 64 == 0) std::this_thread::yield();
          }
          d.op = proxy_op::put;
          d.flags = kProxyPayload;
          ring_commit(ring, ticket, d);
        } else {  // a carried blocking get
          d.op = proxy_op::get;
          d.flags = kProxyWait | kProxyPayload;
          const uint64_t ticket = ring_post(ring, d, clock);
          ASSERT_NE(ticket, ~uint64_t{0});
          uint64_t reply = 0;
          int64_t status = -1;
          ASSERT_TRUE(ring_wait(ring, ticket, &reply, &status, clock, ring_direct{}, false));
          std::this_thread::yield();  // other producers keep posting; this slot must stay ours
          const char* area = ring->payload_of(ticket);
          if (!std::all_of(area, area + nbytes, [&](char c) { return c == static_cast<char>(pattern); }))
            ++wrong_answers;
          ring_ack(ring, ticket);
        }
      }
    });
  }
  for (auto& t : producers) t.join();
  proxy.stop();
  EXPECT_EQ(proxy.carried.load(), kProducers * kOps);
  EXPECT_EQ(proxy.bad_payload.load(), 0);
  EXPECT_EQ(wrong_answers.load(), 0);

  // An unacknowledged carried get holds its slot: four tickets later there is no credit until the acknowledgement.
  ring_memory mem2(4, kPayload);
  proxy_ring* small = mem2.ring();
  ring_consumer consumer(small);
  proxy_desc g{};
  g.op = proxy_op::get, g.flags = kProxyWait | kProxyPayload, g.nbytes = 8;
  test_clock clock;
  const uint64_t held = ring_post(small, g, clock);
  proxy_desc taken{};
  uint64_t ticket = 0;
  ASSERT_TRUE(consumer.take(&taken, &ticket));
  consumer.reply(ticket, 0);
  uint64_t reply = 0;
  int64_t status = 0;
  ASSERT_TRUE(ring_wait(small, held, &reply, &status, clock, ring_direct{}, false));
  proxy_desc put{};
  put.op = proxy_op::put, put.flags = kProxyPayload, put.nbytes = 8;
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(ring_post(small, put, clock), ~uint64_t{0});
    ASSERT_TRUE(consumer.take(&taken, &ticket));
    consumer.finish(ticket);
  }
  int polls = 0;
  auto few_polls = [&] {
    consumer.reclaim();
    return ++polls > 50;
  };
  EXPECT_EQ(ring_reserve(small, few_polls), ~uint64_t{0}) << "a later ticket took the held slot";
  ring_ack(small, held);
  consumer.reclaim();
  EXPECT_EQ(small->released, held + 4);
}

// The idle proxy's doorbell-free cue (device producers): pending() turns true at a producer's
// reservation, before its commit, and false once the consumer has taken every reserved ticket.
// The run a carried put's reservation starts (kProxyRun): the put pieces of the reservation, the last piece of a
// put_signal left out, none when that leaves one piece.
TEST(ProxyRing, CarriedRunCoversTheReservationsPutPieces) {
  constexpr uint64_t kArea = 4096;
  EXPECT_EQ(carried_run_bytes(0, 40000, 64, kArea, true), 40000u);      // 10 pieces, one reservation
  EXPECT_EQ(carried_run_bytes(0, 40000, 64, kArea, false), 9 * kArea);  // the put_signal's last piece out
  EXPECT_EQ(carried_run_bytes(0, 40000, 4, kArea, true), 4 * kArea);    // a reservation of 4 pieces
  EXPECT_EQ(carried_run_bytes(8 * kArea, 40000, 4, kArea, true), 40000u - 8 * kArea);  // the last, 2 pieces
  EXPECT_EQ(carried_run_bytes(8 * kArea, 40000, 4, kArea, false), 0u);     // of them one is the put_signal's
  EXPECT_EQ(carried_run_bytes(0, kArea, 64, kArea, true), 0u);             // one piece: no run
  EXPECT_EQ(carried_run_bytes(0, kArea + 1, 64, kArea, true), kArea + 1);  // two pieces
  EXPECT_EQ(carried_run_bytes(0, kArea + 1, 64, kArea, false), 0u);
  EXPECT_EQ(carried_run_bytes(0, 3 * kArea, 1, kArea, true), 0u);  // reservations of one piece
}

// Filled descriptors (ring_fill) stay invisible to the proxy until published, and a group published with one release
// is taken whole, in ticket order, with the spare word (a run's bytes) carried through.
TEST(ProxyRing, FilledDescriptorsWaitForTheirPublication) {
  ring_memory mem(8);
  proxy_ring* ring = mem.ring();
  ring_consumer consumer(ring);
  struct never {
    bool operator()() { return false; }
  } clock;
  const uint64_t first = ring_reserve(ring, clock, ring_direct{}, 3);
  for (uint64_t k = 0; k < 3; ++k) {
    proxy_desc d{};
    d.op = proxy_op::put, d.flags = kProxyPayload | (k == 0 ? kProxyRun : 0), d.pe = 1, d.offset = 100 * k;
    d.nbytes = 100, d.spare = k == 0 ? 300 : 0;
    ring_fill(ring, first + k, d);
  }
  proxy_desc got{};
  uint64_t ticket = 0;
  EXPECT_FALSE(consumer.take(&got, &ticket)) << "a filled descriptor taken before its publication";
  std::atomic_thread_fence(std::memory_order_release);
  for (uint64_t k = 0; k < 3; ++k) ring_publish(ring, first + k);
  for (uint64_t k = 0; k < 3; ++k) {
    ASSERT_TRUE(consumer.take(&got, &ticket));
    EXPECT_EQ(ticket, first + k);
    EXPECT_EQ(got.offset, 100 * k);
    EXPECT_EQ(got.spare, k == 0 ? 300u : 0u);
    consumer.finish(ticket);
  }
  EXPECT_FALSE(consumer.take(&got, &ticket));
  EXPECT_EQ(ring->released, first + 3);
}

TEST(ProxyRing, PendingSeesReservationsBeforeCommit) {
  ring_memory mem(4);
  proxy_ring* ring = mem.ring();
  ring_consumer consumer(ring);
  EXPECT_FALSE(consumer.pending());
  ring_atomic::fetch_add(&ring->reserved, 1);  // a producer between reserve and commit
  EXPECT_TRUE(consumer.pending());
  proxy_desc d{};
  uint64_t ticket = 0;
  EXPECT_FALSE(consumer.take(&d, &ticket));  // not committed yet
  ring->reserved = 0;
  post(ring, proxy_op::p, 0, 7, false);
  EXPECT_TRUE(consumer.pending());
  ASSERT_TRUE(consumer.take(&d, &ticket));
  EXPECT_EQ(d.operand, 7u);
  EXPECT_FALSE(consumer.pending());
  consumer.finish(ticket);
  EXPECT_EQ(ring->released, 1u);
}

TEST(ProxyRing, QuietWaitsForLateCompletions) {
  ring_memory mem(8);
  fake_proxy proxy(mem.ring(), 64);
  proxy.start();
  for (int round = 1; round <= 200; ++round) {
    for (int w = 0; w < 64; ++w) post(mem.ring(), proxy_op::p, 8 * w, round * 1000 + w, false);
    post(mem.ring(), proxy_op::quiet, 0, 0, true);
    for (int w = 0; w < 64; w += 7)
      ASSERT_EQ(post(mem.ring(), proxy_op::g, 8 * w, 0, true), uint64_t(round * 1000 + w));
  }
  proxy.stop();
  // The stand-in really held puts back (else this test could not catch a quiet that returns early).
  EXPECT_GT(proxy.max_pending, 1u);
}

// Many producers end a round with the shared quiet at once (as every thread of a kernel ending with
// quiet does): one quiet descriptor serves them all, and each finds its own puts complete when it returns
// (the stand-in holds puts back until a quiet, so a producer that returned early would read old values).
TEST(ProxyRing, SharedQuietServesManyProducersWithOneQuiet) {
  constexpr int kThreads = 8, kRounds = 60, kWords = 4;
  ring_memory mem(16);  // 32 puts a round: back-pressure too
  fake_proxy proxy(mem.ring(), kThreads * kWords);
  proxy.start();
  std::barrier sync(kThreads);
  std::atomic<int> stale{0}, failed{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int round = 1; round <= kRounds; ++round) {
        for (int w = 0; w < kWords; ++w) {
          const int word = t * kWords + w;
          post(mem.ring(), proxy_op::p, 8 * word, round * 1000 + word, false);
        }
        sync.arrive_and_wait();  // every put of the round is posted before any quiet
        test_clock clock;
        if (ring_quiet_shared(mem.ring(), clock, [] { std::this_thread::yield(); }) != 0) ++failed;
        for (int w = 0; w < kWords; ++w) {
          const int word = t * kWords + w;
          if (__atomic_load_n(&proxy.memory[word], __ATOMIC_RELAXED) != uint64_t(round * 1000 + word)) ++stale;
        }
        sync.arrive_and_wait();  // no descriptor of the next round before every quiet of this one returned
      }
    });
  for (auto& p : producers) p.join();
  proxy.stop();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(stale.load(), 0) << "a producer returned from the shared quiet before its puts completed";
  EXPECT_EQ(proxy.quiets.load(), kRounds) << "one quiet a round serves every producer";
  EXPECT_GT(proxy.max_pending, 1u);  // the stand-in really held puts back
}

// A producer with nothing posted since the last answered quiet returns at once, posting nothing.
TEST(ProxyRing, SharedQuietWithNothingNewPostsNothing) {
  ring_memory mem(8);
  fake_proxy proxy(mem.ring(), 8);
  proxy.start();
  post(mem.ring(), proxy_op::p, 0, 7, false);
  test_clock clock;
  auto yield = [] { std::this_thread::yield(); };
  EXPECT_EQ(ring_quiet_shared(mem.ring(), clock, yield), 0);
  EXPECT_EQ(ring_quiet_shared(mem.ring(), clock, yield), 0);
  EXPECT_EQ(ring_quiet_shared(mem.ring(), clock, yield), 0);
  proxy.stop();
  EXPECT_EQ(proxy.quiets.load(), 1);
  EXPECT_EQ(proxy.memory[0], 7u);
}

// ring_gated as the kernels use it (host atomics here), instrumented: how many producers read the ring at
// once. leave() holds the read a moment longer, so that readers pile up if the gate lets them.
// counted_watch hides ring_gated's enter/leave (the ring's templates call them on this type).
struct counted_gate {
  ring_gate gate{};
  std::atomic<int> reading{0}, most{0};
  std::atomic<long> reads{0};
};
struct counted_watch : ring_gated {
  counted_gate* g;
  explicit counted_watch(counted_gate* c) : ring_gated{&c->gate}, g(c) {}
  bool enter() {
    if (!ring_gated::enter()) return false;
    const int now = ++g->reading;
    int most = g->most.load();
    while (now > most && !g->most.compare_exchange_weak(most, now)) {
    }
    ++g->reads;
    return true;
  }
  void leave() {
    std::this_thread::sleep_for(50us);
    --g->reading;
    ring_gated::leave();
  }
};

// Many producers through one gate: credits, replies and shared quiets stay right (each producer's puts are
// complete when its quiet returns; fetch_adds see distinct values), at most 2 x kRingPollers of them read the
// ring at once (kRingPollers first waiters without a place, kRingPollers more through places), and the gate
// ends with no reader, no waiter and copies that never run ahead of the ring.
TEST(ProxyRing, GatedProducersReadTheRingFewAtATime) {
  constexpr int kThreads = 24, kRounds = 30, kWords = 4;
  ring_memory mem(16);
  fake_proxy proxy(mem.ring(), 1 + kThreads * kWords);
  proxy.start();
  counted_gate gate;
  std::barrier sync(kThreads);
  std::atomic<int> stale{0}, failed{0};
  std::vector<std::vector<uint64_t>> fetched(kThreads);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      counted_watch watch(&gate);
      for (int round = 1; round <= kRounds; ++round) {
        fetched[t].push_back(post(mem.ring(), proxy_op::amo, 0, 1, true, watch));
        for (int w = 0; w < kWords; ++w) {
          const int word = 1 + t * kWords + w;
          post(mem.ring(), proxy_op::p, 8 * word, round * 1000 + word, false, watch);
        }
        sync.arrive_and_wait();
        test_clock clock;
        auto yield = [] { std::this_thread::yield(); };
        if (ring_quiet_shared(mem.ring(), clock, yield, watch) != 0) ++failed;
        watch.done();
        for (int w = 0; w < kWords; ++w) {
          const int word = 1 + t * kWords + w;
          if (__atomic_load_n(&proxy.memory[word], __ATOMIC_RELAXED) != uint64_t(round * 1000 + word)) ++stale;
        }
        sync.arrive_and_wait();
      }
    });
  for (auto& p : producers) p.join();
  proxy.stop();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(stale.load(), 0) << "a producer returned from the gated shared quiet before its puts completed";
  std::set<uint64_t> all;
  for (auto& f : fetched) all.insert(f.begin(), f.end());
  EXPECT_EQ(all.size(), size_t{kThreads * kRounds});
  // kRingPollers waiters read without a place, kRingPollers more through the places
  EXPECT_LE(gate.most.load(), static_cast<int>(2 * kRingPollers))
      << "more producers read the ring at once than the gate allows";
  EXPECT_GT(gate.most.load(), static_cast<int>(kRingPollers)) << "readers never piled up: the cap was not exercised";
  EXPECT_EQ(gate.gate.pollers, 0u) << "a reader's place in the gate was not given back";
  EXPECT_EQ(gate.gate.waiting, 0u) << "a waiter was still counted after its call";
  EXPECT_LE(gate.gate.released, mem.ring()->released);
  EXPECT_LE(gate.gate.quiet_done, mem.ring()->quiet_done);
  EXPECT_GT(gate.gate.quiet_done, 0u) << "waiters were not served by the gate's copy of quiet_done";
  EXPECT_GT(proxy.max_pending, 1u);
}

// A gated producer that finds the gate's copy of quiet_done at or past its descriptors returns without
// reading the ring; the copy only counts when it really is that far (a stale copy makes it read the ring).
TEST(ProxyRing, GatedQuietTrustsTheGateCopyOnlyWhenFarEnough) {
  ring_memory mem(8);
  fake_proxy proxy(mem.ring(), 8);
  proxy.start();
  counted_gate gate;
  counted_watch watch(&gate);
  post(mem.ring(), proxy_op::p, 0, 7, false, watch);
  test_clock clock;
  auto yield = [] { std::this_thread::yield(); };
  EXPECT_EQ(ring_quiet_shared(mem.ring(), clock, yield, watch), 0);
  watch.done();
  EXPECT_EQ(proxy.quiets.load(), 1);
  EXPECT_EQ(gate.gate.quiet_done, mem.ring()->quiet_done);
  const long reads = gate.reads.load();
  EXPECT_EQ(ring_quiet_shared(mem.ring(), clock, yield, watch), 0);  // nothing new: the copy answers
  watch.done();
  EXPECT_EQ(gate.reads.load(), reads) << "the gate's copy of quiet_done covered this quiet, yet it read the ring";
  post(mem.ring(), proxy_op::p, 8, 9, false, watch);  // new put: the copy no longer covers
  EXPECT_EQ(ring_quiet_shared(mem.ring(), clock, yield, watch), 0);
  watch.done();
  EXPECT_EQ(gate.gate.waiting, 0u);
  EXPECT_EQ(proxy.quiets.load(), 2) << "a stale copy of quiet_done answered a quiet";
  EXPECT_EQ(proxy.memory[1], 9u);
  proxy.stop();
}

// A producer waiting for credit that never gets a place in the gate (others hold them all) still gets its
// credit: the other waiters' reads of the ring refresh the gate's copy of released, which it watches.
// Without that refresh it would wait until it could take a place itself, which a crowd can deny it.
TEST(ProxyRing, GatedCreditWaiterWithoutAPlaceIsServedByOtherReaders) {
  struct no_place : ring_gated {
    bool enter() { return false; }  // loses every race for a place
  };
  ring_memory mem(4);
  proxy_ring* ring = mem.ring();
  for (int i = 0; i < 4; ++i) post(ring, proxy_op::p, 8 * i, 100 + i, false);  // the ring is full
  ring_gate gate{};
  std::atomic<bool> x_done{false};
  std::atomic<uint64_t> x_ticket{0};
  std::thread x([&] {
    no_place watch{{&gate}};
    proxy_desc d{};
    d.op = proxy_op::p;
    d.offset = 8 * 4;
    d.operand = 104;
    d.nbytes = 8;
    auto until = std::chrono::steady_clock::now() + 5s;
    auto clock = [&] {
      std::this_thread::yield();
      return std::chrono::steady_clock::now() > until;
    };
    x_ticket = ring_post(ring, d, clock, watch);
    x_done = true;
  });
  std::thread y([&] {  // a waiter reading the ring for a reply that never comes, until x is through
    ring_gated watch{&gate};
    auto until = std::chrono::steady_clock::now() + 6s;
    auto clock = [&] {
      std::this_thread::yield();
      return x_done.load() || std::chrono::steady_clock::now() > until;
    };
    uint64_t reply = 0;
    int64_t status = 0;
    EXPECT_FALSE(ring_wait(ring, 1000, &reply, &status, clock, watch));
    watch.done();
  });
  std::this_thread::sleep_for(20ms);
  fake_proxy proxy(ring, 8);
  proxy.start();
  x.join();
  y.join();
  EXPECT_EQ(x_ticket.load(), 4u) << "the producer without a place never saw its credit";
  auto until = std::chrono::steady_clock::now() + 5s;
  while (std::atomic_ref(ring->released).load() < 5 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  proxy.stop();
  EXPECT_EQ(proxy.memory[4], 104u);
  EXPECT_EQ(gate.waiting, 0u);
}

}  // namespace
}  // namespace shoal::detail
