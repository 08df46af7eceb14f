// The world's state and the one implementation of every host-API family. The C++ `shoal::world`
// and the generated C facade both call into here with the public call's name, so every error
// names the call the user made.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/allocator.hpp"
#include "heap/symmetric_heap.hpp"
#include "shoal/device_world.hpp"
#include "shoal/world.hpp"
#include "team/team.hpp"
#include "transport/scalar.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

/// One team slot's host synchronization words (per PE, in sync_area::teams). Used by the host team
/// collectives (src/coll); world_impl only zeroes the slots this PE is not a member of before every
/// team split, so a team made in a reused slot starts from zero on every member.
struct team_sync {
  static constexpr int kMaxRounds = 32;
  static constexpr size_t kPostBytes = 256;
  /// Dissemination barrier of the team: round r written (release) by the team PE 2^r ranks below.
  uint64_t barrier_round[kMaxRounds];
  uint64_t epoch;  ///< barriers this PE has entered on this team (written by this PE only)
  uint64_t seq;    ///< collectives this PE has entered on this team (written by this PE only)
  /// This PE's description of its current collective, by seq parity; read by the team's peers.
  alignas(64) unsigned char post[2][kPostBytes];
};

/// Shoal's own words at the start of every PE's heap (allocated first, so at the same offset on
/// every PE). Written by peers with host atomics, read by the owner.
struct sync_area {
  static constexpr int kMaxRounds = 32;
  /// barrier_all / sync_all (dissemination): word r is written by PE (me - 2^r) mod n with the
  /// barrier epoch it has reached (release store); read (acquire) by this PE, which waits until
  /// it is >= its own epoch. Epochs only grow, so nothing is ever reset.
  uint64_t barrier_round[kMaxRounds];
  /// The collective this PE is in: (sequence number << 8) | kind, written (release) by this PE on
  /// entry to every collective, read by peers waiting in a barrier, so a PE in barrier_all while
  /// another is in shoal_malloc sees the mismatch instead of waiting out its timeout.
  uint64_t posted;
  /// Host team collectives: one block per team slot (team_sync).
  team_sync teams[SHOAL_MAX_TEAMS];
};

class world_impl {
 public:
  explicit world_impl(const init_options& options);
  ~world_impl();

  void finalize();
  bool finalized() const { return finalized_; }

  int my_pe() const { return my_pe_; }
  int n_pes() const { return n_pes_; }
  const char* backend_name() const { return heap_->backend().name(); }
  peer_path path_to(int pe) const { return transport_->path_to(pe); }
  symmetric_heap& heap() { return *heap_; }
  /// The handle kernels receive (valid for GPU heaps; for the host backend only my_pe/n_pes are set).
  const device_world& device_handle() const { return device_; }
  uint64_t heap_in_use_bytes() const;
  bootstrap& boot() { return *boot_; }
  /// The teams this PE belongs to (predefined ones made at init).
  team_table& teams() { return *teams_; }
  /// Collective over every PE: the team layer's all-gather for a split, posted as a collective so
  /// that a PE waiting in a barrier meanwhile reports the mismatch.
  void team_allgather(std::string_view call, const void* mine, void* all, size_t bytes_per_pe);

  // memory (collective)
  void* malloc(std::string_view call, size_t num_bytes, size_t alignment, bool zero);
  void* realloc(std::string_view call, void* ptr, size_t num_bytes);
  void free(std::string_view call, void* ptr);
  void* ptr(const void* addr, int pe) const;

  // RMA: `elem` gives the alignment the typed call requires (1 for *mem).
  void put(std::string_view call, void* dest, const void* source, size_t num_bytes, size_t elem_align, int pe);
  void get(std::string_view call, void* dest, const void* source, size_t num_bytes, size_t elem_align, int pe);
  void iput(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t num_elems, size_t elem_bytes, int pe);
  void iget(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t num_elems, size_t elem_bytes, int pe);

  // atomics: values are passed by pointer as `type`
  void atomic(std::string_view call, amo_op op, scalar type, void* dest, const void* operand, const void* compare_value,
              void* fetched, int pe);

