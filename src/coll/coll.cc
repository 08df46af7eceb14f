#include "coll/coll.hpp"
#include "coll/coll_run.hpp"

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "coll/coll_world.hpp"
#include "common/check.hpp"
#include "runtime/c_api.hpp"
#include "runtime/wait.hpp"
#include "shoal/shoal.h"
#include "transport/scalar.hpp"

namespace shoal::detail::coll {

const char* to_string(reduce_op op) {
  switch (op) {
    case reduce_op::and_:
      return "and";
    case reduce_op::or_:
      return "or";
    case reduce_op::xor_:
      return "xor";
    case reduce_op::min_:
      return "min";
    case reduce_op::max_:
      return "max";
    case reduce_op::sum_:
      return "sum";
    case reduce_op::prod_:
      return "prod";
  }
  return "?";
}

namespace {

template <class T>
void combine_typed(reduce_op op, T* d, const T* s, size_t n) {
  switch (op) {
    case reduce_op::min_:
      for (size_t i = 0; i < n; ++i) d[i] = s[i] < d[i] ? s[i] : d[i];
      return;
    case reduce_op::max_:
      for (size_t i = 0; i < n; ++i) d[i] = s[i] > d[i] ? s[i] : d[i];
      return;
    case reduce_op::sum_:
    case reduce_op::prod_:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;  // wraps instead of signed overflow
        if (op == reduce_op::sum_)
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<U>(d[i]) + static_cast<U>(s[i]));
        else
          for (size_t i = 0; i < n; ++i)
            d[i] = static_cast<T>(static_cast<uint64_t>(static_cast<U>(d[i])) * static_cast<U>(s[i]));
      } else {
        if (op == reduce_op::sum_)
          for (size_t i = 0; i < n; ++i) d[i] += s[i];
        else
          for (size_t i = 0; i < n; ++i) d[i] *= s[i];
      }
      return;
    case reduce_op::and_:
    case reduce_op::or_:
    case reduce_op::xor_:
      if constexpr (std::is_integral_v<T>) {
        if (op == reduce_op::and_)
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] & s[i]);
        else if (op == reduce_op::or_)
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] | s[i]);
        else
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] ^ s[i]);
        return;
      }
      break;
  }
  SHOAL_THROW(errc::internal, "reduce", "op {} on a floating-point type", to_string(op));
}

template <class T>
void combine_as(reduce_op op, void* d, const void* s, size_t n) {
  combine_typed(op, static_cast<T*>(d), static_cast<const T*>(s), n);
}

// --- 16-bit floats: IEEE binary16 (half) and bfloat16, as bit patterns -----------------------------
// Combined in float, each result rounded back to nearest even. float's 24-bit significand holds at
// least 2p+2 bits of both (p = 11, 8), so rounding a float sum or product once more gives the
// correctly rounded 16-bit result (no double-rounding error): the values of the device's __hadd/__hmul.
// half_to_float / float_to_half are the transport's (transport/scalar.hpp: host half atomics use them too).

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  // To nearest even on bit 16; past the largest bfloat16 this carries into inf, as it should.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <float (*to_float)(uint16_t), uint16_t (*from_float)(float)>
void combine_16(reduce_op op, void* d, const void* s, size_t n) {
  auto* dst = static_cast<uint16_t*>(d);
  const auto* src = static_cast<const uint16_t*>(s);
  switch (op) {
    case reduce_op::min_:  // as float's min: keep dst unless src compares smaller (NaN: keep dst)
      for (size_t i = 0; i < n; ++i)
        if (to_float(src[i]) < to_float(dst[i])) dst[i] = src[i];
      return;
    case reduce_op::max_:
      for (size_t i = 0; i < n; ++i)
        if (to_float(src[i]) > to_float(dst[i])) dst[i] = src[i];
      return;
    case reduce_op::sum_:
      for (size_t i = 0; i < n; ++i) dst[i] = from_float(to_float(dst[i]) + to_float(src[i]));
      return;
    case reduce_op::prod_:
      for (size_t i = 0; i < n; ++i) dst[i] = from_float(to_float(dst[i]) * to_float(src[i]));
      return;
    case reduce_op::and_:
    case reduce_op::or_:
    case reduce_op::xor_:
      break;
  }
  SHOAL_THROW(errc::internal, "reduce", "op {} on a 16-bit floating-point type", to_string(op));
}

