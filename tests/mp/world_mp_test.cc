// Two worlds in one process (C++ API, include/shoal/world.hpp): the default world from shoal_init
// and a second shoal::world made from a unique id that PE 0 shares through the default world's
// symmetric memory. Each world has its own heap; data put through each lands; finalizing one
// leaves the other usable; a world of a different size (the even PEs only) works alongside.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shoal/shoal.h"
#include "shoal/world.hpp"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
int right() { return (me() + 1) % npes(); }
// Under SHOAL_DISABLE_P2P=1 every other PE is a proxy peer (no mapped address).
bool proxy_mode() {
  const char* v = std::getenv("SHOAL_DISABLE_P2P");
  return v != nullptr && std::string(v) == "1";
}
int left() { return (me() + npes() - 1) % npes(); }

// PE 0 of the default world makes a unique id; every PE gets its text through the default world.
// Collective over the default world.
std::string share_unique_id() {
  constexpr size_t kMax = 256;
  auto* text = static_cast<char*>(shoal_calloc(kMax, 1));
  if (me() == 0) {
    std::string id = shoal::make_unique_id();
    EXPECT_LT(id.size(), kMax);
    for (int pe = 0; pe < npes(); ++pe) shoal_putmem(text, id.c_str(), id.size() + 1, pe);
  }
  shoal_barrier_all();
  std::string id(text, strnlen(text, kMax));
  shoal_barrier_all();
  shoal_free(text);
  return id;
}

shoal::init_options options_for(int rank, int size, const std::string& id) {
  shoal::init_options o;
  o.rank = rank;
  o.size = size;
  o.unique_id = id;
  o.backend = "host";
  o.heap_reserve_bytes = uint64_t(1) << 30;
  return o;
}

TEST(World, UniqueIdIsShared) {
  std::string id = share_unique_id();
  EXPECT_EQ(id.rfind("shoal-uid-v1:", 0), 0u) << id;
  // every PE got the same text: compare a hash through an atomic
  uint64_t h = std::hash<std::string>{}(id) | 1;
  auto* word = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  uint64_t first = shoal_uint64_atomic_compare_swap(word, 0, h, 0);  // the first PE installs its hash
  EXPECT_TRUE(first == 0 || first == h) << "PEs got different ids";
  shoal_barrier_all();
  EXPECT_EQ(shoal_uint64_g(word, 0), h);
  shoal_barrier_all();
  shoal_free(word);
  // the listener made for this id is never joined; that must not hurt the next tests
}

