// symmetric_allocator: first fit, alignment, coalescing, in-place resize, lookups, bad input, and a
// randomized differential test against a byte-occupancy model that predicts every offset.
#include "heap/allocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(allocator, first_fit_packs_from_zero) {
  symmetric_allocator a(1024);
  EXPECT_EQ(a.allocate(100, 1), 0u);
  EXPECT_EQ(a.allocate(100, 1), 100u);
  EXPECT_EQ(a.allocate(24, 1), 200u);
  EXPECT_EQ(a.high_water(), 224u);
  EXPECT_EQ(a.bytes_in_use(), 224u);
  EXPECT_EQ(a.num_allocations(), 3u);
  EXPECT_EQ(a.capacity(), 1024u);
}

TEST(allocator, alignment) {
  symmetric_allocator a(1 << 20);
  EXPECT_EQ(a.allocate(1, 1), 0u);
  EXPECT_EQ(a.allocate(8, 8), 8u);  // skips 1..7
  EXPECT_EQ(a.allocate(1, 4096), 4096u);
  // Holes now: [1,8) [16,4096) [4097,...). The padding left before aligned blocks is still usable.
  EXPECT_EQ(a.allocate(3, 2), 2u);
  EXPECT_EQ(a.allocate(16, 256), 256u);  // [1,2) [5,8) too small; 256 inside [16,4096)
  EXPECT_EQ(a.allocate(200, 1), 16u);    // the padding [16,256) before it
  EXPECT_EQ(a.allocate(2, 1), 5u);
  EXPECT_EQ(a.allocate(2, 1), 216u);  // [1,2) is one byte; [7,8) too
  for (uint64_t align = 1; align <= (1u << 16); align <<= 1) {
    auto off = a.allocate(5, align);
    ASSERT_TRUE(off);
    EXPECT_EQ(*off % align, 0u) << "alignment " << align;
  }
}

TEST(allocator, first_fit_takes_the_lowest_hole_that_fits) {
  symmetric_allocator a(1000);
  auto x = a.allocate(100, 1);  // [0,100)
  auto y = a.allocate(50, 1);   // [100,150)
  auto z = a.allocate(200, 1);  // [150,350)
  auto w = a.allocate(10, 1);   // [350,360)
  ASSERT_TRUE(x && y && z && w);
  ASSERT_TRUE(a.free(*x));
  ASSERT_TRUE(a.free(*z));
  EXPECT_EQ(a.allocate(150, 1), 150u);  // does not fit at 0 (100 bytes), fits in z's hole
  EXPECT_EQ(a.allocate(60, 1), 0u);     // lowest hole again
  EXPECT_EQ(a.allocate(40, 1), 60u);    // remainder of the first hole, exactly
  EXPECT_EQ(a.allocate(50, 1), 300u);   // rest of z's hole
  EXPECT_EQ(a.allocate(1, 1), 360u);
}

