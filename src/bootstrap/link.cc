#include "bootstrap/link.hpp"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/bootstrap.hpp"
#include "common/check.hpp"

namespace shoal::detail::link {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

net::unique_fd make_eventfd() {
  net::unique_fd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  SHOAL_SYSCHECK(fd.get(), init_call);
  return fd;
}

void signal_fd(int fd) {
  uint64_t one = 1;
  // EAGAIN only when the counter is saturated, i.e. already signaled.
  while (::write(fd, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

void drain_fd(int fd) {
  uint64_t value;
  while (::read(fd, &value, sizeof(value)) < 0 && errno == EINTR) {
  }
}

net::io_status read_message(int fd, message* m, clock::time_point deadline, int wake_fd, bool* corrupt) {
  *corrupt = false;
  uint8_t raw[wire::header_bytes];
  net::io_status st = net::recv_all(fd, raw, sizeof(raw), deadline, wake_fd);
  if (st != net::io_status::ok) return st;
  auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(raw));
  if (!h) {
    *corrupt = true;
    return net::io_status::ok;
  }
  m->head = *h;
  m->call.assign(h->call_bytes, '\0');
  st = net::recv_all(fd, m->call.data(), m->call.size(), deadline, wake_fd);
  if (st != net::io_status::ok) return st;
  m->payload.resize(h->payload_bytes);
  return net::recv_all(fd, m->payload.data(), m->payload.size(), deadline, wake_fd);
}

std::vector<uint8_t> error_message(errc code, bool fatal, std::string_view text) {
  uint8_t body[wire::error_body_bytes];
  wire::put_le(body, static_cast<uint32_t>(code));
  wire::put_le(body + 4, uint32_t{fatal ? 1u : 0u});
  return wire::build(wire::msg::error, 0, {}, {body, wire::as_bytes(text)});
}

std::optional<error_reply> parse_error(const message& m) {
  if (m.payload.size() < wire::error_body_bytes) return std::nullopt;
  error_reply e;
  e.code = static_cast<errc>(wire::get_le<uint32_t>(m.payload.data()));
  e.fatal = wire::get_le<uint32_t>(m.payload.data() + 4) != 0;
  e.text.assign(reinterpret_cast<const char*>(m.payload.data()) + wire::error_body_bytes,
                m.payload.size() - wire::error_body_bytes);
  return e;
}

std::vector<uint8_t> status_message(wire::msg type, int status, std::string_view why) {
  uint8_t body[wire::status_body_bytes] = {};
  wire::put_le(body, static_cast<int32_t>(status));
  std::string_view text = why.substr(0, max_reason_bytes - wire::status_body_bytes);
  return wire::build(type, 0, {}, {body, wire::as_bytes(text)});
}

std::pair<int, std::string> parse_status(const message& m) {
  if (m.payload.size() < wire::status_body_bytes) return {peer_failure_status, "(malformed failure message)"};
  return {wire::get_le<int32_t>(m.payload.data()),
          std::string(reinterpret_cast<const char*>(m.payload.data()) + wire::status_body_bytes,
                      m.payload.size() - wire::status_body_bytes)};
}

pump_result pump(int fd, std::vector<uint8_t>& inbox, std::vector<message>& out) {
  bool closed = false;
  uint8_t buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      inbox.insert(inbox.end(), buf, buf + n);
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n == 0) {
      closed = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    closed = true;  // ECONNRESET and friends: the peer is gone
    break;
  }
  size_t at = 0;
  while (inbox.size() - at >= wire::header_bytes) {
    auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(inbox.data() + at, wire::header_bytes));
    if (!h || h->payload_bytes > max_monitor_payload) return pump_result::corrupt;
    size_t total = wire::header_bytes + h->call_bytes + h->payload_bytes;
    if (inbox.size() - at < total) break;
    message m;
    m.head = *h;
    const uint8_t* p = inbox.data() + at + wire::header_bytes;
    m.call.assign(reinterpret_cast<const char*>(p), h->call_bytes);
    m.payload.assign(p + h->call_bytes, p + h->call_bytes + h->payload_bytes);
    out.push_back(std::move(m));
    at += total;
  }
  inbox.erase(inbox.begin(), inbox.begin() + static_cast<std::ptrdiff_t>(at));
  return closed ? pump_result::closed : pump_result::ok;
}

job_state::job_state() : broken_fd_(make_eventfd()) {}

void job_state::mark_broken(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (broken_.exchange(true)) return;
  why_ = why;
  signal_fd(broken_fd_.get());
}

std::string job_state::broken_reason() {
  std::lock_guard lock(mutex_);
  return why_;
}

}  // namespace shoal::detail::link