enum class kind : uint32_t { sync = 1, broadcast, fcollect, collect, alltoall, reduce, reducescatter };

const char* kind_name(uint32_t k) {
  constexpr const char* names[] = {"?",       "sync/barrier", "broadcast", "fcollect",
                                   "collect", "alltoall",     "reduce",    "reducescatter"};
  return k < std::size(names) ? names[k] : "?";
}

/// One PE's description of its current collective call, in its team_sync post buffer.
struct post_record {
  uint64_t seq;
  uint32_t kind;
  int32_t root;
  uint64_t nelems;
  uint64_t elem_bytes;
  uint64_t dest_off;  // heap offset, or data-segment offset with kDataOffsetBit; kNoRange when not given
  uint64_t src_off;
  int32_t type;  // scalar kind << 8 | bytes for reductions, 0 otherwise
  int32_t op;
  int32_t err_code;  // this PE's local error (errc), 0 if none
  int32_t reserved;
  char err[168];
};
static_assert(sizeof(post_record) <= team_sync::kPostBytes);
static_assert(std::is_trivially_copyable_v<post_record>);

/// post_record's offset of an empty range (nothing to move). Never a real offset: heap offsets stay
/// below 2^46, data-segment offsets below 2^63 + 2^46.
constexpr uint64_t kNoRange = ~uint64_t{0};

/// "heap+N", "data+N" (a global/static variable) or "none".
std::string where(uint64_t off) {
  if (off == kNoRange) return "none";
  if ((off & kDataOffsetBit) != 0) return fmt::format("data+{}", off & ~kDataOffsetBit);
  return fmt::format("heap+{}", off);
}

std::string describe(const post_record& r) {
  std::string s = fmt::format("{}(nelems={}, elem_bytes={}", kind_name(r.kind), r.nelems, r.elem_bytes);
  if (r.kind == static_cast<uint32_t>(kind::broadcast)) s += fmt::format(", PE_root={}", r.root);
  if (r.op != 0) s += fmt::format(", op={}, type={:#x}", to_string(static_cast<reduce_op>(r.op)), r.type);
  if (r.kind != static_cast<uint32_t>(kind::sync))
    s += fmt::format(", dest={}, source={}", where(r.dest_off), where(r.src_off));
  return s + fmt::format(", collective #{} on the team)", r.seq);
}

size_t bytes_of(const char* call, const char* what, size_t nelems, size_t elem_bytes) {
  size_t total = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(nelems, elem_bytes, &total), call, "{}={} x {} bytes overflows size_t", what,
                  nelems, elem_bytes);
  return total;
}

/// One collective call on one team: the team, its members' sync blocks, the barrier and the agreement.
class session {
 public:
  session(const char* call, shoal_team_t handle)
      : call_(call),
        w_(coll_world::current(call)),
        lock_(w_.collective_mutex()),
        team_(w_.teams().lookup(call, "team", handle)),
        handle_(handle) {
    // Host heaps: members whose heap is mapped here are reached by loads and stores; the others
    // (proxy peers) through the transport's get and atomics on their sync words, at the same heap
    // offset. GPU heaps (teams with a proxy member, or not strided: see runs_on_gpu_kernels): the
    // CPU cannot load/store GPU memory, so every member, this PE included, is reached through the
    // transport (CUDA copies and one-thread atomic kernels on mapped heaps, the proxy otherwise).
    // SHOAL_TEST_COLL_WORDS_BY_TRANSPORT=1 (tests): host heaps too reach every member's words through
    // the transport, as GPU heaps must, so that the CPU suites run that path.
    static const bool by_transport = [] {
      const char* v = std::getenv("SHOAL_TEST_COLL_WORDS_BY_TRANSPORT");
      return v != nullptr && std::strcmp(v, "1") == 0;
    }();
    sync_off_ = w_.team_sync_offset(handle);
    peers_.resize(team_.members.size());
    for (size_t r = 0; r < peers_.size(); ++r) {
      const int pe = team_.members[r];
      peers_[r] = by_transport ? nullptr : w_.team_sync_of(pe, handle);  // nullptr on GPU heaps
      if (peers_[r] == nullptr && (sync_off_ == 0 || !w_.transport().accessible(pe)))
        SHOAL_THROW(errc::unsupported, call,
                    "team={} PE {} (PE {}) is reachable neither by load/store nor through the proxy transport", handle,
                    r, pe);
    }
    mine_ = peers_[team_.my_rank];
    SHOAL_ASSERT(mine_ != nullptr || by_transport || !w_.transport().direct());
    // Peers pull this PE's source as soon as it is posted: the caller's kernels that wrote it must be
    // done first (the same order as cudaMemcpy's, or the on-stream form's on the legacy stream).
    if (!w_.transport().direct()) wait_for_earlier_gpu_work(call);
  }

