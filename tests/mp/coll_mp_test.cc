// Host team collectives on N host PEs through the C API: sync/barrier, broadcast (every root),
// fcollect, collect (per-PE sizes, some 0), alltoall, reduce and reducescatter for every generated
// type x op (looked up by name, so a missing or misnamed entry point fails), each checked against a
// reference computed here (half and bfloat16: exact bit patterns, and one sum whose rounding shows the
// documented team-rank order); on WORLD, on the evens/odds of split_strided (run at the same time) and on
// both axes of a split_2d; odd sizes, nelems = 0, in-place reduce; 100 back-to-back calls; bad input
// (bad root, null/non-symmetric dest, bad team, mismatched calls) failing on every member with the
// code and a message naming the call and the argument, the job still usable after; the on-stream forms
// exported, and UNSUPPORTED on these host-memory heaps.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "expect_error.hpp"
#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }

constexpr size_t kBufBytes = 64 << 10;

// Symmetric buffers shared by the tests (allocated on WORLD, used by any team).
struct buffers {
  char* src = static_cast<char*>(shoal_malloc(kBufBytes));
  char* dst = static_cast<char*>(shoal_malloc(kBufBytes));
  ~buffers() {
    shoal_free(dst);
    shoal_free(src);
  }
};

template <class F>
F lookup(const std::string& name) {
  void* p = dlsym(RTLD_DEFAULT, name.c_str());
  EXPECT_NE(p, nullptr) << name << " is not exported";
  return reinterpret_cast<F>(p);
}

