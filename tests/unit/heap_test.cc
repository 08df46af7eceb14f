// symmetric_heap with the host backend, N PEs as N threads of one process. An in-process fake
// bootstrap stands in for the TCP one; the heap's own machinery (memfd chunks, abstract Unix sockets,
// SCM_RIGHTS, MAP_FIXED into one reservation per PE) is the real thing.
#include "heap/symmetric_heap.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "heap/data_segment.hpp"
#include "heap/fd_exchange.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kReserve = 64 * kMiB;
constexpr uint64_t kChunk = 1 * kMiB;

// ---- fake bootstrap -------------------------------------------------------------------------------

// What the N thread-PEs share. A rendezvous with a timeout and an abort flag, so that a PE that
// throws makes the others fail fast instead of hanging the test.
class fake_world {
 public:
  explicit fake_world(int size) : size_(size), slots_(static_cast<size_t>(size)), calls_(static_cast<size_t>(size)) {}

  int size() const { return size_; }

  void rendezvous() {
    std::unique_lock lock(mutex_);
    if (aborted_) throw std::runtime_error("another PE failed");
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return generation_ != generation || aborted_; }))
      throw std::runtime_error("fake bootstrap: rendezvous timed out");
    if (generation_ == generation) throw std::runtime_error("another PE failed");
  }

  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

  // Each PE writes only its own slot between two rendezvous, and reads them all after the first.
  std::vector<std::vector<char>>& slots() { return slots_; }
  std::vector<std::string>& calls() { return calls_; }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<std::vector<char>> slots_;
  std::vector<std::string> calls_;
};

class fake_bootstrap final : public bootstrap {
 public:
  fake_bootstrap(fake_world& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }

  void allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view call) override {
    auto& slot = world_.slots()[static_cast<size_t>(rank_)];
    slot.assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes_per_pe);
    world_.calls()[static_cast<size_t>(rank_)] = call;
    world_.rendezvous();
    std::string mismatch;
    for (int pe = 0; pe < size(); ++pe) {
      const auto& s = world_.slots()[static_cast<size_t>(pe)];
      if (s.size() != bytes_per_pe || world_.calls()[static_cast<size_t>(pe)] != call)
        mismatch = fmt::format("PE {} called {} with {} bytes", pe, world_.calls()[static_cast<size_t>(pe)], s.size());
      else
        std::memcpy(static_cast<char*>(all) + static_cast<size_t>(pe) * bytes_per_pe, s.data(), bytes_per_pe);
    }
    world_.rendezvous();  // nobody overwrites a slot before everyone has read it
    if (!mismatch.empty()) throw error(errc::mismatch, std::string(call), mismatch);
  }

  void barrier(std::string_view) override { world_.rendezvous(); }

  void broadcast(void* data, size_t bytes, int root, std::string_view call) override {
    if (rank_ == root) {
      auto& slot = world_.slots()[static_cast<size_t>(rank_)];
      slot.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    }
    world_.rendezvous();
    const auto& s = world_.slots()[static_cast<size_t>(root)];
    if (s.size() != bytes) throw error(errc::mismatch, std::string(call), "broadcast size");
    if (rank_ != root) std::memcpy(data, s.data(), bytes);
    world_.rendezvous();
  }

  void abort_job(int, const std::string& why) override { throw std::runtime_error("abort_job: " + why); }
  void finalize() override {}

 private:
  fake_world& world_;
  int rank_;
};

