#include "heap/fd_exchange.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail {

namespace {

constexpr size_t kMaxNameBytes = 100;   // sun_path holds 108 bytes, the first is the abstract NUL
constexpr int kMaxForeignPerPass = 64;  // foreign messages read per pass of an exchange (a flood can't stall it)

// Abstract address: sun_path[0] == '\0', then the name; its length is part of the address (no
// terminating NUL), so the same name must always be encoded with the same length.
socklen_t abstract_address(std::string_view name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

void close_all_rights(msghdr* msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      close(fd);
    }
  }
}

// Compares without an early exit, so the time taken says nothing about how much of the key matched.
bool same_key(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

const char* decode_chunk_message(std::span<const uint8_t> payload, size_t num_fds, bool truncated, chunk_header* out) {
  if (truncated) return "truncated datagram or control data";
  if (payload.size() != sizeof(chunk_header)) return "wrong size";
  if (num_fds != 1) return "not exactly one file descriptor";
  chunk_header h;
  std::memcpy(&h, payload.data(), sizeof(h));
  if (h.magic != kChunkMagic) return "wrong magic";
  *out = h;
  return nullptr;
}

const char* exchange_auth::check(const received_chunk& m) const {
  if (m.malformed != nullptr) return m.malformed;
  if (!m.credentials.present) return "no sender credentials";
  const int32_t local = m.header.sender_local;
  if (local < 0 || static_cast<size_t>(local) >= peers.size() || local == my_local) return "unknown sender index";
  const exchange_peer& peer = peers[static_cast<size_t>(local)];
  if (m.sender_name != peer.name) return "sent from another socket than the claimed PE's";
  if (peer.check_uid && m.credentials.uid != peer.uid) return "sender uid is not the job's";
  if (peer.check_pid && m.credentials.pid != peer.pid) return "sender pid is not the claimed PE's";
  if (!same_key(m.header.key, key)) return "wrong job key";
  return nullptr;
}

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void unique_fd::reset(int fd) noexcept {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

fd_channel::fd_channel(std::string name, std::string_view call) : name_(std::move(name)) {
  SHOAL_CHECK_ARG(!name_.empty() && name_.size() <= kMaxNameBytes, call, "socket name '{}' must be 1..{} bytes", name_,
                  kMaxNameBytes);
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  SHOAL_SYSCHECK(fd_, call);
  // Before bind, so that no message can arrive without its sender's credentials.
  const int on = 1;
  if (setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == -1) {
    int e = errno;
    close(fd_);
    fd_ = -1;
    SHOAL_THROW(errc::system, call, "setsockopt(SO_PASSCRED) failed: {} (errno {})", std::strerror(e), e);
  }
  sockaddr_un addr;
  socklen_t len = abstract_address(name_, &addr);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) == -1) {
    int e = errno;
    close(fd_);
    fd_ = -1;
    SHOAL_THROW(errc::system, call, "bind(abstract unix socket '{}') failed: {} (errno {})", name_, std::strerror(e),
                e);
  }
}

fd_channel::~fd_channel() {
  if (fd_ >= 0) close(fd_);
}

bool fd_channel::try_send(std::string_view peer, const chunk_header& header, int fd, std::string_view call) {
  sockaddr_un addr;
  socklen_t addr_len = abstract_address(peer, &addr);
  iovec iov{const_cast<chunk_header*>(&header), sizeof(header)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = addr_len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));

  for (;;) {
    ssize_t sent = sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(sizeof(header))) return true;
    if (sent >= 0) SHOAL_THROW(errc::internal, call, "sendmsg to '{}' sent {} of {} bytes", peer, sent, sizeof(header));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    int e = errno;
    SHOAL_THROW(errc::system, call, "sendmsg(chunk fd to '{}') failed: {} (errno {})", peer, std::strerror(e), e);
  }
}

