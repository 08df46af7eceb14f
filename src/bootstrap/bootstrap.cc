// The TCP star: PE 0 accepts two connections from every other PE (collective + monitor), relays
// every collective as one round (gather from all, check that all called the same thing, answer
// all), and runs the liveness monitor over the monitor connections.
#include "bootstrap/bootstrap.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/net.hpp"
#include "bootstrap/wire.hpp"
#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail {

namespace {

using net::clock;
using net::io_status;
using net::unique_fd;
using std::chrono::milliseconds;

// Errors of the rendezvous are reported as failures of the public call that runs it.
constexpr std::string_view kInitCall = "shoal_init";
constexpr std::string_view kFinalizeCall = "shoal_finalize";
// Monitor messages are tiny; anything bigger means the stream is corrupt.
constexpr uint64_t kMaxMonitorPayload = 64 * 1024;
// How long PE 0 spends telling the others about a failure before it gives up on a stuck one.
constexpr milliseconds kNotifyBudget{500};

int64_t count_ms(clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

milliseconds heartbeat_period(milliseconds peer_timeout) {
  return std::clamp(peer_timeout / 5, milliseconds(1), milliseconds(1000));
}

// "1, 4-6, 9": missing-rank lists stay readable at 1000 PEs.
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

// Secrets are compared in constant time: a byte-by-byte early exit would leak the secret to a
// patient attacker measuring how long refusals take.
bool secrets_equal(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

unique_fd make_eventfd() {
  unique_fd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  SHOAL_SYSCHECK(fd.get(), kInitCall);
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

struct message {
  wire::header head;
  std::string call;
  std::vector<uint8_t> payload;
};

// Reads one whole message. `corrupt` is set (and status ok) when the bytes are not our protocol.
io_status read_message(int fd, message* m, clock::time_point deadline, int wake_fd, bool* corrupt) {
  *corrupt = false;
  uint8_t raw[wire::header_bytes];
  io_status st = net::recv_all(fd, raw, sizeof(raw), deadline, wake_fd);
  if (st != io_status::ok) return st;
  auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(raw));
  if (!h) {
    *corrupt = true;
    return io_status::ok;
  }
  m->head = *h;
  m->call.assign(h->call_bytes, '\0');
  st = net::recv_all(fd, m->call.data(), m->call.size(), deadline, wake_fd);
  if (st != io_status::ok) return st;
  m->payload.resize(h->payload_bytes);
  return net::recv_all(fd, m->payload.data(), m->payload.size(), deadline, wake_fd);
}

std::vector<uint8_t> error_message(errc code, bool fatal, std::string_view text) {
  uint8_t body[wire::error_body_bytes];
  wire::put_le(body, static_cast<uint32_t>(code));
  wire::put_le(body + 4, uint32_t{fatal ? 1u : 0u});
  return wire::build(wire::msg::error, 0, {}, {body, wire::as_bytes(text)});
}

struct error_reply {
  errc code = errc::internal;
  bool fatal = true;
  std::string text;
};

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
  std::string_view text = why.substr(0, kMaxMonitorPayload - wire::status_body_bytes);
  return wire::build(type, 0, {}, {body, wire::as_bytes(text)});
}

std::pair<int, std::string> parse_status(const message& m) {
  if (m.payload.size() < wire::status_body_bytes) return {peer_failure_status, "(malformed failure message)"};
  return {wire::get_le<int32_t>(m.payload.data()),
          std::string(reinterpret_cast<const char*>(m.payload.data()) + wire::status_body_bytes,
                      m.payload.size() - wire::status_body_bytes)};
}

std::string describe(std::string_view call, const wire::coll_desc& d) {
  switch (d.operation) {
    case wire::op::allgather:
      return fmt::format("{} (allgather of {} bytes per PE)", call, d.bytes);
    case wire::op::barrier:
      return fmt::format("{} (barrier)", call);
    case wire::op::broadcast:
      return fmt::format("{} (broadcast of {} bytes from PE {})", call, d.bytes, d.root);
    case wire::op::finalize:
      return std::string(call);
  }
  return fmt::format("{} (unknown collective {})", call, static_cast<uint32_t>(d.operation));
}

// Bytes of data a PE sends in a collective, besides the descriptor.
uint64_t sent_bytes(const wire::coll_desc& d, int rank) {
  if (d.flags & wire::coll_flag_null_buffer) return 0;
  if (d.operation == wire::op::allgather) return d.bytes;
  if (d.operation == wire::op::broadcast && d.root == rank) return d.bytes;
  return 0;
}

// Monitor connections are read without blocking: bytes are appended to an inbox and whole
// messages taken from its front.
enum class pump_result { ok, closed, corrupt };

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
    if (!h || h->payload_bytes > kMaxMonitorPayload) return pump_result::corrupt;
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

// ---------------------------------------------------------------------------------------------

class tcp_bootstrap final : public bootstrap {
 public:
  tcp_bootstrap(const bootstrap_options& options, failure_handler on_failure)
      : rank_(options.rank),
        size_(options.size),
        opts_(options),
        on_failure_(std::move(on_failure)),
        broken_fd_(make_eventfd()),
        wake_fd_(make_eventfd()) {
    if (rank_ == 0) peers_.resize(static_cast<size_t>(size_));
  }

  ~tcp_bootstrap() override { shutdown(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void root_rendezvous(unique_fd listener);
  void peer_rendezvous();
  void start_monitor();

  void allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view call) override {
    wire::coll_desc d;
    d.operation = wire::op::allgather;
    d.bytes = bytes_per_pe;
    if (bytes_per_pe > 0 && (mine == nullptr || all == nullptr)) d.flags |= wire::coll_flag_null_buffer;
    collective(call, d, mine, all);
  }

  void barrier(std::string_view call) override {
    wire::coll_desc d;
    d.operation = wire::op::barrier;
    collective(call, d, nullptr, nullptr);
  }

  void broadcast(void* data, size_t bytes, int root, std::string_view call) override {
    wire::coll_desc d;
    d.operation = wire::op::broadcast;
    d.root = root;
    d.bytes = bytes;
    if (bytes > 0 && data == nullptr) d.flags |= wire::coll_flag_null_buffer;
    collective(call, d, data, data);
  }

  void abort_job(int status, const std::string& why) override;
  void finalize() override;

 private:
  // PE 0's view of one other PE. `coll` is used by the caller's thread (under coll_mutex_); `mon`
  // is read only by the monitor thread and written under mon_write_mutex_; the rest belongs to
  // the monitor thread.
  struct peer_link {
    unique_fd coll;
    unique_fd mon;
    std::string from;  // remote address, for messages about duplicates
    std::vector<uint8_t> inbox;
    clock::time_point last_heard;
    bool said_bye = false;
    bool closed = false;
  };

  void collective(std::string_view call, wire::coll_desc desc, const void* send, void* recv);
  void root_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                  clock::time_point deadline);
  void peer_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                  clock::time_point deadline);
  size_t result_bytes(const wire::coll_desc& d, int rank) const {
    if (d.operation == wire::op::allgather) return d.bytes * static_cast<size_t>(size_);
    if (d.operation == wire::op::broadcast && d.root != rank) return d.bytes;
    return 0;
  }
  // PE 0: a round cannot complete. Tell every PE (so none waits forever), break, throw.
  [[noreturn]] void fail_round(errc code, std::string_view call, const std::string& why);
  [[noreturn]] void throw_broken(errc code, std::string_view call, const std::string& why);

  void monitor_main();
  void root_monitor();
  void peer_monitor();
  // PE 0: tell every live PE but `except` to stop, then run the local handler.
  void fail_job(int status, const std::string& why, int except);
  void report_failure(int status, const std::string& why);
  void mark_broken(const std::string& why);
  std::string broken_reason() {
    std::lock_guard lock(state_mutex_);
    return broken_why_;
  }
  void send_bye();
  void shutdown() noexcept;

  unique_fd connect_to_root(clock::time_point deadline);
  void wait_for_welcome(clock::time_point deadline);

  const int rank_;
  const int size_;
  const bootstrap_options opts_;
  const failure_handler on_failure_;

  std::vector<peer_link> peers_;  // PE 0: index = rank, [0] unused
  unique_fd coll_;                // other PEs: collective connection to PE 0
  unique_fd mon_;                 // other PEs: monitor connection to PE 0

  std::mutex coll_mutex_;   // one collective at a time (OpenSHMEM collectives are not concurrent)
  uint32_t seq_ = 0;        // collectives started by this PE; under coll_mutex_
  bool finalized_ = false;  // under coll_mutex_

  std::mutex mon_write_mutex_;  // every write to a monitor connection

  // Written once, never drained: readable from the first failure on, so that any collective
  // waiting in poll() wakes up and reports it instead of waiting for a PE that will never answer.
  unique_fd broken_fd_;
  std::atomic<bool> broken_{false};
  std::mutex state_mutex_;
  std::string broken_why_;                                    // under state_mutex_
  std::optional<std::pair<int, std::string>> pending_abort_;  // PE 0's own abort_job; under state_mutex_
  bool monitor_running_ = false;                              // under state_mutex_

  unique_fd wake_fd_;  // wakes the monitor thread: stop requested or pending_abort_ set
  std::atomic<bool> stopping_{false};
  std::atomic<bool> failure_reported_{false};
  std::thread monitor_;
};

// ---- rendezvous ----------------------------------------------------------------------------

void tcp_bootstrap::root_rendezvous(unique_fd listener) {
  const auto start = clock::now();
  const auto deadline = start + opts_.connect_timeout;
  net::set_nonblocking(listener.get());
  const std::string where = net::to_string(opts_.uid.addr);

  struct pending {
    unique_fd fd;
    std::vector<uint8_t> buf;
    std::string from;
  };
  std::vector<pending> pend;
  const int need = 2 * (size_ - 1);
  int have = 0;

  // A misconfigured job stops at once, for everyone already here: waiting out the timeout would
  // only hide the cause.
  auto fail = [&](errc code, const std::string& why, unique_fd* offender) {
    auto msg = error_message(code, true, why);
    auto notify_deadline = clock::now() + kNotifyBudget;
    auto tell = [&](const unique_fd& fd) {
      if (fd.valid()) net::send_all(fd.get(), msg.data(), msg.size(), notify_deadline, -1);
    };
    if (offender != nullptr) tell(*offender);
    for (auto& p : peers_) {
      tell(p.coll);
      tell(p.mon);
    }
    SHOAL_THROW(code, kInitCall, "{}", why);
  };

  while (have < need) {
    auto now = clock::now();
    if (now >= deadline) {
      std::vector<int> missing;
      for (int r = 1; r < size_; ++r)
        if (!peers_[r].coll.valid() || !peers_[r].mon.valid()) missing.push_back(r);
      fail(errc::timeout,
           fmt::format("bootstrap rendezvous timed out after {} ms: PE{} {} never arrived ({} of {} PEs did; PE 0 "
                       "listens on {})",
                       opts_.connect_timeout.count(), missing.size() == 1 ? "" : "s", rank_list(missing),
                       size_ - static_cast<int>(missing.size()), size_, where),
           nullptr);
    }
    std::vector<pollfd> fds;
    fds.push_back({listener.get(), POLLIN, 0});
    for (auto& p : pend) fds.push_back({p.fd.get(), POLLIN, 0});
    int timeout = static_cast<int>(std::max<int64_t>(1, count_ms(deadline - now)));
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, kInitCall);

    // Hellos first (indices match `pend` as it was when polled), then new connections.
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      pending& p = pend[i - 1];
      size_t want = wire::header_bytes + wire::hello_bytes;
      size_t old = p.buf.size();
      p.buf.resize(want);
      ssize_t got = ::recv(p.fd.get(), p.buf.data() + old, want - old, MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        p.buf.resize(old);
        continue;
      }
      if (got <= 0) {
        SHOAL_LOG(info, bootstrap, "connection from {} closed before its hello", p.from);
        p.fd.reset();
        continue;
      }
      p.buf.resize(old + static_cast<size_t>(got));
      if (p.buf.size() < want) continue;

      auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(p.buf.data(), wire::header_bytes));
      if (!h || h->type != wire::msg::hello || h->call_bytes != 0 || h->payload_bytes != wire::hello_bytes) {
        SHOAL_LOG(warn, bootstrap, "dropping connection from {}: not a shoal bootstrap hello", p.from);
        p.fd.reset();
        continue;
      }
      auto hello = wire::decode_hello(
          std::span<const uint8_t, wire::hello_bytes>(p.buf.data() + wire::header_bytes, wire::hello_bytes));
      if (!secrets_equal(hello.secret, opts_.uid.secret)) {
        SHOAL_LOG(warn, bootstrap, "refused connection from {} claiming PE {}: wrong secret (a PE of another job?)",
                  p.from, hello.rank);
        auto msg = error_message(errc::invalid_argument, true,
                                 fmt::format("PE 0 at {} refused this PE: its bootstrap secret does not match "
                                             "(a unique id or SHOAL_BOOTSTRAP_UID of another job?)",
                                             where));
        net::send_all(p.fd.get(), msg.data(), msg.size(), clock::now() + kNotifyBudget, -1);
        p.fd.reset();
        continue;
      }
      // Authenticated from here on: configuration errors stop the rendezvous for everyone.
      if (hello.version != wire::protocol_version)
        fail(errc::mismatch,
             fmt::format("PE {} speaks bootstrap protocol {}, PE 0 speaks {}: PEs run different shoal versions",
                         hello.rank, hello.version, wire::protocol_version),
             &p.fd);
      if (hello.size != size_)
        fail(errc::mismatch,
             fmt::format("PE {} was started with {} PEs, PE 0 with {}: PEs disagree on the job size", hello.rank,
                         hello.size, size_),
             &p.fd);
      if (hello.rank <= 0 || hello.rank >= size_)
        fail(errc::invalid_argument,
             hello.rank == 0 ? fmt::format("a PE at {} also claims rank 0", p.from)
                             : fmt::format("a PE at {} claims rank {}, outside 0..{}", p.from, hello.rank, size_ - 1),
             &p.fd);
      if (hello.chan != wire::channel::collective && hello.chan != wire::channel::monitor) {
        SHOAL_LOG(warn, bootstrap, "dropping connection from {}: unknown channel", p.from);
        p.fd.reset();
        continue;
      }
      peer_link& link = peers_[hello.rank];
      unique_fd& slot = hello.chan == wire::channel::collective ? link.coll : link.mon;
      if (slot.valid())
        fail(errc::invalid_argument,
             fmt::format("two PEs claim rank {} (from {} and {})", hello.rank, link.from, p.from), &p.fd);
      slot = std::move(p.fd);
      link.from = p.from;
      ++have;
      SHOAL_LOG(trace, bootstrap, "PE {} {} connection from {}", hello.rank,
                hello.chan == wire::channel::collective ? "collective" : "monitor", link.from);
    }
    std::erase_if(pend, [](const pending& p) { return !p.fd.valid(); });

    if (fds[0].revents != 0) {
      for (;;) {
        sockaddr_storage from{};
        socklen_t len = sizeof(from);
        int fd = ::accept4(listener.get(), reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          SHOAL_SYSCHECK(fd, kInitCall);
        }
        net::set_nodelay(fd);
        pend.push_back({unique_fd(fd), {}, net::to_string(from)});
      }
    }
  }

  auto welcome = wire::build(wire::msg::welcome, 0, {}, {});
  for (int r = 1; r < size_; ++r) {
    io_status st = net::send_all(peers_[r].coll.get(), welcome.data(), welcome.size(), deadline + kNotifyBudget, -1);
    if (st != io_status::ok)
      fail(errc::peer_failure, fmt::format("PE {} closed its connection during the bootstrap rendezvous", r), nullptr);
  }
  SHOAL_LOG(info, bootstrap, "all {} PEs arrived at {} in {} ms", size_, where, count_ms(clock::now() - start));
}

