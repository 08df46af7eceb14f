#include "runtime/world_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <map>

#include "bootstrap/launch_env.hpp"
#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "heap/cuda_backend.hpp"
#include "runtime/registry.hpp"
#include "runtime/wait.hpp"
#include "shoal/detail/coll_ws.hpp"
#include "shoal/device_team.hpp"

namespace shoal::detail {

namespace {

std::unique_ptr<chunk_backend> choose_backend(const std::string& requested) {
  std::string name = requested.empty() ? env::get_string("SHOAL_BACKEND") : requested;
  if (name == "auto") name = cuda_usable() ? "cuda" : "host";
  if (name == "host") return make_host_backend();
  if (name == "cuda") return make_cuda_backend("shoal_init");
  SHOAL_THROW(errc::invalid_argument, "shoal_init", "backend '{}' is not one of auto, host, cuda (SHOAL_BACKEND)",
              name);
}

// Called on the monitor thread when the job must stop: another PE died or went silent, or some
// PE called global_exit. Nothing can be unwound safely from here, so report and leave.
void stop_process(int status, const std::string& why) {
  std::fflush(stdout);
  std::string line = fmt::format("shoal: stopping this PE: {}\n", why);
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(status);
}

bootstrap_options options_for(const init_options& options) {
  bootstrap_options boot;
  if (options.rank >= 0 || options.size >= 0 || !options.unique_id.empty()) {
    SHOAL_CHECK_ARG(options.size >= 1, "shoal_init_attr", "size={} must be at least 1", options.size);
    SHOAL_CHECK_ARG(options.rank >= 0 && options.rank < options.size, "shoal_init_attr",
                    "rank={} is out of range [0, {})", options.rank, options.size);
    SHOAL_CHECK_ARG(!options.unique_id.empty() || options.size == 1, "shoal_init_attr",
                    "unique_id is empty; make one with shoal_get_uniqueid on one PE and pass it to all");
    boot.rank = options.rank;
    boot.size = options.size;
    if (options.unique_id.empty()) {
      boot.uid = unique_id::parse(make_unique_id("127.0.0.1"), "unique_id");
    } else {
      boot.uid = unique_id::parse(options.unique_id, "unique_id");
    }
    if (boot.rank == 0) boot.listen_fd = take_listener(boot.uid);
  } else {
    boot = resolve_bootstrap(detect_launch_env());
  }
  boot.connect_timeout = env::get_ms("SHOAL_BOOTSTRAP_TIMEOUT");
  boot.peer_timeout = env::get_ms("SHOAL_PEER_TIMEOUT");
  return boot;
}

}  // namespace

world_impl::world_impl(const init_options& options) {
  log::configure();
  check_collectives_ = env::get_bool("SHOAL_CHECK_COLLECTIVES");
  wait_timeout_ = env::get_ms("SHOAL_WAIT_TIMEOUT");
  auto backend = choose_backend(options.backend);  // before the rendezvous: a bad name fails alone

  auto start = std::chrono::steady_clock::now();
  boot_ = bootstrap::connect(options_for(options), stop_process);
  my_pe_ = boot_->rank();
  n_pes_ = boot_->size();
  log::set_pe(my_pe_);

  uint64_t reserve = options.heap_reserve_bytes != 0 ? options.heap_reserve_bytes : env::get_size("SHOAL_HEAP_RESERVE");
  SHOAL_CHECK_ARG(reserve >= (1u << 20), "shoal_init", "heap reserve of {} bytes is below the 1 MiB minimum", reserve);
  uint64_t chunk = std::max<uint64_t>(env::get_size("SHOAL_HEAP_CHUNK"), backend->granularity());
  node_map nodes = node_map::discover(*boot_);
  std::vector<peer_path> paths = peer_transport::discover(*boot_, *backend, nodes);
  heap_ = std::make_unique<symmetric_heap>(*boot_, std::move(nodes), std::move(backend), reserve, chunk);
  alloc_ = std::make_unique<symmetric_allocator>(heap_->reserve_bytes());
  transport_ = std::make_unique<peer_transport>(*heap_, std::move(paths));
  setup_reserved_block();
  std::vector<int32_t> shared;
  for (int pe : heap_->nodes().pe_of_local)
    if (transport_->reachable(pe)) shared.push_back(pe);
  teams_ = std::make_unique<team_table>(
      my_pe_, n_pes_, std::vector<int32_t>(heap_->nodes().pe_of_local.begin(), heap_->nodes().pe_of_local.end()),
      std::move(shared));
  publish_device_teams();
  boot_->barrier("shoal_init");

  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  SHOAL_LOG(info, init, "PE {}/{} ready in {:.1f} ms: backend {}, heap reserve {} MiB per PE, {} PE(s) on this node",
            my_pe_, n_pes_, ms, heap_->backend().name(), heap_->reserve_bytes() >> 20,
            heap_->nodes().pe_of_local.size());
  for (int pe = 0; pe < n_pes_; ++pe)
    SHOAL_LOG(info, transport, "PE {} -> PE {}: {}", my_pe_, pe, to_string(path_to(pe)));
}

void world_impl::setup_reserved_block() {
  // Allocated first, so it sits at offset 0 on every PE. GPU heaps: device_sync, the local-index
  // table, the per-PE path table, the device team table, then the collective workspace
  // (include/shoal/detail/coll_ws.hpp).
  const bool gpu = !transport_->direct();
  const auto n_local = static_cast<int32_t>(heap_->nodes().pe_of_local.size());
  const auto ll_bytes = static_cast<uint32_t>(coll_ws::round_up(env::get_size("SHOAL_COLL_LL_BYTES"), 8));
  const auto channels = static_cast<uint32_t>(env::get_int("SHOAL_COLL_CHANNELS"));
  SHOAL_CHECK_ARG(ll_bytes <= (1u << 20), "shoal_init", "SHOAL_COLL_LL_BYTES={} is above the 1 MiB maximum", ll_bytes);
  SHOAL_CHECK_ARG(channels >= 1 && channels <= 1024, "shoal_init", "SHOAL_COLL_CHANNELS={} is not in 1..1024",
                  channels);
  const uint64_t table_offset = coll_ws::round_up(sizeof(device_sync), 256);
  const uint64_t paths_offset = coll_ws::round_up(table_offset + sizeof(int32_t) * n_pes_, 256);
  const uint64_t teams_offset = coll_ws::round_up(paths_offset + sizeof(peer_path) * n_pes_, 256);
  const uint64_t coll_offset = coll_ws::round_up(teams_offset + sizeof(device_team) * SHOAL_MAX_TEAMS, 256);
  const uint64_t bytes = gpu ? coll_offset + coll_ws::total_bytes(n_local, channels, ll_bytes) : sizeof(sync_area);
  auto off = alloc_->allocate(bytes, 256);
  if (!off || *off != 0)
    SHOAL_THROW(errc::internal, "shoal_init", "shoal's reserved block did not land at heap offset 0");
  heap_->grow_to(alloc_->high_water(), "shoal_init");
  transport_->ops().zero(heap_->base(), bytes);

  device_.my_pe = my_pe_;
  device_.n_pes = n_pes_;
  if (!gpu) {
    sync_ = reinterpret_cast<sync_area*>(heap_->base());
    return;
  }
  device_.heap_base = heap_->base();
  device_.region = heap_->heap_of_local(0);
  device_.stride = heap_->stride();
  device_.sync_offset = 0;
  device_.wait_timeout_ns = static_cast<uint64_t>(wait_timeout_.count()) * 1'000'000;
  device_.teams = reinterpret_cast<const device_team*>(heap_->base() + teams_offset);
  device_.max_teams = SHOAL_MAX_TEAMS;
  device_.n_local = n_local;
  device_.coll_offset = coll_offset;
  device_.coll_channels = channels;
  device_.coll_ll_bytes = ll_bytes;
  const std::string algo = env::get_string("SHOAL_COLL_ALGO");
  SHOAL_CHECK_ARG(algo == "auto" || algo == "ll" || algo == "direct" || algo == "ce", "shoal_init",
                  "SHOAL_COLL_ALGO={} is not auto, ll, direct or ce", algo);
  if (algo == "direct") device_.flags |= 1u;  // device/coll.cuh kFlagCollDirect
  // The identity table (nullptr) when every PE is local with local index == pe; else a real one.
  std::vector<int32_t> local(n_pes_);
  bool identity = true;
  for (int pe = 0; pe < n_pes_; ++pe) {
    local[pe] = transport_->reachable(pe) ? heap_->nodes().local_of_pe[pe] : -1;
    identity &= local[pe] == pe;
  }
  if (!identity) {
    char* table = heap_->base() + table_offset;
    transport_->ops().copy(table, local.data(), sizeof(int32_t) * n_pes_);
    device_.local_of_pe = reinterpret_cast<const int32_t*>(table);
  }
  // The path table stays nullptr when every PE is load/store-reachable (no extra load in kernels).
  std::vector<peer_path> paths = transport_->device_table();
  if (!paths.empty()) {
    char* table = heap_->base() + paths_offset;
    transport_->ops().copy(table, paths.data(), sizeof(peer_path) * n_pes_);
    device_.path_of_pe = reinterpret_cast<const peer_path*>(table);
  }
}

void world_impl::publish_device_teams() {
  if (device_.teams == nullptr) return;
  std::array<device_team, SHOAL_MAX_TEAMS> table{};
  for (int slot = 0; slot < SHOAL_MAX_TEAMS; ++slot) {
    if (!teams_->live(slot)) continue;
    try {
      table[slot] = teams_->device_handle("shoal_team_split", slot);
    } catch (const error&) {
      table[slot] = device_team{};  // not strided: no device handle (team_of traps on it)
    }
  }
  transport_->ops().copy(const_cast<device_team*>(device_.teams), table.data(), sizeof(table));
}

world_impl::~world_impl() {
  if (!finalized_) {
    try {
      finalize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shoal: finalize during world teardown failed: %s\n", e.what());
    }
  }
}

void world_impl::finalize() {
  if (finalized_) return;
  std::lock_guard lock(collective_mutex_);
  finalized_ = true;
  boot_->barrier("shoal_finalize");
  transport_.reset();
  heap_.reset();
  boot_->finalize();
}

team_sync* world_impl::team_sync_of(int pe, int slot) const {
  if (!transport_->direct()) return nullptr;
  char* base = transport_->base_of(pe);
  if (base == nullptr) return nullptr;
  return &reinterpret_cast<sync_area*>(base)->teams[slot];
}

uint64_t world_impl::heap_in_use_bytes() const {
  std::shared_lock lock(alloc_mutex_);
  return alloc_->bytes_in_use();
}

// ---------------------------------------------------------------------------------------------
// validation

void world_impl::check_pe(std::string_view call, int pe) const {
  SHOAL_CHECK_ARG(pe >= 0 && pe < n_pes_, call, "pe={} is out of range [0, {})", pe, n_pes_);
}

uint64_t world_impl::check_symmetric(std::string_view call, const char* arg, const void* addr, size_t num_bytes,
                                     size_t align) const {
  SHOAL_CHECK_ARG(addr != nullptr, call, "{} is null", arg);
  int64_t off = heap_->offset_of(addr);
  SHOAL_CHECK_ARG(off >= 0, call, "{}={} is not in the symmetric heap (allocate it with shoal_malloc)", arg, addr);
  SHOAL_CHECK_ARG(align <= 1 || reinterpret_cast<uintptr_t>(addr) % align == 0, call,
                  "{}={} is not aligned to {} bytes, as its type requires", arg, addr, align);
  std::shared_lock lock(alloc_mutex_);
  auto block = alloc_->find(static_cast<uint64_t>(off));
  SHOAL_CHECK_ARG(block.has_value(), call, "{}={} is not inside a live symmetric allocation (freed?)", arg, addr);
  uint64_t end = static_cast<uint64_t>(off) + num_bytes;
  SHOAL_CHECK_ARG(num_bytes <= block->num_bytes && end <= block->offset + block->num_bytes, call,
                  "{}={} + {} bytes runs {} bytes past the end of its {}-byte allocation", arg, addr, num_bytes,
                  end - (block->offset + block->num_bytes), block->num_bytes);
  return static_cast<uint64_t>(off);
}

void world_impl::check_sig_op(std::string_view call, int sig_op) const {
  SHOAL_CHECK_ARG(sig_op == SHOAL_SIGNAL_SET || sig_op == SHOAL_SIGNAL_ADD, call,
                  "sig_op={} is neither SHOAL_SIGNAL_SET nor SHOAL_SIGNAL_ADD", sig_op);
}

void world_impl::post(collective_kind kind) {
  ++collective_seq_;
  current_kind_ = kind;
  if (sync_ != nullptr)
    std::atomic_ref<uint64_t>(sync_->posted)
        .store(collective_seq_ << 8 | static_cast<uint64_t>(kind), std::memory_order_release);
}

void world_impl::check_posted(std::string_view call) {
  uint64_t mine = collective_seq_ << 8 | static_cast<uint64_t>(current_kind_);
  for (int pe = 0; pe < n_pes_; ++pe) {
    auto* peer = reinterpret_cast<sync_area*>(transport_->base_of(pe));
    if (peer == nullptr) continue;
    uint64_t theirs = std::atomic_ref<uint64_t>(peer->posted).load(std::memory_order_acquire);
    if ((theirs >> 8) == collective_seq_ && theirs != mine) {
      // The peer waits in the bootstrap for this PE; meet it there, so that the round fails on every
      // PE with both calls named (agree throws errc::mismatch).
      --collective_seq_;  // agree() posts again
      agree(call, current_kind_, fmt::format("{}()", call));
      SHOAL_THROW(errc::mismatch, call, "PE {} is in another collective call than {}", pe, call);
    }
  }
}

void world_impl::agree(std::string_view call, collective_kind kind, const std::string& args) {
  post(kind);
  // Every PE contributes its view of the call; all compare all, so all throw together.
  constexpr size_t kBytes = 120;
  char mine[kBytes] = {};
  std::snprintf(mine, kBytes, "%s", args.c_str());
  std::vector<char> all(kBytes * n_pes_);
  boot_->allgather(mine, all.data(), kBytes, call);
  if (!check_collectives_) return;
  for (int pe = 0; pe < n_pes_; ++pe) {
    const char* theirs = all.data() + pe * kBytes;
    if (std::strncmp(theirs, all.data(), kBytes) != 0)
      SHOAL_THROW(errc::mismatch, call, "PEs disagree on a collective call: PE 0 called {}, PE {} called {}",
                  std::string_view(all.data()), pe, std::string_view(theirs));
  }
}

void world_impl::team_allgather(std::string_view call, const void* mine, void* all, size_t bytes_per_pe) {
  std::lock_guard lock(collective_mutex_);
  // The split may put a new team in any slot this PE is not a member of: zero their collective words
  // now, before the all-gather, so no new member can have written into them yet (non-members never do).
  if (sync_ != nullptr)
    for (int slot = 0; slot < SHOAL_MAX_TEAMS; ++slot)
      if (!teams_->live(slot)) std::memset(static_cast<void*>(&sync_->teams[slot]), 0, sizeof(team_sync));
  post(collective_kind::team);
  boot_->allgather(mine, all, bytes_per_pe, call);
}

// ---------------------------------------------------------------------------------------------
// memory

void* world_impl::malloc(std::string_view call, size_t num_bytes, size_t alignment, bool zero) {
  std::lock_guard lock(collective_mutex_);
  bool bad_align = alignment == 0 || !std::has_single_bit(alignment);
  bool too_big = num_bytes > heap_->reserve_bytes();
  // Agree first (on the raw arguments), so a PE with bad input fails together with its peers.
  agree(call, collective_kind::alloc, fmt::format("{}(num_bytes={}, alignment={})", call, num_bytes, alignment));
  SHOAL_CHECK_ARG(!bad_align, call, "alignment={} is not a power of two", alignment);
  SHOAL_CHECK_ARG(alignment <= heap_->base_alignment(), call,
                  "alignment={} exceeds the {}-byte alignment of every PE's heap base", alignment,
                  heap_->base_alignment());
  SHOAL_CHECK_ARG(!too_big, call, "num_bytes={} exceeds the heap reserve of {} bytes per PE (SHOAL_HEAP_RESERVE)",
                  num_bytes, heap_->reserve_bytes());
  if (num_bytes == 0) return nullptr;
  std::optional<uint64_t> off;
  {
    std::unique_lock alock(alloc_mutex_);
    off = alloc_->allocate(num_bytes, std::max<size_t>(alignment, 16));
  }
  if (!off)
    SHOAL_THROW(errc::out_of_memory, call,
                "no room for num_bytes={} in the symmetric heap ({} of {} bytes in use; raise SHOAL_HEAP_RESERVE)",
                num_bytes, heap_in_use_bytes(), heap_->reserve_bytes());
  try {
    heap_->grow_to(alloc_->high_water(), call);
  } catch (...) {
    std::unique_lock alock(alloc_mutex_);
    alloc_->free(*off);
    throw;
  }
  char* p = heap_->base() + *off;
  if (zero) {
    transport_->ops().zero(p, num_bytes);
    boot_->barrier(call);  // nobody writes into a peer's block before the peer has zeroed it
  }
  SHOAL_LOG(trace, heap, "{}({}) -> offset {}", call, num_bytes, *off);
  return p;
}

void* world_impl::realloc(std::string_view call, void* ptr, size_t num_bytes) {
  if (ptr == nullptr) return malloc(call, num_bytes, 16, false);
  if (num_bytes == 0) {
    free(call, ptr);
    return nullptr;
  }
  std::lock_guard lock(collective_mutex_);
  int64_t off = heap_->offset_of(ptr);
  std::optional<symmetric_allocator::block> block;
  if (off >= 0) {
    std::shared_lock alock(alloc_mutex_);
    block = alloc_->find(static_cast<uint64_t>(off));
  }
  bool valid = block && block->offset == static_cast<uint64_t>(off);
  agree(call, collective_kind::resize, fmt::format("{}(ptr=+{}, num_bytes={}, valid={})", call, off, num_bytes, valid));
  SHOAL_CHECK_ARG(valid, call, "ptr={} is not the start of a live symmetric allocation", ptr);
  std::optional<uint64_t> moved;
  {
    std::unique_lock alock(alloc_mutex_);
    if (alloc_->resize_in_place(block->offset, num_bytes)) {
      moved = block->offset;
    } else {
      moved = alloc_->allocate(num_bytes, 16);
    }
  }
  if (!moved) SHOAL_THROW(errc::out_of_memory, call, "no room for num_bytes={} in the symmetric heap", num_bytes);
  heap_->grow_to(alloc_->high_water(), call);
  if (*moved != block->offset) {
    // Old and new blocks may overlap only when the new one starts lower; copy through a bounce
    // buffer then, since the GPU copy engines have no memmove.
    uint64_t keep = std::min<uint64_t>(block->num_bytes, num_bytes);
    if (*moved + keep > block->offset && *moved < block->offset + keep) {
      std::vector<char> bounce(keep);
      transport_->ops().copy(bounce.data(), ptr, keep);
      transport_->ops().copy(heap_->base() + *moved, bounce.data(), keep);
    } else {
      transport_->ops().copy(heap_->base() + *moved, ptr, keep);
    }
    std::unique_lock alock(alloc_mutex_);
    alloc_->free(block->offset);
  }
  boot_->barrier(call);  // every PE has copied before anyone writes the new block
  return heap_->base() + *moved;
}

void world_impl::free(std::string_view call, void* ptr) {
  std::lock_guard lock(collective_mutex_);
  int64_t off = ptr == nullptr ? -1 : heap_->offset_of(ptr);
  bool live = false;
  if (off >= 0) {
    std::shared_lock alock(alloc_mutex_);
    auto block = alloc_->find(static_cast<uint64_t>(off));
    live = block && block->offset == static_cast<uint64_t>(off) && off != 0;  // offset 0: shoal's sync words
  }
  agree(call, collective_kind::release,
        fmt::format("{}(ptr={})", call, ptr == nullptr ? std::string("null") : fmt::format("+{}", off)));
  if (ptr == nullptr) return;
  SHOAL_CHECK_ARG(off >= 0, call, "ptr={} is not in the symmetric heap", ptr);
  SHOAL_CHECK_ARG(live, call, "ptr={} is not the start of a live symmetric allocation (double free?)", ptr);
  std::unique_lock alock(alloc_mutex_);
  alloc_->free(static_cast<uint64_t>(off));
}

void* world_impl::ptr(const void* addr, int pe) const {
  if (pe < 0 || pe >= n_pes_ || addr == nullptr) return nullptr;
  int64_t off = heap_->offset_of(addr);
  if (off < 0) return nullptr;
  {
    // Only addresses inside a live allocation are symmetric (shoal's own reserved block excluded).
    std::shared_lock lock(alloc_mutex_);
    auto block = alloc_->find(static_cast<uint64_t>(off));
    if (!block || block->offset == 0) return nullptr;
  }
  char* base = transport_->base_of(pe);
  if (base == nullptr) return nullptr;  // GPU heaps: an address for this PE's GPU (kernels), as nvshmem_ptr
  return base + off;
}

// ---------------------------------------------------------------------------------------------
// RMA

void world_impl::put(std::string_view call, void* dest, const void* source, size_t num_bytes, size_t elem_align,
                     int pe) {
  check_pe(call, pe);
  if (num_bytes == 0) return;
  SHOAL_CHECK_ARG(source != nullptr, call, "source is null");
  uint64_t off = check_symmetric(call, "dest", dest, num_bytes, elem_align);
  transport_->put(call, pe, off, source, num_bytes);
}

void world_impl::get(std::string_view call, void* dest, const void* source, size_t num_bytes, size_t elem_align,
                     int pe) {
  check_pe(call, pe);
  if (num_bytes == 0) return;
  SHOAL_CHECK_ARG(dest != nullptr, call, "dest is null");
  uint64_t off = check_symmetric(call, "source", source, num_bytes, elem_align);
  transport_->get(call, dest, pe, off, num_bytes);
}

namespace {
// Extent in bytes of num_elems elements spaced `stride` elements apart (stride >= 1, num_elems >= 1);
// UINT64_MAX when it does not fit in 64 bits (the bounds check then rejects it).
uint64_t strided_extent(ptrdiff_t stride, size_t num_elems, size_t elem_bytes) {
  uint64_t span = 0, bytes = 0, total = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(num_elems) - 1, static_cast<uint64_t>(stride), &span) ||
      __builtin_mul_overflow(span, static_cast<uint64_t>(elem_bytes), &bytes) ||
      __builtin_add_overflow(bytes, static_cast<uint64_t>(elem_bytes), &total))
    return UINT64_MAX;
  return total;
}
}  // namespace

