// Global and static variables as symmetric data objects (OpenSHMEM): the main program's writable data
// (.data, .bss) is moved in place onto a memfd, once per process, so that same-node PEs can map each
// other's copy the way they map heap chunks. Every PE runs the same program, so an address's offset
// in the segment names the same variable in every PE. Host-memory PEs only (docs/design.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/symmetric_heap.hpp"

namespace shoal::detail {

/// A range of this process's address space.
struct data_segment_span {
  char* base = nullptr;
  uint64_t num_bytes = 0;
};

/// The main program's writable data that can be shared (pure: reads the program headers, changes
/// nothing): the pages of its writable PT_LOAD segment after the RELRO part (which the dynamic linker
/// makes read-only) through the end of .bss. Empty, with the reason in `why_not`, when there is none
/// or more than one writable segment.
data_segment_span find_program_data(std::string* why_not);

/// The outcome of share_program_data.
struct shared_data_segment {
  data_segment_span span;  ///< the program's own data, now MAP_SHARED over `fd`; empty when not shared
  int fd = -1;             ///< the memfd (close-on-exec), open while the process lives; -1 when not shared
  std::string why_not;     ///< when not shared: why (logged, and quoted by errors on global addresses)
};

/// Process-wide, thread-safe, done once: copies the main program's data (find_program_data) into a
/// memfd and maps the memfd MAP_SHARED|MAP_FIXED over the same range with the same protection, so
/// that the variables keep their addresses and values. A write to a global by another thread while
/// the copy runs is lost: call it (shoal_init does) before the program starts threads that write
/// globals. Never undone while the process lives (its data cannot be unmapped); a forked child gets
/// a private copy back (a pthread_atfork handler), so it never shares its parent's globals. Never
/// throws: on failure the program's data is as before and `why_not` says why.
const shared_data_segment& share_program_data();

/// One world's view of every same-node PE's data segment: its own (the program's data) and each
/// peer's copy mapped somewhere in this process. Addresses map through the offset in the segment.
class symmetric_data {
 public:
  /// Collective over every PE of `boot` (which `heap` uses). `wanted`: this PE shares its data
  /// (SHOAL_SYMMETRIC_DATA=1 and a host heap); else `why_not` says why. When any PE cannot share
  /// (or PEs run different programs), every PE goes on without it, each able to say why (why_not());
  /// throws only when the bootstrap or the fd exchange itself fails, on every PE.
  symmetric_data(bootstrap& boot, symmetric_heap& heap, bool wanted, std::string why_not);
  ~symmetric_data();  ///< unmaps the peers' copies (never the program's own data); not collective
  symmetric_data(const symmetric_data&) = delete;
  symmetric_data& operator=(const symmetric_data&) = delete;

  bool enabled() const { return own_ != nullptr; }
  /// Offset of `p` in this PE's data segment when it lies inside it, else -1 (also when disabled).
  int64_t offset_of(const void* p) const {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    const uintptr_t start = reinterpret_cast<uintptr_t>(own_);
    if (own_ == nullptr || addr < start || addr - start >= num_bytes_) return -1;
    return static_cast<int64_t>(addr - start);
  }
  /// PE's data segment in this process (this PE: the program's own), or nullptr when it is not
  /// mapped here (another node, or disabled).
  char* data_of(int pe) const;
  /// This PE's data segment: (local base, length) in bytes; {nullptr, 0} when disabled. What a
  /// transport that registers memory (the UCX proxy) registers beside the heap.
  data_segment_span local_span() const { return {own_, own_ == nullptr ? 0 : num_bytes_}; }
  uint64_t num_bytes() const { return num_bytes_; }
  /// Why global and static variables are not symmetric in this world ("" when enabled).
  const std::string& why_not() const { return why_not_; }

 private:
  void unmap_peers() noexcept;

  const node_map& nodes_;
  char* own_ = nullptr;
  uint64_t num_bytes_ = 0;
  std::vector<char*> by_local_;  // [local index]: that PE's segment here; own_ for this PE
  std::string why_not_;
};

}  // namespace shoal::detail