unique_fd tcp_bootstrap::connect_to_root(clock::time_point deadline) {
  const sockaddr_storage& addr = opts_.uid.addr;
  milliseconds backoff(10);
  int last_error = 0;
  for (;;) {
    unique_fd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    SHOAL_SYSCHECK(fd.get(), kInitCall);
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), net::length_of(addr));
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
      if (net::wait_fd(fd.get(), POLLOUT, deadline, -1) == io_status::ok) {
        socklen_t len = sizeof(err);
        SHOAL_SYSCHECK(::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len), kInitCall);
      } else {
        err = ETIMEDOUT;
      }
    }
    if (err == 0) {
      net::set_nodelay(fd.get());
      return fd;
    }
    last_error = err;
    // PE 0 may simply not be listening yet (started later, or still opening its listener).
    bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH ||
                 err == ECONNRESET || err == ECONNABORTED || err == EAGAIN || err == EADDRNOTAVAIL;
    if (!retry)
      SHOAL_THROW(errc::system, kInitCall, "cannot connect to PE 0 at {}: {} (errno {})", net::to_string(addr),
                  std::strerror(err), err);
    auto now = clock::now();
    if (now >= deadline) break;
    auto pause_until = now + std::min<clock::duration>(backoff, deadline - now);
    // Our collective connection is already open when the monitor one is made: if PE 0 speaks on it
    // (it refused us and closed its listener), stop retrying and let the caller read why.
    if (coll_.valid()) {
      if (net::wait_fd(coll_.get(), POLLIN, pause_until, -1) == io_status::ok) return unique_fd();
    } else {
      std::this_thread::sleep_until(pause_until);
    }
    backoff = std::min(backoff * 2, milliseconds(250));
  }
  SHOAL_THROW(errc::timeout, kInitCall,
              "PE {} could not reach PE 0 at {} within {} ms (last error: {}); is PE 0 running, and is that "
              "address reachable from here?",
              rank_, net::to_string(addr), opts_.connect_timeout.count(), std::strerror(last_error));
}