// The teams every data test runs on: WORLD; evens and odds (disjoint, at the same time); the row and
// the column of a 2-D split with xrange 2. Each PE keeps the ones it belongs to.
struct teams {
  shoal_team_t evens = SHOAL_TEAM_INVALID, odds = SHOAL_TEAM_INVALID, row = SHOAL_TEAM_INVALID,
               col = SHOAL_TEAM_INVALID;
  teams() {
    int n = npes();
    shoal_team_t parity = SHOAL_TEAM_INVALID;
    EXPECT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &parity), 0);
    if (me() % 2 == 0) evens = parity;
    shoal_team_t o = SHOAL_TEAM_INVALID;
    EXPECT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &o), 0);
    if (me() % 2 == 1) odds = o;
    EXPECT_EQ(shoal_team_split_2d(SHOAL_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &col), 0);
  }
  ~teams() {
    for (shoal_team_t t : {evens, odds, row, col}) shoal_team_destroy(t);
  }
  std::vector<shoal_team_t> mine() const {
    std::vector<shoal_team_t> out{SHOAL_TEAM_WORLD};
    for (shoal_team_t t : {evens, odds, row, col})
      if (t != SHOAL_TEAM_INVALID) out.push_back(t);
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// reductions: every type x op

enum class op { and_, or_, xor_, min_, max_, sum_, prod_ };
const char* kOpNames[] = {"and", "or", "xor", "min", "max", "sum", "prod"};

template <class T>
T input(op o, int rank, size_t i) {
  auto k = static_cast<long>(rank * 7 + i * 3);
  switch (o) {
    case op::and_:
    case op::or_:
    case op::xor_:
      return static_cast<T>((rank * 37 + i * 11 + 1) & 0x7f);
    case op::prod_:
      return static_cast<T>(1 + (rank + i) % 3);
    default:
      if constexpr (static_cast<T>(-1) < T(0)) return static_cast<T>(k % 11 - 5);
      return static_cast<T>(k % 11);
  }
}

template <class T>
T apply(op o, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (o) {
      case op::min_:
        return b < a ? b : a;
      case op::max_:
        return b > a ? b : a;
      case op::sum_:
        return a + b;
      default:
        return a * b;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (o) {
      case op::and_:
        return static_cast<T>(a & b);
      case op::or_:
        return static_cast<T>(a | b);
      case op::xor_:
        return static_cast<T>(a ^ b);
      case op::min_:
        return b < a ? b : a;
      case op::max_:
        return b > a ? b : a;
      case op::sum_:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      default:
        return static_cast<T>(static_cast<U>(static_cast<uint64_t>(static_cast<U>(a)) * static_cast<U>(b)));
    }
  }
}

// reduce (scatter=false) or reducescatter on `team`; returns the number of wrong elements.
template <class T>
int check_reduce(buffers& b, shoal_team_t team, const std::string& tn, op o, size_t nreduce, bool scatter,
                 bool in_place = false) {
  using fn = int (*)(shoal_team_t, T*, const T*, size_t);
  std::string name = "shoal_" + tn + "_" + kOpNames[static_cast<int>(o)] + (scatter ? "_reducescatter" : "_reduce");
  auto f = lookup<fn>(name);
  if (f == nullptr) return 1;
  int n = shoal_team_n_pes(team), r = shoal_team_my_pe(team);
  size_t src_elems = scatter ? nreduce * n : nreduce;
  auto* src = reinterpret_cast<T*>(b.src);
  T* dst = in_place ? src : reinterpret_cast<T*>(b.dst);
  for (size_t i = 0; i < src_elems; ++i) src[i] = input<T>(o, r, i);
  if (!in_place) std::memset(b.dst, 0xa5, kBufBytes);
  int rc = f(team, dst, src, nreduce);
  EXPECT_EQ(rc, 0) << name;
  int bad = 0;
  for (size_t i = 0; i < nreduce; ++i) {
    size_t at = scatter ? r * nreduce + i : i;
    T want = input<T>(o, 0, at);
    for (int j = 1; j < n; ++j) want = apply(o, want, input<T>(o, j, at));
    if (std::memcmp(&dst[i], &want, sizeof(T)) != 0 && bad++ < 3)
      ADD_FAILURE() << name << " team " << team << " nreduce " << nreduce << ": element " << i << " is " << +dst[i]
                    << ", want " << +want;
  }
  return bad;
}

template <class T>
void reduce_all_ops(buffers& b, shoal_team_t team, const std::string& tn) {
  bool integral = std::is_integral_v<T>;
  for (int oi = integral ? 0 : 3; oi < 7; ++oi)
    for (bool scatter : {false, true})
      for (size_t nreduce : {size_t{1}, size_t{7}}) check_reduce<T>(b, team, tn, static_cast<op>(oi), nreduce, scatter);
}

template <class... T>
struct type_list {};
using reduce_types = type_list<char, signed char, short, int, long, long long, unsigned char, unsigned short,
                               unsigned int, unsigned long, unsigned long long, int8_t, int16_t, int32_t, int64_t,
                               uint8_t, uint16_t, uint32_t, uint64_t, size_t, ptrdiff_t, float, double>;
const char* kReduceNames[] = {"char",   "schar",  "short",     "int",  "long",    "longlong", "uchar", "ushort",
                              "uint",   "ulong",  "ulonglong", "int8", "int16",   "int32",    "int64", "uint8",
                              "uint16", "uint32", "uint64",    "size", "ptrdiff", "float",    "double"};

template <class... T>
void every_reduce_type(buffers& b, shoal_team_t team, type_list<T...>) {
  int i = 0;
  (reduce_all_ops<T>(b, team, kReduceNames[i++]), ...);
}

TEST(Coll, ReduceEveryTypeAndOpOnEveryTeam) {
  buffers b;
  teams t;
  for (shoal_team_t team : t.mine()) {
    SCOPED_TRACE("team " + std::to_string(team));
    every_reduce_type(b, team, reduce_types{});
    // Zero elements, and in place (dest == source).
    EXPECT_EQ(check_reduce<int>(b, team, "int", op::sum_, 0, false), 0);
    EXPECT_EQ(check_reduce<double>(b, team, "double", op::max_, 0, true), 0);
    EXPECT_EQ(check_reduce<int64_t>(b, team, "int64", op::sum_, 33, false, true), 0);
    EXPECT_EQ(check_reduce<float>(b, team, "float", op::prod_, 5, false, true), 0);
  }
  shoal_barrier_all();
}

// ---------------------------------------------------------------------------------------------
// half and bfloat16 reductions (host view: shoal_half_t / shoal_bfloat16_t hold the bit pattern)

/// The half (bf = false) or bfloat16 bit pattern of v, which must be exactly representable and, for
/// half, zero or normal (every value below is).
uint16_t bits16(double v, bool bf) {
  const auto f = static_cast<float>(v);
  EXPECT_EQ(static_cast<double>(f), v);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (bf) {
    EXPECT_EQ(x & 0xffffu, 0u) << v << " is not a bfloat16";
    return static_cast<uint16_t>(x >> 16);
  }
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  if ((x & 0x7fffffffu) == 0) return sign;
  const int exp = static_cast<int>((x >> 23) & 0xffu) - 112;
  EXPECT_TRUE(exp >= 1 && exp <= 30 && (x & 0x1fffu) == 0) << v << " is not a normal half";
  return static_cast<uint16_t>(sign | exp << 10 | ((x >> 13) & 0x3ffu));
}

/// Inputs whose reduction is exact in both formats whatever the order: small integers (sums within
/// +-40), and +-powers of two for prod (products within 2^-8 .. 2^8).
double input16(op o, int rank, size_t i) {
  if (o == op::prod_) {
    constexpr double kFactors[] = {0.5, 1, 2, -1};
    return kFactors[(rank + i) % 4];
  }
  return static_cast<double>(static_cast<long>(rank * 7 + i * 3) % 11 - 5);
}

// shoal_<tn>_<op>_reduce / _reducescatter of H (shoal_half_t or shoal_bfloat16_t) against the exact
// reference; returns the number of wrong elements.
template <class H>
int check_reduce16(buffers& b, shoal_team_t team, const std::string& tn, op o, size_t nreduce, bool scatter,
                   bool in_place = false) {
  static_assert(sizeof(H) == 2 && alignof(H) == 2);
  const bool bf = tn == "bfloat16";
  using fn = int (*)(shoal_team_t, H*, const H*, size_t);
  std::string name = "shoal_" + tn + "_" + kOpNames[static_cast<int>(o)] + (scatter ? "_reducescatter" : "_reduce");
  auto f = lookup<fn>(name);
  if (f == nullptr) return 1;
  int n = shoal_team_n_pes(team), r = shoal_team_my_pe(team);
  size_t src_elems = scatter ? nreduce * n : nreduce;
  auto* src = reinterpret_cast<uint16_t*>(b.src);
  uint16_t* dst = in_place ? src : reinterpret_cast<uint16_t*>(b.dst);
  for (size_t i = 0; i < src_elems; ++i) src[i] = bits16(input16(o, r, i), bf);
  if (!in_place) std::memset(b.dst, 0xa5, kBufBytes);
  EXPECT_EQ(f(team, reinterpret_cast<H*>(dst), reinterpret_cast<const H*>(src), nreduce), 0) << name;
  int bad = 0;
  for (size_t i = 0; i < nreduce; ++i) {
    size_t at = scatter ? r * nreduce + i : i;
    double want = input16(o, 0, at);
    for (int j = 1; j < n; ++j) want = apply<double>(o, want, input16(o, j, at));
    if (dst[i] != bits16(want, bf) && bad++ < 3)
      ADD_FAILURE() << name << " team " << team << " nreduce " << nreduce << ": element " << i << " is 0x" << std::hex
                    << dst[i] << ", want 0x" << bits16(want, bf) << std::dec << " (" << want << ")";
  }
  return bad;
}

TEST(Coll, HalfAndBfloat16ReduceOnEveryTeam) {
  buffers b;
  teams t;
  for (shoal_team_t team : t.mine()) {
    SCOPED_TRACE("team " + std::to_string(team));
    for (op o : {op::min_, op::max_, op::sum_, op::prod_})
      for (bool scatter : {false, true})
        for (size_t nreduce : {size_t{1}, size_t{7}, size_t{100}}) {
          EXPECT_EQ(check_reduce16<shoal_half_t>(b, team, "half", o, nreduce, scatter), 0);
          EXPECT_EQ(check_reduce16<shoal_bfloat16_t>(b, team, "bfloat16", o, nreduce, scatter), 0);
        }
    EXPECT_EQ(check_reduce16<shoal_half_t>(b, team, "half", op::sum_, 0, false), 0);
    EXPECT_EQ(check_reduce16<shoal_half_t>(b, team, "half", op::sum_, 9, false, true), 0);
    EXPECT_EQ(check_reduce16<shoal_bfloat16_t>(b, team, "bfloat16", op::prod_, 9, false, true), 0);
  }
  shoal_barrier_all();
}

// The documented order: team PE 0's value, then + team PE 1's, + team PE 2's, ..., each partial sum
// rounded to nearest even. Team PE 0 holds a value where the spacing is 2 (half: 2048, 2050;
// bfloat16: 256, 258), every other member 1, so each addition is a tie: x + 1 goes to the even
// neighbour. Left to right: 2048 stays 2048; 2050 -> 2052 (even), then 2052 stays. Any other order
// (the 1s first) would give a larger result from 3 PEs on.
TEST(Coll, HalfAndBfloat16SumInTeamRankOrder) {
  buffers b;
  teams t;
  for (shoal_team_t team : t.mine()) {
    SCOPED_TRACE("team " + std::to_string(team));
    int n = shoal_team_n_pes(team), r = shoal_team_my_pe(team);
    for (bool bf : {false, true}) {
      const double base = bf ? 256 : 2048;
      auto* src = reinterpret_cast<uint16_t*>(b.src);
      auto* dst = reinterpret_cast<uint16_t*>(b.dst);
      for (int k = 0; k < n; ++k) {  // reducescatter's block k; reduce uses block 0
        src[2 * k] = bits16(r == 0 ? base : 1, bf);
        src[2 * k + 1] = bits16(r == 0 ? base + 2 : 1, bf);
      }
      const uint16_t want0 = bits16(base, bf), want1 = bits16(n == 1 ? base + 2 : base + 4, bf);
      int rc = bf ? shoal_bfloat16_sum_reduce(team, reinterpret_cast<shoal_bfloat16_t*>(dst),
                                              reinterpret_cast<const shoal_bfloat16_t*>(src), 2)
                  : shoal_half_sum_reduce(team, reinterpret_cast<shoal_half_t*>(dst),
                                          reinterpret_cast<const shoal_half_t*>(src), 2);
      EXPECT_EQ(rc, 0);
      EXPECT_EQ(dst[0], want0) << (bf ? "bfloat16" : "half") << " reduce, n=" << n;
      EXPECT_EQ(dst[1], want1) << (bf ? "bfloat16" : "half") << " reduce, n=" << n;
      dst[0] = dst[1] = 0;
      rc = bf ? shoal_bfloat16_sum_reducescatter(team, reinterpret_cast<shoal_bfloat16_t*>(dst),
                                                 reinterpret_cast<const shoal_bfloat16_t*>(src), 2)
              : shoal_half_sum_reducescatter(team, reinterpret_cast<shoal_half_t*>(dst),
                                             reinterpret_cast<const shoal_half_t*>(src), 2);
      EXPECT_EQ(rc, 0);
      EXPECT_EQ(dst[0], want0) << (bf ? "bfloat16" : "half") << " reducescatter, n=" << n;
      EXPECT_EQ(dst[1], want1) << (bf ? "bfloat16" : "half") << " reducescatter, n=" << n;
    }
  }
  shoal_barrier_all();
}

// ---------------------------------------------------------------------------------------------
// data movement

template <class T>
T pattern(int rank, size_t i, int salt = 0) {
  return static_cast<T>((rank + 1) * 1000 + i * 3 + salt);
}

template <class T>
void data_movement(buffers& b, shoal_team_t team, const std::string& tn) {
  using bcast_fn = int (*)(shoal_team_t, T*, const T*, size_t, int);
  using coll_fn = int (*)(shoal_team_t, T*, const T*, size_t);
  auto bcast = lookup<bcast_fn>("shoal_" + tn + "_broadcast");
  auto fcoll = lookup<coll_fn>("shoal_" + tn + "_fcollect");
  auto coll = lookup<coll_fn>("shoal_" + tn + "_collect");
  auto a2a = lookup<coll_fn>("shoal_" + tn + "_alltoall");
  if (!bcast || !fcoll || !coll || !a2a) return;
  int n = shoal_team_n_pes(team), r = shoal_team_my_pe(team);
  auto* src = reinterpret_cast<T*>(b.src);
  auto* dst = reinterpret_cast<T*>(b.dst);
  auto expect_at = [&](const char* what, size_t i, T want) {
    EXPECT_EQ(dst[i], want) << tn << " " << what << " team " << team << " element " << i;
  };
  for (size_t nelems : {size_t{0}, size_t{1}, size_t{13}}) {
    for (int root = 0; root < n; ++root) {
      for (size_t i = 0; i < nelems; ++i) src[i] = pattern<T>(r, i, root);
      std::memset(b.dst, 0x5a, kBufBytes);
      EXPECT_EQ(bcast(team, dst, src, nelems, root), 0);
      for (size_t i = 0; i < nelems; ++i) expect_at("broadcast", i, pattern<T>(root, i, root));
      EXPECT_EQ(static_cast<unsigned char>(b.dst[nelems * sizeof(T)]), 0x5a) << "broadcast wrote past nelems";
    }
    for (size_t i = 0; i < nelems; ++i) src[i] = pattern<T>(r, i);
    std::memset(b.dst, 0x5a, kBufBytes);
    EXPECT_EQ(fcoll(team, dst, src, nelems), 0);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < nelems; ++i) expect_at("fcollect", j * nelems + i, pattern<T>(j, i));

    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < nelems; ++i) src[j * nelems + i] = pattern<T>(r, i, j);
    std::memset(b.dst, 0x5a, kBufBytes);
    EXPECT_EQ(a2a(team, dst, src, nelems), 0);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < nelems; ++i) expect_at("alltoall", j * nelems + i, pattern<T>(j, i, r));
  }
  // collect: team PE j contributes (j * 3 + shift) % 5 elements (some 0), or none at all.
  for (int shift : {0, 2, -1}) {
    auto count = [&](int j) { return shift < 0 ? size_t{0} : static_cast<size_t>((j * 3 + shift) % 5); };
    for (size_t i = 0; i < count(r); ++i) src[i] = pattern<T>(r, i, shift);
    std::memset(b.dst, 0x5a, kBufBytes);
    EXPECT_EQ(coll(team, dst, src, count(r)), 0);
    size_t at = 0;
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < count(j); ++i) expect_at("collect", at++, pattern<T>(j, i, shift));
  }
}

