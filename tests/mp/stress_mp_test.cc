// Randomized stress on N PEs: >= 100 000 random puts/gets (random sizes, offsets and API
// variants), p/g, and atomics (add/fetch_add/inc/swap/compare_swap/and/or/xor and fetch forms)
// across all PEs, checked against a model byte for byte.
//
// Why the model is exact despite concurrency: the run is split into phases separated by barriers.
// In each phase every RMA byte and every "owned" atomic word of every PE has exactly one writer
// PE (the owner rotates each phase), so its final value is the owner's program order, and the
// owner can check each get and each fetched value exactly. "Shared" atomic words are updated by
// every PE at once, but each word only ever sees one commutative operation (add, xor, or, and),
// so its final value does not depend on the interleaving. Every PE derives every PE's operation
// stream from one shared seed, so any PE can compute the expected state of any buffer; at the end
// of a phase each PE compares its own buffers with the model and reads random ranges of the others'.
//
// SHOAL_STRESS_SEED=<n> replays a run (the seed is printed at the start and on any failure);
// SHOAL_STRESS_OPS=<n> sets the total number of random operations over all PEs (default 120000);
// SHOAL_STRESS_DROP=<k> makes PE 0 skip every k-th put while still modelling it: a self-test that the
// model catches a lost write (registered as a test that must fail).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// xoshiro256** seeded through splitmix: the same numbers on every PE for the same seed.
class rng {
 public:
  explicit rng(uint64_t seed) {
    for (auto& s : s_) s = seed = splitmix(seed);
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 0) : fallback;
}

constexpr size_t kRmaBytes = 16384;  // per PE; split into one segment per writer
constexpr size_t kOwnedWords = 64;   // uint64, one owner per phase
constexpr size_t kSharedWords = 32;  // uint64 and uint32 each; word w only sees op class w % 4
constexpr int kPhases = 4;

// Expected state of every PE's buffers.
struct model {
  std::vector<std::vector<uint8_t>> rma;
  std::vector<std::vector<uint64_t>> owned, s64, s64_start;
  std::vector<std::vector<uint32_t>> s32, s32_start;
  explicit model(int n)
      : rma(n, std::vector<uint8_t>(kRmaBytes)),
        owned(n, std::vector<uint64_t>(kOwnedWords)),
        s64(n, std::vector<uint64_t>(kSharedWords)),
        s64_start(s64),
        s32(n, std::vector<uint32_t>(kSharedWords)),
        s32_start(s32) {}
};

// The real buffers (symmetric).
struct buffers {
  uint8_t* rma;
  uint64_t* owned;
  uint64_t* s64;
  uint32_t* s32;
};

struct stats {
  uint64_t ops = 0, checks = 0, failures = 0;
};

size_t segment_bytes(int n) { return (kRmaBytes / n) & ~size_t(15); }

uint8_t data_byte(uint64_t data_seed, size_t i) {
  return static_cast<uint8_t>(splitmix(data_seed + i / 8) >> (8 * (i % 8)));
}

// Runs (execute == true) or only models (false) PE p's operation stream of one phase.
class stream {
 public:
  stream(uint64_t seed, int phase, int p, int n, model& m, buffers b, bool execute, stats& st)
      : r_(splitmix(seed ^ splitmix(uint64_t(phase) << 32 | uint64_t(p)))),
        phase_(phase),
        p_(p),
        n_(n),
        m_(m),
        b_(b),
        exec_(execute),
        st_(st) {}

  void run(uint64_t num_ops) {
    for (uint64_t i = 0; i < num_ops; ++i) {
      op_index_ = i;
      uint64_t kind = r_.below(100);
      if (kind < 30)
        put();
      else if (kind < 38)
        scalar_p();
      else if (kind < 50)
        get();
      else if (kind < 70)
        owned_atomic();
      else
        shared_atomic();
      if (exec_) ++st_.ops;
    }
    if (exec_) shoal_quiet();
  }

 private:
  // my segment on target t this phase
  size_t seg_start(int t) const {
    int s = ((p_ - t - phase_) % n_ + 2 * n_) % n_;
    return size_t(s) * segment_bytes(n_);
  }

  void fail(const char* what, uint64_t want, uint64_t got, int t, size_t where) {
    ++st_.failures;
    if (st_.failures <= 10)
      ADD_FAILURE() << "phase " << phase_ << " op " << op_index_ << " (" << what << ") on PE " << t << " at " << where
                    << ": expected 0x" << std::hex << want << ", got 0x" << got << std::dec;
  }

