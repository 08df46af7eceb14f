// Global and static variables as symmetric data objects on N host PEs: initialized (.data) and
// zero (.bss) globals, statics, arrays, a struct and a multi-page array, through put/get/p/g/_nbi,
// iput/iget, a fetch_add storm, compare_swap, put_signal and wait_until/test on globals, shoal_ptr
// and shoal_addr_accessible; a second world reaching the same globals; a forked child that must not
// share its parent's globals; the blocking team collectives on globals (world and a sub-team, in
// place, globals mixed with heap memory); and bad input (a stack address, a range past the data
// segment, a global too small for a collective) failing clearly. Under SHOAL_SYMMETRIC_DATA=0 every access to a global
// must fail saying why; under SHOAL_DISABLE_P2P=1 (every peer a proxy peer) and in mixed jobs remote
// globals travel through the proxy's UCX engine (registered data segments), where shoal_ptr has no
// address to give but shoal_addr_accessible says 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "shoal/shoal.h"
#include "shoal/team.h"
#include "shoal/world.hpp"

// The symmetric data objects under test. Non-static ones have external linkage on purpose.
long g_initialized = 42;  // .data
uint64_t g_signal;        // .bss
struct record {
  int id;
  double value;
  char name[16];
};
record g_record = {7, 1.5, "initial"};  // .data, a struct
namespace {
int s_ints[64];                // .bss array
long s_counter;                // .bss: the fetch_add storm
long s_owner;                  // .bss: the compare_swap election
long s_flag;                   // .bss: wait_until/test
long s_payload[32] = {1, 2};   // .data array
double s_matrix[8][8];         // .bss: strided column transfers
uint64_t s_big[3 * 4096 + 5];  // .bss over several pages
}  // namespace

// The linker's end of .bss (GNU ld, gold, lld): the data segment ends at the page holding it.
extern "C" char _end;

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}
bool disabled() { return env_is("SHOAL_SYMMETRIC_DATA", "0"); }
// Whether `pe`'s memory is mapped here (load/store), found through the heap: shoal_ptr of a heap block
// is null for a proxy peer (another node, SHOAL_DISABLE_P2P=1). Collective on first use (the first
// test calls it on every PE).
bool mapped(int pe) {
  static const std::vector<bool> by_pe = [] {
    void* probe = shoal_malloc(64);
    std::vector<bool> out(static_cast<size_t>(npes()));
    for (int p = 0; p < npes(); ++p) out[static_cast<size_t>(p)] = shoal_ptr(probe, p) != nullptr;
    shoal_free(probe);
    return out;
  }();
  return by_pe[static_cast<size_t>(pe)];
}
// Whether globals of `pe` can be reached from this PE in this run (load/store or the proxy), and
// whether they are mapped here (shoal_ptr gives an address).
bool reaches(int) { return !disabled(); }
bool maps_globals(int pe) { return !disabled() && mapped(pe); }

void expect_ok(const char* what) {
  const char* msg = nullptr;
  EXPECT_EQ(shoal_last_error(&msg), SHOAL_OK) << what << ": " << (msg != nullptr ? msg : "");
  shoal_clear_error();
}

// Runs each test in SHOAL_ERRORS_RETURN mode: an access that cannot be made is checked, not fatal.
class SymmetricData : public ::testing::Test {
 protected:
  void SetUp() override {
    old_mode_ = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
    shoal_clear_error();
    shoal_barrier_all();
  }
  void TearDown() override {
    shoal_barrier_all();
    shoal_set_error_mode(old_mode_);
  }
  // After a remote access to `pe`: no error when it can be reached, else the reason.
  void expect_outcome(int pe, const char* what) {
    if (reaches(pe)) {
      expect_ok(what);
    } else {
      shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT,
                             {"global/static variable", "not symmetric", "SHOAL_SYMMETRIC_DATA=0"});
    }
  }
  int old_mode_ = SHOAL_ERRORS_ABORT;
};

TEST_F(SymmetricData, InitialValuesSurviveInit) {
  EXPECT_TRUE(mapped(me()));  // the first call is collective
  // shoal_init moved the data segment onto shared memory: values and addresses are unchanged.
  EXPECT_EQ(g_initialized, 42);
  EXPECT_EQ(g_record.id, 7);
  EXPECT_EQ(g_record.value, 1.5);
  EXPECT_STREQ(g_record.name, "initial");
  EXPECT_EQ(s_payload[0], 1);
  EXPECT_EQ(s_payload[1], 2);
  for (int v : s_ints) {
    EXPECT_EQ(v, 0);
  }
  EXPECT_EQ(s_big[3 * 4096 + 4], 0u);
}

