// Passing chunk file descriptors between same-node PEs: one AF_UNIX datagram socket per PE in the
// abstract namespace, each message a fixed header plus one fd (SCM_RIGHTS). Backend-independent:
// the host (memfd) and cuda (exported POSIX fd) heaps share all of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::detail {

/// Owns one file descriptor; closes it on destruction. Move-only.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const { return fd_; }
  /// Gives up ownership; the caller must close the returned fd.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/// What a chunk fd covers. Written by the chunk's owner PE (fd_channel::try_send), read by every
/// same-node peer (fd_channel::try_receive); travels as the datagram payload beside the fd.
/// Plain fixed-width fields: sender and receiver are the same build on the same node.
struct chunk_header {
  uint32_t magic = 0;        ///< kChunkMagic; anything else is a stray datagram
  int32_t sender_local = 0;  ///< the owner's index on the node: where the receiver maps the chunk
  uint64_t sequence = 0;     ///< the owner's growth count; equal on every PE for the same grow
  uint64_t offset = 0;       ///< byte offset of the chunk in the owner's heap
  uint64_t bytes = 0;        ///< chunk size (a multiple of the backend granularity)
};
inline constexpr uint32_t kChunkMagic = 0x53484c43;  // "SHLC"

/// One received message: the header, the fd (now owned here) and the sender's socket name, which
/// the kernel fills in and the sender cannot forge (it is the name its socket is bound to).
struct received_chunk {
  chunk_header header;
  unique_fd fd;
  std::string sender_name;
};

/// This PE's datagram socket, bound at an abstract-namespace name (no file on disk; gone when the
/// socket closes). Peers must share the network namespace: abstract names are per netns.
class fd_channel {
 public:
  /// Binds at abstract name `name` (<= 100 bytes, without the leading NUL). Throws
  /// shoal::error(system) naming `call` when the name is taken or the socket cannot be made.
  fd_channel(std::string name, std::string_view call);
  ~fd_channel();
  fd_channel(const fd_channel&) = delete;
  fd_channel& operator=(const fd_channel&) = delete;

  const std::string& name() const { return name_; }

  /// Sends `header` and a duplicate of `fd` (the caller keeps its own) to the socket named `peer`
  /// without blocking. false when the peer's queue is full (try again later); throws on any other
  /// failure (e.g. the peer's socket does not exist).
  bool try_send(std::string_view peer, const chunk_header& header, int fd, std::string_view call);
  /// One queued message, or nullopt when none is queued. A malformed message (wrong size, magic,
  /// or not exactly one fd) throws shoal::error(internal); any fds it carried are closed.
  std::optional<received_chunk> try_receive(std::string_view call);
  /// Waits until a message may be queued or `timeout` passes; returns whether it is readable.
  bool wait_readable(std::chrono::milliseconds timeout, std::string_view call);

 private:
  std::string name_;
  int fd_ = -1;
};

/// One message to send in an exchange.
struct outgoing_chunk {
  std::string peer;  ///< the receiving PE's socket name
  chunk_header header;
  int fd;  ///< stays owned by the caller
};

/// Sends every message of `out` and receives `expected` messages, interleaving both so that no
/// number of PEs can deadlock on full socket queues. Throws shoal::error(timeout) naming `call`
/// and the missing messages when `timeout` passes first; received fds are then closed.
std::vector<received_chunk> exchange_chunks(fd_channel& channel, std::span<const outgoing_chunk> out, size_t expected,
                                            std::chrono::milliseconds timeout, std::string_view call);

}  // namespace shoal::detail