void world_impl::iput(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride,
                      ptrdiff_t source_stride, size_t num_elems, size_t elem_bytes, int pe) {
  check_pe(call, pe);
  SHOAL_CHECK_ARG(dest_stride >= 1, call, "dst={} must be at least 1", dest_stride);
  SHOAL_CHECK_ARG(source_stride >= 1, call, "sst={} must be at least 1", source_stride);
  if (num_elems == 0) return;
  SHOAL_CHECK_ARG(source != nullptr, call, "source is null");
  uint64_t off = check_symmetric(call, "dest", dest, strided_extent(dest_stride, num_elems, elem_bytes), elem_bytes);
  transport_->iput(call, pe, off, source, dest_stride, source_stride, num_elems, elem_bytes);
}

void world_impl::iget(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride,
                      ptrdiff_t source_stride, size_t num_elems, size_t elem_bytes, int pe) {
  check_pe(call, pe);
  SHOAL_CHECK_ARG(dest_stride >= 1, call, "dst={} must be at least 1", dest_stride);
  SHOAL_CHECK_ARG(source_stride >= 1, call, "sst={} must be at least 1", source_stride);
  if (num_elems == 0) return;
  SHOAL_CHECK_ARG(dest != nullptr, call, "dest is null");
  uint64_t off =
      check_symmetric(call, "source", source, strided_extent(source_stride, num_elems, elem_bytes), elem_bytes);
  transport_->iget(call, dest, pe, off, dest_stride, source_stride, num_elems, elem_bytes);
}

