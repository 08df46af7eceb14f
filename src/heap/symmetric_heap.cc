#include "heap/symmetric_heap.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <type_traits>

#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "heap/fd_exchange.hpp"

namespace shoal::detail {

namespace {

constexpr const char* kInitCall = "shoal heap init";

// What makes two PEs able to share a heap: same kernel instance (hostname alone can repeat across
// containers or be reused across reboots, so the boot id is the real key) and the same network
// namespace (abstract Unix socket names are per netns). Written by each PE into its slot of
// node_map::discover's all-gather, read by every PE; compared bytewise, so it is zero-filled.
struct host_identity {
  char hostname[256];
  char boot_id[64];
  uint64_t netns_dev;
  uint64_t netns_ino;
};
static_assert(std::is_trivially_copyable_v<host_identity>);

host_identity my_identity() {
  host_identity id;
  std::memset(&id, 0, sizeof(id));
  if (gethostname(id.hostname, sizeof(id.hostname) - 1) != 0) std::strcpy(id.hostname, "?");
  // Best effort: without /proc the hostname alone decides.
  std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
  boot_id.getline(id.boot_id, sizeof(id.boot_id) - 1);
  struct stat st {};
  if (stat("/proc/self/ns/net", &st) == 0) {
    id.netns_dev = static_cast<uint64_t>(st.st_dev);
    id.netns_ino = static_cast<uint64_t>(st.st_ino);
  }
  return id;
}

// A PE's process as the kernel names it in SCM_CREDENTIALS, and the namespaces those numbers are
// valid in (a pid or uid from another namespace is translated by the kernel, so it is only compared
// within the same one). Written by each PE into its slot of an all-gather at heap creation.
struct process_identity {
  int32_t pid;
  uint32_t uid;  // real uid: what SCM_CREDENTIALS carries
  uint64_t pid_ns_dev, pid_ns_ino;
  uint64_t user_ns_dev, user_ns_ino;
};
static_assert(std::is_trivially_copyable_v<process_identity>);

process_identity my_process() {
  process_identity id;
  std::memset(&id, 0, sizeof(id));
  id.pid = static_cast<int32_t>(getpid());
  id.uid = static_cast<uint32_t>(getuid());
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) == 0) {
    id.pid_ns_dev = static_cast<uint64_t>(st.st_dev);
    id.pid_ns_ino = static_cast<uint64_t>(st.st_ino);
  }
  if (stat("/proc/self/ns/user", &st) == 0) {
    id.user_ns_dev = static_cast<uint64_t>(st.st_dev);
    id.user_ns_ino = static_cast<uint64_t>(st.st_ino);
  }
  return id;
}

// One PE's outcome of a collective heap step (construction, local chunk creation, fd exchange).
// Written by each PE into its slot of an all-gather, read by every PE, so that all of them take the
// same decision (go on, or throw) from the same facts. Zero-filled: message is NUL-terminated.
struct step_status {
  uint64_t num_bytes;  // what this PE was asked for: must be equal on every PE
  uint64_t sequence;   // this PE's growth count: must be equal on every PE
  int32_t failed;      // 1 when the step failed here
  int32_t code;        // shoal::errc of the failure
  char message[240];   // its text, truncated
};
static_assert(std::is_trivially_copyable_v<step_status>);