  coll_world& world() { return w_; }
  int n() const { return team_.n_pes(); }
  int rank() const { return team_.my_rank; }
  int pe_of(int r) const { return team_.members[r]; }
  const post_record& record(int r) const { return records_[r]; }

  /// Offset of a symmetric range (validated: the heap, or a global/static variable where those are
  /// symmetric, with kDataOffsetBit), or kNoRange for an empty one.
  uint64_t offset(const char* arg, const void* addr, size_t bytes, size_t align) {
    if (bytes == 0) return kNoRange;
    return w_.symmetric_offset(call_, arg, addr, bytes, align);
  }

  /// Steps 1-3 of the protocol (coll.hpp). `validate` fills `rec`'s fields or throws a local error,
  /// which is then reported on every member.
  template <class F>
  void enter(post_record rec, F&& validate, bool same_nelems = true, bool same_source = true) {
    std::exception_ptr local;
    try {
      validate(rec);
    } catch (const shoal::error& e) {
      local = std::current_exception();
      rec.err_code = static_cast<int32_t>(e.code());
      std::snprintf(rec.err, sizeof rec.err, "%s", e.what());
    }
    const uint64_t seq = bump_my_word(offsetof(team_sync, seq));
    rec.seq = seq;
    const size_t post_field = offsetof(team_sync, post) + (seq & 1) * team_sync::kPostBytes;
    if (mine_ != nullptr)
      std::memcpy(mine_->post[seq & 1], &rec, sizeof rec);
    else
      w_.transport().put(call_, w_.my_pe(), word_offset(post_field), &rec, sizeof rec);
    barrier();
    records_.resize(n());
    for (int r = 0; r < n(); ++r) {
      if (peers_[r] != nullptr)
        std::memcpy(&records_[r], peers_[r]->post[seq & 1], sizeof(post_record));
      else
        w_.transport().get(call_, &records_[r], pe_of(r), word_offset(post_field), sizeof(post_record));
    }
    for (int r = 0; r < n(); ++r) {
      const post_record& p = records_[r];
      if (p.err_code == 0) continue;
      if (r == rank()) std::rethrow_exception(local);
      SHOAL_THROW(static_cast<errc>(p.err_code), call_, "team={} PE {} (PE {}) failed, so every member does: {}",
                  handle_, r, pe_of(r), std::string_view(p.err, strnlen(p.err, sizeof p.err)));
    }
    const post_record& lead = records_[0];
    for (int r = 1; r < n(); ++r) {
      const post_record& p = records_[r];
      bool same = p.seq == lead.seq && p.kind == lead.kind && p.root == lead.root && p.elem_bytes == lead.elem_bytes &&
                  p.type == lead.type && p.op == lead.op && p.dest_off == lead.dest_off &&
                  (!same_nelems || p.nelems == lead.nelems) && (!same_source || p.src_off == lead.src_off);
      if (!same && (w_.check_collectives() || p.kind != lead.kind || p.seq != lead.seq))
        SHOAL_THROW(
            errc::mismatch, call_,
            "members of team={} disagree on a collective call: team PE 0 called {}, team PE {} (PE {}) called {}",
            handle_, describe(lead), r, pe_of(r), describe(p));
    }
  }

