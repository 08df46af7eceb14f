#include "runtime/memory.hpp"

#include <algorithm>
#include <bit>
#include <vector>

#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail {

symmetric_memory::symmetric_memory(bootstrap& boot, symmetric_heap& heap, peer_transport& transport,
                                   collective_sync& sync)
    : boot_(boot),
      heap_(heap),
      transport_(transport),
      sync_(sync),
      alloc_(std::make_unique<symmetric_allocator>(heap.reserve_bytes())) {}

char* symmetric_memory::reserve_block(uint64_t nbytes) {
  auto off = alloc_->allocate(nbytes, 256);
  if (!off || *off != 0)
    SHOAL_THROW(errc::internal, "shoal_init", "shoal's reserved block did not land at heap offset 0");
  heap_.grow_to(alloc_->high_water(), "shoal_init");
  transport_.heap_grown("shoal_init");
  transport_.ops().zero(heap_.base(), nbytes);
  return heap_.base();
}

uint64_t symmetric_memory::in_use_bytes() const {
  std::shared_lock lock(alloc_mutex_);
  return alloc_->bytes_in_use();
}

uint64_t symmetric_memory::check(std::string_view call, const char* arg, const void* addr, size_t nbytes,
                                 size_t align) const {
  SHOAL_CHECK_ARG(addr != nullptr, call, "{} is null", arg);
  int64_t off = heap_.offset_of(addr);
  if (off < 0) not_symmetric(call, arg, addr, false);
  SHOAL_CHECK_ARG(align <= 1 || reinterpret_cast<uintptr_t>(addr) % align == 0, call,
                  "{}={} is not aligned to {} bytes, as its type requires", arg, addr, align);
  std::shared_lock lock(alloc_mutex_);
  auto block = alloc_->find(static_cast<uint64_t>(off));
  SHOAL_CHECK_ARG(block.has_value(), call, "{}={} is not inside a live symmetric allocation (freed?)", arg, addr);
  uint64_t end = static_cast<uint64_t>(off) + nbytes;
  SHOAL_CHECK_ARG(nbytes <= block->num_bytes && end <= block->offset + block->num_bytes, call,
                  "{}={} + {} bytes runs {} bytes past the end of its {}-byte allocation", arg, addr, nbytes,
                  end - (block->offset + block->num_bytes), block->num_bytes);
  return static_cast<uint64_t>(off);
}

uint64_t symmetric_memory::check_rma(std::string_view call, const char* arg, const void* addr, size_t nbytes,
                                     size_t align) const {
  if (addr == nullptr || heap_.offset_of(addr) >= 0) [[likely]]
    return check(call, arg, addr, nbytes, align);
  const symmetric_data& data = transport_.data();
  const int64_t off = data.offset_of(addr);
  if (off < 0) not_symmetric(call, arg, addr, true);
  SHOAL_CHECK_ARG(align <= 1 || reinterpret_cast<uintptr_t>(addr) % align == 0, call,
                  "{}={} is not aligned to {} bytes, as its type requires", arg, addr, align);
  const uint64_t room = data.num_bytes() - static_cast<uint64_t>(off);
  SHOAL_CHECK_ARG(nbytes <= room, call,
                  "{}={} + {} bytes runs {} bytes past the end of the program's global and static variables (its "
                  "{}-byte data segment)",
                  arg, addr, nbytes, nbytes - room, data.num_bytes());
  return static_cast<uint64_t>(off) | kDataOffsetBit;
}

void symmetric_memory::not_symmetric(std::string_view call, const char* arg, const void* addr, bool rma) const {
  const symmetric_data& data = transport_.data();
  if (data.offset_of(addr) >= 0)
    SHOAL_THROW(errc::invalid_argument, call,
                "{}={} is a global/static variable: those are symmetric for the host calls, not for the on-stream "
                "call {} (allocate it with shoal_malloc)",
                arg, addr, call);
  std::string why;
  const data_segment_span program = find_program_data(&why);
  const auto a = reinterpret_cast<uintptr_t>(addr), start = reinterpret_cast<uintptr_t>(program.base);
  if (rma && program.base != nullptr && a >= start && a - start < program.num_bytes)
    SHOAL_THROW(errc::invalid_argument, call,
                "{}={} is a global/static variable, and those are not symmetric in this job: {} (allocate it with "
                "shoal_malloc)",
                arg, addr, data.why_not());
  SHOAL_THROW(errc::invalid_argument, call, "{}={} is not in the symmetric heap{} (allocate it with shoal_malloc)", arg,
              addr, rma ? " nor a global/static variable of the program" : "");
}

void* symmetric_memory::malloc(std::string_view call, size_t nbytes, size_t alignment, bool zero) {
  std::lock_guard lock(sync_.mutex());
  bool bad_align = alignment == 0 || !std::has_single_bit(alignment);
  bool too_big = nbytes > heap_.reserve_bytes();
  // Agree first (on the raw arguments), so a PE with bad input fails together with its peers.
  sync_.agree(call, collective_kind::alloc, fmt::format("{}(num_bytes={}, alignment={})", call, nbytes, alignment));
  SHOAL_CHECK_ARG(!bad_align, call, "alignment={} is not a power of two", alignment);
  SHOAL_CHECK_ARG(alignment <= heap_.base_alignment(), call,
                  "alignment={} exceeds the {}-byte alignment of every PE's heap base", alignment,
                  heap_.base_alignment());
  SHOAL_CHECK_ARG(!too_big, call, "num_bytes={} exceeds the heap reserve of {} bytes per PE (SHOAL_HEAP_RESERVE)",
                  nbytes, heap_.reserve_bytes());
  if (nbytes == 0) return nullptr;
  std::optional<uint64_t> off;
  {
    std::unique_lock alock(alloc_mutex_);
    off = alloc_->allocate(nbytes, std::max<size_t>(alignment, 16));
  }
  if (!off)
    SHOAL_THROW(errc::out_of_memory, call,
                "no room for num_bytes={} in the symmetric heap ({} of {} bytes in use; raise SHOAL_HEAP_RESERVE)",
                nbytes, in_use_bytes(), heap_.reserve_bytes());
  try {
    heap_.grow_to(alloc_->high_water(), call);
    transport_.heap_grown(call);
  } catch (...) {
    std::unique_lock alock(alloc_mutex_);
    alloc_->free(*off);
    throw;
  }
  char* p = heap_.base() + *off;
  if (zero) {
    transport_.ops().zero(p, nbytes);
    boot_.barrier(call);  // nobody writes into a peer's block before the peer has zeroed it
  }
  SHOAL_LOG(trace, heap, "{}({}) -> offset {}", call, nbytes, *off);
  return p;
}