TEST_F(SymmetricData, PointersAndAccessibility) {
  for (int pe = 0; pe < npes(); ++pe) {
    SCOPED_TRACE(pe);
    void* p = shoal_ptr(&g_initialized, pe);
    expect_ok("shoal_ptr");
    EXPECT_EQ(shoal_addr_accessible(&g_initialized, pe), reaches(pe) ? 1 : 0);
    if (!maps_globals(pe)) {
      EXPECT_EQ(p, nullptr);
      continue;
    }
    ASSERT_NE(p, nullptr);
    if (pe == me()) {
      EXPECT_EQ(p, &g_initialized);
    }
    EXPECT_EQ(*static_cast<long*>(p), 42);  // every PE's copy, read through its mapping here
    EXPECT_EQ(static_cast<record*>(shoal_ptr(&g_record, pe))->id, 7);
  }
  long on_stack = 0;
  EXPECT_EQ(shoal_ptr(&on_stack, right()), nullptr);
  EXPECT_EQ(shoal_addr_accessible(&on_stack, right()), 0);
  shoal_clear_error();
}

TEST_F(SymmetricData, PutGetPG) {
  long src[32];
  for (int i = 0; i < 32; ++i) src[i] = 1000L * me() + i;
  shoal_long_put(s_payload, src, 32, right());
  expect_outcome(right(), "put");
  record mine = {100 + me(), me() + 0.25, "pe"};
  mine.name[2] = static_cast<char>('0' + me());
  shoal_putmem(&g_record, &mine, sizeof(mine), right());
  expect_outcome(right(), "putmem");
  shoal_int_p(&s_ints[me()], 7 * me() + 1, 0);  // every PE to PE 0
  expect_outcome(0, "p");
  shoal_barrier_all();
  if (reaches(left())) {
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(s_payload[i], 1000L * left() + i) << i;
    }
    EXPECT_EQ(g_record.id, 100 + left());
    EXPECT_EQ(g_record.value, left() + 0.25);
    EXPECT_EQ(g_record.name[2], '0' + left());
  }
  if (me() == 0)
    for (int pe = 0; pe < npes(); ++pe)
      if (reaches(pe)) {
        EXPECT_EQ(s_ints[pe], 7 * pe + 1) << pe;
      }

  // get back what this PE put on the right; g of the right's initialized global
  long got[32] = {};
  shoal_long_get(got, s_payload, 32, right());
  expect_outcome(right(), "get");
  if (reaches(right())) {
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(got[i], src[i]) << i;
    }
  }
  long g = shoal_long_g(&g_initialized, right());
  expect_outcome(right(), "g");
  if (reaches(right())) {
    EXPECT_EQ(g, 42);
  }

  // non-blocking, completed by quiet; not before the right has checked what this PE put above
  shoal_barrier_all();
  long more[4] = {-1, -2, -3, -4 - me()};
  shoal_long_put_nbi(&s_payload[28], more, 4, right());
  expect_outcome(right(), "put_nbi");
  shoal_quiet();
  shoal_barrier_all();
  long back[4] = {};
  shoal_long_get_nbi(back, &s_payload[28], 4, right());
  expect_outcome(right(), "get_nbi");
  shoal_quiet();
  if (reaches(right())) {
    EXPECT_EQ(back[3], -4 - me());
  }
  shoal_barrier_all();
  if (reaches(left())) {
    EXPECT_EQ(s_payload[31], -4 - left());
  }
}

TEST_F(SymmetricData, StridedColumns) {
  // Column me() of the right's matrix gets 8 values; the rest of its matrix must stay untouched.
  for (auto& row : s_matrix)
    for (double& v : row) v = -1;
  shoal_barrier_all();
  double column[8];
  for (int i = 0; i < 8; ++i) column[i] = me() * 10 + i + 0.5;
  const int col = me() % 8;
  shoal_double_iput(&s_matrix[0][col], column, 8, 1, 8, right());
  expect_outcome(right(), "iput");
  shoal_barrier_all();
  if (reaches(left())) {
    const int theirs = left() % 8;
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) EXPECT_EQ(s_matrix[r][c], c == theirs ? left() * 10 + r + 0.5 : -1) << r << "," << c;
  }
  double again[16] = {};
  shoal_double_iget(again, &s_matrix[0][col], 2, 8, 8, right());
  expect_outcome(right(), "iget");
  if (reaches(right())) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(again[2 * i], column[i]) << i;
    }
  }
}