void world_impl::atomic(std::string_view call, amo_op op, scalar type, void* dest, const void* operand,
                        const void* compare_value, void* fetched, int pe) {
  check_pe(call, pe);
  uint64_t off = check_symmetric(call, "dest", dest, type.bytes, type.bytes);
  transport_->atomic(call, pe, off, op, type, operand, compare_value, fetched);
}

// ---------------------------------------------------------------------------------------------
// signals

void world_impl::put_signal(std::string_view call, void* dest, const void* source, size_t num_bytes, size_t elem_align,
                            uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  check_pe(call, pe);
  check_sig_op(call, sig_op);
  uint64_t sig_off = check_symmetric(call, "sig_addr", sig_addr, sizeof(uint64_t), alignof(uint64_t));
  if (num_bytes > 0) {
    SHOAL_CHECK_ARG(source != nullptr, call, "source is null");
    uint64_t off = check_symmetric(call, "dest", dest, num_bytes, elem_align);
    transport_->put(call, pe, off, source, num_bytes);
  }
  // The signal update is sequentially consistent, so it is ordered after the data above.
  amo_op op = sig_op == SHOAL_SIGNAL_SET ? amo_op::set : amo_op::add;
  transport_->atomic(call, pe, sig_off, op, scalar_of<uint64_t>(), &signal, nullptr, nullptr);
}

