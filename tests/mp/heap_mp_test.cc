// The symmetric heap and setup queries on N PEs, data checked: malloc, calloc (zeroed even over
// reused dirty memory), align (alignment honoured), realloc (contents kept; grows across many heap
// chunks to 100 MiB; registered with a small SHOAL_HEAP_CHUNK), free and reuse; shoal_ptr on the
// host backend; pe_accessible/addr_accessible; info_get_version/_get_name; the backend name. Also
// run with every peer on the proxy (SHOAL_DISABLE_P2P=1): every heap growth then re-registers the
// heap with UCX on every PE, and proxy peers have no shoal_ptr address (checked as such).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }
bool env_is_1(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}
// Under SHOAL_DISABLE_P2P=1 every peer but this PE is reached through the proxy: no mapped address.
// Under two_nodes.sh (MP_TWO_NODES=1) only the PEs of this PE's parity share its node.
bool proxy_mode() { return env_is_1("SHOAL_DISABLE_P2P"); }
bool mapped(int pe) {
  if (pe == me()) return true;
  return !proxy_mode() && (!env_is_1("MP_TWO_NODES") || pe % 2 == me() % 2);
}

// Fills `bytes` of a block with a pattern of (pe, salt) and sends it to the right PE's copy.
void ring_fill(unsigned char* block, size_t bytes, int salt) {
  std::vector<unsigned char> src(bytes);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(me() * 31 + salt + i);
  shoal_putmem(block, src.data(), bytes, right());
}
size_t ring_mismatches(const unsigned char* block, size_t bytes, int salt) {
  size_t bad = 0;
  for (size_t i = 0; i < bytes; ++i) bad += block[i] != static_cast<unsigned char>(left() * 31 + salt + i);
  return bad;
}

TEST(Heap, MallocIsAlignedSymmetricAndUsable) {
  const size_t sizes[] = {1, 15, 16, 17, 100, 4096, 65537};
  std::vector<unsigned char*> blocks;
  for (size_t s : sizes) {
    auto* p = static_cast<unsigned char*>(shoal_malloc(s));
    ASSERT_NE(p, nullptr) << s;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << "shoal_malloc(" << s << ") is not 16-byte aligned";
    blocks.push_back(p);
  }
  for (size_t i = 0; i < blocks.size(); ++i)
    for (size_t j = i + 1; j < blocks.size(); ++j)
      EXPECT_TRUE(blocks[i] + sizes[i] <= blocks[j] || blocks[j] + sizes[j] <= blocks[i])
          << "blocks " << i << " and " << j << " overlap";
  shoal_barrier_all();
  for (size_t i = 0; i < blocks.size(); ++i) ring_fill(blocks[i], sizes[i], int(i));
  shoal_barrier_all();
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(ring_mismatches(blocks[i], sizes[i], int(i)), 0u) << sizes[i];
  shoal_barrier_all();
  for (auto* p : blocks) shoal_free(p);
}

TEST(Heap, MallocOfZeroBytesIsNull) {
  EXPECT_EQ(shoal_malloc(0), nullptr);
  EXPECT_EQ(shoal_calloc(0, 8), nullptr);
  EXPECT_EQ(shoal_calloc(8, 0), nullptr);
  shoal_free(nullptr);  // no-op, still collective
  EXPECT_EQ(shoal_last_error(nullptr), SHOAL_OK);
}