void* symmetric_memory::realloc(std::string_view call, void* ptr, size_t nbytes) {
  if (ptr == nullptr) return malloc(call, nbytes, 16, false);
  if (nbytes == 0) {
    free(call, ptr);
    return nullptr;
  }
  std::lock_guard lock(sync_.mutex());
  int64_t off = heap_.offset_of(ptr);
  std::optional<symmetric_allocator::block> block;
  if (off >= 0) {
    std::shared_lock alock(alloc_mutex_);
    block = alloc_->find(static_cast<uint64_t>(off));
  }
  bool valid = block && block->offset == static_cast<uint64_t>(off);
  sync_.agree(call, collective_kind::resize,
              fmt::format("{}(ptr=+{}, num_bytes={}, valid={})", call, off, nbytes, valid));
  SHOAL_CHECK_ARG(valid, call, "ptr={} is not the start of a live symmetric allocation", ptr);
  std::optional<uint64_t> moved;
  {
    std::unique_lock alock(alloc_mutex_);
    if (alloc_->resize_in_place(block->offset, nbytes)) {
      moved = block->offset;
    } else {
      moved = alloc_->allocate(nbytes, 16);
    }
  }
  if (!moved) SHOAL_THROW(errc::out_of_memory, call, "no room for num_bytes={} in the symmetric heap", nbytes);
  heap_.grow_to(alloc_->high_water(), call);
  transport_.heap_grown(call);
  if (*moved != block->offset) {
    // Old and new blocks may overlap only when the new one starts lower; copy through a bounce
    // buffer then, since the GPU copy engines have no memmove.
    uint64_t keep = std::min<uint64_t>(block->num_bytes, nbytes);
    if (*moved + keep > block->offset && *moved < block->offset + keep) {
      std::vector<char> bounce(keep);
      transport_.ops().copy(bounce.data(), ptr, keep);
      transport_.ops().copy(heap_.base() + *moved, bounce.data(), keep);
    } else {
      transport_.ops().copy(heap_.base() + *moved, ptr, keep);
    }
    std::unique_lock alock(alloc_mutex_);
    alloc_->free(block->offset);
  }
  boot_.barrier(call);  // every PE has copied before anyone writes the new block
  return heap_.base() + *moved;
}

void symmetric_memory::free(std::string_view call, void* ptr) {
  std::lock_guard lock(sync_.mutex());
  int64_t off = ptr == nullptr ? -1 : heap_.offset_of(ptr);
  bool live = false;
  if (off >= 0) {
    std::shared_lock alock(alloc_mutex_);
    auto block = alloc_->find(static_cast<uint64_t>(off));
    live = block && block->offset == static_cast<uint64_t>(off) && off != 0;  // offset 0: shoal's sync words
  }
  sync_.agree(call, collective_kind::release,
              fmt::format("{}(ptr={})", call, ptr == nullptr ? std::string("null") : fmt::format("+{}", off)));
  if (ptr == nullptr) return;
  SHOAL_CHECK_ARG(off >= 0, call, "ptr={} is not in the symmetric heap", ptr);
  SHOAL_CHECK_ARG(live, call, "ptr={} is not the start of a live symmetric allocation (double free?)", ptr);
  std::unique_lock alock(alloc_mutex_);
  alloc_->free(static_cast<uint64_t>(off));
}

int64_t symmetric_memory::live_offset(const void* addr) const {
  if (addr == nullptr) return -1;
  const int64_t off = heap_.offset_of(addr);
  if (off < 0) return -1;
  // Only addresses inside a live allocation are symmetric (shoal's own reserved block excluded).
  std::shared_lock lock(alloc_mutex_);
  auto block = alloc_->find(static_cast<uint64_t>(off));
  return (!block || block->offset == 0) ? -1 : off;
}

void* symmetric_memory::ptr(const void* addr, int pe) const {
  if (pe < 0 || pe >= transport_.n_pes()) return nullptr;
  if (const int64_t data_off = transport_.data().offset_of(addr); data_off >= 0) {
    char* base = transport_.data_of(pe);
    return base == nullptr ? nullptr : base + data_off;
  }
  const int64_t off = live_offset(addr);
  if (off < 0) return nullptr;
  char* base = transport_.base_of(pe);
  if (base == nullptr) return nullptr;  // GPU heaps: an address for this PE's GPU (kernels), as nvshmem_ptr
  return base + off;
}

bool symmetric_memory::accessible(const void* addr, int pe) const {
  if (pe < 0 || pe >= transport_.n_pes()) return false;
  if (transport_.data().offset_of(addr) >= 0)  // mapped here, or registered with the proxy's engine
    return transport_.data_of(pe) != nullptr ||
           (transport_.path_to(pe) == peer_path::proxy && transport_.accessible(pe));
  return transport_.accessible(pe) && live_offset(addr) >= 0;
}

}  // namespace shoal::detail