  void complete_before_read() {
    if (exec_ && pending_) {
      shoal_quiet();
      pending_ = false;
    }
  }

  void put() {
    if (exec_ && drop_every_ > 0 && ++puts_ % drop_every_ == 0) exec_ = false, dropped_ = true;
    put_op();
    if (dropped_) exec_ = true, dropped_ = false;
  }

  void put_op() {
    int t = static_cast<int>(r_.below(n_));
    size_t seg = segment_bytes(n_), base = seg_start(t);
    size_t off = r_.below(seg);
    size_t max_len = std::min<size_t>(seg - off, r_.below(4) == 0 ? 1024 : 40);
    size_t len = 1 + r_.below(max_len);
    uint64_t data_seed = r_.next();
    int variant = static_cast<int>(r_.below(8));
    size_t elem = variant == 2 || variant == 7 ? 2 : variant == 3 || variant == 5 ? 4 : variant == 4 ? 8 : 1;
    off -= off % elem;  // typed/sized variants need aligned offsets and whole elements
    len -= len % elem;
    if (len == 0) len = elem;
    if (off + len > seg) return;
    size_t at = base + off;
    std::vector<uint8_t> src(len);
    for (size_t i = 0; i < len; ++i) src[i] = data_byte(data_seed, i);
    if (variant == 7) {
      // strided: every other 2-byte element, so the bytes between stay as they were
      size_t elems = (len / 2 + 1) / 2;
      if (elems == 0 || at + (elems - 1) * 4 + 2 > base + seg) return;
      for (size_t e = 0; e < elems; ++e) std::memcpy(&m_.rma[t][at + e * 4], &src[e * 2], 2);
      if (exec_) shoal_iput16(b_.rma + at, src.data(), 2, 1, elems, t);
    } else {
      std::memcpy(&m_.rma[t][at], src.data(), len);
      if (exec_) {
        switch (variant) {
          case 0:
            shoal_putmem(b_.rma + at, src.data(), len, t);
            break;
          case 1:
            shoal_putmem_nbi(b_.rma + at, src.data(), len, t), pending_ = true;
            break;
          case 2:
            shoal_put16(b_.rma + at, src.data(), len / 2, t);
            break;
          case 3:
            shoal_put32_nbi(b_.rma + at, src.data(), len / 4, t), pending_ = true;
            break;
          case 4:
            shoal_uint64_put(reinterpret_cast<uint64_t*>(b_.rma + at), reinterpret_cast<uint64_t*>(src.data()), len / 8,
                             t);
            break;
          case 5:
            shoal_int32_put_nbi(reinterpret_cast<int32_t*>(b_.rma + at), reinterpret_cast<int32_t*>(src.data()),
                                len / 4, t),
                pending_ = true;
            break;
          default:
            shoal_put8(b_.rma + at, src.data(), len, t);
            break;
        }
      }
    }
    if (exec_) shoal_fence();  // keep my puts to one PE in order (they may overlap)
  }

  void scalar_p() {
    int t = static_cast<int>(r_.below(n_));
    size_t base = seg_start(t), seg = segment_bytes(n_);
    int width = 1 << r_.below(4);  // 1, 2, 4, 8 bytes
    size_t off = r_.below(seg / width) * width;
    uint64_t v = r_.next();
    std::memcpy(&m_.rma[t][base + off], &v, width);  // little endian: the low bytes
    if (!exec_) return;
    uint8_t* dst = b_.rma + base + off;
    switch (width) {
      case 1:
        shoal_uint8_p(dst, static_cast<uint8_t>(v), t);
        break;
      case 2:
        shoal_int16_p(reinterpret_cast<int16_t*>(dst), static_cast<int16_t>(v), t);
        break;
      case 4:
        shoal_int32_p(reinterpret_cast<int32_t*>(dst), static_cast<int32_t>(v), t);
        break;
      default:
        shoal_uint64_p(reinterpret_cast<uint64_t*>(dst), v, t);
        break;
    }
    shoal_fence();
  }

