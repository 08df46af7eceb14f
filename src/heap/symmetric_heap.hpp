// The symmetric heap: one reserved virtual range per process holding every same-node PE's heap at
// base + k*stride (k = the PE's index on this node). Physical chunks are created by their owner,
// exported as fds, passed to same-node peers over Unix sockets (SCM_RIGHTS) and mapped at the
// owner's slot. Growth is collective, so every PE maps the same chunks at the same offsets.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/chunk_backend.hpp"
#include "heap/fd_exchange.hpp"

namespace shoal::detail {

/// Which PEs share this node (and so can map each other's heap).
struct node_map {
  int my_local = 0;                ///< this PE's index among the node's PEs
  std::vector<int> local_of_pe;    ///< per PE: its index on this node, or -1 when on another node
  std::vector<int> pe_of_local;    ///< per local index: the PE
  std::vector<int> index_on_node;  ///< per PE (every node): its index among its own node's PEs, by PE number
  /// Collective: all-gathers a host identity (hostname + boot id + network namespace, since peers
  /// must reach each other's abstract Unix sockets) and numbers same-node PEs by rank.
  static node_map discover(bootstrap& boot);
};

class symmetric_heap {
 public:
  /// Collective. Reserves (#local PEs) x reserve_bytes, rounded to the backend granularity, and binds
  /// this PE's chunk-fd socket. When any PE fails, every PE throws and nothing leaks.
  symmetric_heap(bootstrap& boot, node_map nodes, std::unique_ptr<chunk_backend> backend, uint64_t reserve_bytes,
                 uint64_t chunk_bytes);
  ~symmetric_heap();  ///< unmaps and releases everything (not collective)
  symmetric_heap(const symmetric_heap&) = delete;
  symmetric_heap& operator=(const symmetric_heap&) = delete;

  /// Collective: back at least the first `num_bytes` of every local PE's heap with memory. Every PE
  /// must pass the same value (the allocator guarantees it). `call` names the API call for errors.
  /// No-op (no communication) when num_bytes <= mapped_bytes(). Beyond reserve_bytes(): throws
  /// shoal::error(out_of_memory) before touching anything. New memory reads as zero. Any failure
  /// (any PE) makes every PE throw and leaves the heap as it was; a PE whose num_bytes differs from
  /// the others' gets shoal::error(mismatch), as do they.
  void grow_to(uint64_t num_bytes, std::string_view call);

  /// Collective: sends `fd` (the caller keeps it) to every same-node peer and returns each peer's fd
  /// by local index (this PE's slot empty), authenticated like heap chunks (docs/security.md). For
  /// memory shared beside the heap (the program's data segment: heap/data_segment.hpp); every PE
  /// passes the same `num_bytes`, the size each fd covers. Any failure (any PE) makes every PE throw
  /// naming `call`, and no fd stays open.
  std::vector<unique_fd> exchange_fd(int fd, uint64_t num_bytes, std::string_view call);

  char* base() const { return heap_of_local(nodes_.my_local); }  ///< this PE's heap
  char* heap_of(int pe) const;  ///< PE's heap in this process, or nullptr when not mapped here
  char* heap_of_local(int local) const { return region_ + static_cast<uint64_t>(local) * stride_; }
  uint64_t stride() const { return stride_; }
  uint64_t reserve_bytes() const { return stride_; }
  uint64_t mapped_bytes() const { return mapped_; }  ///< backed bytes of each PE's heap
  uint64_t chunk_bytes() const { return chunk_bytes_; }
  const node_map& nodes() const { return nodes_; }
  chunk_backend& backend() const { return *backend_; }

  /// Offset of `p` in this PE's heap if it lies in [base, base + reserve); else -1.
  int64_t offset_of(const void* p) const;

  /// The largest power of two (capped at 1 GiB) dividing the address of every local PE's heap: an
  /// allocation aligned to A <= this within the heap is aligned to A in every process.
  uint64_t base_alignment() const;
  /// Number of chunks that back local PE `local`'s heap (one per successful growth).
  size_t num_chunks(int local) const { return chunks_.at(static_cast<size_t>(local)).size(); }
  /// The abstract-namespace name of local PE `local`'s chunk-fd socket (for diagnostics and tests).
  const std::string& socket_name(int local) const { return auth_.peers.at(static_cast<size_t>(local)).name; }
  /// Messages from outside the job dropped by this PE's socket so far (see docs/security.md).
  uint64_t foreign_dropped() const;
  /// How long a growth waits for same-node peers' chunk fds. Default: SHOAL_BOOTSTRAP_TIMEOUT.
  void set_exchange_timeout(std::chrono::milliseconds timeout) { exchange_timeout_ = timeout; }

 private:
  bootstrap& boot_;
  node_map nodes_;
  std::unique_ptr<chunk_backend> backend_;
  char* region_ = nullptr;  // reservation: #local * stride bytes
  uint64_t stride_ = 0;
  uint64_t chunk_bytes_ = 0;
  uint64_t mapped_ = 0;
  std::unique_ptr<fd_channel> channel_;  // datagram socket that receives peers' chunk fds
  // The job key and, per local PE, its socket name (abstract namespace), pid and uid: what a chunk
  // message must match to be used. Learnt through the bootstrap at construction.
  exchange_auth auth_;
  // Growth attempts so far; equal on every PE because growth is collective. Stamped on every chunk
  // message so a message from another growth is caught instead of mapped at the wrong offset.
  uint64_t grow_sequence_ = 0;
  std::chrono::milliseconds exchange_timeout_{30000};
  struct mapped_chunk {
    uint64_t offset;  // within the owner's heap
    chunk c;
  };
  // [local]: the chunks of that local PE, in offset order. One grow adds one chunk per PE covering
  // [mapped_, round_up(num_bytes, chunk_bytes_)), so a large malloc costs one fd per peer.
  std::vector<std::vector<mapped_chunk>> chunks_;

  // All-gathers each PE's outcome of a local step; throws on every PE if any PE failed (rethrowing
  // `local_failure` where it happened) or if PEs disagree on `num_bytes`/`sequence` (mismatch).
  void agree(std::exception_ptr local_failure, std::string_view call, std::string_view step, uint64_t num_bytes,
             uint64_t sequence);
  // Unmaps and destroys every chunk at or beyond `from_offset` (a failed growth). Never throws.
  void roll_back(uint64_t from_offset) noexcept;
  void release_all() noexcept;
};

}  // namespace shoal::detail