TEST_F(SymmetricData, FetchAddStormAndCompareSwap) {
  constexpr int kRounds = 200;
  s_counter = 0;
  s_owner = 0;
  shoal_barrier_all();
  // Every PE adds 1 to PE 0's counter kRounds times; the values it fetched must increase.
  long last = -1;
  bool increasing = true;
  for (int i = 0; i < kRounds; ++i) {
    long seen = shoal_long_atomic_fetch_add(&s_counter, 1, 0);
    increasing &= seen > last;
    last = seen;
  }
  expect_outcome(0, "fetch_add");
  if (reaches(0)) {
    EXPECT_TRUE(increasing);
  }
  // Election: the first compare_swap from 0 wins; every PE learns the same winner.
  long before = shoal_long_atomic_compare_swap(&s_owner, 0, me() + 1, 0);
  expect_outcome(0, "compare_swap");
  shoal_barrier_all();
  if (reaches(0)) {
    long owner = shoal_long_atomic_fetch(&s_owner, 0);
    EXPECT_TRUE(owner >= 1 && owner <= npes()) << owner;
    EXPECT_EQ(before == 0, owner == me() + 1) << "before " << before << ", owner " << owner;
  }
  shoal_barrier_all();
  if (me() == 0) {
    // The adds of every PE that reaches PE 0 (those PE 0 reaches).
    long expected = 0;
    for (int pe = 0; pe < npes(); ++pe) expected += reaches(pe) ? kRounds : 0;
    EXPECT_EQ(s_counter, expected);
  }
}

TEST_F(SymmetricData, PutSignalAndWaits) {
  g_signal = 0;
  s_flag = 0;
  shoal_barrier_all();
  // Data then signal into globals on the right; the right waits on its own global signal word.
  long data[8];
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 8; ++i) data[i] = round * 100 + me() * 10 + i;
    shoal_long_put_signal(s_payload, data, 8, &g_signal, 1, SHOAL_SIGNAL_ADD, right());
    expect_outcome(right(), "put_signal");
    if (reaches(left())) {
      uint64_t seen = shoal_signal_wait_until(&g_signal, SHOAL_CMP_GE, static_cast<uint64_t>(round));
      expect_ok("signal_wait_until");
      EXPECT_EQ(seen, static_cast<uint64_t>(round));
      EXPECT_EQ(s_payload[7], round * 100 + left() * 10 + 7) << "data before signal, round " << round;
    }
    shoal_barrier_all();  // the next round's data may not overwrite this one before it was checked
  }
  // wait_until / test on a plain global long, set by the left with p.
  EXPECT_EQ(shoal_long_test(&s_flag, SHOAL_CMP_EQ, 5), 0);
  if (disabled())
    shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_long_test", "ivar"});
  else
    expect_ok("test");
  shoal_barrier_all();
  shoal_long_p(&s_flag, 5, right());
  expect_outcome(right(), "p");
  if (reaches(left())) {
    shoal_long_wait_until(&s_flag, SHOAL_CMP_EQ, 5);
    expect_ok("wait_until");
    EXPECT_EQ(shoal_long_test(&s_flag, SHOAL_CMP_EQ, 5), 1);
    EXPECT_EQ(shoal_signal_fetch(&g_signal), 3u);
    expect_ok("signal_fetch");
  }
}

TEST_F(SymmetricData, ManyPagesOfBss) {
  // The words of s_big on both sides of its page boundaries, and its last one.
  std::vector<uint64_t> src(4096 + 2);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (uint64_t(me()) << 32) | i;
  const size_t at = sizeof(s_big) / sizeof(s_big[0]) - src.size();
  shoal_uint64_put(&s_big[at], src.data(), src.size(), right());
  expect_outcome(right(), "put");
  shoal_barrier_all();
  if (reaches(left())) {
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(s_big[at + i], (uint64_t(left()) << 32) | i) << i;
    }
  }
}