void tcp_bootstrap::wait_for_welcome(clock::time_point deadline) {
  // PE 0's verdict normally comes on the collective connection; a configuration error found on
  // our monitor connection's hello comes there, so watch both until the collective one speaks.
  bool watch_mon = mon_.valid();
  auto throw_reply = [&](const message& m) {
    auto e = parse_error(m);
    if (!e) SHOAL_THROW(errc::internal, kInitCall, "malformed error message from PE 0");
    SHOAL_THROW(e->code, kInitCall, "{}", e->text);
  };
  for (;;) {
    pollfd fds[2] = {{coll_.get(), POLLIN, 0}, {mon_.get(), POLLIN, 0}};
    auto now = clock::now();
    if (now >= deadline)
      SHOAL_THROW(errc::timeout, kInitCall,
                  "PE 0 at {} accepted PE {} but did not complete the rendezvous in time (it has a longer connect "
                  "timeout than this PE's {} ms, or it hangs)",
                  net::to_string(opts_.uid.addr), rank_, opts_.connect_timeout.count());
    int n = ::poll(fds, watch_mon ? 2 : 1, static_cast<int>(std::max<int64_t>(1, count_ms(deadline - now))));
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, kInitCall);
    if (watch_mon && fds[1].revents != 0) {
      uint8_t raw[wire::header_bytes];
      ssize_t got = ::recv(mon_.get(), raw, sizeof(raw), MSG_PEEK | MSG_DONTWAIT);
      if (got == static_cast<ssize_t>(sizeof(raw))) {
        auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(raw));
        if (h && h->type == wire::msg::error) {
          message m;
          bool corrupt = false;
          if (read_message(mon_.get(), &m, deadline, -1, &corrupt) == io_status::ok && !corrupt) throw_reply(m);
        }
        watch_mon = false;  // anything else (a heartbeat) means the welcome is on its way
      } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        watch_mon = false;
      }
    }
    if (fds[0].revents != 0) {
      message m;
      bool corrupt = false;
      io_status st = read_message(coll_.get(), &m, deadline, -1, &corrupt);
      if (st == io_status::timed_out) continue;
      if (st == io_status::closed) {
        // PE 0 may have said why on the other connection before closing both.
        message why;
        if (mon_.valid() &&
            read_message(mon_.get(), &why, clock::now() + milliseconds(50), -1, &corrupt) == io_status::ok &&
            !corrupt && why.head.type == wire::msg::error)
          throw_reply(why);
        SHOAL_THROW(errc::peer_failure, kInitCall,
                    "PE 0 at {} closed the connection during the rendezvous (PE 0 died?)",
                    net::to_string(opts_.uid.addr));
      }
      if (corrupt) SHOAL_THROW(errc::internal, kInitCall, "malformed message from PE 0 during the rendezvous");
      if (m.head.type == wire::msg::welcome) return;
      if (m.head.type == wire::msg::error) throw_reply(m);
      SHOAL_THROW(errc::internal, kInitCall, "unexpected message {} from PE 0 during the rendezvous",
                  static_cast<int>(m.head.type));
    }
  }
}