TEST(World, SecondWorldHasItsOwnHeapAndWorks) {
  std::string id = share_unique_id();
  shoal::world w(options_for(me(), npes(), id));
  EXPECT_EQ(w.my_pe(), me());
  EXPECT_EQ(w.n_pes(), npes());
  EXPECT_STREQ(w.backend_name(), "host");
  EXPECT_EQ(w.path_to(me()), shoal::peer_path::self);
  const auto peer = proxy_mode() ? shoal::peer_path::proxy : shoal::peer_path::shared_memory;
  EXPECT_EQ(w.path_to(right()), npes() == 1 ? shoal::peer_path::self : peer);

  constexpr size_t kBytes = 4096;
  auto* a = static_cast<unsigned char*>(shoal_malloc(kBytes));  // default world
  auto* b = static_cast<unsigned char*>(w.malloc(kBytes));      // world w
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(shoal_addr_accessible(b, right()), 0) << "w's block is not in the default world's heap";
  EXPECT_FALSE(w.addr_accessible(a, right())) << "the default world's block is not in w's heap";
  EXPECT_TRUE(w.addr_accessible(b, right())) << "every reachable peer, proxy peers too";
  std::memset(a, 0, kBytes);
  std::memset(b, 0, kBytes);
  shoal_barrier_all();
  w.barrier_all();

  // data through each world lands in that world's block only: a goes right, b goes left
  std::vector<unsigned char> sa(kBytes, static_cast<unsigned char>(0x10 + me()));
  std::vector<unsigned char> sb(kBytes, static_cast<unsigned char>(0x80 + me()));
  shoal_putmem(a, sa.data(), kBytes, right());
  w.put(b, sb.data(), kBytes, left());
  shoal_barrier_all();
  w.barrier_all();
  size_t bad_a = 0, bad_b = 0;
  for (size_t i = 0; i < kBytes; ++i) {
    bad_a += a[i] != static_cast<unsigned char>(0x10 + left());
    bad_b += b[i] != static_cast<unsigned char>(0x80 + right());
  }
  EXPECT_EQ(bad_a, 0u);
  EXPECT_EQ(bad_b, 0u);
  std::vector<unsigned char> got(kBytes);
  w.get(got.data(), b, kBytes, left());  // left's b holds my bytes
  EXPECT_EQ(got, sb);
  uint64_t want_word;  // the right PE's b was written by its own right neighbour
  std::memset(&want_word, 0x80 + (right() + 1) % npes(), sizeof(want_word));
  EXPECT_EQ(w.g(reinterpret_cast<uint64_t*>(b), right()), want_word) << "typed g through w";

  // signals and waits inside w
  auto* sig = static_cast<uint64_t*>(w.calloc(1, sizeof(uint64_t)));
  ASSERT_NE(sig, nullptr);
  EXPECT_EQ(*sig, 0u);
  w.barrier_all();
  w.put_signal(b, sb.data(), 64, sig, 5, SHOAL_SIGNAL_SET, right());
  uint64_t seen = w.signal_wait_until(sig, SHOAL_CMP_GE, 5);  // the left PE may have added 2 already
  EXPECT_TRUE(seen == 5 || seen == 7) << seen;
  seen = w.signal_fetch(sig);
  EXPECT_TRUE(seen == 5 || seen == 7) << seen;
  w.signal_op(sig, 2, SHOAL_SIGNAL_ADD, right());
  EXPECT_EQ(w.signal_wait_until(sig, SHOAL_CMP_EQ, 7), 7u);
  w.barrier_all();

  // a world-A (default) pointer through world B fails with invalid_argument naming the argument
  try {
    w.put(a, sa.data(), 8, right());
    ADD_FAILURE() << "putting to a default-world block through w did not fail";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), shoal::errc::invalid_argument) << e.what();
    EXPECT_EQ(e.call(), "shoal::world::put");
    EXPECT_NE(std::string(e.what()).find("dest="), std::string::npos) << e.what();
  }
  // and the other way: a w pointer through the C facade (default world)
  int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_clear_error();
  shoal_putmem(b, sa.data(), 8, right());
  const char* msg = nullptr;
  EXPECT_EQ(shoal_last_error(&msg), SHOAL_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(msg ? msg : "").find("shoal_putmem"), std::string::npos) << msg;
  shoal_clear_error();
  shoal_set_error_mode(old_mode);
  shoal_barrier_all();
  w.barrier_all();
  // neither failed put changed anything
  bad_a = bad_b = 0;
  for (size_t i = 0; i < kBytes; ++i) {
    bad_a += a[i] != static_cast<unsigned char>(0x10 + left());
    bad_b += i >= 64 && b[i] != static_cast<unsigned char>(0x80 + right());
  }
  EXPECT_EQ(bad_a, 0u);
  EXPECT_EQ(bad_b, 0u);

  // allocations in one world do not shift the other's offsets: both heaps allocate independently
  auto* a2 = static_cast<unsigned char*>(shoal_malloc(100));
  auto* b2 = static_cast<unsigned char*>(w.malloc(100));
  auto* b3 = static_cast<unsigned char*>(w.malloc(100));
  shoal_putmem(a2, sa.data(), 100, right());
  w.put(b3, sb.data(), 100, right());
  w.put(b2, sa.data(), 100, right());
  shoal_barrier_all();
  w.barrier_all();
  EXPECT_EQ(a2[99], static_cast<unsigned char>(0x10 + left()));
  EXPECT_EQ(b2[99], static_cast<unsigned char>(0x10 + left()));
  EXPECT_EQ(b3[99], static_cast<unsigned char>(0x80 + left()));
  w.free(b3);
  w.free(b2);
  shoal_free(a2);

  // finalize w; it refuses further use; the default world keeps working
  w.free(sig);
  w.free(b);
  w.finalize();
  try {
    w.barrier_all();
    ADD_FAILURE() << "barrier on a finalized world did not fail";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), shoal::errc::not_initialized) << e.what();
  }
  try {
    w.put(b, sb.data(), 8, right());
    ADD_FAILURE() << "put on a finalized world did not fail";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), shoal::errc::not_initialized) << e.what();
    EXPECT_NE(std::string(e.what()).find("shoal::world::put"), std::string::npos) << e.what();
  }
  shoal_int_p(reinterpret_cast<int*>(a), 4242 + me(), right());
  shoal_barrier_all();
  EXPECT_EQ(*reinterpret_cast<int*>(a), 4242 + left());
  shoal_barrier_all();
  shoal_free(a);
}

