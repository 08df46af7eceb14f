// The symmetric heap's allocations: the collective malloc/realloc/free (agreed across PEs, so bad
// input fails on every PE together), shoal_ptr, and the symmetric-range check every RMA, atomic and
// collective call makes on its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string_view>

#include "bootstrap/bootstrap.hpp"
#include "heap/allocator.hpp"
#include "heap/symmetric_heap.hpp"
#include "runtime/sync.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

class symmetric_memory {
 public:
  symmetric_memory(bootstrap& boot, symmetric_heap& heap, peer_transport& transport, collective_sync& sync);

  /// Init only, before any other allocation: shoal's reserved block of `nbytes` at heap offset 0
  /// (so at the same offset on every PE), zero-filled. Returns its address.
  char* reserve_block(uint64_t nbytes);

  // collective (every PE, same arguments)
  void* malloc(std::string_view call, size_t nbytes, size_t alignment, bool zero);
  void* realloc(std::string_view call, void* ptr, size_t nbytes);
  void free(std::string_view call, void* ptr);
  /// `addr` on `pe` in this process, when it is symmetric (heap or global) and `pe`'s memory is
  /// load/store-mapped; else null.
  void* ptr(const void* addr, int pe) const;
  /// addr is in a live symmetric allocation and pe is reachable by RMA (any path, the proxy too), or
  /// addr is a symmetric global/static variable and pe's copy is load/store-mapped here.
  bool accessible(const void* addr, int pe) const;

  /// Validates that [addr, addr+nbytes) lies inside one live allocation and is aligned to `align`;
  /// returns its heap offset. Errors name `call` and the argument `arg`. For the calls that take heap
  /// memory only (the *_on_stream family).
  uint64_t check(std::string_view call, const char* arg, const void* addr, size_t nbytes, size_t align) const;
  /// check() for the host calls that also take global and static variables (RMA, atomics, signals,
  /// waits, the blocking collectives): an address in the program's data segment (when shared:
  /// transport().data()) gives its segment offset with kDataOffsetBit set, once [addr, addr+nbytes) is
  /// inside the segment and aligned. Heap addresses cost what check() costs.
  uint64_t check_rma(std::string_view call, const char* arg, const void* addr, size_t nbytes, size_t align) const;
  uint64_t in_use_bytes() const;
  symmetric_heap& heap() { return heap_; }

 private:
  /// addr's heap offset when it is inside a live allocation (not the reserved block), else -1.
  int64_t live_offset(const void* addr) const;
  /// Throws the invalid_argument error for `addr` (not null) outside the heap: a global or static
  /// variable where globals are not symmetric (saying why), or memory that is not symmetric at all.
  [[noreturn]] void not_symmetric(std::string_view call, const char* arg, const void* addr, bool rma) const;
  bootstrap& boot_;
  symmetric_heap& heap_;
  peer_transport& transport_;
  collective_sync& sync_;
  mutable std::shared_mutex alloc_mutex_;  // writers: malloc/free; readers: every RMA check
  std::unique_ptr<symmetric_allocator> alloc_;
};

}  // namespace shoal::detail