void tcp_bootstrap::peer_rendezvous() {
  const auto start = clock::now();
  const auto deadline = start + opts_.connect_timeout;
  auto hello_for = [&](wire::channel chan) {
    wire::hello_body b;
    b.chan = chan;
    b.rank = rank_;
    b.size = size_;
    b.secret = opts_.uid.secret;
    uint8_t body[wire::hello_bytes];
    wire::encode(b, std::span<uint8_t, wire::hello_bytes>(body));
    return wire::build(wire::msg::hello, 0, {}, {body});
  };
  // A failed hello send is not reported here: PE 0 closing on us comes with (or without) a reason,
  // which wait_for_welcome reads and reports.
  coll_ = connect_to_root(deadline);
  auto hello = hello_for(wire::channel::collective);
  net::send_all(coll_.get(), hello.data(), hello.size(), deadline, -1);
  // Refused at once (wrong secret, bad rank)? Then do not knock a second time.
  if (net::wait_fd(coll_.get(), POLLIN, clock::now(), -1) != io_status::ok) mon_ = connect_to_root(deadline);
  if (mon_.valid()) {
    hello = hello_for(wire::channel::monitor);
    net::send_all(mon_.get(), hello.data(), hello.size(), deadline, -1);
  }
  // PE 0 answers at the latest at its own deadline, which can be a little after ours (it may
  // have started later); give it that slack before concluding that it hangs.
  auto grace = std::max<milliseconds>(milliseconds(1000), opts_.connect_timeout / 2);
  wait_for_welcome(deadline + grace);
  SHOAL_LOG(info, bootstrap, "PE {} joined PE 0 at {} in {} ms", rank_, net::to_string(opts_.uid.addr),
            count_ms(clock::now() - start));
}