// Runs body(boot) on `num_pes` threads; returns the failures ("PE r: what"), empty when all passed.
std::vector<std::string> run_pes(int num_pes, const std::function<void(fake_bootstrap&)>& body) {
  fake_world world(num_pes);
  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < num_pes; ++rank) {
    threads.emplace_back([&, rank] {
      fake_bootstrap boot(world, rank);
      try {
        body(boot);
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(mutex);
          failures.push_back(fmt::format("PE {}: {}", rank, e.what()));
        }
        world.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Thrown from PE threads (gtest assertions return only from the enclosing function).
#define REQUIRE(cond, ...)                                                                                        \
  do {                                                                                                            \
    if (!(cond))                                                                                                  \
      throw std::runtime_error(fmt::format("{}:{}: {}: ", __FILE__, __LINE__, #cond) + fmt::format(__VA_ARGS__)); \
  } while (0)

std::unique_ptr<symmetric_heap> make_heap(fake_bootstrap& boot, uint64_t reserve = kReserve, uint64_t chunk = kChunk) {
  return std::make_unique<symmetric_heap>(boot, node_map::discover(boot), make_host_backend(), reserve, chunk);
}

// Word `i` of the pattern PE `pe` writes into heap range `range`: distinct per PE, range and place.
uint64_t pattern(int pe, int range, uint64_t i) {
  uint64_t x =
      (i + 1) * 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(pe) << 48) ^ (static_cast<uint64_t>(range) << 40);
  return x ^ (x >> 29);
}

// Heap ranges are multiples of the page size, so whole words throughout.
void fill(char* p, uint64_t num_bytes, int pe, int range) {
  auto* w = reinterpret_cast<uint64_t*>(p);
  for (uint64_t i = 0; i < num_bytes / 8; ++i) w[i] = pattern(pe, range, i);
}

// Byte offset of the first wrong word, or -1. `step` > 1 samples every step-th word (and the last).
int64_t check(const char* p, uint64_t num_bytes, int pe, int range, uint64_t step = 1) {
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  const uint64_t n = num_bytes / 8;
  for (uint64_t i = 0; i < n; i += step)
    if (w[i] != pattern(pe, range, i)) return static_cast<int64_t>(i * 8);
  if (n > 0 && w[n - 1] != pattern(pe, range, n - 1)) return static_cast<int64_t>((n - 1) * 8);
  return -1;
}

bool all_zero(const char* p, uint64_t num_bytes) {
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t acc = 0;
  for (uint64_t i = 0; i < num_bytes / 8; ++i) acc |= w[i];
  return acc == 0;
}

int count_open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

bool is_mapped(const void* p) {
  unsigned char vec;
  // mincore fails with ENOMEM for addresses that are not mapped at all (PROT_NONE still counts).
  return mincore(const_cast<void*>(p), 1, &vec) == 0;
}

// SHOAL_DEBUG=info SHOAL_DEBUG_SUBSYS=heap shows each growth while debugging these tests.
struct log_setup : ::testing::Environment {
  void SetUp() override { log::configure(); }
};
const auto* const kLogSetup = ::testing::AddGlobalTestEnvironment(new log_setup);

class heap_n : public ::testing::TestWithParam<int> {};

// ---- tests ----------------------------------------------------------------------------------------

TEST_P(heap_n, layout_and_node_map) {
  const int n = GetParam();
  auto failures = run_pes(n, [&](fake_bootstrap& boot) {
    auto heap = make_heap(boot);
    const node_map& nodes = heap->nodes();
    REQUIRE(nodes.my_local == boot.rank(), "my_local {}", nodes.my_local);
    REQUIRE(nodes.pe_of_local.size() == static_cast<size_t>(n), "");
    for (int pe = 0; pe < n; ++pe) {
      REQUIRE(nodes.local_of_pe[static_cast<size_t>(pe)] == pe, "");
      REQUIRE(heap->heap_of(pe) == heap->base() + (pe - boot.rank()) * static_cast<int64_t>(heap->stride()), "");
    }
    REQUIRE(heap->heap_of(-1) == nullptr && heap->heap_of(n) == nullptr, "");
    REQUIRE(heap->stride() == kReserve && heap->mapped_bytes() == 0, "");
    REQUIRE(heap->base_alignment() >= 2 * kMiB, "base alignment {}", heap->base_alignment());
    REQUIRE(reinterpret_cast<uintptr_t>(heap->base()) % heap->base_alignment() == 0, "");
    REQUIRE(heap->offset_of(heap->base()) == 0, "");
    REQUIRE(heap->offset_of(heap->base() + kReserve - 1) == static_cast<int64_t>(kReserve - 1), "");
    REQUIRE(heap->offset_of(heap->base() + kReserve) == -1, "");
    REQUIRE(heap->offset_of(heap->base() - 1) == -1, "");
    REQUIRE(heap->offset_of(nullptr) == -1, "");
    REQUIRE(std::string(heap->backend().name()) == "host" && heap->backend().host_accessible(), "");
    // Before any growth the range is reserved (PROT_NONE), not unmapped.
    REQUIRE(is_mapped(heap->base()), "the reservation is mapped (PROT_NONE)");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

TEST_P(heap_n, grow_write_and_read_every_peer) {
  const int n = GetParam();
  auto failures = run_pes(n, [&](fake_bootstrap& boot) {
    const int me = boot.rank();
    auto heap = make_heap(boot);
    heap->grow_to(kChunk / 2, "test grow");
    REQUIRE(heap->mapped_bytes() == kChunk, "mapped {}", heap->mapped_bytes());
    for (int pe = 0; pe < n; ++pe) REQUIRE(all_zero(heap->heap_of(pe), kChunk), "PE {}'s new memory is not zero", pe);
    boot.barrier("test");  // nobody writes before every PE checked the zeros
    fill(heap->base(), kChunk, me, 0);
    boot.barrier("test");
    for (int pe = 0; pe < n; ++pe) {
      int64_t bad = check(heap->heap_of(pe), kChunk, pe, 0);
      REQUIRE(bad < 0, "PE {} reads PE {}'s heap wrong at {}", me, pe, bad);
    }
    boot.barrier("test");
    // Remote writes: PE a writes its own slice of every PE b's heap; b sees them at base().
    const uint64_t slice = kChunk / static_cast<uint64_t>(n);
    for (int pe = 0; pe < n; ++pe) fill(heap->heap_of(pe) + static_cast<uint64_t>(me) * slice, slice, me, 1 + pe);
    boot.barrier("test");
    for (int writer = 0; writer < n; ++writer) {
      int64_t bad = check(heap->base() + static_cast<uint64_t>(writer) * slice, slice, writer, 1 + me);
      REQUIRE(bad < 0, "PE {} does not see PE {}'s write at {}", me, writer, bad);
    }
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

TEST_P(heap_n, growth_in_steps_keeps_data) {
  const int n = GetParam();
  auto failures = run_pes(n, [&](fake_bootstrap& boot) {
    const int me = boot.rank();
    // Smaller than the other tests: every PE touches every page of every heap here.
    constexpr uint64_t chunk = 256 * 1024, reserve = 24 * kMiB;
    auto heap = make_heap(boot, reserve, chunk);
    // (request, expected mapped bytes): chunk rounding, no-ops, one grow spanning 37 chunk sizes,
    // and a last one capped exactly at the reservation (not a multiple of the chunk size away).
    const std::pair<uint64_t, uint64_t> steps[] = {
        {1, chunk},
        {3 * chunk + 5, 4 * chunk},
        {2 * chunk, 4 * chunk},
        {4 * chunk, 4 * chunk},
        {40 * chunk + 1, 41 * chunk},
        {reserve - 4096, reserve},
    };
    std::vector<uint64_t> ends = {0};
    size_t expected_chunks = 0;
    for (auto [request, expect] : steps) {
      const uint64_t before = heap->mapped_bytes();
      heap->grow_to(request, "test grow");
      REQUIRE(heap->mapped_bytes() == expect, "grow_to({}) mapped {}, expected {}", request, heap->mapped_bytes(),
              expect);
      if (expect == before) continue;
      ++expected_chunks;
      for (int local = 0; local < n; ++local)
        REQUIRE(heap->num_chunks(local) == expected_chunks, "local {} has {} chunks", local, heap->num_chunks(local));
      ends.push_back(expect);
      const int range = static_cast<int>(ends.size()) - 2;
      for (int pe = 0; pe < n; ++pe)
        REQUIRE(all_zero(heap->heap_of(pe) + before, expect - before), "PE {}'s new range is not zero", pe);
      boot.barrier("test");
      fill(heap->base() + before, expect - before, me, range);
      boot.barrier("test");
      // The new range of every PE is visible in full; the older ones are intact (sampled).
      for (int pe = 0; pe < n; ++pe)
        for (int r = 0; r <= range; ++r) {
          const uint64_t lo = ends[static_cast<size_t>(r)], hi = ends[static_cast<size_t>(r) + 1];
          int64_t bad = check(heap->heap_of(pe) + lo, hi - lo, pe, r, r == range ? 1 : 509);
          REQUIRE(bad < 0, "PE {}: PE {}'s range {} is wrong at {}", me, pe, r, bad);
        }
      boot.barrier("test");
    }
    // Full: the last byte of every PE's heap is reachable.
    heap->heap_of((me + 1) % n)[reserve - 1] = 1;
    REQUIRE(heap->num_chunks(me) == 4, "{} chunks", heap->num_chunks(me));
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

TEST_P(heap_n, out_of_memory_on_every_pe_and_nothing_mapped) {
  const int n = GetParam();
  int fds_before_oom = 0, fds_after_oom = 0;
  auto failures = run_pes(n, [&](fake_bootstrap& boot) {
    auto heap = make_heap(boot);
    heap->grow_to(2 * kChunk, "test grow");
    boot.barrier("test");
    if (boot.rank() == 0) fds_before_oom = count_open_fds();
    boot.barrier("test");
    for (uint64_t request : {kReserve + 1, kReserve * 1000, UINT64_MAX}) {
      try {
        heap->grow_to(request, "shoal_malloc");
        REQUIRE(false, "grow_to({}) did not throw", request);
      } catch (const error& e) {
        REQUIRE(e.code() == errc::out_of_memory, "code {}", to_string(e.code()));
        REQUIRE(e.call() == "shoal_malloc", "call {}", e.call());
        REQUIRE(e.message().find(std::to_string(request)) != std::string::npos, "message: {}", e.message());
      }
      REQUIRE(heap->mapped_bytes() == 2 * kChunk, "mapped {}", heap->mapped_bytes());
      REQUIRE(heap->num_chunks(boot.rank()) == 1, "");
    }
    boot.barrier("test");
    if (boot.rank() == 0) fds_after_oom = count_open_fds();
    boot.barrier("test");
    // The heap is still usable, up to exactly the reservation, and consistent across PEs.
    heap->grow_to(kReserve, "test grow");
    REQUIRE(heap->mapped_bytes() == kReserve, "");
    heap->base()[kReserve - 1] = static_cast<char>(boot.rank() + 1);
    boot.barrier("test");
    for (int pe = 0; pe < n; ++pe) REQUIRE(heap->heap_of(pe)[kReserve - 1] == static_cast<char>(pe + 1), "PE {}", pe);
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
  EXPECT_EQ(fds_before_oom, fds_after_oom) << "a failed growth created or leaked fds";
}

TEST_P(heap_n, mismatched_sizes_fail_everywhere) {
  const int n = GetParam();
  if (n < 2) GTEST_SKIP() << "needs two PEs to disagree";
  auto failures = run_pes(n, [&](fake_bootstrap& boot) {
    auto heap = make_heap(boot);
    try {
      heap->grow_to(boot.rank() == 1 ? 3 * kChunk : 2 * kChunk, "shoal_malloc");
      REQUIRE(false, "no error");
    } catch (const error& e) {
      REQUIRE(e.code() == errc::mismatch, "{}", e.what());
    }
    REQUIRE(heap->mapped_bytes() == 0 && heap->num_chunks(boot.rank()) == 0, "the failed growth left chunks");
    // Afterwards a consistent growth works (no stale state, no stale messages).
    heap->grow_to(kChunk, "test grow");
    heap->base()[7] = static_cast<char>(boot.rank() + 1);
    boot.barrier("test");
    for (int pe = 0; pe < n; ++pe) REQUIRE(heap->heap_of(pe)[7] == static_cast<char>(pe + 1), "PE {}", pe);
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

TEST_P(heap_n, two_heaps_side_by_side_and_cleanup) {
  const int n = GetParam();
  const int fds_before = count_open_fds();
  std::vector<char*> regions(static_cast<size_t>(n));
  auto failures = run_pes(n, [&](fake_bootstrap& boot) {
    auto a = make_heap(boot);
    auto b = make_heap(boot, 16 * kMiB, 2 * kMiB);
    regions[static_cast<size_t>(boot.rank())] = a->heap_of_local(0);
    a->grow_to(kChunk, "test grow");
    b->grow_to(kChunk, "test grow");
    REQUIRE(b->mapped_bytes() == 2 * kMiB, "");
    std::memset(a->base(), 'a', kChunk);
    std::memset(b->base(), 'b', kChunk);
    boot.barrier("test");
    for (int pe = 0; pe < n; ++pe) {
      REQUIRE(a->heap_of(pe)[kChunk - 1] == 'a' && b->heap_of(pe)[kChunk - 1] == 'b', "PE {}", pe);
    }
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
  // Destructors closed every chunk fd and socket and released every reservation.
  EXPECT_EQ(count_open_fds(), fds_before);
  for (char* r : regions) EXPECT_FALSE(is_mapped(r)) << "reservation still mapped";
}

INSTANTIATE_TEST_SUITE_P(pes, heap_n, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return "np" + std::to_string(info.param); });

// Two "nodes" in one process: PEs {0, 2} and {1, 3}. Each maps only its node's heaps, and the chunk
// exchange happens between same-node PEs only.
TEST(heap, other_node_pes_are_not_mapped) {
  auto failures = run_pes(4, [&](fake_bootstrap& boot) {
    const int me = boot.rank();
    node_map nodes;
    nodes.local_of_pe = me % 2 == 0 ? std::vector<int>{0, -1, 1, -1} : std::vector<int>{-1, 0, -1, 1};
    nodes.pe_of_local = me % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
    nodes.my_local = me / 2;
    symmetric_heap heap(boot, nodes, make_host_backend(), kReserve, kChunk);
    heap.grow_to(kChunk, "test grow");
    const int peer = me ^ 2;  // same node
    REQUIRE(heap.heap_of(me ^ 1) == nullptr && heap.heap_of(me ^ 3) == nullptr, "other node mapped");
    REQUIRE(heap.heap_of(peer) != nullptr && heap.heap_of(me) == heap.base(), "");
    heap.base()[100] = static_cast<char>(me + 1);
    boot.barrier("test");
    REQUIRE(heap.heap_of(peer)[100] == static_cast<char>(peer + 1), "");
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

TEST(heap, node_map_discover_sees_one_node) {
  auto failures = run_pes(3, [&](fake_bootstrap& boot) {
    node_map nodes = node_map::discover(boot);
    REQUIRE(nodes.my_local == boot.rank(), "");
    REQUIRE((nodes.pe_of_local == std::vector<int>{0, 1, 2}), "");
    REQUIRE((nodes.local_of_pe == std::vector<int>{0, 1, 2}), "");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

// ---- the program's data segment (globals and statics) ----------------------------------------------

}  // namespace
}  // namespace shoal::detail

// Objects of this program: initialized and zero globals (shared) and a table of pointers to constant
// strings, which a PIE keeps in .data.rel.ro (RELRO: must stay out of the shared range).
long g_heap_test_initialized = 17;
long g_heap_test_zero[1000];
const char* const g_heap_test_relro[] = {"a", "b"};

namespace shoal::detail {
namespace {

bool inside(const data_segment_span& span, const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p), start = reinterpret_cast<uintptr_t>(span.base);
  return a >= start && a - start < span.num_bytes;
}

TEST(data_segment, finds_data_and_bss_but_not_relro) {
  std::string why;
  const data_segment_span span = find_program_data(&why);
  ASSERT_NE(span.base, nullptr) << why;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(span.base) % page, 0u);
  EXPECT_EQ(span.num_bytes % page, 0u);
  EXPECT_TRUE(inside(span, &g_heap_test_initialized));
  EXPECT_TRUE(inside(span, &g_heap_test_zero[0]));
  EXPECT_TRUE(inside(span, &g_heap_test_zero[999]));
  EXPECT_FALSE(inside(span, &g_heap_test_relro[0])) << "RELRO data in the shared range";
  EXPECT_FALSE(inside(span, "a string literal"));
  long on_stack = 0;
  EXPECT_FALSE(inside(span, &on_stack));
}

// N thread-PEs of one process share one data segment: each PE's "peer copy" is another mapping of
// the same memfd, so a write through any PE's view of any peer lands in the program's own global.
TEST(data_segment, shared_and_mapped_for_every_peer) {
  g_heap_test_initialized = 17;
  const shared_data_segment& shared = share_program_data();
  ASSERT_GE(shared.fd, 0) << shared.why_not;
  EXPECT_EQ(g_heap_test_initialized, 17) << "the value did not survive the move onto the memfd";
  EXPECT_TRUE(inside(shared.span, &g_heap_test_initialized));
  EXPECT_EQ(&share_program_data(), &shared);  // once per process
  constexpr int kPes = 3;
  auto failures = run_pes(kPes, [&](fake_bootstrap& boot) {
    const int me = boot.rank();
    auto heap = make_heap(boot);
    symmetric_data data(boot, *heap, true, "");
    REQUIRE(data.enabled() && data.why_not().empty(), "disabled: {}", data.why_not());
    const int64_t off = data.offset_of(&g_heap_test_zero[me]);
    REQUIRE(off >= 0, "a global is outside the segment");
    REQUIRE(data.offset_of(&off) == -1 && data.offset_of(&g_heap_test_relro[0]) == -1, "");
    REQUIRE(data.data_of(me) == data.local_span().base && data.local_span().num_bytes == shared.span.num_bytes, "");
    // PE me writes its slot of g_heap_test_zero through its view of its right neighbour.
    const int right = (me + 1) % kPes;
    REQUIRE(data.data_of(right) != nullptr && data.data_of(kPes) == nullptr, "");
    REQUIRE(right == me || data.data_of(right) != data.data_of(me), "a peer's view is the program's own");
    *reinterpret_cast<long*>(data.data_of(right) + off) = 1000 + me;
    boot.barrier("test");
    REQUIRE(g_heap_test_zero[me] == 1000 + me, "the write through PE {}'s view is not in the global", right);
    // The fd exchange went through the heap's authenticated channel; growth still works after it.
    heap->grow_to(kChunk, "test grow");
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
  for (int pe = 0; pe < kPes; ++pe) EXPECT_EQ(g_heap_test_zero[pe], 1000 + pe);
}

// A PE that does not share (here: PE 1 says so) makes every PE go without, each able to say why.
TEST(data_segment, one_pe_without_makes_everyone_go_without) {
  auto failures = run_pes(2, [&](fake_bootstrap& boot) {
    auto heap = make_heap(boot);
    symmetric_data data(boot, *heap, boot.rank() != 1, "SHOAL_SYMMETRIC_DATA=0");
    REQUIRE(!data.enabled() && data.offset_of(&g_heap_test_initialized) == -1, "");
    const std::string want = boot.rank() == 1 ? "SHOAL_SYMMETRIC_DATA=0"
                                              : "PE 1 does not share its globals: "
                                                "SHOAL_SYMMETRIC_DATA=0";
    REQUIRE(data.why_not() == want, "why_not '{}'", data.why_not());
    REQUIRE(data.data_of(0) == nullptr && data.local_span().num_bytes == 0, "");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

// ---- fd exchange ----------------------------------------------------------------------------------

TEST(fd_exchange, passes_a_working_fd_and_names_the_sender) {
  const std::string tag = std::to_string(getpid());
  fd_channel a("shoal-test-a-" + tag, "test"), b("shoal-test-b-" + tag, "test");
  unique_fd memfd(memfd_create("t", MFD_CLOEXEC));
  ASSERT_GE(memfd.get(), 0);
  ASSERT_EQ(pwrite(memfd.get(), "hello", 5, 0), 5);
  chunk_header h{kChunkMagic, 3, 9, 4096, 8192};
  ASSERT_TRUE(a.try_send(b.name(), h, memfd.get(), "test"));
  auto got = b.try_receive("test");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->sender_name, a.name());
  EXPECT_EQ(got->malformed, nullptr);
  EXPECT_TRUE(got->credentials.present);
  EXPECT_EQ(got->credentials.pid, getpid());
  EXPECT_EQ(got->credentials.uid, getuid());
  EXPECT_EQ(got->header.sender_local, 3);
  EXPECT_EQ(got->header.sequence, 9u);
  EXPECT_EQ(got->header.offset, 4096u);
  EXPECT_EQ(got->header.bytes, 8192u);
  EXPECT_NE(got->fd.get(), memfd.get());
  char buf[6] = {};
  ASSERT_EQ(pread(got->fd.get(), buf, 5, 0), 5);
  EXPECT_STREQ(buf, "hello");
  EXPECT_FALSE(b.try_receive("test"));  // nothing else queued
  // The name is taken while `a` lives; sending to nobody fails loudly.
  EXPECT_THROW(fd_channel("shoal-test-a-" + tag, "test"), error);
  EXPECT_THROW(a.try_send("shoal-test-nobody-" + tag, h, memfd.get(), "test"), error);
}

TEST(fd_exchange, malformed_message_comes_back_marked_with_its_fds_closed) {
  const std::string tag = std::to_string(getpid());
  fd_channel a("shoal-test-c-" + tag, "test"), b("shoal-test-d-" + tag, "test");
  unique_fd memfd(memfd_create("t", MFD_CLOEXEC));
  chunk_header h{0x1234, 0, 0, 0, 0};  // wrong magic
  ASSERT_TRUE(a.try_send(b.name(), h, memfd.get(), "test"));
  const int fds = count_open_fds();
  {
    auto got = b.try_receive("test");
    ASSERT_TRUE(got);
    ASSERT_NE(got->malformed, nullptr);
    EXPECT_STREQ(got->malformed, "wrong magic");
    EXPECT_EQ(got->fd.get(), -1);
  }
  EXPECT_EQ(count_open_fds(), fds) << "the rejected message's fd leaked";
}

// Each way a message can fail to come from the PE it claims to be, one field at a time.
TEST(fd_exchange, auth_accepts_only_the_claimed_peer_with_the_key) {
  exchange_auth auth;
  auth.key.fill(7);
  auth.my_local = 0;
  auth.peers = {exchange_peer{"me", 10, 1000}, exchange_peer{"peer", 11, 1000}};
  auto message = [&] {
    received_chunk m;
    m.header = chunk_header{kChunkMagic, 1, 1, 0, 4096, auth.key};
    m.sender_name = "peer";
    m.credentials = sender_credentials{true, 11, 1000};
    return m;
  };
  EXPECT_EQ(auth.check(message()), nullptr);
  auto m = message();
  m.header.key[15] ^= 1;
  EXPECT_STREQ(auth.check(m), "wrong job key");
  m = message();
  m.credentials.pid = 12;
  EXPECT_STREQ(auth.check(m), "sender pid is not the claimed PE's");
  m = message();
  m.credentials.uid = 1001;
  EXPECT_STREQ(auth.check(m), "sender uid is not the job's");
  m = message();
  m.sender_name = "";
  EXPECT_STREQ(auth.check(m), "sent from another socket than the claimed PE's");
  m = message();
  m.credentials.present = false;
  EXPECT_STREQ(auth.check(m), "no sender credentials");
  for (int32_t local : {-1, 0, 2}) {
    m = message();
    m.header.sender_local = local;
    EXPECT_STREQ(auth.check(m), "unknown sender index") << local;
  }
  m = message();
  m.malformed = "wrong size";
  EXPECT_STREQ(auth.check(m), "wrong size");
  // A peer in another pid namespace: its pid is not compared, everything else still is.
  auth.peers[1].check_pid = false;
  m = message();
  m.credentials.pid = 0;
  EXPECT_EQ(auth.check(m), nullptr);
  m.header.key[0] ^= 1;
  EXPECT_NE(auth.check(m), nullptr);
}

// One thread: a stranger's messages (no key, garbage, several fds) reach the queue before the peer's;
// the exchange drops them with their fds closed and returns the peer's message alone.
TEST(fd_exchange, exchange_drops_foreign_messages_and_closes_their_fds) {
  const std::string tag = std::to_string(getpid());
  fd_channel a("shoal-test-f-" + tag, "test"), b("shoal-test-g-" + tag, "test"), rogue("shoal-test-h-" + tag, "test");
  exchange_auth auth;
  auth.key.fill(3);
  auth.peers = {exchange_peer{a.name(), getpid(), getuid()}, exchange_peer{b.name(), getpid(), getuid()}};
  auth.my_local = 1;
  unique_fd memfd(memfd_create("t", MFD_CLOEXEC));
  const int fds = count_open_fds();
  ASSERT_TRUE(rogue.try_send(b.name(), chunk_header{kChunkMagic, 0, 1, 0, 0}, memfd.get(), "test"));
  ASSERT_TRUE(rogue.try_send(b.name(), chunk_header{kChunkMagic, 0, 1, 0, 0, auth.key}, memfd.get(), "test"));
  ASSERT_TRUE(a.try_send(b.name(), chunk_header{0x1234, 0, 1, 0, 0, auth.key}, memfd.get(), "test"));
  ASSERT_TRUE(a.try_send(b.name(), chunk_header{kChunkMagic, 0, 1, 0, 0}, memfd.get(), "test"));
  ASSERT_TRUE(a.try_send(b.name(), chunk_header{kChunkMagic, 0, 1, 0, 0, auth.key}, memfd.get(), "test"));
  {
    auto in = exchange_chunks(b, {}, 1, auth, std::chrono::seconds(5), "test");
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].sender_name, a.name());
    EXPECT_EQ(b.foreign_dropped(), 4u);
    EXPECT_EQ(count_open_fds(), fds + 1) << "a dropped message's fd leaked";
  }
  EXPECT_EQ(count_open_fds(), fds);
}

TEST(fd_exchange, timeout_names_the_shortfall) {
  const std::string tag = std::to_string(getpid());
  fd_channel a("shoal-test-e-" + tag, "test");
  auto start = std::chrono::steady_clock::now();
  try {
    exchange_chunks(a, {}, 1, exchange_auth{}, std::chrono::milliseconds(200), "shoal_malloc");
    ADD_FAILURE() << "no timeout";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::timeout);
    EXPECT_EQ(e.call(), "shoal_malloc");
    EXPECT_NE(e.message().find("received 0 of 1"), std::string::npos) << e.message();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
}

// More messages than a socket queue holds (net.unix.max_dgram_qlen is often 10) in both directions
// at once, from one thread: the exchange must interleave sends and receives, not block.
TEST(fd_exchange, many_messages_do_not_deadlock) {
  const std::string tag = std::to_string(getpid());
  constexpr int kPeers = 2, kMessages = 64;
  std::vector<std::unique_ptr<fd_channel>> channels;
  for (int i = 0; i < kPeers; ++i)
    channels.push_back(std::make_unique<fd_channel>(fmt::format("shoal-test-many-{}-{}", tag, i), "test"));
  unique_fd memfd(memfd_create("t", MFD_CLOEXEC));
  exchange_auth auth;
  for (auto& c : channels) auth.peers.push_back(exchange_peer{c->name(), getpid(), getuid()});
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  std::mutex mutex;
  for (int i = 0; i < kPeers; ++i) {
    threads.emplace_back([&, i] {
      std::vector<outgoing_chunk> out;
      for (int m = 0; m < kMessages; ++m)
        out.push_back(outgoing_chunk{channels[static_cast<size_t>(1 - i)]->name(),
                                     chunk_header{kChunkMagic, i, static_cast<uint64_t>(m), 0, 0}, memfd.get()});
      exchange_auth mine = auth;
      mine.my_local = i;
      try {
        auto in =
            exchange_chunks(*channels[static_cast<size_t>(i)], out, kMessages, mine, std::chrono::seconds(10), "t");
        if (in.size() != kMessages) throw std::runtime_error("short");
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        failures.push_back(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

// Messages that do not come from the claimed peer (another socket, no key, or garbage) are dropped
// unmapped and counted; the growth they arrive in still completes with the real chunks.
TEST(heap, forged_chunk_messages_are_dropped_and_the_growth_completes) {
  auto failures = run_pes(2, [&](fake_bootstrap& boot) {
    auto heap = make_heap(boot);
    heap->set_exchange_timeout(std::chrono::seconds(5));
    heap->grow_to(kChunk, "test grow");
    boot.barrier("test");
    if (boot.rank() == 1) {
      fd_channel rogue(fmt::format("shoal-test-rogue-{}", getpid()), "test");
      unique_fd memfd(memfd_create("rogue", MFD_CLOEXEC));
      REQUIRE(ftruncate(memfd.get(), static_cast<off_t>(kChunk)) == 0, "");
      // Claims to be local PE 1 with exactly the expected header of the next growth (but no key).
      chunk_header h{kChunkMagic, 1, 2, kChunk, kChunk};
      REQUIRE(rogue.try_send(heap->socket_name(0), h, memfd.get(), "test"), "");
      // Garbage, with an fd.
      chunk_header junk{0x1234, 5, 6, 7, 8};
      REQUIRE(rogue.try_send(heap->socket_name(0), junk, memfd.get(), "test"), "");
    }
    boot.barrier("test");
    heap->grow_to(2 * kChunk, "shoal_malloc");
    REQUIRE(heap->mapped_bytes() == 2 * kChunk && heap->num_chunks(0) == 2 && heap->num_chunks(1) == 2, "not grown");
    REQUIRE(heap->foreign_dropped() == (boot.rank() == 0 ? 2u : 0u), "dropped {}", heap->foreign_dropped());
    heap->base()[kChunk + 5] = static_cast<char>(boot.rank() + 1);
    boot.barrier("test");
    REQUIRE(heap->heap_of(1 - boot.rank())[kChunk + 5] == static_cast<char>(2 - boot.rank()), "");
    boot.barrier("test");
  });
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

}  // namespace
}  // namespace shoal::detail
