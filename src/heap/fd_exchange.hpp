// Passing chunk file descriptors between same-node PEs: one AF_UNIX datagram socket per PE in the
// abstract namespace, each message a fixed header plus one fd (SCM_RIGHTS). Backend-independent:
// the host (memfd) and cuda (exported POSIX fd) heaps share all of it.
// Any process in the network namespace can send to an abstract socket, so every message is
// authenticated (exchange_auth: the sender's kernel-supplied credentials and socket name, and the
// job key) before its fd is used; a foreign one is dropped unmapped. See docs/security.md.
#pragma once

#include <array>
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
  uint32_t magic = 0;             ///< kChunkMagic; anything else is a stray datagram
  int32_t sender_local = 0;       ///< the owner's index on the node: where the receiver maps the chunk
  uint64_t sequence = 0;          ///< the owner's growth count; equal on every PE for the same grow
  uint64_t offset = 0;            ///< byte offset of the chunk in the owner's heap
  uint64_t bytes = 0;             ///< chunk size (a multiple of the backend granularity)
  std::array<uint8_t, 16> key{};  ///< the heap's job key (exchange_auth::key); never logged
};
inline constexpr uint32_t kChunkMagic = 0x53484c43;  // "SHLC"
/// chunk_header::offset of an fd that is no heap chunk but the program's data segment
/// (symmetric_heap::exchange_fd), so that it can never be taken for one.
inline constexpr uint64_t kDataSegmentOffset = UINT64_MAX;

/// Pure: whether a datagram's bytes can be a chunk message. Returns nullptr and fills `out` when the
/// payload is exactly one header with the magic and the datagram carried exactly one fd and was not
/// truncated; else the reason (a static string). Checks nothing about who sent it.
const char* decode_chunk_message(std::span<const uint8_t> payload, size_t num_fds, bool truncated, chunk_header* out);

/// Who sent a datagram, as the kernel reports it (SCM_CREDENTIALS; the sender cannot forge its pid
/// or uid without CAP_SYS_ADMIN/CAP_SETUID). pid 0 when the sender is outside our pid namespace.
struct sender_credentials {
  bool present = false;
  int32_t pid = 0;
  uint32_t uid = 0;
};

/// One received message: the header, the fd (now owned here), the sender's socket name (filled in by
/// the kernel: the name its socket is bound to, "" when unbound) and credentials. `malformed` is the
/// decode_chunk_message reason when the datagram is no chunk message (its fds are then closed).
struct received_chunk {
  chunk_header header;
  unique_fd fd;
  std::string sender_name;
  sender_credentials credentials;
  const char* malformed = nullptr;
};

/// One same-node PE as the authenticated bootstrap describes it.
struct exchange_peer {
  std::string name;       ///< its chunk-fd socket's abstract name
  int32_t pid = 0;        ///< its process id; checked when check_pid
  uint32_t uid = 0;       ///< its user id; checked when check_uid
  bool check_pid = true;  ///< false when it lives in another pid namespace (the kernel maps its pid)
  bool check_uid = true;  ///< false when it lives in another user namespace
};

/// What a chunk message must match to be used: the job key (random, all PEs of the heap learnt it
/// through the bootstrap) and, for the peer it claims to be, its socket name, pid and uid.
struct exchange_auth {
  std::array<uint8_t, 16> key{};
  std::vector<exchange_peer> peers;  ///< [local index]
  int my_local = -1;                 ///< a message claiming to come from here is foreign
  /// Pure: nullptr when `m` comes from a PE of this heap; else why it does not (a static string).
  const char* check(const received_chunk& m) const;
};

/// This PE's datagram socket, bound at an abstract-namespace name (no file on disk; gone when the
/// socket closes). Peers must share the network namespace: abstract names are per netns.
class fd_channel {
 public:
  /// Binds at abstract name `name` (<= 100 bytes, without the leading NUL), with SO_PASSCRED so that
  /// every message carries its sender's credentials. Throws shoal::error(system) naming `call` when
  /// the name is taken or the socket cannot be made.
  fd_channel(std::string name, std::string_view call);
  ~fd_channel();
  fd_channel(const fd_channel&) = delete;
  fd_channel& operator=(const fd_channel&) = delete;

  const std::string& name() const { return name_; }

  /// Sends `header` and a duplicate of `fd` (the caller keeps its own) to the socket named `peer`
  /// without blocking. false when the peer's queue is full (try again later); throws on any other
  /// failure (e.g. the peer's socket does not exist).
  bool try_send(std::string_view peer, const chunk_header& header, int fd, std::string_view call);
  /// One queued message, or nullopt when none is queued. Never throws for what a sender put in a
  /// message: a malformed one (wrong size or magic, not exactly one fd, truncated) comes back with
  /// `malformed` set and every fd it carried already closed. Throws only when recvmsg itself fails.
  std::optional<received_chunk> try_receive(std::string_view call);
  /// Waits until a message may be queued or `timeout` passes; returns whether it is readable.
  bool wait_readable(std::chrono::milliseconds timeout, std::string_view call);

  /// Drops a message that failed authentication (`why`): closes its fd unused, counts it, and logs a
  /// warning naming the sender's pid for the first one on this channel only.
  void drop_foreign(received_chunk&& message, const char* why);
  /// Foreign messages dropped so far.
  uint64_t foreign_dropped() const { return foreign_dropped_; }

 private:
  std::string name_;
  int fd_ = -1;
  uint64_t foreign_dropped_ = 0;
};

/// One message to send in an exchange.
struct outgoing_chunk {
  std::string peer;  ///< the receiving PE's socket name
  chunk_header header;
  int fd;  ///< stays owned by the caller
};

/// Sends every message of `out` and receives `expected` authenticated messages, interleaving both so
/// that no number of PEs can deadlock on full socket queues. A malformed message, or one `auth`
/// rejects, is dropped (channel.drop_foreign) and the wait goes on. Throws shoal::error(timeout)
/// naming `call` and the missing messages when `timeout` passes first; received fds are then closed.
std::vector<received_chunk> exchange_chunks(fd_channel& channel, std::span<const outgoing_chunk> out, size_t expected,
                                            const exchange_auth& auth, std::chrono::milliseconds timeout,
                                            std::string_view call);

}  // namespace shoal::detail