  void get() {
    int t = static_cast<int>(r_.below(n_));
    size_t base = seg_start(t), seg = segment_bytes(n_);
    size_t off = r_.below(seg);
    size_t len = 1 + r_.below(std::min<size_t>(seg - off, 256));
    int variant = static_cast<int>(r_.below(4));
    if (!exec_) return;
    complete_before_read();
    const uint8_t* want = &m_.rma[t][base + off];
    ++st_.checks;
    if (variant == 3) {
      // typed g of an aligned word inside the range
      size_t a = (base + off + 7) & ~size_t(7);
      if (a + 8 > base + seg) return;
      uint64_t got = shoal_uint64_g(reinterpret_cast<uint64_t*>(b_.rma + a), t), exp;
      std::memcpy(&exp, &m_.rma[t][a], 8);
      if (got != exp) fail("uint64_g", exp, got, t, a);
      return;
    }
    std::vector<uint8_t> got(len);
    if (variant == 0) {
      shoal_getmem(got.data(), b_.rma + base + off, len, t);
    } else if (variant == 1) {
      shoal_getmem_nbi(got.data(), b_.rma + base + off, len, t);
      shoal_quiet();
    } else {
      shoal_get8(got.data(), b_.rma + base + off, len, t);
    }
    for (size_t i = 0; i < len; ++i)
      if (got[i] != want[i]) {
        fail("getmem", want[i], got[i], t, base + off + i);
        break;
      }
  }

  void owned_atomic() {
    int t = static_cast<int>(r_.below(n_));
    // words w with (w + t + phase) % n == p belong to me on t this phase
    size_t first = size_t(((p_ - t - phase_) % n_ + 2 * n_) % n_);
    size_t count = (kOwnedWords - first + n_ - 1) / n_;
    size_t w = first + r_.below(count) * n_;
    uint64_t& cur = m_.owned[t][w];
    uint64_t v = r_.next() >> r_.below(64);
    int op = static_cast<int>(r_.below(14));
    uint64_t cond = r_.below(2) ? cur : cur + 1;
    uint64_t old = cur, got = old;
    uint64_t* dst = b_.owned + w;
    bool fetches = true;
    switch (op) {
      case 0:
        if (exec_) got = shoal_uint64_atomic_fetch(dst, t);
        break;
      case 1:
        cur = v;
        fetches = false;
        if (exec_) shoal_uint64_atomic_set(dst, v, t);
        break;
      case 2:
        cur = v;
        if (exec_) got = shoal_uint64_atomic_swap(dst, v, t);
        break;
      case 3:
        if (cur == cond) cur = v;
        if (exec_) got = shoal_uint64_atomic_compare_swap(dst, cond, v, t);
        break;
      case 4:
        cur += v;
        if (exec_) got = shoal_uint64_atomic_fetch_add(dst, v, t);
        break;
      case 5:
        cur += v;
        fetches = false;
        if (exec_) shoal_uint64_atomic_add(dst, v, t);
        break;
      case 6:
        cur += 1;
        if (exec_) got = shoal_uint64_atomic_fetch_inc(dst, t);
        break;
      case 7:
        cur += 1;
        fetches = false;
        if (exec_) shoal_uint64_atomic_inc(dst, t);
        break;
      case 8:
        cur &= v;
        if (exec_) got = shoal_uint64_atomic_fetch_and(dst, v, t);
        break;
      case 9:
        cur &= v;
        fetches = false;
        if (exec_) shoal_uint64_atomic_and(dst, v, t);
        break;
      case 10:
        cur |= v;
        if (exec_) got = shoal_uint64_atomic_fetch_or(dst, v, t);
        break;
      case 11:
        cur |= v;
        fetches = false;
        if (exec_) shoal_uint64_atomic_or(dst, v, t);
        break;
      case 12:
        cur ^= v;
        if (exec_) got = shoal_uint64_atomic_fetch_xor(dst, v, t);
        break;
      default:
        cur ^= v;
        fetches = false;
        if (exec_) shoal_uint64_atomic_xor(dst, v, t);
        break;
    }
    if (exec_ && fetches) {
      ++st_.checks;
      if (got != old) fail("owned atomic fetch", old, got, t, w);
    }
  }

  void shared_atomic() {
    int t = static_cast<int>(r_.below(n_));
    size_t w = r_.below(kSharedWords);
    bool wide = r_.below(2) == 0;
    bool fetching = r_.below(2) == 0;
    uint64_t v = r_.next();
    switch (w % 4) {
      case 0:
        v = 1 + (v & 0xFF);
        break;  // add: small positive
      case 2:
        v = uint64_t(1) << (v % 32);
        break;  // or: one bit
      case 3:
        v = ~(uint64_t(1) << (v % 32));
        break;  // and: all but one bit
      default:
        break;  // xor: anything
    }
    if (wide)
      apply<uint64_t>(m_.s64[t][w], m_.s64_start[t][w], b_.s64 + w, v, w % 4, fetching, t);
    else
      apply<uint32_t>(m_.s32[t][w], m_.s32_start[t][w], b_.s32 + w, static_cast<uint32_t>(v), w % 4, fetching, t);
  }