TEST(Coll, DataMovementOnEveryTeam) {
  buffers b;
  teams t;
  for (shoal_team_t team : t.mine()) {
    SCOPED_TRACE("team " + std::to_string(team));
    data_movement<int>(b, team, "int");
    data_movement<char>(b, team, "char");
    data_movement<uint16_t>(b, team, "uint16");
    data_movement<double>(b, team, "double");
    data_movement<long double>(b, team, "longdouble");
    data_movement<uint64_t>(b, team, "uint64");
    // The untyped forms count bytes.
    int n = shoal_team_n_pes(team), r = shoal_team_my_pe(team);
    for (int i = 0; i < 5; ++i) b.src[i] = static_cast<char>('a' + r + i);
    EXPECT_EQ(shoal_fcollectmem(team, b.dst, b.src, 5), 0);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < 5; ++i) EXPECT_EQ(b.dst[j * 5 + i], static_cast<char>('a' + j + i));
    EXPECT_EQ(shoal_broadcastmem(team, b.dst, b.src, 3, n - 1), 0);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(b.dst[i], static_cast<char>('a' + n - 1 + i));
    EXPECT_EQ(shoal_collectmem(team, b.dst, b.src, static_cast<size_t>(r % 2)), 0);
    EXPECT_EQ(shoal_alltoallmem(team, b.dst, b.src, 0), 0);
    EXPECT_EQ(shoal_team_sync(team), 0);
    EXPECT_EQ(shoal_barrier(team), 0);
  }
  shoal_barrier_all();
}