std::optional<received_chunk> fd_channel::try_receive(std::string_view call) {
  // One spare byte: a longer datagram shows up as MSG_TRUNC or a size mismatch, not a silent cut.
  uint8_t payload[sizeof(chunk_header) + 1];
  iovec iov{payload, sizeof(payload)};
  sockaddr_un from{};
  // The sender's credentials, and room for a few fds, so that a malformed sender's extra fds are
  // received (and closed) rather than leaking inside the kernel's truncated-control handling.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof(from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);

  ssize_t got;
  do {
    got = recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (got == -1 && errno == EINTR);
  if (got == -1) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    int e = errno;
    SHOAL_THROW(errc::system, call, "recvmsg(chunk fd on '{}') failed: {} (errno {})", name_, std::strerror(e), e);
  }

  received_chunk out;
  if (msg.msg_namelen > offsetof(sockaddr_un, sun_path) + 1 && from.sun_path[0] == '\0')
    out.sender_name.assign(from.sun_path + 1, msg.msg_namelen - offsetof(sockaddr_un, sun_path) - 1);

  int fd = -1;
  size_t num_fds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_RIGHTS) {
      num_fds += (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      if (fd < 0) std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    } else if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      out.credentials = sender_credentials{true, static_cast<int32_t>(cred.pid), static_cast<uint32_t>(cred.uid)};
    }
  }
  const bool truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  out.malformed = decode_chunk_message(std::span<const uint8_t>(payload, static_cast<size_t>(got)), num_fds, truncated,
                                       &out.header);
  if (out.malformed != nullptr)
    close_all_rights(&msg);
  else
    out.fd.reset(fd);
  return out;
}

void fd_channel::drop_foreign(received_chunk&& message, const char* why) {
  message.fd.reset();  // closed, never imported or mapped
  if (foreign_dropped_++ == 0)
    SHOAL_LOG(warn, heap,
              "dropped a message on '{}' from outside the job (pid {}, uid {}, socket '{}'): {}; further foreign "
              "messages on this socket are dropped silently",
              name_, message.credentials.present ? fmt::format("{}", message.credentials.pid) : "unknown",
              message.credentials.present ? fmt::format("{}", message.credentials.uid) : "unknown", message.sender_name,
              why);
}

bool fd_channel::wait_readable(std::chrono::milliseconds timeout, std::string_view call) {
  pollfd p{fd_, POLLIN, 0};
  int timeout_ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, 1000));
  int ready = poll(&p, 1, timeout_ms);
  if (ready == -1 && errno == EINTR) return false;
  SHOAL_SYSCHECK(ready, call);
  return ready > 0;
}

std::vector<received_chunk> exchange_chunks(fd_channel& channel, std::span<const outgoing_chunk> out, size_t expected,
                                            const exchange_auth& auth, std::chrono::milliseconds timeout,
                                            std::string_view call) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  std::vector<received_chunk> in;
  in.reserve(expected);
  std::vector<bool> sent(out.size(), false);
  size_t num_sent = 0;

  // Every PE sends to every peer and receives from every peer at once. A blocking send would wait
  // for a full peer queue (net.unix.max_dgram_qlen, often 10) while that peer waits on ours, so sends
  // never block: pending ones are retried after draining our own queue.
  for (;;) {
    bool progress = false;
    for (size_t i = 0; i < out.size(); ++i) {
      if (sent[i]) continue;
      if (channel.try_send(out[i].peer, out[i].header, out[i].fd, call)) {
        sent[i] = true;
        ++num_sent;
        progress = true;
      }
    }
    // A bounded number of foreign messages per pass, so that a flood cannot keep us past the deadline.
    for (int foreign = 0; in.size() < expected && foreign < kMaxForeignPerPass;) {
      auto message = channel.try_receive(call);
      if (!message) break;
      progress = true;
      if (const char* why = auth.check(*message)) {
        channel.drop_foreign(std::move(*message), why);
        ++foreign;
        continue;
      }
      in.push_back(std::move(*message));
    }
    if (num_sent == out.size() && in.size() == expected) return in;

    auto now = clock::now();
    if (now >= deadline) {
      std::string unsent;
      for (size_t i = 0; i < out.size(); ++i)
        if (!sent[i]) unsent += fmt::format(" '{}'", out[i].peer);
      SHOAL_THROW(errc::timeout, call,
                  "chunk fd exchange on '{}' timed out after {} ms: received {} of {} peer chunks{}{}", channel.name(),
                  timeout.count(), in.size(), expected, unsent.empty() ? "" : "; could not send to", unsent);
    }
    if (progress) continue;
    // Wait for our queue; a short cap because a peer's queue draining (which lets our pending
    // sends through) does not wake us. The cap only matters when sends are blocked.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    auto cap = num_sent == out.size() ? left : std::min(left, std::chrono::milliseconds(1));
    channel.wait_readable(std::max(cap, std::chrono::milliseconds(1)), call);
  }
}

}  // namespace shoal::detail