  // signals
  void put_signal(std::string_view call, void* dest, const void* source, size_t num_bytes, size_t elem_align,
                  uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
  void signal_op(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
  uint64_t signal_fetch(std::string_view call, const uint64_t* sig_addr);
  /// Waits (bounded) until the local signal word compares true with `value`; returns the value seen.
  uint64_t signal_wait_until(std::string_view call, uint64_t* sig_addr, int cmp, uint64_t value);

  /// The wait/test family in one place. `ivars`: nelems local symmetric words of `type`;
  /// `status` (may be null): nonzero entries are excluded; `values`: one value, or nelems when
  /// `vector`. Returns: all → 0 / 1 (test: 1 if satisfied); any → the index satisfied, or SIZE_MAX;
  /// some → the number of indices written to `indices`.
  enum class wait_mode { all, any, some };
  size_t wait(std::string_view call, scalar type, void* ivars, size_t nelems, const int* status, size_t* indices,
              int cmp, const void* values, bool vector, wait_mode mode, bool test_only);

  // *_on_stream (GPU heaps only; `stream` is a cudaStream_t)
  void put_on_stream(std::string_view call, void* dest, const void* source, size_t num_bytes, int pe, void* stream);
  void get_on_stream(std::string_view call, void* dest, const void* source, size_t num_bytes, int pe, void* stream);
  void p_on_stream(std::string_view call, void* dest, uint64_t value_bits, size_t value_bytes, int pe, void* stream);
  void signal_op_on_stream(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                           void* stream);
  void wait_until_on_stream(std::string_view call, void* ivar, scalar type, int cmp, uint64_t value_bits, void* stream);
  void quiet_on_stream(std::string_view call, void* stream);
  void barrier_all_on_stream(std::string_view call, void* stream);

  void fence(std::string_view call);
  void quiet(std::string_view call);
  void barrier_all(std::string_view call);
  void sync_all(std::string_view call);
  [[noreturn]] void global_exit(int status);

  // For the host team collectives (src/coll), which run on top of this class.
  /// Validates a symmetric range as the RMA calls do (errors name `call` and `arg`); returns its heap offset.
  uint64_t symmetric_offset(std::string_view call, const char* arg, const void* addr, size_t num_bytes,
                            size_t align) const {
    return check_symmetric(call, arg, addr, num_bytes, align);
  }
  /// How bytes and atomics reach each PE (the per-peer path table and its operations).
  peer_transport& transport() { return *transport_; }
  /// `pe`'s team_sync block of team slot `slot`; nullptr when that heap is not CPU-addressable here.
  team_sync* team_sync_of(int pe, int slot) const;
  std::chrono::milliseconds wait_timeout() const { return wait_timeout_; }
  bool check_collectives() const { return check_collectives_; }
  /// Held for the whole of every collective call.
  std::mutex& collective_mutex() { return collective_mutex_; }

 private:
  struct checked_range {
    uint64_t offset;  // in the symmetric heap
  };
  void check_pe(std::string_view call, int pe) const;
  void check_gpu_heap(std::string_view call) const;
  /// Validates that [addr, addr+num_bytes) lies inside one live allocation and is aligned to
  /// `align`; returns its heap offset. `arg` names the argument in errors.
  uint64_t check_symmetric(std::string_view call, const char* arg, const void* addr, size_t num_bytes,
                           size_t align) const;
  void check_sig_op(std::string_view call, int sig_op) const;
  void dissemination_barrier(std::string_view call);
  /// Shoal's reserved block at heap offset 0: host sync words (host backend) or the device sync
  /// words plus the PE -> local-index table (GPU backends).
  void setup_reserved_block();

 public:
  /// Writes every team slot's device handle into the device team table (device_world::teams) after
  /// teams are created or destroyed. No-op on host-memory heaps.
  void publish_device_teams();

 private:
  /// Kinds of collective calls, for the posted word (sync_area::posted).
  enum class collective_kind : uint8_t { alloc = 1, release = 2, resize = 3, barrier = 4, team = 5 };
  /// Counts and publishes this PE's entry into a collective (host backend: in its sync words).
  void post(collective_kind kind);
  /// Slow path of a barrier wait: if a peer is in a different collective at the same sequence
  /// number, joins the bootstrap round with this call's name so that every PE gets errc::mismatch.
  void check_posted(std::string_view call);
  /// Exchanges a description of a collective call; throws errc::mismatch on every PE if any differ.
  void agree(std::string_view call, collective_kind kind, const std::string& args);

  int my_pe_ = -1;
  int n_pes_ = 0;
  bool finalized_ = false;
  std::unique_ptr<bootstrap> boot_;
  std::unique_ptr<symmetric_heap> heap_;
  std::unique_ptr<peer_transport> transport_;  // the path to every PE, and how host operations take it
  device_world device_;
  mutable std::shared_mutex alloc_mutex_;  // writers: malloc/free; readers: every RMA check
  std::unique_ptr<symmetric_allocator> alloc_;
  std::unique_ptr<team_table> teams_;
  std::mutex collective_mutex_;  // collectives are not concurrent (OpenSHMEM), but don't corrupt if they are
  sync_area* sync_ = nullptr;    // this PE's host sync words (in its heap; host backend only)
  uint64_t barrier_epoch_ = 0;
  uint64_t collective_seq_ = 0;  // collectives entered by this PE (all kinds)
  collective_kind current_kind_ = collective_kind::barrier;
  bool check_collectives_ = true;
  std::chrono::milliseconds wait_timeout_{0};
};

}  // namespace shoal::detail