TEST(Coll, BackToBack100) {
  buffers b;
  teams t;
  auto* src = reinterpret_cast<int*>(b.src);
  auto* dst = reinterpret_cast<int*>(b.dst);
  for (shoal_team_t team : {SHOAL_TEAM_WORLD, t.evens != SHOAL_TEAM_INVALID ? t.evens : t.odds}) {
    if (team == SHOAL_TEAM_INVALID) continue;  // one PE: no odds
    int n = shoal_team_n_pes(team), r = shoal_team_my_pe(team);
    int wrong = 0;
    for (int it = 0; it < 100; ++it) {
      // No barrier between calls: each call's own synchronization must keep them apart.
      src[0] = r + it;
      EXPECT_EQ(shoal_int_sum_reduce(team, dst, src, 1), 0);
      wrong += dst[0] != n * (n - 1) / 2 + n * it;
      src[0] = r * 100 + it;
      EXPECT_EQ(shoal_int_broadcast(team, dst, src, 1, it % n), 0);
      wrong += dst[0] != (it % n) * 100 + it;
      for (int j = 0; j < n; ++j) src[j] = r * 1000 + j + it;
      EXPECT_EQ(shoal_int_alltoall(team, dst, src, 1), 0);
      for (int j = 0; j < n; ++j) wrong += dst[j] != j * 1000 + r + it;
      EXPECT_EQ(shoal_team_sync(team), 0);
    }
    EXPECT_EQ(wrong, 0) << "team " << team;
  }
  shoal_barrier_all();
}