TEST(World, SubWorldOfTheEvenPes) {
  std::string id = share_unique_id();
  const int sub_size = (npes() + 1) / 2;
  if (me() % 2 == 0) {
    const int rank = me() / 2;
    shoal::world w(options_for(rank, sub_size, id));
    EXPECT_EQ(w.my_pe(), rank);
    EXPECT_EQ(w.n_pes(), sub_size);
    auto* ring = static_cast<int*>(w.calloc(sub_size, sizeof(int)));
    ASSERT_NE(ring, nullptr);
    w.barrier_all();
    for (int pe = 0; pe < sub_size; ++pe) w.p(&ring[rank], 100 + me(), pe);  // default-world rank as data
    w.barrier_all();
    for (int r = 0; r < sub_size; ++r) EXPECT_EQ(ring[r], 100 + 2 * r) << "slot of sub-rank " << r;
    for (int r = 0; r < sub_size; ++r) EXPECT_EQ(w.g(&ring[r], (rank + 1) % sub_size), 100 + 2 * r);
    // PE numbers are the sub-world's: sub_size is out of range there
    try {
      w.p(&ring[0], 1, sub_size);
      ADD_FAILURE() << "pe=" << sub_size << " accepted in a world of " << sub_size;
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), shoal::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("pe=" + std::to_string(sub_size)), std::string::npos) << e.what();
    }
    w.barrier_all();
    w.free(ring);
    // w is finalized by its destructor (collective over the even PEs)
  }
  // the default world, all PEs, still works afterwards
  auto* x = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  shoal_int_atomic_add(x, me() + 1, 0);
  shoal_barrier_all();
  EXPECT_EQ(shoal_int_g(x, 0), npes() * (npes() + 1) / 2);
  shoal_barrier_all();
  shoal_free(x);
}

TEST(World, HeapGrowsInChunksAndReportsItsSize) {
  // Registered with SHOAL_HEAP_CHUNK=2M: the heap is backed in 2 MiB steps, as far as it is used.
  shoal::world w(options_for(me(), npes(), share_unique_id()));
  EXPECT_EQ(w.heap_reserve_bytes(), uint64_t(1) << 30);
  const uint64_t mapped_before = w.heap_mapped_bytes();
  EXPECT_LE(mapped_before, uint64_t(4) << 20) << "an empty heap should not be backed far beyond one chunk";
  auto* p = static_cast<unsigned char*>(w.malloc(1 << 20));
  ASSERT_NE(p, nullptr);
  for (size_t i = 0; i < (1u << 20); i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
  w.barrier_all();
  auto* big = static_cast<unsigned char*>(w.realloc(p, 100u << 20));
  ASSERT_NE(big, nullptr);
  EXPECT_GE(w.heap_mapped_bytes(), uint64_t(100) << 20);
  EXPECT_EQ(w.heap_mapped_bytes() % (uint64_t(2) << 20), 0u) << "backed in whole chunks";
  EXPECT_GE(w.heap_in_use_bytes(), uint64_t(100) << 20);
  size_t bad = 0;
  for (size_t i = 0; i < (1u << 20); i += 4096) bad += big[i] != static_cast<unsigned char>(i >> 12);
  EXPECT_EQ(bad, 0u) << "realloc lost contents";
  w.barrier_all();
  w.p(big + (100u << 20) - 1, static_cast<unsigned char>(me()), right());  // the very last byte, remotely
  w.barrier_all();
  EXPECT_EQ(big[(100u << 20) - 1], static_cast<unsigned char>(left()));
  w.barrier_all();
  w.free(big);
  EXPECT_LT(w.heap_in_use_bytes(), uint64_t(1) << 20);
  w.finalize();
}

TEST(World, TwoExtraWorldsAtOnceStayApart) {
  std::string id1 = share_unique_id();
  std::string id2 = share_unique_id();
  EXPECT_NE(id1, id2);
  // Join them in opposite orders would deadlock (each constructor is collective), so the same order.
  shoal::world w1(options_for(me(), npes(), id1));
  shoal::world w2(options_for(me(), npes(), id2));
  auto* x1 = static_cast<int*>(w1.calloc(1, sizeof(int)));
  auto* x2 = static_cast<int*>(w2.calloc(1, sizeof(int)));
  w1.barrier_all();
  w2.barrier_all();
  w1.p(x1, 1000 + me(), right());
  w2.p(x2, 2000 + me(), left());
  w1.barrier_all();
  w2.barrier_all();
  EXPECT_EQ(*x1, 1000 + left());
  EXPECT_EQ(*x2, 2000 + right());
  // finalize in the other order than created
  w2.free(x2);
  w2.finalize();
  w1.p(x1, 3000 + me(), right());
  w1.barrier_all();
  EXPECT_EQ(*x1, 3000 + left());
  w1.free(x1);
  w1.finalize();
  shoal_barrier_all();
}

}  // namespace