// round_up for sizes that the callers have bounded (no wrap): value + multiple - 1 fits.
uint64_t round_up(uint64_t value, uint64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string hex(const uint8_t* bytes, size_t num_bytes) {
  std::string out;
  for (size_t i = 0; i < num_bytes; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

// For log lines: "10.25 MiB".
std::string human(uint64_t num_bytes) {
  if (num_bytes < 1024) return fmt::format("{} bytes", num_bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(num_bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.4g} {}", value, units[unit]);
}

}  // namespace

node_map node_map::discover(bootstrap& boot) {
  const int npes = boot.size();
  const host_identity mine = my_identity();
  std::vector<host_identity> all(static_cast<size_t>(npes));
  boot.allgather(&mine, all.data(), sizeof(host_identity), "shoal_init");

  node_map nodes;
  nodes.local_of_pe.assign(static_cast<size_t>(npes), -1);
  for (int pe = 0; pe < npes; ++pe) {
    if (std::memcmp(&all[static_cast<size_t>(pe)], &mine, sizeof(host_identity)) != 0) continue;
    if (pe == boot.rank()) nodes.my_local = static_cast<int>(nodes.pe_of_local.size());
    nodes.local_of_pe[static_cast<size_t>(pe)] = static_cast<int>(nodes.pe_of_local.size());
    nodes.pe_of_local.push_back(pe);
  }
  // Every PE's index on its own node: PEs before it with the same identity.
  nodes.index_on_node.assign(static_cast<size_t>(npes), 0);
  for (int pe = 0; pe < npes; ++pe)
    for (int before = 0; before < pe; ++before)
      if (std::memcmp(&all[static_cast<size_t>(before)], &all[static_cast<size_t>(pe)], sizeof(host_identity)) == 0)
        ++nodes.index_on_node[static_cast<size_t>(pe)];
  return nodes;
}

symmetric_heap::symmetric_heap(bootstrap& boot, node_map nodes, std::unique_ptr<chunk_backend> backend,
                               uint64_t reserve_bytes, uint64_t chunk_bytes)
    : boot_(boot), nodes_(std::move(nodes)), backend_(std::move(backend)) {
  const size_t num_local = nodes_.pe_of_local.size();
  std::exception_ptr failure;
  try {
    SHOAL_CHECK_ARG(backend_ != nullptr, kInitCall, "no chunk backend");
    if (nodes_.local_of_pe.size() != static_cast<size_t>(boot_.size()) || num_local == 0 || nodes_.my_local < 0 ||
        static_cast<size_t>(nodes_.my_local) >= num_local ||
        nodes_.pe_of_local[static_cast<size_t>(nodes_.my_local)] != boot_.rank())
      SHOAL_THROW(errc::internal, kInitCall, "node map does not describe PE {} of {}", boot_.rank(), boot_.size());
    exchange_timeout_ = env::get_ms("SHOAL_BOOTSTRAP_TIMEOUT");

    const uint64_t granularity = backend_->granularity();
    // Bounded so that every later round_up and base + k * stride stays far from wrapping.
    constexpr uint64_t kMaxReserve = uint64_t{1} << 46;  // 64 TiB per PE
    SHOAL_CHECK_ARG(reserve_bytes > 0 && reserve_bytes <= kMaxReserve, kInitCall,
                    "SHOAL_HEAP_RESERVE={} must be in 1..{} bytes", reserve_bytes, kMaxReserve);
    SHOAL_CHECK_ARG(chunk_bytes > 0 && chunk_bytes <= kMaxReserve, kInitCall,
                    "SHOAL_HEAP_CHUNK={} must be in 1..{} bytes", chunk_bytes, kMaxReserve);
    stride_ = round_up(reserve_bytes, granularity);
    chunk_bytes_ = round_up(chunk_bytes, granularity);
    SHOAL_CHECK_ARG(num_local <= (uint64_t{1} << 62) / stride_, kInitCall,
                    "{} local PEs x {} bytes of heap reservation overflow the address space", num_local, stride_);
    region_ = static_cast<char*>(backend_->reserve(num_local * stride_));
    chunks_.resize(num_local);
  } catch (...) {
    failure = std::current_exception();
  }

  // The job part of the socket names and the job key: random, so that two jobs (or two heaps of one
  // process) on a node never collide and no process outside the job knows the key; equal on all PEs,
  // which learn them through the authenticated bootstrap. Written by PE 0, read by all.
  uint8_t job[32] = {};  // [0, 16): socket names, [16, 32): the key every chunk message carries
  if (boot_.rank() == 0 && !failure) {
    try {
      if (getrandom(job, sizeof(job), 0) != static_cast<ssize_t>(sizeof(job)))
        SHOAL_THROW(errc::system, kInitCall, "getrandom(32 bytes) failed: {}", std::strerror(errno));
    } catch (...) {
      failure = std::current_exception();
    }
  }
  boot_.broadcast(job, sizeof(job), 0, kInitCall);
  // Every PE's pid and uid, against which the kernel-supplied credentials of its messages are checked.
  const process_identity me = my_process();
  std::vector<process_identity> everyone(static_cast<size_t>(boot_.size()));
  boot_.allgather(&me, everyone.data(), sizeof(process_identity), kInitCall);

  if (!failure) {
    try {
      const std::string job_hex = hex(job, 16);
      std::memcpy(auth_.key.data(), job + 16, auth_.key.size());
      auth_.my_local = nodes_.my_local;
      for (int pe : nodes_.pe_of_local) {
        const process_identity& p = everyone[static_cast<size_t>(pe)];
        auth_.peers.push_back(exchange_peer{fmt::format("shoal-heap-{}-{}", job_hex, pe), p.pid, p.uid,
                                            p.pid_ns_dev == me.pid_ns_dev && p.pid_ns_ino == me.pid_ns_ino,
                                            p.user_ns_dev == me.user_ns_dev && p.user_ns_ino == me.user_ns_ino});
      }
      std::memset(job, 0, sizeof(job));
      channel_ = std::make_unique<fd_channel>(auth_.peers[static_cast<size_t>(nodes_.my_local)].name, kInitCall);
    } catch (...) {
      failure = std::current_exception();
    }
  }

  // Doubles as the barrier after bind: once it returns, every peer's socket exists.
  try {
    agree(failure, kInitCall, "create the symmetric heap", 0, 0);
  } catch (...) {
    release_all();
    throw;
  }
  SHOAL_LOG(info, heap, "{} backend: reserved {} per PE for {} local PEs at {}, chunks of {}", backend_->name(),
            human(stride_), num_local, static_cast<void*>(region_), human(chunk_bytes_));
}

symmetric_heap::~symmetric_heap() { release_all(); }

uint64_t symmetric_heap::foreign_dropped() const { return channel_ ? channel_->foreign_dropped() : 0; }

void symmetric_heap::release_all() noexcept {
  roll_back(0);
  if (region_ != nullptr) {
    try {
      backend_->release(region_, nodes_.pe_of_local.size() * stride_);
    } catch (const std::exception& e) {
      SHOAL_LOG(warn, heap, "releasing the heap reservation: {}", e.what());
    }
    region_ = nullptr;
  }
  channel_.reset();
}

void symmetric_heap::roll_back(uint64_t from_offset) noexcept {
  for (size_t local = 0; local < chunks_.size(); ++local) {
    auto& list = chunks_[local];
    while (!list.empty() && list.back().offset >= from_offset) {
      mapped_chunk& m = list.back();
      try {
        backend_->unmap(heap_of_local(static_cast<int>(local)) + m.offset, m.c.bytes);
      } catch (const std::exception& e) {
        SHOAL_LOG(warn, heap, "unmapping a chunk of local PE {}: {}", local, e.what());
      }
      try {
        backend_->destroy(m.c);
      } catch (const std::exception& e) {
        SHOAL_LOG(warn, heap, "destroying a chunk of local PE {}: {}", local, e.what());
      }
      list.pop_back();
    }
  }
}

void symmetric_heap::agree(std::exception_ptr local_failure, std::string_view call, std::string_view step,
                           uint64_t num_bytes, uint64_t sequence) {
  step_status mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.num_bytes = num_bytes;
  mine.sequence = sequence;
  if (local_failure) {
    mine.failed = 1;
    mine.code = static_cast<int32_t>(errc::internal);
    std::string text = "unknown exception";
    try {
      std::rethrow_exception(local_failure);
    } catch (const error& e) {
      mine.code = static_cast<int32_t>(e.code());
      text = e.message();
    } catch (const std::bad_alloc&) {
      mine.code = static_cast<int32_t>(errc::out_of_memory);
      text = "host memory exhausted";
    } catch (const std::exception& e) {
      text = e.what();
    } catch (...) {
    }
    std::strncpy(mine.message, text.c_str(), sizeof(mine.message) - 1);
  }

  std::vector<step_status> all(static_cast<size_t>(boot_.size()));
  boot_.allgather(&mine, all.data(), sizeof(step_status), call);

  // Disagreement first: it explains any failure that follows from it.
  for (int pe = 0; pe < boot_.size(); ++pe) {
    const step_status& s = all[static_cast<size_t>(pe)];
    if (s.num_bytes != all[0].num_bytes || s.sequence != all[0].sequence)
      SHOAL_THROW(errc::mismatch, call,
                  "PEs disagree on the heap size: PE 0 grows to {} bytes (growth #{}), PE {} to {} bytes (growth #{})",
                  all[0].num_bytes, all[0].sequence, pe, s.num_bytes, s.sequence);
  }
  if (local_failure) {
    // Backend errors name the heap step ("shoal heap grow"); report them under the API call, like
    // the peers' errors below, keeping where they were raised.
    try {
      std::rethrow_exception(local_failure);
    } catch (const error& e) {
      if (e.call() == call) throw;
      throw error(e.code(), std::string(call), fmt::format("{} (in {})", e.message(), e.call()), e.file(), e.line());
    }
  }
  for (int pe = 0; pe < boot_.size(); ++pe) {
    const step_status& s = all[static_cast<size_t>(pe)];
    if (s.failed)
      SHOAL_THROW(static_cast<errc>(s.code), call, "PE {} failed to {}: {}", pe, step,
                  std::string(s.message, strnlen(s.message, sizeof(s.message))));
  }
}

void symmetric_heap::grow_to(uint64_t num_bytes, std::string_view call) {
  if (num_bytes <= mapped_) return;
  // Every PE computes this from the same values, so all of them refuse together, before any
  // communication and before anything is created.
  if (num_bytes > stride_)
    SHOAL_THROW(errc::out_of_memory, call,
                "the symmetric heap needs {} bytes per PE but its reservation is {} (SHOAL_HEAP_RESERVE); "
                "{} are mapped",
                num_bytes, stride_, mapped_);
  const uint64_t old_mapped = mapped_;
  // num_bytes <= stride_ <= 2^46 and chunk_bytes_ <= 2^46: no wrap.
  const uint64_t target = std::min(round_up(num_bytes, chunk_bytes_), stride_);
  const uint64_t bytes = target - old_mapped;
  const uint64_t sequence = ++grow_sequence_;
  const int me = nodes_.my_local;
  const size_t num_local = chunks_.size();

  // 1. Our own chunk, mapped at our slot.
  std::exception_ptr failure;
  try {
    auto& own_list = chunks_[static_cast<size_t>(me)];
    own_list.reserve(own_list.size() + 1);  // so that recording a mapped chunk cannot throw
    chunk c = backend_->create(bytes);
    try {
      backend_->map(base() + old_mapped, c);
    } catch (...) {
      backend_->destroy(c);
      throw;
    }
    own_list.push_back(mapped_chunk{old_mapped, c});
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    agree(failure, call, "create its heap chunk", num_bytes, sequence);
  } catch (...) {
    roll_back(old_mapped);
    throw;
  }

  // 2. Everyone's chunk fd to everyone else on the node; each mapped at its owner's slot.
  failure = nullptr;
  try {
    const chunk& own = chunks_[static_cast<size_t>(me)].back().c;
    std::vector<outgoing_chunk> out;
    for (size_t local = 0; local < num_local; ++local) {
      if (static_cast<int>(local) == me) continue;
      out.push_back(outgoing_chunk{auth_.peers[local].name,
                                   chunk_header{kChunkMagic, me, sequence, old_mapped, bytes, auth_.key}, own.fd});
    }
    // Only messages that pass auth_ (sender's socket, pid, uid and the job key) come back.
    std::vector<received_chunk> in = exchange_chunks(*channel_, out, num_local - 1, auth_, exchange_timeout_, call);
    for (received_chunk& r : in) {
      const chunk_header& h = r.header;
      if (h.sequence != sequence || h.offset != old_mapped || h.bytes != bytes)
        SHOAL_THROW(errc::internal, call,
                    "local PE {} sent a chunk for growth #{} at offset {} of {} bytes; expected growth #{} at {} of {}",
                    h.sender_local, h.sequence, h.offset, h.bytes, sequence, old_mapped, bytes);
      auto& list = chunks_[static_cast<size_t>(h.sender_local)];
      if (!list.empty() && list.back().offset == old_mapped)
        SHOAL_THROW(errc::internal, call, "local PE {} sent two chunks for growth #{}", h.sender_local, sequence);
      list.reserve(list.size() + 1);
      chunk c = backend_->import(r.fd.release(), bytes);
      try {
        backend_->map(heap_of_local(h.sender_local) + old_mapped, c);
      } catch (...) {
        backend_->destroy(c);
        throw;
      }
      list.push_back(mapped_chunk{old_mapped, c});
    }
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    // Doubles as the closing barrier: no PE uses the new range of a peer before that peer mapped it
    // too, and no PE starts the next growth while a peer still receives this one.
    agree(failure, call, "exchange heap chunks", num_bytes, sequence);
  } catch (...) {
    roll_back(old_mapped);
    // Every PE has finished sending (it is past the all-gather), so whatever this failed growth left
    // in our queue is there now; drop it (fds closed unused) so the next growth starts clean.
    try {
      for (int i = 0; i < 1024; ++i)
        if (!channel_->try_receive(call)) break;
    } catch (...) {
    }
    throw;
  }

  mapped_ = target;
  SHOAL_LOG(info, heap, "{}: heap grown from {} to {} per PE; {} local PEs map {} in this process ({} chunks each)",
            call, human(old_mapped), human(mapped_), num_local, human(mapped_ * num_local),
            chunks_[static_cast<size_t>(me)].size());
}

std::vector<unique_fd> symmetric_heap::exchange_fd(int fd, uint64_t num_bytes, std::string_view call) {
  // Stamped like a growth (grow_sequence_ moves on every PE together), with the data-segment offset
  // marker, so that neither this exchange nor a growth can take the other's messages.
  const uint64_t sequence = ++grow_sequence_;
  const int me = nodes_.my_local;
  const size_t num_local = chunks_.size();
  std::vector<unique_fd> by_local(num_local);
  std::exception_ptr failure;
  try {
    std::vector<outgoing_chunk> out;
    for (size_t local = 0; local < num_local; ++local) {
      if (static_cast<int>(local) == me) continue;
      out.push_back(outgoing_chunk{auth_.peers[local].name,
                                   chunk_header{kChunkMagic, me, sequence, kDataSegmentOffset, num_bytes, auth_.key},
                                   fd});
    }
    // Only messages that pass auth_ (sender's socket, pid, uid and the job key) come back.
    std::vector<received_chunk> in = exchange_chunks(*channel_, out, num_local - 1, auth_, exchange_timeout_, call);
    for (received_chunk& r : in) {
      const chunk_header& h = r.header;
      if (h.sequence != sequence || h.offset != kDataSegmentOffset || h.bytes != num_bytes)
        SHOAL_THROW(errc::internal, call,
                    "local PE {} sent an fd for exchange #{} at offset {} of {} bytes; expected the data segment "
                    "(exchange #{}) of {} bytes",
                    h.sender_local, h.sequence, h.offset, h.bytes, sequence, num_bytes);
      unique_fd& slot = by_local[static_cast<size_t>(h.sender_local)];
      if (slot.get() >= 0)
        SHOAL_THROW(errc::internal, call, "local PE {} sent two fds for exchange #{}", h.sender_local, sequence);
      slot = std::move(r.fd);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    // Doubles as the closing barrier, as in grow_to.
    agree(failure, call, "exchange data segment fds", num_bytes, sequence);
  } catch (...) {
    by_local.clear();
    try {
      for (int i = 0; i < 1024; ++i)
        if (!channel_->try_receive(call)) break;
    } catch (...) {
    }
    throw;
  }
  return by_local;
}

char* symmetric_heap::heap_of(int pe) const {
  if (pe < 0 || static_cast<size_t>(pe) >= nodes_.local_of_pe.size()) return nullptr;
  const int local = nodes_.local_of_pe[static_cast<size_t>(pe)];
  return local < 0 ? nullptr : heap_of_local(local);
}

int64_t symmetric_heap::offset_of(const void* p) const {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = reinterpret_cast<uintptr_t>(base());
  if (region_ == nullptr || addr < start || addr - start >= stride_) return -1;
  return static_cast<int64_t>(addr - start);
}

uint64_t symmetric_heap::base_alignment() const {
  uint64_t bits = reinterpret_cast<uintptr_t>(region_) | (uint64_t{1} << 30);
  if (chunks_.size() > 1) bits |= stride_;
  return bits & (0 - bits);
}

}  // namespace shoal::detail