// ---- collectives ---------------------------------------------------------------------------

void tcp_bootstrap::throw_broken(errc code, std::string_view call, const std::string& why) {
  mark_broken(why);
  SHOAL_THROW(code, call, "{}", why);
}

void tcp_bootstrap::collective(std::string_view call, wire::coll_desc desc, const void* send, void* recv) {
  std::lock_guard lock(coll_mutex_);
  if (finalized_) SHOAL_THROW(errc::not_initialized, call, "the bootstrap was finalized");
  if (broken_.load())
    SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable since an earlier failure: {}", broken_reason());
  call = call.substr(0, wire::max_call_bytes);
  ++seq_;
  auto deadline = net::forever;
  if (opts_.collective_timeout.count() > 0) {
    deadline = clock::now() + opts_.collective_timeout;
    // PE 0 judges the round and names the late PE; the others only time out themselves if PE 0
    // does not answer at all, so they allow it some slack.
    if (rank_ != 0) deadline += std::max<milliseconds>(milliseconds(1000), opts_.collective_timeout / 2);
  }
  if (size_ == 1) {
    // Still validated like a real round, so that a one-PE run reports what a larger one would.
    if (desc.flags & wire::coll_flag_null_buffer)
      SHOAL_THROW(errc::invalid_argument, call, "PE 0 passed a null buffer for {} bytes", desc.bytes);
    if (desc.operation == wire::op::broadcast && desc.root != 0)
      SHOAL_THROW(errc::invalid_argument, call, "broadcast root {} is not a PE (0..0)", desc.root);
    if (desc.operation == wire::op::allgather && desc.bytes > 0 && send != recv) std::memmove(recv, send, desc.bytes);
    return;
  }
  if (rank_ == 0)
    root_round(call, desc, send, recv, deadline);
  else
    peer_round(call, desc, send, recv, deadline);
}

void tcp_bootstrap::peer_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                               clock::time_point deadline) {
  uint8_t d[wire::coll_desc_bytes];
  wire::encode(desc, std::span<uint8_t, wire::coll_desc_bytes>(d));
  uint64_t data_bytes = sent_bytes(desc, rank_);
  auto msg = wire::build(wire::msg::collective, seq_, call,
                         {d, std::span<const uint8_t>(static_cast<const uint8_t*>(send), data_bytes)});
  auto check = [&](io_status st, const char* doing) {
    if (st == io_status::ok) return;
    if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", broken_reason());
    if (st == io_status::closed)
      throw_broken(errc::peer_failure, call,
                   fmt::format("PE 0 closed its bootstrap connection while PE {} was {} (PE 0 died?)", rank_, doing));
    throw_broken(errc::timeout, call,
                 fmt::format("PE {} had no answer from PE 0 in {} although the collective timeout is {} ms (PE 0 "
                             "hangs?)",
                             rank_, call, opts_.collective_timeout.count()));
  };
  check(net::send_all(coll_.get(), msg.data(), msg.size(), deadline, broken_fd_.get()), "sending");
  message reply;
  bool corrupt = false;
  check(read_message(coll_.get(), &reply, deadline, broken_fd_.get(), &corrupt), "waiting for the others");
  if (corrupt) throw_broken(errc::internal, call, "malformed bootstrap message from PE 0");
  if (reply.head.type == wire::msg::error) {
    auto e = parse_error(reply);
    if (!e) throw_broken(errc::internal, call, "malformed error message from PE 0");
    if (e->fatal) mark_broken(e->text);
    SHOAL_THROW(e->code, call, "{}", e->text);
  }
  if (reply.head.type != wire::msg::result || reply.head.seq != seq_ ||
      reply.payload.size() != result_bytes(desc, rank_))
    throw_broken(errc::internal, call,
                 fmt::format("unexpected reply from PE 0 to collective #{} ({} bytes)", seq_, reply.payload.size()));
  if (!reply.payload.empty()) std::memcpy(recv, reply.payload.data(), reply.payload.size());
}

void tcp_bootstrap::fail_round(errc code, std::string_view call, const std::string& why) {
  mark_broken(why);
  auto msg = error_message(code, true, why);
  auto notify_deadline = clock::now() + kNotifyBudget;
  for (int r = 1; r < size_; ++r)
    if (peers_[r].coll.valid()) net::send_all(peers_[r].coll.get(), msg.data(), msg.size(), notify_deadline, -1);
  SHOAL_THROW(code, call, "{}", why);
}