  /// Ends a collective whose last step reads peers' words, i.e. one that returns right after enter() (a sync, an
  /// empty transfer): on a team that can be destroyed, one more barrier, which reads only this PE's own words, so
  /// that no member leaves while another still reads its post. A member that leaves may destroy the team (a local
  /// act) and zero its words of the slot for a new team there (team layer: zero_free_slots), and a member still
  /// reading them saw a zeroed post, "?" (tests-sos shmem_team_reuse_teams at 4 PEs, a quarter of its runs).
  void leave_after_enter() {
    if (handle_ >= SHOAL_TEAM_WORLD && handle_ <= SHOALX_TEAM_NODE) return;
    if (handle_ == SHOALX_TEAM_SAME_MYPE_NODE) return;
    barrier();
  }

  /// Dissemination barrier over the team's members (same epoch scheme as the world's barrier).
  void barrier() {
    const uint64_t epoch = bump_my_word(offsetof(team_sync, epoch));
    int n = this->n(), me = rank();
    for (int round = 0, dist = 1; dist < n; ++round, dist <<= 1) {
      signal((me + dist) % n, round, epoch);
      backoff pause(w_.wait_timeout(), call_);
      while (my_round(round) < epoch) {
        if (!pause.pause()) {
          int from = (me - dist % n + n) % n;
          SHOAL_THROW(errc::timeout, call_,
                      "PE {} waited {} ms (SHOAL_WAIT_TIMEOUT) in barrier {} of team={} round {} for team PE {} (PE "
                      "{}), which has reached barrier {}; does every member make the same collective calls?",
                      w_.my_pe(), w_.wait_timeout().count(), epoch, handle_, round, from, pe_of(from), my_round(round));
        }
      }
    }
  }

  /// Copies `nbytes` at offset `off` (heap, or data segment with kDataOffsetBit) of team PE r into
  /// `dest` (through r's path: a copy from its mapped heap or data, or a get through the proxy).
  void pull(void* dest, int r, uint64_t off, size_t nbytes) const {
    w_.transport().get(call_, dest, pe_of(r), off, nbytes);
  }
  /// Address of offset `off` (heap, or data segment with kDataOffsetBit) on team PE r when that
  /// memory is mapped here, else nullptr.
  const char* mapped(int r, uint64_t off) const {
    if (!w_.transport().direct()) return nullptr;  // GPU memory: not for the CPU to read
    if ((off & kDataOffsetBit) != 0) {
      const char* data = w_.transport().data_of(pe_of(r));
      return data == nullptr ? nullptr : data + (off & ~kDataOffsetBit);
    }
    const char* base = w_.transport().base_of(pe_of(r));
    return base == nullptr ? nullptr : base + off;
  }

  /// dest = source, both in this PE's memory (symmetric or private; host or, on GPU heaps, GPU
  /// memory); the ranges may overlap.
  void copy_here(void* to, const void* from, size_t nbytes) const {
    if (to == from || nbytes == 0) return;
    if (w_.transport().direct()) {
      std::memmove(to, from, nbytes);
      return;
    }
    memory_ops& ops = w_.transport().ops();
    const auto t = reinterpret_cast<uintptr_t>(to), f = reinterpret_cast<uintptr_t>(from);
    if (t < f + nbytes && f < t + nbytes) {  // cudaMemcpy's ranges must not overlap: through the host
      std::vector<unsigned char> bounce(nbytes);
      ops.copy(bounce.data(), from, nbytes);
      ops.copy(to, bounce.data(), nbytes);
      return;
    }
    ops.copy(to, from, nbytes);
  }

 private:
  uint64_t word_offset(size_t field) const { return sync_off_ + field; }