// ---------------------------------------------------------------------------------------------
// errors

void expect_error(int rc, int code, std::initializer_list<std::string> parts) {
  EXPECT_EQ(rc, code);
  shoal_mp::expect_error(code, parts);
}

TEST(Coll, BadInputFailsOnEveryMemberAndTheJobGoesOn) {
  buffers b;
  int n = npes();
  int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_clear_error();
  auto* src = reinterpret_cast<int*>(b.src);
  auto* dst = reinterpret_cast<int*>(b.dst);
  const int kInval = SHOAL_ERR_INVALID_ARGUMENT;

  expect_error(shoal_int_broadcast(SHOAL_TEAM_WORLD, dst, src, 4, n), kInval, {"shoal_int_broadcast", "PE_root"});
  expect_error(shoal_int_broadcast(SHOAL_TEAM_WORLD, dst, src, 4, -1), kInval, {"shoal_int_broadcast", "PE_root=-1"});
  // Null dest on PE 0 only: every PE fails, naming the argument.
  expect_error(shoal_int_sum_reduce(SHOAL_TEAM_WORLD, me() == 0 ? nullptr : dst, src, 4), kInval,
               {"shoal_int_sum_reduce", "dest is null"});
  int local[8] = {};
  expect_error(shoal_int_fcollect(SHOAL_TEAM_WORLD, local, src, 1), kInval,
               {"shoal_int_fcollect", "dest", "not in the symmetric heap"});
  expect_error(shoal_long_alltoall(SHOAL_TEAM_WORLD, reinterpret_cast<long*>(b.dst), reinterpret_cast<long*>(local), 1),
               kInval, {"shoal_long_alltoall", "source", "not in the symmetric heap"});
  expect_error(shoal_int_alltoall(SHOAL_TEAM_WORLD, dst, src, kBufBytes), kInval,
               {"shoal_int_alltoall", "dest", "past the end"});
  expect_error(shoal_team_sync(42), kInval, {"shoal_team_sync", "team=42"});
  expect_error(shoal_barrier(SHOAL_TEAM_INVALID), kInval, {"shoal_barrier", "SHOAL_TEAM_INVALID"});
  expect_error(shoal_int_max_reducescatter(SHOAL_TEAM_WORLD + 99, dst, src, 1), kInval,
               {"shoal_int_max_reducescatter", "team=99"});
  if (n > 1) {
    // Mismatched calls: a different nelems, a different root, a different collective.
    expect_error(shoal_int_sum_reduce(SHOAL_TEAM_WORLD, dst, src, me() == 0 ? 4 : 5), SHOAL_ERR_MISMATCH,
                 {"shoal_int_sum_reduce", "disagree", "nelems=4"});
    expect_error(shoal_int_broadcast(SHOAL_TEAM_WORLD, dst, src, 2, me() == 1 ? 1 : 0), SHOAL_ERR_MISMATCH,
                 {"shoal_int_broadcast", "PE_root"});
    int rc = me() == 0 ? shoal_team_sync(SHOAL_TEAM_WORLD) : shoal_int_fcollect(SHOAL_TEAM_WORLD, dst, src, 1);
    expect_error(rc, SHOAL_ERR_MISMATCH, {"disagree", "sync/barrier", "fcollect"});
    // The sum over a different op and type.
    rc = me() == 0 ? shoal_int_sum_reduce(SHOAL_TEAM_WORLD, dst, src, 1)
                   : shoal_int_max_reduce(SHOAL_TEAM_WORLD, dst, src, 1);
    expect_error(rc, SHOAL_ERR_MISMATCH, {"disagree", "op=sum", "op=max"});
  }
  // Still usable: a good reduce right after.
  src[0] = me() + 1;
  EXPECT_EQ(shoal_int_sum_reduce(SHOAL_TEAM_WORLD, dst, src, 1), 0);
  EXPECT_EQ(dst[0], n * (n + 1) / 2);
  const char* msg = nullptr;
  EXPECT_EQ(shoal_last_error(&msg), SHOAL_OK) << (msg != nullptr ? msg : "");
  shoal_set_error_mode(old_mode);
  shoal_barrier_all();
}