  template <class T>
  void apply(T& cur, T start, T* dst, T v, size_t cls, bool fetching, int t) {
    constexpr bool wide = sizeof(T) == 8;
    T got = 0;
    switch (cls) {
      case 0: {
        cur = T(cur + v);
        if (!exec_) break;
        if (fetching)
          got = wide ? T(shoal_uint64_atomic_fetch_add((uint64_t*)dst, v, t))
                     : T(shoal_uint32_atomic_fetch_add((uint32_t*)dst, uint32_t(v), t));
        else if (v == 1)
          wide ? shoal_uint64_atomic_inc((uint64_t*)dst, t) : shoal_uint32_atomic_inc((uint32_t*)dst, t);
        else
          wide ? shoal_uint64_atomic_add((uint64_t*)dst, v, t)
               : shoal_uint32_atomic_add((uint32_t*)dst, uint32_t(v), t);
        // every add is positive and small: a fetched value never lies below the phase's start
        if (fetching && got < start) fail("shared add went backwards", start, got, t, 0);
        break;
      }
      case 1:
        cur ^= v;
        if (!exec_) break;
        if (fetching)
          got = wide ? T(shoal_uint64_atomic_fetch_xor((uint64_t*)dst, v, t))
                     : T(shoal_uint32_atomic_fetch_xor((uint32_t*)dst, uint32_t(v), t));
        else
          wide ? shoal_uint64_atomic_xor((uint64_t*)dst, v, t)
               : shoal_uint32_atomic_xor((uint32_t*)dst, uint32_t(v), t);
        break;
      case 2:
        cur |= v;
        if (!exec_) break;
        if (fetching)
          got = wide ? T(shoal_uint64_atomic_fetch_or((uint64_t*)dst, v, t))
                     : T(shoal_uint32_atomic_fetch_or((uint32_t*)dst, uint32_t(v), t));
        else
          wide ? shoal_uint64_atomic_or((uint64_t*)dst, v, t) : shoal_uint32_atomic_or((uint32_t*)dst, uint32_t(v), t);
        if (fetching && (got & start) != start) fail("shared or lost bits", start, got, t, 0);
        break;
      default:
        cur &= v;
        if (!exec_) break;
        if (fetching)
          got = wide ? T(shoal_uint64_atomic_fetch_and((uint64_t*)dst, v, t))
                     : T(shoal_uint32_atomic_fetch_and((uint32_t*)dst, uint32_t(v), t));
        else
          wide ? shoal_uint64_atomic_and((uint64_t*)dst, v, t)
               : shoal_uint32_atomic_and((uint32_t*)dst, uint32_t(v), t);
        if (fetching && (got & ~start) != 0) fail("shared and gained bits", start, got, t, 0);
        break;
    }
  }

  rng r_;
  int phase_, p_, n_;
  model& m_;
  buffers b_;
  bool exec_;
  stats& st_;
  bool pending_ = false;
  uint64_t op_index_ = 0;
  // fault injection (SHOAL_STRESS_DROP, PE 0 only): skip executing every k-th put
  uint64_t drop_every_ = p_ == 0 ? env_u64("SHOAL_STRESS_DROP", 0) : 0;
  uint64_t puts_ = 0;
  bool dropped_ = false;
};

template <class T>
size_t first_difference(const T* got, const std::vector<T>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) return i;
  return SIZE_MAX;
}