  /// ++ of this PE's own counter `field` (team_sync::seq or epoch: written by this PE only).
  uint64_t bump_my_word(size_t field) {
    if (mine_ != nullptr) return ++*reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(mine_) + field);
    uint64_t value = 0;
    w_.transport().get(call_, &value, w_.my_pe(), word_offset(field), sizeof value);
    ++value;
    w_.transport().put(call_, w_.my_pe(), word_offset(field), &value, sizeof value);
    return value;
  }
  /// This PE's barrier word `round` (acquire: a member's writes before its signal are seen after).
  /// GPU heaps: a copy of the word, which the signal's atomic (kernel or owner-applied AMO) has
  /// completed in GPU memory before the signaller went on.
  uint64_t my_round(int round) {
    if (mine_ != nullptr) return std::atomic_ref<uint64_t>(mine_->barrier_round[round]).load(std::memory_order_acquire);
    uint64_t value = 0;
    w_.transport().get(call_, &value, w_.my_pe(),
                       word_offset(offsetof(team_sync, barrier_round) + round * sizeof(uint64_t)), sizeof value);
    return value;
  }

  /// Sets team PE r's barrier word `round` to `epoch`: a release store where its heap is mapped
  /// host memory, else an atomic set through the transport (ordered after this PE's earlier puts to
  /// r; complete at r on return: a synchronized one-thread kernel on a mapped GPU heap, an AMO the
  /// proxy waits for otherwise).
  void signal(int r, int round, uint64_t epoch) {
    if (peers_[r] != nullptr) {
      std::atomic_ref<uint64_t>(peers_[r]->barrier_round[round]).store(epoch, std::memory_order_release);
      return;
    }
    w_.transport().atomic(call_, pe_of(r), word_offset(offsetof(team_sync, barrier_round) + round * sizeof(uint64_t)),
                          amo_op::set, scalar_of<uint64_t>(), &epoch, nullptr, nullptr);
  }

  const char* call_;
  coll_world w_;
  std::lock_guard<std::mutex> lock_;
  team team_;
  shoal_team_t handle_;
  std::vector<team_sync*> peers_;  // nullptr for members reached through the proxy
  uint64_t sync_off_ = 0;          // heap offset of this team's team_sync block
  team_sync* mine_ = nullptr;      // nullptr on GPU heaps (every word through the transport)
  std::vector<post_record> records_;
};

post_record record_of(kind k) {
  post_record r{};
  r.kind = static_cast<uint32_t>(k);
  r.root = -1;
  r.dest_off = kNoRange;
  r.src_off = kNoRange;
  return r;
}

int32_t type_code(scalar t) { return static_cast<int32_t>(t.kind) << 8 | t.bytes; }

}  // namespace

void combine(scalar type, reduce_op op, void* d, const void* s, size_t n) {
  switch (type.kind) {
    case scalar_kind::signed_int:
      switch (type.bytes) {
        case 1:
          return combine_as<int8_t>(op, d, s, n);
        case 2:
          return combine_as<int16_t>(op, d, s, n);
        case 4:
          return combine_as<int32_t>(op, d, s, n);
        case 8:
          return combine_as<int64_t>(op, d, s, n);
      }
      break;
    case scalar_kind::unsigned_int:
      switch (type.bytes) {
        case 1:
          return combine_as<uint8_t>(op, d, s, n);
        case 2:
          return combine_as<uint16_t>(op, d, s, n);
        case 4:
          return combine_as<uint32_t>(op, d, s, n);
        case 8:
          return combine_as<uint64_t>(op, d, s, n);
      }
      break;
    case scalar_kind::floating:
      if (type.bytes == 2) return combine_16<half_to_float, float_to_half>(op, d, s, n);
      if (type.bytes == 4) return combine_as<float>(op, d, s, n);
      if (type.bytes == 8) return combine_as<double>(op, d, s, n);
      break;
    case scalar_kind::bfloat:
      if (type.bytes == 2) return combine_16<bfloat16_to_float, float_to_bfloat16>(op, d, s, n);
      break;
  }
  SHOAL_THROW(errc::internal, "reduce", "no reduction for a {}-byte scalar of kind {}", type.bytes,
              static_cast<int>(type.kind));
}

int sync(const char* call, shoal_team_t team, bool quiet) noexcept {
  if (runs_on_gpu_kernels(call, team)) return finish_blocking(call, sync_on_stream(call, team, quiet, nullptr, true));
  return run(call, [&] {
    session s(call, team);
    if (quiet) s.world().transport().quiet();
    s.enter(record_of(kind::sync), [](post_record&) {});
    s.leave_after_enter();
  });
}