void tcp_bootstrap::root_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                               clock::time_point deadline) {
  std::vector<message> in(static_cast<size_t>(size_));
  std::vector<wire::coll_desc> descs(static_cast<size_t>(size_));
  descs[0] = desc;
  for (int r = 1; r < size_; ++r) {
    bool corrupt = false;
    io_status st = read_message(peers_[r].coll.get(), &in[r], deadline, broken_fd_.get(), &corrupt);
    if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", broken_reason());
    if (st == io_status::closed)
      fail_round(errc::peer_failure, call,
                 fmt::format("PE {} died during {} (its bootstrap connection closed)", r, call));
    if (st == io_status::timed_out)
      fail_round(errc::timeout, call,
                 fmt::format("PE {} did not enter {} within {} ms", r, call, opts_.collective_timeout.count()));
    const message& m = in[r];
    if (corrupt || m.head.type != wire::msg::collective || m.payload.size() < wire::coll_desc_bytes)
      fail_round(errc::internal, call, fmt::format("PE {} sent a malformed bootstrap message during {}", r, call));
    descs[r] = wire::decode_coll_desc(
        std::span<const uint8_t, wire::coll_desc_bytes>(m.payload.data(), wire::coll_desc_bytes));
    if (m.payload.size() - wire::coll_desc_bytes != sent_bytes(descs[r], r))
      fail_round(errc::internal, call, fmt::format("PE {} sent a malformed bootstrap message during {}", r, call));
  }

  // Everyone took part in this round, so a reply to each keeps the streams in step: a mismatch
  // leaves the bootstrap usable, except when finalize is involved (some PE has said bye already).
  auto reply_error = [&](errc code, bool fatal, const std::string& why) {
    auto msg = error_message(code, fatal, why);
    for (int r = 1; r < size_; ++r)
      if (net::send_all(peers_[r].coll.get(), msg.data(), msg.size(), deadline, broken_fd_.get()) != io_status::ok)
        mark_broken(fmt::format("PE {} died during {}", r, call));
    if (fatal) mark_broken(why);
    SHOAL_THROW(code, call, "{}", why);
  };

  for (int r = 1; r < size_; ++r)
    if (in[r].head.seq != seq_)
      fail_round(errc::mismatch, call,
                 fmt::format("PE {} is at bootstrap collective #{} while PE 0 is at #{}", r, in[r].head.seq, seq_));
  std::vector<std::string> differ;
  bool with_finalize = desc.operation == wire::op::finalize;
  for (int r = 1; r < size_; ++r) {
    const wire::coll_desc& d = descs[r];
    if (in[r].call != call || d.operation != desc.operation || d.bytes != desc.bytes || d.root != desc.root) {
      if (differ.size() < 8)
        differ.push_back(fmt::format("PE {} called {}", r, describe(in[r].call, d)));
      else if (differ.size() == 8)
        differ.push_back("…");
      with_finalize |= d.operation == wire::op::finalize;
    }
  }
  if (!differ.empty()) {
    std::string list;
    for (auto& s : differ) list += (list.empty() ? "" : ", ") + s;
    reply_error(errc::mismatch, with_finalize, fmt::format("{} while PE 0 called {}", list, describe(call, desc)));
  }
  for (int r = 0; r < size_; ++r)
    if (descs[r].flags & wire::coll_flag_null_buffer)
      reply_error(errc::invalid_argument, false,
                  fmt::format("PE {} passed a null buffer for {} bytes to {}", r, descs[r].bytes, call));
  if (desc.operation == wire::op::broadcast && (desc.root < 0 || desc.root >= size_))
    reply_error(errc::invalid_argument, false,
                fmt::format("broadcast root {} is not a PE (0..{})", desc.root, size_ - 1));

  // Results. PE 0's own part is copied, the others' sent back.
  auto send_result = [&](int r, std::span<const uint8_t> data) {
    auto msg = wire::build(wire::msg::result, seq_, {}, {data});
    io_status st = net::send_all(peers_[r].coll.get(), msg.data(), msg.size(), deadline, broken_fd_.get());
    if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", broken_reason());
    if (st != io_status::ok)
      fail_round(st == io_status::closed ? errc::peer_failure : errc::timeout, call,
                 fmt::format("PE {} stopped reading during {}", r, call));
  };
  switch (desc.operation) {
    case wire::op::allgather: {
      auto* all = static_cast<uint8_t*>(recv);
      size_t per_pe = desc.bytes;
      if (per_pe > 0) {
        std::memmove(all, send, per_pe);
        for (int r = 1; r < size_; ++r)
          std::memcpy(all + r * per_pe, in[r].payload.data() + wire::coll_desc_bytes, per_pe);
      }
      for (int r = 1; r < size_; ++r) send_result(r, {all, per_pe * static_cast<size_t>(size_)});
      break;
    }
    case wire::op::broadcast: {
      auto* data = static_cast<uint8_t*>(recv);
      if (desc.root != 0 && desc.bytes > 0)
        std::memcpy(data, in[desc.root].payload.data() + wire::coll_desc_bytes, desc.bytes);
      for (int r = 1; r < size_; ++r)
        send_result(r, r == desc.root ? std::span<const uint8_t>() : std::span<const uint8_t>(data, desc.bytes));
      break;
    }
    case wire::op::barrier:
    case wire::op::finalize:
      for (int r = 1; r < size_; ++r) send_result(r, {});
      break;
  }
}

// ---- liveness monitor ----------------------------------------------------------------------

void tcp_bootstrap::start_monitor() {
  std::lock_guard lock(state_mutex_);
  monitor_running_ = true;
  monitor_ = std::thread([this] { monitor_main(); });
}

void tcp_bootstrap::monitor_main() {
  try {
    if (rank_ == 0)
      root_monitor();
    else
      peer_monitor();
  } catch (const std::exception& e) {
    // A broken monitor must not leave the job unwatched.
    report_failure(peer_failure_status, fmt::format("PE {}'s bootstrap monitor failed: {}", rank_, e.what()));
  }
  std::optional<std::pair<int, std::string>> abort;
  {
    std::lock_guard lock(state_mutex_);
    monitor_running_ = false;
    abort = std::exchange(pending_abort_, std::nullopt);
  }
  if (abort) report_failure(abort->first, abort->second);
}