TEST(Heap, CallocIsZeroedAlsoOverReusedDirtyMemory) {
  constexpr size_t kBytes = 3 * 4096 + 5;
  auto* dirty = static_cast<unsigned char*>(shoal_malloc(kBytes));
  ASSERT_NE(dirty, nullptr);
  std::memset(dirty, 0xFF, kBytes);
  shoal_barrier_all();
  shoal_free(dirty);
  auto* clean = static_cast<unsigned char*>(shoal_calloc(kBytes, 1));
  ASSERT_NE(clean, nullptr);
  EXPECT_EQ(clean, dirty) << "first fit should reuse the freed block (so this test sees dirty memory)";
  size_t nonzero = 0;
  for (size_t i = 0; i < kBytes; ++i) nonzero += clean[i] != 0;
  EXPECT_EQ(nonzero, 0u) << "calloc left dirty bytes";
  std::vector<unsigned char> remote(kBytes, 0xAA);
  shoal_getmem(remote.data(), clean, kBytes, right());
  nonzero = 0;
  for (size_t i = 0; i < kBytes; ++i) nonzero += remote[i] != 0;
  EXPECT_EQ(nonzero, 0u) << "the right PE's copy is not zeroed";
  // calloc(count, size) is count*size bytes
  auto* arr = static_cast<uint32_t*>(shoal_calloc(1000, sizeof(uint32_t)));
  ASSERT_NE(arr, nullptr);
  shoal_barrier_all();
  shoal_uint32_p(&arr[999], 0xC0FFEE, right());
  shoal_barrier_all();
  EXPECT_EQ(arr[999], 0xC0FFEEu);
  EXPECT_EQ(arr[998], 0u);
  shoal_barrier_all();
  shoal_free(arr);
  shoal_free(clean);
}

TEST(Heap, AlignHonoursTheAlignment) {
  // Past 2 MiB too (OpenSHMEM's shmem_align takes any power of two): host heap bases are 1 GiB aligned.
  const size_t alignments[] = {
      1, 2, 8, 16, 32, 64, 256, 4096, 65536, size_t(1) << 21, size_t(1) << 22, size_t(1) << 26};
  auto* spacer = shoal_malloc(24);  // make the natural next offset unaligned
  for (size_t a : alignments) {
    auto* p = static_cast<unsigned char*>(shoal_align(a, 40));
    ASSERT_NE(p, nullptr) << "alignment " << a;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % a, 0u) << "shoal_align(" << a << ") returned " << (void*)p;
    ring_fill(p, 40, int(a % 251));
    shoal_barrier_all();
    EXPECT_EQ(ring_mismatches(p, 40, int(a % 251)), 0u) << "alignment " << a;
    // the right PE's copy is aligned too (shoal_ptr gives its address in this process; a proxy peer has none)
    auto* peer = shoal_ptr(p, right());
    if (mapped(right())) {
      ASSERT_NE(peer, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(peer) % a, 0u) << "peer copy of alignment " << a;
    } else {
      EXPECT_EQ(peer, nullptr) << "shoal_ptr to a proxy peer";
    }
    shoal_barrier_all();
    shoal_free(p);
  }
  shoal_free(spacer);
}

TEST(Heap, ReallocKeepsContentsWhenGrowingMovingAndShrinking) {
  auto* p = static_cast<unsigned char*>(shoal_malloc(100));
  auto* blocker = shoal_malloc(16);  // right after p: growing p must move it
  ring_fill(p, 100, 1);
  shoal_barrier_all();
  auto* q = static_cast<unsigned char*>(shoal_realloc(p, 5000));
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p) << "expected a move (a block follows p)";
  EXPECT_EQ(ring_mismatches(q, 100, 1), 0u) << "realloc (move) lost contents";
  shoal_barrier_all();  // everyone has checked before the left PE writes again
  ring_fill(q, 5000, 2);
  shoal_barrier_all();
  EXPECT_EQ(ring_mismatches(q, 5000, 2), 0u);
  shoal_barrier_all();
  auto* r = static_cast<unsigned char*>(shoal_realloc(q, 10));  // shrink: prefix kept
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(ring_mismatches(r, 10, 2), 0u) << "realloc (shrink) lost contents";
  shoal_barrier_all();
  // realloc(NULL, n) acts as malloc; realloc(p, 0) frees and returns NULL
  auto* fresh = static_cast<unsigned char*>(shoal_realloc(nullptr, 64));
  ASSERT_NE(fresh, nullptr);
  ring_fill(fresh, 64, 3);
  shoal_barrier_all();
  EXPECT_EQ(ring_mismatches(fresh, 64, 3), 0u);
  shoal_barrier_all();
  EXPECT_EQ(shoal_realloc(fresh, 0), nullptr);
  EXPECT_EQ(shoal_last_error(nullptr), SHOAL_OK);
  shoal_free(r);
  shoal_free(blocker);
}