int broadcast(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems, size_t elem_bytes,
              int root) noexcept {
  if (runs_on_gpu_kernels(call, team))
    return finish_blocking(call,
                           broadcast_on_stream(call, team, dest, source, nelems, elem_bytes, root, nullptr, true));
  return run(call, [&] {
    session s(call, team);
    size_t bytes = 0;
    s.enter(record_of(kind::broadcast), [&](post_record& r) {
      r.root = root;
      r.nelems = nelems;
      r.elem_bytes = elem_bytes;
      SHOAL_CHECK_ARG(root >= 0 && root < s.n(), call, "PE_root={} is out of range [0, {}) of team={}", root, s.n(),
                      team);
      bytes = bytes_of(call, "nelems", nelems, elem_bytes);
      r.dest_off = s.offset("dest", dest, bytes, elem_bytes);
      r.src_off = s.offset("source", source, bytes, elem_bytes);
    });
    if (bytes == 0) return s.leave_after_enter();
    // Every member pulls from the root (the root copies locally; OpenSHMEM 1.5 updates its dest too).
    if (s.rank() == root) {
      s.copy_here(dest, source, bytes);
    } else {
      s.pull(dest, root, s.record(root).src_off, bytes);
    }
    s.barrier();  // the root's source is no longer read
  });
}

int fcollect(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
             size_t elem_bytes) noexcept {
  if (runs_on_gpu_kernels(call, team))
    return finish_blocking(call, fcollect_on_stream(call, team, dest, source, nelems, elem_bytes, nullptr, true));
  return run(call, [&] {
    session s(call, team);
    size_t bytes = 0;
    s.enter(record_of(kind::fcollect), [&](post_record& r) {
      r.nelems = nelems;
      r.elem_bytes = elem_bytes;
      bytes = bytes_of(call, "nelems", nelems, elem_bytes);
      r.dest_off = s.offset("dest", dest, bytes_of(call, "nelems * n_pes(team)", bytes, s.n()), elem_bytes);
      r.src_off = s.offset("source", source, bytes, elem_bytes);
    });
    if (bytes == 0) return s.leave_after_enter();
    for (int j = 0; j < s.n(); ++j) {
      char* to = static_cast<char*>(dest) + j * bytes;
      if (j == s.rank())
        s.copy_here(to, source, bytes);
      else
        s.pull(to, j, s.record(j).src_off, bytes);
    }
    s.barrier();  // every source has been read
  });
}

int collect(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
            size_t elem_bytes) noexcept {
  if (runs_on_gpu_kernels(call, team)) return collect_on_gpu(call, team, dest, source, nelems, elem_bytes);
  return run(call, [&] {
    session s(call, team);
    s.enter(
        record_of(kind::collect),
        [&](post_record& r) {
          r.nelems = nelems;
          r.elem_bytes = elem_bytes;
          size_t bytes = bytes_of(call, "nelems", nelems, elem_bytes);
          r.src_off = s.offset("source", source, bytes, elem_bytes);
          // dest's size is known only once every member's nelems is: its offset is agreed here (where
          // it starts), its extent below.
          SHOAL_CHECK_ARG(bytes == 0 || dest != nullptr, call, "dest is null");
          r.dest_off = dest == nullptr ? kNoRange : s.world().symmetric_offset(call, "dest", dest, 0, elem_bytes);
        },
        /*same_nelems=*/false, /*same_source=*/false);
    // Every member saw the same sizes: the same total, the same offsets, the same dest check.
    std::vector<size_t> at(s.n() + 1, 0);
    for (int j = 0; j < s.n(); ++j) {
      size_t b = bytes_of(call, "nelems", s.record(j).nelems, elem_bytes);
      SHOAL_CHECK_ARG(!__builtin_add_overflow(at[j], b, &at[j + 1]), call, "the total of nelems overflows size_t");
    }
    size_t total = at[s.n()];
    if (total == 0) return s.leave_after_enter();
    s.world().symmetric_offset(call, "dest", dest, total, elem_bytes);
    for (int j = 0; j < s.n(); ++j) {
      size_t b = at[j + 1] - at[j];
      if (b == 0) continue;
      char* to = static_cast<char*>(dest) + at[j];
      if (j == s.rank())
        s.copy_here(to, source, b);
      else
        s.pull(to, j, s.record(j).src_off, b);
    }
    s.barrier();
  });
}