void tcp_bootstrap::root_monitor() {
  const auto period = heartbeat_period(opts_.peer_timeout);
  const auto heartbeat = wire::build(wire::msg::heartbeat, 0, {}, {});
  auto next_beat = clock::now();
  for (int r = 1; r < size_; ++r) peers_[r].last_heard = next_beat;
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  std::vector<message> msgs;
  for (;;) {
    auto now = clock::now();
    if (now >= next_beat) {
      std::lock_guard lock(mon_write_mutex_);
      for (int r = 1; r < size_; ++r)
        if (!peers_[r].closed)  // a full socket buffer means a stopped PE; silence detection handles it
          ::send(peers_[r].mon.get(), heartbeat.data(), heartbeat.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      next_beat = now + period;
    }
    auto wake_at = next_beat;
    for (int r = 1; r < size_; ++r) {
      const peer_link& p = peers_[r];
      if (p.closed || p.said_bye) continue;
      if (now - p.last_heard > opts_.peer_timeout) {
        fail_job(peer_failure_status,
                 fmt::format("PE {} went silent: no heartbeat for {} ms (SHOAL_PEER_TIMEOUT {} ms)", r,
                             count_ms(now - p.last_heard), opts_.peer_timeout.count()),
                 r);
        return;
      }
      wake_at = std::min(wake_at, p.last_heard + opts_.peer_timeout + milliseconds(1));
    }
    fds.assign(1, {wake_fd_.get(), POLLIN, 0});
    ranks.assign(1, 0);
    for (int r = 1; r < size_; ++r)
      if (!peers_[r].closed) {
        fds.push_back({peers_[r].mon.get(), POLLIN, 0});
        ranks.push_back(r);
      }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(1, count_ms(wake_at - now) + 1)));
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, "shoal bootstrap monitor");
    if (fds[0].revents != 0) {
      drain_fd(wake_fd_.get());
      if (stopping_.load()) return;
      std::optional<std::pair<int, std::string>> abort;
      {
        std::lock_guard lock(state_mutex_);
        abort = std::exchange(pending_abort_, std::nullopt);
      }
      if (abort) {
        fail_job(abort->first, abort->second, -1);
        return;
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      int r = ranks[i];
      peer_link& p = peers_[r];
      msgs.clear();
      pump_result got = pump(p.mon.get(), p.inbox, msgs);
      p.last_heard = clock::now();
      for (const message& m : msgs) {
        if (m.head.type == wire::msg::bye) p.said_bye = true;
        if (m.head.type == wire::msg::abort) {
          auto [status, why] = parse_status(m);
          fail_job(status, why, -1);
          return;
        }
      }
      if (got == pump_result::corrupt) {
        fail_job(peer_failure_status, fmt::format("PE {} sent garbage on its bootstrap monitor connection", r), r);
        return;
      }
      if (got == pump_result::closed) {
        if (p.said_bye) {
          p.closed = true;
          continue;
        }
        fail_job(peer_failure_status,
                 fmt::format("PE {} died: its bootstrap connection closed before shoal_finalize", r), r);
        return;
      }
    }
  }
}

void tcp_bootstrap::peer_monitor() {
  const auto period = heartbeat_period(opts_.peer_timeout);
  const auto heartbeat = wire::build(wire::msg::heartbeat, 0, {}, {});
  auto last_heard = clock::now();
  auto next_beat = last_heard;
  bool root_said_bye = false;
  std::vector<uint8_t> inbox;
  std::vector<message> msgs;
  for (;;) {
    auto now = clock::now();
    if (now >= next_beat) {
      std::lock_guard lock(mon_write_mutex_);
      ::send(mon_.get(), heartbeat.data(), heartbeat.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      next_beat = now + period;
    }
    auto wake_at = next_beat;
    if (!root_said_bye) {
      if (now - last_heard > opts_.peer_timeout) {
        report_failure(peer_failure_status,
                       fmt::format("PE 0 went silent: no heartbeat for {} ms (SHOAL_PEER_TIMEOUT {} ms)",
                                   count_ms(now - last_heard), opts_.peer_timeout.count()));
        return;
      }
      wake_at = std::min(wake_at, last_heard + opts_.peer_timeout + milliseconds(1));
    }
    pollfd fds[2] = {{wake_fd_.get(), POLLIN, 0}, {mon_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::max<int64_t>(1, count_ms(wake_at - now) + 1)));
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, "shoal bootstrap monitor");
    if (fds[0].revents != 0) {
      drain_fd(wake_fd_.get());
      if (stopping_.load()) return;
    }
    if (fds[1].revents == 0) continue;
    msgs.clear();
    pump_result got = pump(mon_.get(), inbox, msgs);
    last_heard = clock::now();
    for (const message& m : msgs) {
      if (m.head.type == wire::msg::bye) root_said_bye = true;
      if (m.head.type == wire::msg::failure) {
        auto [status, why] = parse_status(m);
        report_failure(status, why);
        return;
      }
    }
    if (got == pump_result::corrupt) {
      report_failure(peer_failure_status, "PE 0 sent garbage on the bootstrap monitor connection");
      return;
    }
    if (got == pump_result::closed) {
      if (!root_said_bye && !stopping_.load())
        report_failure(peer_failure_status, "PE 0 died: its bootstrap connection closed before shoal_finalize");
      return;
    }
  }
}

void tcp_bootstrap::fail_job(int status, const std::string& why, int except) {
  mark_broken(why);
  auto msg = status_message(wire::msg::failure, status, why);
  auto deadline = clock::now() + kNotifyBudget;
  {
    std::lock_guard lock(mon_write_mutex_);
    for (int r = 1; r < size_; ++r)
      if (r != except && !peers_[r].closed && peers_[r].mon.valid())
        net::send_all(peers_[r].mon.get(), msg.data(), msg.size(), deadline, -1);
  }
  report_failure(status, why);
}