TEST(Heap, ReallocGrowsAcrossManyChunksTo100MiB) {
  // Registered with SHOAL_HEAP_CHUNK=2M: growing to 100 MiB maps ~50 new chunks on every PE.
  constexpr size_t kSmall = 1 << 20;
  constexpr size_t kBig = 100u << 20;
  auto* p = static_cast<unsigned char*>(shoal_malloc(kSmall));
  ASSERT_NE(p, nullptr);
  auto* blocker = shoal_malloc(16);
  ring_fill(p, kSmall, 7);
  shoal_barrier_all();
  auto* big = static_cast<unsigned char*>(shoal_realloc(p, kBig));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(ring_mismatches(big, kSmall, 7), 0u) << "realloc to 100 MiB lost the first MiB";
  // Write one word in every MiB of the right PE's copy (and the last byte), then read them back.
  shoal_barrier_all();
  for (size_t off = 0; off + 8 <= kBig; off += 1 << 20) {
    uint64_t v = (uint64_t(me()) << 32) | off;
    shoal_putmem(big + off, &v, 8, right());
  }
  shoal_uint8_p(big + kBig - 1, static_cast<uint8_t>(0x80 + me()), right());
  shoal_barrier_all();
  size_t bad = 0;
  for (size_t off = 0; off + 8 <= kBig; off += 1 << 20) {
    uint64_t v;
    std::memcpy(&v, big + off, 8);
    bad += v != ((uint64_t(left()) << 32) | off);
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(big[kBig - 1], static_cast<unsigned char>(0x80 + left()));
  EXPECT_EQ(shoal_uint8_g(big + kBig - 1, right()), static_cast<uint8_t>(0x80 + me()));
  shoal_barrier_all();
  shoal_free(big);
  shoal_free(blocker);
}

TEST(Heap, FreeAndReuseKeepsLiveBlocksIntact) {
  constexpr int kBlocks = 60;
  std::vector<unsigned char*> blocks(kBlocks);
  std::vector<size_t> sizes(kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    sizes[i] = 16 + (i * 977) % 3000;
    blocks[i] = static_cast<unsigned char*>(shoal_malloc(sizes[i]));
    ASSERT_NE(blocks[i], nullptr);
  }
  for (int i = 0; i < kBlocks; ++i) ring_fill(blocks[i], sizes[i], i);
  shoal_barrier_all();
  for (int i = 0; i < kBlocks; i += 3) shoal_free(blocks[i]);  // holes
  std::vector<unsigned char*> again;
  for (int i = 0; i < kBlocks; i += 3) {
    auto* p = static_cast<unsigned char*>(shoal_malloc(sizes[i] / 2 + 1));  // fits in the holes
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5C, sizes[i] / 2 + 1);  // local scribble must stay inside the new block
    again.push_back(p);
  }
  shoal_barrier_all();
  for (int i = 0; i < kBlocks; ++i) {
    if (i % 3) {
      EXPECT_EQ(ring_mismatches(blocks[i], sizes[i], i), 0u) << "live block " << i << " was disturbed";
    }
  }
  shoal_barrier_all();
  for (auto* p : again) shoal_free(p);
  for (int i = 0; i < kBlocks; ++i)
    if (i % 3) shoal_free(blocks[i]);
}

