// Socket helpers for the bootstrap: an owning fd, address text <-> sockaddr, and whole-buffer
// send/receive that survive EINTR and partial transfers, honour a deadline, and can be woken early.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shoal::detail::net {

using clock = std::chrono::steady_clock;
/// No deadline.
inline constexpr clock::time_point forever = clock::time_point::max();

/// Owns one file descriptor; closes it on destruction.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/// How a bounded transfer or wait ended. Errors other than a closed peer throw shoal::error(system).
enum class io_status {
  ok,         ///< everything transferred / the fd is ready
  closed,     ///< EOF, ECONNRESET or EPIPE: the peer is gone
  timed_out,  ///< the deadline passed first
  woken,      ///< `wake_fd` became readable first (the caller's object is shutting down or broken)
};

/// Waits until `fd` has `events` (POLLIN/POLLOUT), the deadline passes, or `wake_fd` (-1: none) is readable.
io_status wait_fd(int fd, short events, clock::time_point deadline, int wake_fd);
/// Sends all `num_bytes` on a non-blocking socket (MSG_NOSIGNAL: a dead peer is `closed`, not SIGPIPE).
io_status send_all(int fd, const void* data, size_t num_bytes, clock::time_point deadline, int wake_fd);
/// Receives exactly `num_bytes` on a non-blocking socket.
io_status recv_all(int fd, void* data, size_t num_bytes, clock::time_point deadline, int wake_fd);

void set_nonblocking(int fd);
void set_nodelay(int fd);

/// "1.2.3.4:80" or "[::1]:80".
std::string to_string(const sockaddr_storage& addr);
uint16_t port_of(const sockaddr_storage& addr);
/// The address alone: "1.2.3.4" / "::1" (no brackets).
std::string host_of(const sockaddr_storage& addr);
socklen_t length_of(const sockaddr_storage& addr);
/// Numeric IPv4 or IPv6 (without brackets) and a port; false when `host` is not a literal address.
bool parse_numeric(std::string_view host, uint16_t port, sockaddr_storage* out);
/// Like parse_numeric, but also resolves host names (getaddrinfo, IPv4 preferred). Throws
/// shoal::error(invalid_argument) naming `what` when the name does not resolve.
sockaddr_storage resolve(const std::string& host, uint16_t port, std::string_view what);
/// Splits "host:port" / "[v6]:port"; throws shoal::error(invalid_argument) naming `what`.
std::pair<std::string, uint16_t> split_host_port(std::string_view text, std::string_view what);

}  // namespace shoal::detail::net