TEST_F(SymmetricData, BadInputStillFails) {
  long on_stack[4] = {1, 2, 3, 4};
  long src[4] = {};
  shoal_long_put(on_stack, src, 4, right());
  shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT,
                         {"shoal_long_put", "dest=", "not in the symmetric heap nor a global/static variable"});
  EXPECT_EQ(on_stack[0], 1);
  shoal_long_atomic_add(&on_stack[1], 1, right());
  shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_long_atomic_add", "dest="});
  shoal_long_wait_until(&on_stack[2], SHOAL_CMP_EQ, 3);
  shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_long_wait_until", "ivar"});
  if (!disabled()) {
    // A range that starts in the data segment and runs past its end (two pages after _end).
    std::vector<char> big(2 * 65536);
    void* last_word = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&_end) - 8);
    shoal_putmem(last_word, big.data(), big.size(), me());
    shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT,
                           {"shoal_putmem", "dest=", "past the end of the program's global"});
    // Misaligned typed access to a global.
    shoal_long_atomic_add(reinterpret_cast<long*>(reinterpret_cast<char*>(&s_counter) + 1), 1, me());
    shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_long_atomic_add", "not aligned"});
  }
  // A collective whose global dest runs past the data segment: every PE fails alike, naming the argument;
  // with globals off, a global dest says why.
  constexpr size_t kLongs = 1024;  // 8 KiB per PE: past the page that holds _end
  auto* heap_src = static_cast<long*>(shoal_calloc(kLongs, sizeof(long)));
  auto* last_long = reinterpret_cast<long*>((reinterpret_cast<uintptr_t>(&_end) - sizeof(long)) &
                                            ~static_cast<uintptr_t>(alignof(long) - 1));
  shoal_long_fcollect(SHOAL_TEAM_WORLD, disabled() ? s_payload : last_long, heap_src, kLongs);
  if (disabled())
    shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT, {"shoal_long_fcollect", "dest=", "SHOAL_SYMMETRIC_DATA=0"});
  else
    shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT,
                           {"shoal_long_fcollect", "dest=", "past the end of the program's global"});
  shoal_free(heap_src);
}

// Globals and statics in the blocking team collectives, as in OpenSHMEM: every collective with a global
// dest and source, in place, mixed with heap memory, on the world and on the team of the even PEs (a
// proxy peer's global travels through the UCX engine). Under SHOAL_SYMMETRIC_DATA=0 each says why.
long g_coll_src[8];
long g_coll_dst[8 * 8];
double g_coll_sum[4];
TEST_F(SymmetricData, GlobalsInTeamCollectives) {
  const int n = npes(), p = me();
  ASSERT_LE(n, 8);
  for (int i = 0; i < 8; ++i) g_coll_src[i] = 100 * p + i;
  std::memset(g_coll_dst, 0, sizeof g_coll_dst);
  for (int i = 0; i < 4; ++i) g_coll_sum[i] = p + 0.5 * i;
  shoal_barrier_all();
  // After each call: true when it ran (then its result is checked), else the reason is checked.
  auto ran = [](const char* what) {
    if (!disabled()) {
      expect_ok(what);
      return true;
    }
    shoal_mp::expect_error(SHOAL_ERR_INVALID_ARGUMENT, {"global/static variable", "SHOAL_SYMMETRIC_DATA=0"});
    return false;
  };
  // broadcast from the last PE, global to global.
  shoal_long_broadcast(SHOAL_TEAM_WORLD, g_coll_dst, g_coll_src, 8, n - 1);
  if (ran("broadcast")) {
    for (int i = 0; i < 8; ++i) EXPECT_EQ(g_coll_dst[i], 100 * (n - 1) + i) << "broadcast element " << i;
  }
  // fcollect: 2 elements of every PE, in PE order.
  shoal_long_fcollect(SHOAL_TEAM_WORLD, g_coll_dst, g_coll_src, 2);
  if (ran("fcollect")) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < 2; ++i) EXPECT_EQ(g_coll_dst[2 * j + i], 100 * j + i) << "fcollect from PE " << j;
  }
  // collect: PE j brings j+1 elements.
  shoal_long_collect(SHOAL_TEAM_WORLD, g_coll_dst, g_coll_src, static_cast<size_t>(p) + 1);
  if (ran("collect")) {
    int at = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i) EXPECT_EQ(g_coll_dst[at++], 100 * j + i) << "collect from PE " << j;
  }
  // alltoall: element j of every PE's global source comes to PE j.
  shoal_long_alltoall(SHOAL_TEAM_WORLD, g_coll_dst, g_coll_src, 1);
  if (ran("alltoall")) {
    for (int j = 0; j < n; ++j) EXPECT_EQ(g_coll_dst[j], 100 * j + p) << "alltoall from PE " << j;
  }
  // sum_reduce from a global into the heap, then in place on the global.
  auto* heap = static_cast<double*>(shoal_calloc(4, sizeof(double)));
  const double total = n * (n - 1) / 2.0;
  shoal_double_sum_reduce(SHOAL_TEAM_WORLD, heap, g_coll_sum, 4);
  if (ran("sum_reduce into the heap")) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(heap[i], total + n * 0.5 * i) << "sum_reduce element " << i;
  }
  shoal_double_sum_reduce(SHOAL_TEAM_WORLD, g_coll_sum, g_coll_sum, 4);
  if (ran("sum_reduce in place")) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(g_coll_sum[i], total + n * 0.5 * i) << "in place, element " << i;
  }
  shoal_free(heap);
  // A sub-team (the even PEs): max_reduce of the globals.
  shoal_team_t evens = SHOAL_TEAM_INVALID;
  ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &evens), 0);
  if (evens != SHOAL_TEAM_INVALID) {
    const int last_even = 2 * ((n + 1) / 2 - 1);
    shoal_long_max_reduce(evens, g_coll_dst, g_coll_src, 8);
    if (ran("max_reduce on the evens")) {
      for (int i = 0; i < 8; ++i) EXPECT_EQ(g_coll_dst[i], 100 * last_even + i) << "max_reduce element " << i;
    }
    shoal_team_destroy(evens);
  }
}