TEST(Heap, PtrGivesUsableAddressesForEveryPe) {
  const int n = npes();
  auto* buf = static_cast<int*>(shoal_calloc(n, sizeof(int)));
  EXPECT_EQ(shoal_ptr(buf, me()), buf) << "shoal_ptr to myself is the address itself";
  if (!mapped(right())) {
    // Load/store-only: proxy peers' copies have no address in this process.
    for (int pe = 0; pe < n; ++pe) {
      if (mapped(pe)) continue;
      EXPECT_EQ(shoal_ptr(buf, pe), nullptr) << "shoal_ptr to proxy peer " << pe;
    }
    shoal_barrier_all();
    shoal_free(buf);
    GTEST_SKIP() << "stores through shoal_ptr need every peer mapped; some are proxy peers here";
  }
  for (int pe = 0; pe < n; ++pe) {
    auto* peer = static_cast<int*>(shoal_ptr(buf, pe));
    ASSERT_NE(peer, nullptr) << "host backend: every PE's copy is mapped here (pe " << pe << ")";
    peer[me()] = 1000 * pe + me();  // a plain store into PE pe's copy
  }
  int stack_var = 0;
  EXPECT_EQ(shoal_ptr(&stack_var, right()), nullptr) << "not symmetric";
  EXPECT_EQ(shoal_ptr(buf, n), nullptr);
  EXPECT_EQ(shoal_ptr(buf, -1), nullptr);
  EXPECT_EQ(shoal_ptr(nullptr, 0), nullptr);
  shoal_barrier_all();
  for (int from = 0; from < n; ++from) EXPECT_EQ(buf[from], 1000 * me() + from) << "store from PE " << from;
  // interior pointers map too
  auto* interior = static_cast<int*>(shoal_ptr(buf + n - 1, right()));
  ASSERT_NE(interior, nullptr);
  EXPECT_EQ(*interior, 1000 * right() + n - 1);
  shoal_barrier_all();
  shoal_free(buf);
  // A freed block is no longer symmetric memory: no address for it, and not accessible.
  EXPECT_EQ(shoal_ptr(buf, right()), nullptr) << "shoal_ptr of a freed block";
  EXPECT_EQ(shoal_addr_accessible(buf, right()), 0) << "addr_accessible of a freed block";
}

TEST(Heap, PeAndAddrAccessible) {
  const int n = npes();
  auto* buf = shoal_malloc(64);
  int stack_var = 0;
  auto* heap_var = new int(0);
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(shoal_pe_accessible(pe), 1) << pe;
    // addr_accessible: reachable by RMA (OpenSHMEM's meaning), so 1 for proxy peers too; shoal_ptr is the
    // mapped-address query (null for them).
    EXPECT_EQ(shoal_addr_accessible(buf, pe), 1) << pe;
    EXPECT_EQ(shoal_addr_accessible(static_cast<char*>(buf) + 63, pe), 1) << pe;
    EXPECT_EQ(shoal_addr_accessible(&stack_var, pe), 0) << pe;
    EXPECT_EQ(shoal_addr_accessible(heap_var, pe), 0) << pe;
  }
  EXPECT_EQ(shoal_pe_accessible(-1), 0);
  EXPECT_EQ(shoal_pe_accessible(n), 0);
  EXPECT_EQ(shoal_addr_accessible(buf, n), 0);
  delete heap_var;
  shoal_barrier_all();
  shoal_free(buf);
}

TEST(Info, VersionNameAndBackend) {
  int major = -1, minor = -1;
  shoal_info_get_version(&major, &minor);
  EXPECT_EQ(major, SHOAL_MAJOR_VERSION);
  EXPECT_EQ(minor, SHOAL_MINOR_VERSION);
  EXPECT_EQ(major, 1);
  EXPECT_EQ(minor, 5);
  char name[SHOAL_MAX_NAME_LEN];
  std::memset(name, 'x', sizeof(name));
  shoal_info_get_name(name);
  ASSERT_NE(std::memchr(name, '\0', sizeof(name)), nullptr) << "name is not terminated within SHOAL_MAX_NAME_LEN";
  EXPECT_STREQ(name, SHOAL_VENDOR_STRING);  // OpenSHMEM: the name is the vendor string
  EXPECT_STREQ(shoalx_backend_name(), "host");
  EXPECT_GE(shoal_my_pe(), 0);
  EXPECT_LT(shoal_my_pe(), shoal_n_pes());
}

TEST(Info, EveryPeHasADistinctRank) {
  const int n = npes();
  auto* seen = static_cast<int*>(shoal_calloc(n, sizeof(int)));
  shoal_barrier_all();
  shoal_int_atomic_inc(&seen[me()], 0);
  shoal_barrier_all();
  if (me() == 0) {
    for (int pe = 0; pe < n; ++pe) EXPECT_EQ(seen[pe], 1) << "rank " << pe;
  }
  shoal_barrier_all();
  shoal_free(seen);
}

}  // namespace