int alltoall(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
             size_t elem_bytes) noexcept {
  if (runs_on_gpu_kernels(call, team))
    return finish_blocking(call, alltoall_on_stream(call, team, dest, source, nelems, elem_bytes, nullptr, true));
  return run(call, [&] {
    session s(call, team);
    size_t bytes = 0;
    s.enter(record_of(kind::alltoall), [&](post_record& r) {
      r.nelems = nelems;
      r.elem_bytes = elem_bytes;
      bytes = bytes_of(call, "nelems", nelems, elem_bytes);
      size_t all = bytes_of(call, "nelems * n_pes(team)", bytes, s.n());
      r.dest_off = s.offset("dest", dest, all, elem_bytes);
      r.src_off = s.offset("source", source, all, elem_bytes);
    });
    if (bytes == 0) return s.leave_after_enter();
    // Block j of dest comes from block `rank` of team PE j's source.
    for (int j = 0; j < s.n(); ++j) {
      char* to = static_cast<char*>(dest) + j * bytes;
      if (j == s.rank())
        s.copy_here(to, static_cast<const char*>(source) + j * bytes, bytes);
      else
        s.pull(to, j, s.record(j).src_off + s.rank() * bytes, bytes);
    }
    s.barrier();
  });
}

namespace {

// Reduces block `block` (nreduce elements) of every member's source, in team-rank order (so every
// member gets bit-identical floating-point results), into a local buffer; after the closing barrier
// writes it to dest (which may alias source).
void reduce_blocks(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
                   reduce_op op, kind k) {
  session s(call, team);
  size_t bytes = 0;
  size_t block_of_mine = 0;
  s.enter(record_of(k), [&](post_record& r) {
    r.nelems = nreduce;
    r.elem_bytes = type.bytes;
    r.type = type_code(type);
    r.op = static_cast<int32_t>(op);
    bytes = bytes_of(call, "nreduce", nreduce, type.bytes);
    size_t src_bytes = k == kind::reduce ? bytes : bytes_of(call, "nreduce * n_pes(team)", bytes, s.n());
    r.dest_off = s.offset("dest", dest, bytes, type.bytes);
    r.src_off = s.offset("source", source, src_bytes, type.bytes);
  });
  if (bytes == 0) return s.leave_after_enter();
  if (k == kind::reducescatter) block_of_mine = static_cast<size_t>(s.rank()) * bytes;
  std::vector<unsigned char> acc(bytes);
  std::vector<unsigned char> fetched;  // a proxy member's block
  for (int j = 0; j < s.n(); ++j) {
    const uint64_t off = s.record(j).src_off + block_of_mine;
    if (j == 0) {
      s.pull(acc.data(), j, off, bytes);
      continue;
    }
    // Mapped members' sources are read in place (session checked memory_ops::direct); proxy
    // members' are fetched first.
    const char* from = s.mapped(j, off);
    if (from == nullptr) {
      fetched.resize(bytes);
      s.pull(fetched.data(), j, off, bytes);
      from = reinterpret_cast<const char*>(fetched.data());
    }
    combine(type, op, acc.data(), from, nreduce);
  }
  s.barrier();  // every source has been read: dest may now be written, even where it is a source
  s.copy_here(dest, acc.data(), bytes);
}

}  // namespace

int reduce(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
           reduce_op op) noexcept {
  if (runs_on_gpu_kernels(call, team))
    return finish_blocking(call, reduce_on_stream(call, team, dest, source, nreduce, type, op, nullptr, true));
  return run(call, [&] { reduce_blocks(call, team, dest, source, nreduce, type, op, kind::reduce); });
}

int reducescatter(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
                  reduce_op op) noexcept {
  if (runs_on_gpu_kernels(call, team))
    return finish_blocking(call, reducescatter_on_stream(call, team, dest, source, nreduce, type, op, nullptr, true));
  return run(call, [&] { reduce_blocks(call, team, dest, source, nreduce, type, op, kind::reducescatter); });
}

}  // namespace shoal::detail::coll