void tcp_bootstrap::report_failure(int status, const std::string& why) {
  if (failure_reported_.exchange(true)) return;
  mark_broken(why);
  SHOAL_LOG(info, bootstrap, "job failure (status {}): {}", status, why);
  if (on_failure_) {
    on_failure_(status, why);
    return;
  }
  std::fprintf(stderr, "[shoal pe %d] stopping: %s\n", rank_, why.c_str());
  std::fflush(stderr);
  ::_exit(status);
}

void tcp_bootstrap::mark_broken(const std::string& why) {
  std::lock_guard lock(state_mutex_);
  if (broken_.exchange(true)) return;
  broken_why_ = why;
  signal_fd(broken_fd_.get());
}

void tcp_bootstrap::abort_job(int status, const std::string& why) {
  if (rank_ == 0) {
    {
      std::lock_guard lock(state_mutex_);
      if (monitor_running_) {
        pending_abort_ = {status, why};
        signal_fd(wake_fd_.get());
        return;
      }
    }
    fail_job(status, why, -1);
    return;
  }
  bool sent = false;
  {
    std::lock_guard lock(state_mutex_);
    if (monitor_running_ && mon_.valid()) {
      // PE 0 relays it to every PE, this one included; our monitor thread then runs the handler.
      auto msg = status_message(wire::msg::abort, status, why);
      std::lock_guard wlock(mon_write_mutex_);
      sent = net::send_all(mon_.get(), msg.data(), msg.size(), clock::now() + kNotifyBudget, -1) == io_status::ok;
    }
  }
  if (!sent) report_failure(status, why);
}

void tcp_bootstrap::send_bye() {
  auto bye = wire::build(wire::msg::bye, 0, {}, {});
  auto deadline = clock::now() + kNotifyBudget;
  std::lock_guard lock(mon_write_mutex_);
  if (rank_ != 0) {
    net::send_all(mon_.get(), bye.data(), bye.size(), deadline, -1);
    return;
  }
  for (int r = 1; r < size_; ++r)
    if (!peers_[r].closed) net::send_all(peers_[r].mon.get(), bye.data(), bye.size(), deadline, -1);
}

void tcp_bootstrap::finalize() {
  {
    std::lock_guard lock(coll_mutex_);
    if (finalized_) return;
  }
  if (broken_.load()) {
    shutdown();
    SHOAL_THROW(errc::peer_failure, kFinalizeCall, "bootstrap unusable since an earlier failure: {}", broken_reason());
  }
  // Bye before the closing round: every PE's bye is then on the wire before any PE can pass the
  // round and close its sockets, so no monitor mistakes an orderly exit for a death.
  if (size_ > 1) send_bye();
  wire::coll_desc d;
  d.operation = wire::op::finalize;
  try {
    collective(kFinalizeCall, d, nullptr, nullptr);
  } catch (...) {
    shutdown();
    throw;
  }
  shutdown();
}

void tcp_bootstrap::shutdown() noexcept {
  stopping_.store(true);
  signal_fd(wake_fd_.get());
  if (monitor_.joinable()) {
    // The handler must not destroy its bootstrap; if it does anyway, do not deadlock on ourselves.
    if (monitor_.get_id() == std::this_thread::get_id())
      monitor_.detach();
    else
      monitor_.join();
  }
  std::lock_guard lock(coll_mutex_);
  finalized_ = true;
  coll_.reset();
  mon_.reset();
  for (auto& p : peers_) {
    p.coll.reset();
    p.mon.reset();
  }
}

}  // namespace

// ---- entry point ---------------------------------------------------------------------------

std::unique_ptr<bootstrap> bootstrap::connect(const bootstrap_options& options, failure_handler on_failure) {
  unique_fd listener(options.listen_fd);
  struct remove_file {
    std::string path;
    ~remove_file() {
      if (!path.empty()) ::unlink(path.c_str());
    }
  } uid_file{options.rank == 0 ? options.uid_file : std::string()};

  SHOAL_CHECK_ARG(options.size >= 1, kInitCall, "job size {} must be at least 1", options.size);
  SHOAL_CHECK_ARG(options.rank >= 0 && options.rank < options.size, kInitCall, "rank {} is outside 0..{}", options.rank,
                  options.size - 1);
  SHOAL_CHECK_ARG(options.connect_timeout.count() > 0, kInitCall, "connect timeout must be positive (got {} ms)",
                  options.connect_timeout.count());
  SHOAL_CHECK_ARG(options.peer_timeout.count() > 0, kInitCall, "peer timeout must be positive (got {} ms)",
                  options.peer_timeout.count());
  SHOAL_CHECK_ARG(options.collective_timeout.count() >= 0, kInitCall, "collective timeout must not be negative");

  auto boot = std::make_unique<tcp_bootstrap>(options, std::move(on_failure));
  if (options.size == 1) return boot;
  const sockaddr_storage& addr = options.uid.addr;
  SHOAL_CHECK_ARG(addr.ss_family == AF_INET || addr.ss_family == AF_INET6, kInitCall,
                  "the unique id has no PE 0 address (was it generated?)");
  if (options.rank == 0) {
    if (!listener.valid()) listener.reset(open_listener(net::host_of(addr), net::port_of(addr), nullptr));
    boot->root_rendezvous(std::move(listener));
  } else {
    listener.reset();
    boot->peer_rendezvous();
  }
  boot->start_monitor();
  return boot;
}

}  // namespace shoal::detail