TEST(Stress, RandomOperationsMatchTheModel) {
  const int n = npes();
  // One seed for all: from SHOAL_STRESS_SEED, else PE 0's clock, sent to everyone.
  auto* shared_seed = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  if (me() == 0) {
    uint64_t seed = env_u64("SHOAL_STRESS_SEED", 0);
    if (seed == 0) seed = splitmix(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
    for (int pe = 0; pe < n; ++pe) shoal_uint64_p(shared_seed, seed, pe);
  }
  shoal_barrier_all();
  const uint64_t seed = *shared_seed;
  const uint64_t total_ops = env_u64("SHOAL_STRESS_OPS", 120000);
  const uint64_t per_pe_phase = std::max<uint64_t>(1, total_ops / n / kPhases);
  if (me() == 0)
    std::printf("stress: SHOAL_STRESS_SEED=%" PRIu64 " SHOAL_STRESS_OPS=%" PRIu64 " (%" PRIu64
                " ops per PE per phase, %d phases, %d PEs)\n",
                seed, total_ops, per_pe_phase, kPhases, n);
  SCOPED_TRACE(testing::Message() << "replay with SHOAL_STRESS_SEED=" << seed << " SHOAL_STRESS_OPS=" << total_ops);

  buffers b{static_cast<uint8_t*>(shoal_calloc(kRmaBytes, 1)),
            static_cast<uint64_t*>(shoal_calloc(kOwnedWords, sizeof(uint64_t))),
            static_cast<uint64_t*>(shoal_calloc(kSharedWords, sizeof(uint64_t))),
            static_cast<uint32_t*>(shoal_calloc(kSharedWords, sizeof(uint32_t)))};
  ASSERT_TRUE(b.rma && b.owned && b.s64 && b.s32);
  model m(n);
  stats st;
  rng verify_rng(seed ^ 0x5EEDull ^ uint64_t(me()));
  // the "and" words start with every bit set, so clearing bits shows
  for (size_t w = 3; w < kSharedWords; w += 4) {
    b.s64[w] = ~uint64_t(0);
    b.s32[w] = ~uint32_t(0);
    for (int pe = 0; pe < n; ++pe) {
      m.s64[pe][w] = ~uint64_t(0);
      m.s32[pe][w] = ~uint32_t(0);
    }
  }
  shoal_barrier_all();

  for (int phase = 0; phase < kPhases; ++phase) {
    m.s64_start = m.s64;
    m.s32_start = m.s32;
    stream(seed, phase, me(), n, m, b, true, st).run(per_pe_phase);
    shoal_barrier_all();
    for (int p = 0; p < n; ++p)
      if (p != me()) stream(seed, phase, p, n, m, b, false, st).run(per_pe_phase);

    // my own buffers, byte for byte
    size_t at = first_difference(b.rma, m.rma[me()]);
    EXPECT_EQ(at, SIZE_MAX) << "phase " << phase << ": RMA byte " << at << " is " << int(b.rma[at == SIZE_MAX ? 0 : at])
                            << ", model says " << int(m.rma[me()][at == SIZE_MAX ? 0 : at]);
    at = first_difference(b.owned, m.owned[me()]);
    EXPECT_EQ(at, SIZE_MAX) << "phase " << phase << ": owned word " << at;
    at = first_difference(b.s64, m.s64[me()]);
    EXPECT_EQ(at, SIZE_MAX) << "phase " << phase << ": shared uint64 word " << at << " (class " << at % 4 << ")";
    at = first_difference(b.s32, m.s32[me()]);
    EXPECT_EQ(at, SIZE_MAX) << "phase " << phase << ": shared uint32 word " << at << " (class " << at % 4 << ")";
    // random ranges of the others', read remotely
    for (int k = 0; k < 16; ++k) {
      int t = static_cast<int>(verify_rng.below(n));
      size_t off = verify_rng.below(kRmaBytes), len = 1 + verify_rng.below(std::min<size_t>(kRmaBytes - off, 2048));
      std::vector<uint8_t> got(len);
      shoal_getmem(got.data(), b.rma + off, len, t);
      EXPECT_EQ(std::memcmp(got.data(), &m.rma[t][off], len), 0)
          << "phase " << phase << ": PE " << t << " bytes [" << off << ", " << off + len << ")";
      size_t w = verify_rng.below(kSharedWords);
      EXPECT_EQ(shoal_uint64_atomic_fetch(b.s64 + w, t), m.s64[t][w]) << "phase " << phase << " PE " << t;
      EXPECT_EQ(shoal_uint64_g(b.owned + w, t), m.owned[t][w]) << "phase " << phase << " PE " << t;
    }
    EXPECT_EQ(st.failures, 0u) << "phase " << phase << ": gets or fetched values disagreed with the model";
    shoal_barrier_all();  // nobody starts the next phase while others still read this one
  }

  // the ops really happened, and in the promised number
  auto* count = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  shoal_uint64_atomic_add(count, st.ops, 0);
  shoal_barrier_all();
  uint64_t all_ops = shoal_uint64_g(count, 0);
  EXPECT_EQ(all_ops, per_pe_phase * kPhases * n);
  if (me() == 0)
    std::printf("stress: %" PRIu64 " random operations over %d PEs, %" PRIu64 " checked on PE 0\n", all_ops, n,
                st.checks);
  if (total_ops >= 100000) {
    EXPECT_GE(all_ops + uint64_t(n) * kPhases, uint64_t(100000));  // (rounding down per PE and phase)
  }
  shoal_barrier_all();
  shoal_free(count);
  shoal_free(b.s32);
  shoal_free(b.s64);
  shoal_free(b.owned);
  shoal_free(b.rma);
  shoal_free(shared_seed);
}

}  // namespace
