// Deterministic allocator over offsets of the symmetric heap. Pure bookkeeping (no memory is
// touched): the same sequence of calls gives the same offsets on every PE, which is what makes
// the heap symmetric. First fit over an ordered free list, coalescing on free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace shoal::detail {

class symmetric_allocator {
 public:
  /// Offsets handed out lie in [0, capacity_bytes).
  explicit symmetric_allocator(uint64_t capacity_bytes);

  /// Lowest-addressed fit of `num_bytes` (>0) at a multiple of `alignment` (a power of two).
  /// nullopt when no hole fits.
  std::optional<uint64_t> allocate(uint64_t num_bytes, uint64_t alignment);
  /// Frees the allocation that starts at `offset`; returns its size. nullopt (and nothing changes)
  /// when `offset` is not the start of a live allocation (double free, interior or foreign pointer).
  std::optional<uint64_t> free(uint64_t offset);
  /// Grows or shrinks in place when the following hole allows; nullopt when it does not (the
  /// caller then allocates, copies and frees). `offset` must be a live allocation start (else
  /// nullopt); `new_num_bytes` must be > 0 (else nullopt). Returns the previous size on success.
  std::optional<uint64_t> resize_in_place(uint64_t offset, uint64_t new_num_bytes);

  struct block {
    uint64_t offset;
    uint64_t num_bytes;
  };
  /// The live allocation containing `offset`, if any. O(log n).
  std::optional<block> find(uint64_t offset) const;
  /// One past the end of the highest live allocation: the heap must be backed up to here.
  uint64_t high_water() const;
  uint64_t bytes_in_use() const { return in_use_; }
  uint64_t capacity() const { return capacity_; }
  size_t num_allocations() const { return live_.size(); }

 private:
  uint64_t capacity_;
  uint64_t in_use_ = 0;
  std::map<uint64_t, uint64_t> live_;   // offset -> size
  std::map<uint64_t, uint64_t> holes_;  // offset -> size, coalesced

  // Returns [offset, offset + num_bytes) to holes_, merging with the neighbours it touches.
  void insert_hole(uint64_t offset, uint64_t num_bytes);
};

}  // namespace shoal::detail