void world_impl::signal_op(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  put_signal(call, nullptr, nullptr, 0, 1, sig_addr, signal, sig_op, pe);
}

uint64_t world_impl::signal_fetch(std::string_view call, const uint64_t* sig_addr) {
  check_symmetric(call, "sig_addr", sig_addr, sizeof(uint64_t), alignof(uint64_t));
  uint64_t v;
  transport_->ops().load(scalar_of<uint64_t>(), sig_addr, &v);
  return v;
}

uint64_t world_impl::signal_wait_until(std::string_view call, uint64_t* sig_addr, int cmp, uint64_t value) {
  wait(call, scalar_of<uint64_t>(), sig_addr, 1, nullptr, nullptr, cmp, &value, false, wait_mode::all, false);
  return signal_fetch(call, sig_addr);
}

size_t world_impl::wait(std::string_view call, scalar type, void* ivars, size_t nelems, const int* status,
                        size_t* indices, int cmp, const void* values, bool vector, wait_mode mode, bool test_only) {
  SHOAL_CHECK_ARG(cmp >= SHOAL_CMP_EQ && cmp <= SHOAL_CMP_GE, call, "cmp={} is not a SHOAL_CMP_* value", cmp);
  SHOAL_CHECK_ARG(values != nullptr, call, "cmp_value{} is null", vector ? "s" : "");
  if (nelems == 0) return mode == wait_mode::any ? SIZE_MAX : (mode == wait_mode::all ? 1 : 0);
  size_t ivars_bytes = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(nelems, size_t{type.bytes}, &ivars_bytes), call,
                  "ivars={} with nelems={} x {} bytes overflows size_t", ivars, nelems, type.bytes);
  check_symmetric(call, "ivars", ivars, ivars_bytes, type.bytes);
  SHOAL_CHECK_ARG(mode != wait_mode::some || indices != nullptr, call, "indices is null");
  auto* base = static_cast<char*>(ivars);
  auto value_of = [&](size_t i) { return static_cast<const char*>(values) + (vector ? i * type.bytes : 0); };
  auto satisfied = [&](size_t i) {
    alignas(8) unsigned char seen[8];
    transport_->ops().load(type, base + i * type.bytes, seen);
    return compare(type, seen, cmp, value_of(i));
  };
  bool any_active = false;
  for (size_t i = 0; i < nelems; ++i) any_active |= status == nullptr || status[i] == 0;
  if (!any_active) return mode == wait_mode::any ? SIZE_MAX : (mode == wait_mode::all ? 1 : 0);

  backoff pause(test_only ? std::chrono::milliseconds(0) : wait_timeout_);
  while (true) {
    size_t found = 0, pending = 0, first = SIZE_MAX, first_pending = SIZE_MAX;
    for (size_t i = 0; i < nelems; ++i) {
      if (status != nullptr && status[i] != 0) continue;
      if (satisfied(i)) {
        if (mode == wait_mode::some) indices[found] = i;
        if (first == SIZE_MAX) first = i;
        ++found;
      } else {
        ++pending;
        if (first_pending == SIZE_MAX) first_pending = i;
      }
    }
    switch (mode) {
      case wait_mode::all:
        if (pending == 0) return 1;
        break;
      case wait_mode::any:
        if (first != SIZE_MAX) return first;
        break;
      case wait_mode::some:
        if (found > 0) return found;
        break;
    }
    if (test_only) return mode == wait_mode::any ? SIZE_MAX : 0;
    if (!pause.pause()) {
      alignas(8) unsigned char seen[8] = {};
      transport_->ops().load(type, base + first_pending * type.bytes, seen);
      uint64_t seen_bits = 0, want_bits = 0;
      std::memcpy(&seen_bits, seen, type.bytes);
      std::memcpy(&want_bits, value_of(first_pending), type.bytes);
      SHOAL_THROW(errc::timeout, call,
                  "waited {} ms (SHOAL_WAIT_TIMEOUT) on PE {}: ivars[{}] at {} is 0x{:x}, waiting for cmp {} 0x{:x}",
                  wait_timeout_.count(), my_pe_, first_pending, static_cast<void*>(base + first_pending * type.bytes),
                  seen_bits, cmp, want_bits);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ordering and synchronization

void world_impl::fence(std::string_view) { transport_->quiet(); }
void world_impl::quiet(std::string_view) { transport_->quiet(); }

void world_impl::dissemination_barrier(std::string_view call) {
  uint64_t epoch = ++barrier_epoch_;
  post(collective_kind::barrier);
  // GPU heaps are not for the CPU to poll: their host barrier goes through the bootstrap.
  if (!transport_->direct()) {
    boot_->barrier(call);
    return;
  }
  // Fall back to the bootstrap when some PE cannot be reached through shared memory.
  if (!transport_->all_load_store()) {
    boot_->barrier(call);
    return;
  }
  for (int round = 0, dist = 1; dist < n_pes_; ++round, dist <<= 1) {
    int to = (my_pe_ + dist) % n_pes_;
    auto* peer_sync = reinterpret_cast<sync_area*>(transport_->base_of(to));
    std::atomic_ref<uint64_t>(peer_sync->barrier_round[round]).store(epoch, std::memory_order_release);
    std::atomic_ref<uint64_t> mine(sync_->barrier_round[round]);
    backoff pause(wait_timeout_);
    for (unsigned polls = 1; mine.load(std::memory_order_acquire) < epoch; ++polls) {
      if (polls % 1024 == 0) check_posted(call);
      if (!pause.pause()) {
        int from = (my_pe_ - dist % n_pes_ + n_pes_) % n_pes_;
        SHOAL_THROW(errc::timeout, call,
                    "PE {} waited {} ms (SHOAL_WAIT_TIMEOUT) in barrier {} round {} for PE {} (it has reached "
                    "barrier {})",
                    my_pe_, wait_timeout_.count(), epoch, round, from, mine.load());
      }
    }
  }
}

void world_impl::barrier_all(std::string_view call) {
  std::lock_guard lock(collective_mutex_);
  quiet(call);
  dissemination_barrier(call);
}

void world_impl::sync_all(std::string_view call) {
  std::lock_guard lock(collective_mutex_);
  dissemination_barrier(call);
}

void world_impl::global_exit(int status) {
  std::fflush(nullptr);
  boot_->abort_job(status, fmt::format("PE {} called shoal_global_exit({})", my_pe_, status));
  ::_exit(status);
}

}  // namespace shoal::detail