TEST(allocator, coalescing_in_every_free_order) {
  // Four neighbours freed in all 24 orders: afterwards the whole capacity fits again at 0.
  std::vector<int> order = {0, 1, 2, 3};
  do {
    symmetric_allocator a(400);
    std::vector<uint64_t> offs;
    for (int i = 0; i < 4; ++i) offs.push_back(*a.allocate(100, 1));
    EXPECT_FALSE(a.allocate(1, 1));
    for (int i : order) ASSERT_EQ(a.free(offs[static_cast<size_t>(i)]), 100u);
    EXPECT_EQ(a.bytes_in_use(), 0u);
    EXPECT_EQ(a.high_water(), 0u);
    EXPECT_EQ(a.allocate(400, 1), 0u) << "holes were not coalesced";
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(allocator, coalescing_with_gaps_and_padding) {
  symmetric_allocator a(1 << 16);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 32; ++i) offs.push_back(*a.allocate(static_cast<uint64_t>(1 + i * 37), 64));
  // Free the odd ones, then the even ones in reverse.
  for (size_t i = 1; i < offs.size(); i += 2) ASSERT_TRUE(a.free(offs[i]));
  for (size_t i = offs.size(); i-- > 0;) {
    if (i % 2 == 0) {
      ASSERT_TRUE(a.free(offs[i]));
    }
  }
  EXPECT_EQ(a.num_allocations(), 0u);
  EXPECT_EQ(a.allocate(1 << 16, 1), 0u);
}

TEST(allocator, bad_free_changes_nothing) {
  symmetric_allocator a(4096);
  auto x = *a.allocate(100, 1);
  auto y = *a.allocate(100, 1);
  EXPECT_FALSE(a.free(x + 1));  // interior
  EXPECT_FALSE(a.free(5000));   // beyond capacity
  EXPECT_FALSE(a.free(300));    // inside a hole
  EXPECT_FALSE(a.free(kMax));
  EXPECT_EQ(a.free(x), 100u);
  EXPECT_FALSE(a.free(x));  // double free
  EXPECT_EQ(a.bytes_in_use(), 100u);
  EXPECT_EQ(a.num_allocations(), 1u);
  EXPECT_EQ(a.high_water(), 200u);
  EXPECT_EQ(a.allocate(100, 1), x);  // the hole is intact and exactly x's
  EXPECT_EQ(a.find(y + 99)->offset, y);
}

TEST(allocator, resize_in_place) {
  symmetric_allocator a(1000);
  auto x = *a.allocate(100, 1);             // [0,100)
  auto y = *a.allocate(100, 1);             // [100,200)
  EXPECT_FALSE(a.resize_in_place(x, 101));  // y is in the way
  EXPECT_EQ(a.resize_in_place(x, 100), 100u);
  EXPECT_EQ(a.resize_in_place(x, 40), 100u);  // shrink: returns the old size
  EXPECT_EQ(a.find(x)->num_bytes, 40u);
  EXPECT_EQ(a.bytes_in_use(), 140u);
  EXPECT_EQ(a.resize_in_place(x, 100), 40u);  // grows back into the hole it left
  EXPECT_FALSE(a.resize_in_place(x, 101));
  EXPECT_EQ(a.resize_in_place(y, 900), 100u);  // up to the capacity exactly
  EXPECT_FALSE(a.resize_in_place(y, 901));
  EXPECT_EQ(a.high_water(), 1000u);
  EXPECT_EQ(a.resize_in_place(y, 10), 900u);
  EXPECT_EQ(a.high_water(), 110u);
  // The shrink's tail merged with the hole after it: one big allocation fits right after y.
  EXPECT_EQ(a.allocate(890, 1), 110u);
  // Bad input leaves everything as it was.
  EXPECT_FALSE(a.resize_in_place(x + 1, 10));
  EXPECT_FALSE(a.resize_in_place(x, 0));
  EXPECT_FALSE(a.resize_in_place(999999, 10));
  EXPECT_FALSE(a.resize_in_place(y, kMax));
  EXPECT_EQ(a.bytes_in_use(), 1000u);
  EXPECT_EQ(a.num_allocations(), 3u);
}

TEST(allocator, find_and_high_water) {
  symmetric_allocator a(1 << 20);
  EXPECT_FALSE(a.find(0));
  EXPECT_EQ(a.high_water(), 0u);
  auto x = *a.allocate(10, 1);
  auto y = *a.allocate(10, 1024);
  EXPECT_EQ(y, 1024u);
  for (uint64_t o = 0; o < 10; ++o) EXPECT_EQ(a.find(x + o)->offset, x);
  EXPECT_FALSE(a.find(10));
  EXPECT_FALSE(a.find(1023));
  EXPECT_EQ(a.find(1033)->num_bytes, 10u);
  EXPECT_FALSE(a.find(1034));
  EXPECT_FALSE(a.find(kMax));
  EXPECT_EQ(a.high_water(), 1034u);
  a.free(y);
  EXPECT_EQ(a.high_water(), 10u);
  a.free(x);
  EXPECT_EQ(a.high_water(), 0u);
}

TEST(allocator, exhaustion) {
  symmetric_allocator a(4096);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(a.allocate(64, 64), static_cast<uint64_t>(i) * 64);
  EXPECT_FALSE(a.allocate(1, 1));
  a.free(64 * 10);
  EXPECT_FALSE(a.allocate(65, 1));
  EXPECT_FALSE(a.allocate(64, 256));  // the only hole, [640,704), is not 256-aligned
  EXPECT_EQ(a.num_allocations(), 63u);
  EXPECT_EQ(a.allocate(64, 128), 640u);
  symmetric_allocator empty(0);
  EXPECT_FALSE(empty.allocate(1, 1));
  EXPECT_EQ(empty.high_water(), 0u);
}

TEST(allocator, overflow_inputs_never_wrap) {
  symmetric_allocator a(1 << 20);
  EXPECT_FALSE(a.allocate(kMax, 1));
  EXPECT_FALSE(a.allocate((1 << 20) + 1, 1));
  EXPECT_EQ(a.allocate(1, uint64_t{1} << 63), 0u);  // offset 0 is aligned to anything
  EXPECT_FALSE(a.allocate(1, uint64_t{1} << 63));   // the next multiple, 2^63, is past the end
  EXPECT_FALSE(a.allocate(1 << 20, 1));
  EXPECT_FALSE(a.allocate(1, uint64_t{1} << 40));
#ifdef SHOAL_DEBUG_ASSERTS
  EXPECT_THROW(a.allocate(0, 1), error);  // the runtime never passes 0: an internal error
  EXPECT_THROW(a.allocate(8, 3), error);
#else
  EXPECT_FALSE(a.allocate(0, 1));
  EXPECT_FALSE(a.allocate(8, 3));
#endif
  EXPECT_EQ(a.num_allocations(), 1u);

  // A capacity at the very top of the range: offsets near 2^64 must not wrap.
  symmetric_allocator huge(kMax);
  EXPECT_EQ(huge.allocate(16, 1), 0u);
  EXPECT_EQ(huge.allocate(16, uint64_t{1} << 63), uint64_t{1} << 63);
  EXPECT_FALSE(huge.allocate(uint64_t{1} << 63, 1));  // neither hole holds 2^63 bytes
  EXPECT_EQ(huge.allocate((uint64_t{1} << 63) - 16, 1), 16u);
  EXPECT_EQ(huge.high_water(), (uint64_t{1} << 63) + 16);
  auto top = huge.allocate(kMax - (uint64_t{1} << 63) - 16, 1);  // exactly the rest
  ASSERT_TRUE(top);
  EXPECT_EQ(huge.high_water(), kMax);
  EXPECT_FALSE(huge.allocate(1, 1));
  EXPECT_FALSE(huge.resize_in_place(*top, kMax));
  EXPECT_EQ(huge.find(kMax - 1)->offset, *top);
  EXPECT_FALSE(huge.find(kMax));
}

// ---- randomized differential test ----------------------------------------------------------------

// Brute force: which bytes are taken. Predicts the allocator's exact answers, since first fit over
// aligned offsets has one right answer.
class model {
 public:
  explicit model(uint64_t capacity) : used_(capacity, false) {}

  std::optional<uint64_t> allocate(uint64_t num_bytes, uint64_t alignment) {
    const uint64_t cap = used_.size();
    for (uint64_t o = 0; o + num_bytes <= cap; o += alignment) {
      uint64_t i = 0;
      while (i < num_bytes && !used_[o + i]) ++i;
      if (i == num_bytes) {
        mark(o, num_bytes, true);
        live_[o] = num_bytes;
        return o;
      }
    }
    return std::nullopt;
  }
  std::optional<uint64_t> free(uint64_t offset) {
    auto it = live_.find(offset);
    if (it == live_.end()) return std::nullopt;
    uint64_t n = it->second;
    mark(offset, n, false);
    live_.erase(it);
    return n;
  }
  std::optional<uint64_t> resize(uint64_t offset, uint64_t new_num_bytes) {
    auto it = live_.find(offset);
    if (it == live_.end() || new_num_bytes == 0) return std::nullopt;
    uint64_t old = it->second;
    if (new_num_bytes > old) {
      if (offset + new_num_bytes > used_.size()) return std::nullopt;
      for (uint64_t i = offset + old; i < offset + new_num_bytes; ++i)
        if (used_[i]) return std::nullopt;
      mark(offset + old, new_num_bytes - old, true);
    } else {
      mark(offset + new_num_bytes, old - new_num_bytes, false);
    }
    it->second = new_num_bytes;
    return old;
  }
  std::optional<symmetric_allocator::block> find(uint64_t offset) const {
    for (auto& [o, n] : live_)
      if (offset >= o && offset < o + n) return symmetric_allocator::block{o, n};
    return std::nullopt;
  }
  uint64_t high_water() const { return live_.empty() ? 0 : live_.rbegin()->first + live_.rbegin()->second; }
  uint64_t in_use() const {
    uint64_t sum = 0;
    for (auto& [o, n] : live_) sum += n;
    return sum;
  }
  const std::map<uint64_t, uint64_t>& live() const { return live_; }

 private:
  void mark(uint64_t offset, uint64_t num_bytes, bool value) {
    for (uint64_t i = 0; i < num_bytes; ++i) {
      // An overlap would show here: allocating taken bytes or freeing free ones.
      ASSERT_NE(used_[offset + i], value) << "byte " << offset + i;
      used_[offset + i] = value;
    }
  }
  std::vector<bool> used_;
  std::map<uint64_t, uint64_t> live_;
};

TEST(allocator, randomized_against_model) {
  constexpr uint64_t kCapacity = 1 << 14;
  constexpr int kOps = 30000;
  std::mt19937_64 rng(12345);
  symmetric_allocator a(kCapacity), twin(kCapacity);
  model m(kCapacity);
  int num_allocated = 0, num_failed = 0, num_freed = 0, num_resized = 0;

  auto random_size = [&] {
    switch (rng() % 8) {
      case 0:
        return 1 + rng() % 4;
      case 1:
        return 1 + rng() % 2048;  // large: drives the heap to exhaustion now and then
      default:
        return 1 + rng() % 200;
    }
  };
  auto pick_live = [&]() -> uint64_t {
    auto it = m.live().begin();
    std::advance(it, static_cast<long>(rng() % m.live().size()));
    return it->first;
  };

  for (int op = 0; op < kOps; ++op) {
    const unsigned kind = rng() % 100;
    if (kind < 45 || m.live().empty()) {
      uint64_t n = random_size();
      uint64_t align = uint64_t{1} << (rng() % 8);
      auto got = a.allocate(n, align);
      ASSERT_EQ(got, twin.allocate(n, align)) << "op " << op << ": same sequence, different offset";
      ASSERT_EQ(got, m.allocate(n, align)) << "op " << op << ": allocate(" << n << ", " << align << ")";
      if (got) {
        ASSERT_EQ(*got % align, 0u);
        ++num_allocated;
      } else {
        ++num_failed;
      }
    } else if (kind < 80) {
      uint64_t off = pick_live();
      ASSERT_EQ(a.free(off), m.free(off)) << "op " << op;
      ASSERT_TRUE(twin.free(off));
      ++num_freed;
    } else if (kind < 88) {
      // Bad frees: interior, double, or random offsets. Must change nothing.
      uint64_t off = rng() % 3 == 0 ? pick_live() + 1 : rng() % (kCapacity + 64);
      ASSERT_EQ(a.free(off), m.free(off)) << "op " << op << ": free(" << off << ")";
      twin.free(off);
    } else if (kind < 96) {
      uint64_t off = rng() % 8 == 0 ? rng() % kCapacity : pick_live();
      uint64_t n = rng() % 2 ? random_size() : m.live().count(off) ? m.live().at(off) + rng() % 64 : 5;
      auto got = a.resize_in_place(off, n);
      ASSERT_EQ(got, m.resize(off, n)) << "op " << op << ": resize(" << off << ", " << n << ")";
      ASSERT_EQ(got, twin.resize_in_place(off, n));
      if (got) ++num_resized;
    } else {
      uint64_t off = rng() % (kCapacity + 16);
      auto want = m.find(off);
      auto got = a.find(off);
      ASSERT_EQ(got.has_value(), want.has_value()) << "op " << op << ": find(" << off << ")";
      if (got) {
        ASSERT_EQ(got->offset, want->offset);
        ASSERT_EQ(got->num_bytes, want->num_bytes);
      }
    }
    ASSERT_EQ(a.high_water(), m.high_water()) << "op " << op;
    ASSERT_EQ(a.bytes_in_use(), m.in_use()) << "op " << op;
    ASSERT_EQ(a.num_allocations(), m.live().size()) << "op " << op;
  }
  // The mix must really have exercised every path.
  EXPECT_GT(num_allocated, 5000);
  EXPECT_GT(num_failed, 100);
  EXPECT_GT(num_freed, 5000);
  EXPECT_GT(num_resized, 500);

  // Free everything: one hole again.
  while (!m.live().empty()) {
    uint64_t off = m.live().begin()->first;
    ASSERT_EQ(a.free(off), m.free(off));
  }
  EXPECT_EQ(a.allocate(kCapacity, 1), 0u);
}

}  // namespace
}  // namespace shoal::detail
