#include "heap/allocator.hpp"

#include <iterator>

#include "common/check.hpp"

namespace shoal::detail {

namespace {

bool is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Bytes to skip from `offset` to the next multiple of `alignment` (a power of two). Computed without
// forming offset + alignment - 1, which could wrap for offsets near the top of a huge capacity.
uint64_t padding_to(uint64_t offset, uint64_t alignment) { return (0 - offset) & (alignment - 1); }

}  // namespace

symmetric_allocator::symmetric_allocator(uint64_t capacity_bytes) : capacity_(capacity_bytes) {
  if (capacity_ > 0) holes_.emplace(0, capacity_);
}

std::optional<uint64_t> symmetric_allocator::allocate(uint64_t num_bytes, uint64_t alignment) {
  // The runtime validates user arguments; reaching here with bad ones is a shoal bug. Release builds
  // still refuse rather than corrupt the bookkeeping.
  SHOAL_ASSERT(num_bytes > 0);
  SHOAL_ASSERT(is_power_of_two(alignment));
  if (num_bytes == 0 || !is_power_of_two(alignment) || num_bytes > capacity_) return std::nullopt;

  // Linear in the number of holes; allocations are collective host calls, so holes stay few and
  // a size-indexed tree would only buy speed at the cost of the simple first-fit rule.
  for (auto it = holes_.begin(); it != holes_.end(); ++it) {
    const uint64_t hole_offset = it->first;
    const uint64_t hole_bytes = it->second;
    const uint64_t pad = padding_to(hole_offset, alignment);
    if (pad >= hole_bytes || hole_bytes - pad < num_bytes) continue;

    const uint64_t offset = hole_offset + pad;
    const uint64_t tail_bytes = hole_bytes - pad - num_bytes;
    holes_.erase(it);
    if (pad > 0) holes_.emplace(hole_offset, pad);
    if (tail_bytes > 0) holes_.emplace(offset + num_bytes, tail_bytes);
    live_.emplace(offset, num_bytes);
    in_use_ += num_bytes;
    return offset;
  }
  return std::nullopt;
}

void symmetric_allocator::insert_hole(uint64_t offset, uint64_t num_bytes) {
  SHOAL_ASSERT(num_bytes > 0);
  auto next = holes_.lower_bound(offset);
  // Merge with the hole that ends exactly here...
  if (next != holes_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      num_bytes += prev->second;
      holes_.erase(prev);
    }
  }
  // ...and with the one that starts exactly after, so holes never touch (first fit then sees the
  // largest possible holes, and the layout depends only on the live set, not on the free order).
  if (next != holes_.end() && offset + num_bytes == next->first) {
    num_bytes += next->second;
    holes_.erase(next);
  }
  holes_.emplace(offset, num_bytes);
}

std::optional<uint64_t> symmetric_allocator::free(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return std::nullopt;
  const uint64_t num_bytes = it->second;
  live_.erase(it);
  in_use_ -= num_bytes;
  insert_hole(offset, num_bytes);
  return num_bytes;
}

std::optional<uint64_t> symmetric_allocator::resize_in_place(uint64_t offset, uint64_t new_num_bytes) {
  auto it = live_.find(offset);
  if (it == live_.end() || new_num_bytes == 0) return std::nullopt;
  const uint64_t old_num_bytes = it->second;
  if (new_num_bytes == old_num_bytes) return old_num_bytes;

  if (new_num_bytes < old_num_bytes) {
    it->second = new_num_bytes;
    in_use_ -= old_num_bytes - new_num_bytes;
    insert_hole(offset + new_num_bytes, old_num_bytes - new_num_bytes);
    return old_num_bytes;
  }

  // Growing needs the hole that starts right at our end to cover the extra bytes. Live blocks lie
  // inside [0, capacity), so end cannot wrap; `extra` is compared against the hole, never added.
  const uint64_t end = offset + old_num_bytes;
  const uint64_t extra = new_num_bytes - old_num_bytes;
  auto hole = holes_.find(end);
  if (hole == holes_.end() || hole->second < extra) return std::nullopt;
  const uint64_t rest = hole->second - extra;
  holes_.erase(hole);
  if (rest > 0) holes_.emplace(end + extra, rest);
  it->second = new_num_bytes;
  in_use_ += extra;
  return old_num_bytes;
}

std::optional<symmetric_allocator::block> symmetric_allocator::find(uint64_t offset) const {
  auto it = live_.upper_bound(offset);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (offset - it->first >= it->second) return std::nullopt;
  return block{it->first, it->second};
}

uint64_t symmetric_allocator::high_water() const {
  if (live_.empty()) return 0;
  const auto& [offset, num_bytes] = *live_.rbegin();
  return offset + num_bytes;
}

}  // namespace shoal::detail