TEST_F(SymmetricData, SecondWorldReachesTheSameGlobals) {
  // The unique id travels through the default world's heap.
  constexpr size_t kMax = 256;
  auto* text = static_cast<char*>(shoal_calloc(kMax, 1));
  if (me() == 0) {
    std::string id = shoal::make_unique_id();
    for (int pe = 0; pe < npes(); ++pe) shoal_putmem(text, id.c_str(), id.size() + 1, pe);
  }
  shoal_barrier_all();
  shoal::init_options o;
  o.rank = me();
  o.size = npes();
  o.unique_id = std::string(text, strnlen(text, kMax));
  o.backend = "host";
  o.heap_reserve_bytes = uint64_t(1) << 28;
  shoal_barrier_all();
  shoal_free(text);
  {
    shoal::world w(o);
    s_ints[10] = -1;
    w.barrier_all();
    const int value = 500 + me();
    if (disabled()) {
      EXPECT_THROW(w.put(&s_ints[10], &value, sizeof(value), right()), shoal::error);
    } else {
      w.put(&s_ints[10], &value, sizeof(value), right());
      w.barrier_all();
      EXPECT_EQ(s_ints[10], 500 + left()) << "a put through the second world";
    }
    w.barrier_all();
    w.finalize();
  }
  // After the second world is gone, the default world's view of the globals still works.
  const int value = 900 + me();
  shoal_int_put(&s_ints[11], &value, 1, right());
  expect_outcome(right(), "put after the second world");
  shoal_barrier_all();
  if (reaches(left())) {
    EXPECT_EQ(s_ints[11], 900 + left());
  }
}

TEST_F(SymmetricData, ForkedChildDoesNotShareGlobals) {
  g_initialized = 1234;
  std::fflush(nullptr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    g_initialized = -7;  // must stay in the child
    s_big[0] = 99;
    _exit(g_initialized == -7 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(g_initialized, 1234) << "the forked child's write reached the parent";
  EXPECT_EQ(s_big[0], 0u);
  // and the parent's globals are still symmetric
  shoal_barrier_all();
  long g = shoal_long_g(&g_initialized, right());
  expect_outcome(right(), "g after fork");
  if (reaches(right())) {
    EXPECT_EQ(g, 1234);
  }
  shoal_barrier_all();  // every PE has read its right's value before it changes
  g_initialized = 42;
}

}  // namespace
