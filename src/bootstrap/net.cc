#include "bootstrap/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/check.hpp"

namespace shoal::detail::net {

void unique_fd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

// poll() takes int milliseconds; round up so a deadline 0.3 ms away is not a busy loop of 0 ms polls.
int poll_timeout_ms(clock::time_point deadline) {
  if (deadline == forever) return -1;
  auto left = deadline - clock::now();
  if (left <= clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));  // re-check at least once a minute
}

bool is_peer_gone(int err) { return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ETIMEDOUT; }

}  // namespace

io_status wait_fd(int fd, short events, clock::time_point deadline, int wake_fd) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    int timeout = poll_timeout_ms(deadline);
    int n = ::poll(fds, wake_fd >= 0 ? 2 : 1, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      SHOAL_SYSCHECK(n, "shoal bootstrap");
    }
    // Data that has arrived wins over the wake-up: a reply already here completes its collective.
    // POLLHUP/POLLERR: let the following recv/send report what happened.
    if (fds[0].revents != 0) return io_status::ok;
    if (wake_fd >= 0 && (fds[1].revents & POLLIN)) return io_status::woken;
    if (n == 0 && timeout == 0) return io_status::timed_out;
    if (n == 0 && deadline != forever && clock::now() >= deadline) return io_status::timed_out;
  }
}

io_status send_all(int fd, const void* data, size_t num_bytes, clock::time_point deadline, int wake_fd) {
  auto* p = static_cast<const uint8_t*>(data);
  while (num_bytes > 0) {
    ssize_t n = ::send(fd, p, num_bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      num_bytes -= static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      io_status st = wait_fd(fd, POLLOUT, deadline, wake_fd);
      if (st != io_status::ok) return st;
      continue;
    }
    if (n < 0 && is_peer_gone(err)) return io_status::closed;
    SHOAL_THROW(errc::system, "shoal bootstrap", "send failed: {} (errno {})", std::strerror(err), err);
  }
  return io_status::ok;
}

io_status recv_all(int fd, void* data, size_t num_bytes, clock::time_point deadline, int wake_fd) {
  auto* p = static_cast<uint8_t*>(data);
  while (num_bytes > 0) {
    ssize_t n = ::recv(fd, p, num_bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      num_bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return io_status::closed;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      io_status st = wait_fd(fd, POLLIN, deadline, wake_fd);
      if (st != io_status::ok) return st;
      continue;
    }
    if (is_peer_gone(err)) return io_status::closed;
    SHOAL_THROW(errc::system, "shoal bootstrap", "recv failed: {} (errno {})", std::strerror(err), err);
  }
  return io_status::ok;
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  SHOAL_SYSCHECK(flags, "shoal bootstrap");
  SHOAL_SYSCHECK(::fcntl(fd, F_SETFL, flags | O_NONBLOCK), "shoal bootstrap");
}

void set_nodelay(int fd) {
  // Bootstrap messages are small and latency-bound (barriers); Nagle would add up to 40 ms each.
  int one = 1;
  SHOAL_SYSCHECK(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "shoal bootstrap");
}

std::string to_string(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    return fmt::format("{}:{}", text, ntohs(a.sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    return fmt::format("[{}]:{}", text, ntohs(a.sin6_port));
  }
  return fmt::format("<address family {}>", addr.ss_family);
}

uint16_t port_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  return 0;
}

std::string host_of(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  else if (addr.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof(text));
  return text;
}

socklen_t length_of(const sockaddr_storage& addr) {
  return addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool parse_numeric(std::string_view host, uint16_t port, sockaddr_storage* out) {
  std::string h(host);
  sockaddr_storage addr{};
  auto& v4 = reinterpret_cast<sockaddr_in&>(addr);
  auto& v6 = reinterpret_cast<sockaddr_in6&>(addr);
  if (::inet_pton(AF_INET, h.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
  } else if (::inet_pton(AF_INET6, h.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
  } else {
    return false;
  }
  *out = addr;
  return true;
}

sockaddr_storage resolve(const std::string& host, uint16_t port, std::string_view what) {
  sockaddr_storage addr{};
  if (parse_numeric(host, port, &addr)) return addr;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0 || list == nullptr)
    SHOAL_THROW(errc::invalid_argument, what, "cannot resolve host '{}': {}", host, ::gai_strerror(rc));
  // Prefer IPv4: a name with both families is most often reachable over v4 on cluster networks.
  const addrinfo* pick = list;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next)
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  std::memcpy(&addr, pick->ai_addr, pick->ai_addrlen);
  ::freeaddrinfo(list);
  if (addr.ss_family == AF_INET) reinterpret_cast<sockaddr_in&>(addr).sin_port = htons(port);
  if (addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(addr).sin6_port = htons(port);
  return addr;
}

std::pair<std::string, uint16_t> split_host_port(std::string_view text, std::string_view what) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    SHOAL_THROW(errc::invalid_argument, what, "'{}' is not HOST:PORT", text);
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string_view::npos)
    SHOAL_THROW(errc::invalid_argument, what, "'{}': write an IPv6 address in brackets, [ADDR]:PORT", text);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (host.empty() || port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port == 0 || port > 65535)
    SHOAL_THROW(errc::invalid_argument, what, "'{}' is not HOST:PORT with a port in 1..65535", text);
  return {std::string(host), static_cast<uint16_t>(port)};
}

}  // namespace shoal::detail::net