// Every generated on-stream team collective is exported; on host-memory heaps each fails with
// SHOAL_ERR_UNSUPPORTED, naming the call, and the job goes on.
TEST(Coll, OnStreamFormsAreExportedAndNeedGpuHeaps) {
  const char* kMoveTypes[] = {"float",    "double", "longdouble", "char",   "schar",  "short",     "int",  "long",
                              "longlong", "uchar",  "ushort",     "uint",   "ulong",  "ulonglong", "int8", "int16",
                              "int32",    "int64",  "uint8",      "uint16", "uint32", "uint64",    "size", "ptrdiff"};
  std::vector<std::string> names = {"shoalx_team_sync_on_stream", "shoalx_barrier_on_stream",
                                    "shoalx_broadcastmem_on_stream", "shoalx_fcollectmem_on_stream",
                                    "shoalx_alltoallmem_on_stream"};
  for (const char* tn : kMoveTypes)
    for (const char* verb : {"broadcast", "fcollect", "alltoall"})
      names.push_back(std::string("shoalx_") + tn + "_" + verb + "_on_stream");
  std::vector<std::string> reduce_names(std::begin(kReduceNames), std::end(kReduceNames));
  reduce_names.insert(reduce_names.end(), {"half", "bfloat16"});
  for (const auto& tn : reduce_names) {
    bool integral = tn != "float" && tn != "double" && tn != "half" && tn != "bfloat16";
    for (int oi = integral ? 0 : 3; oi < 7; ++oi)
      for (const char* kind : {"reduce", "reducescatter"})
        names.push_back("shoalx_" + tn + "_" + kOpNames[oi] + "_" + kind + "_on_stream");
  }
  EXPECT_EQ(names.size(), 5u + 24u * 3u + (21u * 7u + 4u * 4u) * 2u);
  for (const auto& name : names) EXPECT_NE(dlsym(RTLD_DEFAULT, name.c_str()), nullptr) << name << " is not exported";

  buffers b;
  int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_clear_error();
  const int kUnsup = SHOAL_ERR_UNSUPPORTED;
  auto* src = reinterpret_cast<int*>(b.src);
  auto* dst = reinterpret_cast<int*>(b.dst);
  expect_error(shoalx_barrier_on_stream(SHOAL_TEAM_WORLD, nullptr), kUnsup, {"shoalx_barrier_on_stream"});
  expect_error(shoalx_team_sync_on_stream(SHOAL_TEAM_WORLD, nullptr), kUnsup, {"shoalx_team_sync_on_stream"});
  expect_error(shoalx_int_broadcast_on_stream(SHOAL_TEAM_WORLD, dst, src, 4, 0, nullptr), kUnsup,
               {"shoalx_int_broadcast_on_stream"});
  expect_error(shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, dst, src, 4, nullptr), kUnsup,
               {"shoalx_fcollectmem_on_stream"});
  expect_error(shoalx_int_sum_reduce_on_stream(SHOAL_TEAM_WORLD, dst, src, 4, nullptr), kUnsup,
               {"shoalx_int_sum_reduce_on_stream"});
  expect_error(shoalx_half_max_reducescatter_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<shoal_half_t*>(dst),
                                                       reinterpret_cast<const shoal_half_t*>(src), 1, nullptr),
               kUnsup, {"shoalx_half_max_reducescatter_on_stream"});
  // Still usable.
  src[0] = 1;
  EXPECT_EQ(shoal_int_sum_reduce(SHOAL_TEAM_WORLD, dst, src, 1), 0);
  EXPECT_EQ(dst[0], npes());
  shoal_set_error_mode(old_mode);
  shoal_barrier_all();
}

// A team made in a reused slot starts clean: destroy and re-split, then collectives still agree.
TEST(Coll, ReusedTeamSlots) {
  buffers b;
  auto* src = reinterpret_cast<int*>(b.src);
  auto* dst = reinterpret_cast<int*>(b.dst);
  for (int round = 0; round < 3; ++round) {
    int n = npes();
    int size = round == 1 ? (n + 1) / 2 : n;
    shoal_team_t t = SHOAL_TEAM_INVALID;
    ASSERT_EQ(shoal_team_split_strided(SHOAL_TEAM_WORLD, 0, round == 1 ? 2 : 1, size, nullptr, 0, &t), 0);
    if (t != SHOAL_TEAM_INVALID) {
      for (int it = 0; it < 3 + round * 5; ++it) {
        src[0] = 1;
        EXPECT_EQ(shoal_int_sum_reduce(t, dst, src, 1), 0);
        EXPECT_EQ(dst[0], shoal_team_n_pes(t));
      }
    }
    shoal_team_destroy(t);
    shoal_barrier_all();
  }
}

}  // namespace
