#include "bootstrap/rendezvous.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail {

namespace {

using link::clock;
using link::count_ms;
using link::error_message;
using link::init_call;
using link::message;
using link::notify_budget;
using link::parse_error;
using link::read_message;
using net::io_status;
using net::unique_fd;
using std::chrono::milliseconds;

// Secrets are compared in constant time: a byte-by-byte early exit would leak the secret to a
// patient attacker measuring how long refusals take.
bool secrets_equal(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

star_links rendezvous::accept_all(unique_fd listener) {
  const int n_pes = opts_.size;
  star_links links;
  links.coll.resize(static_cast<size_t>(n_pes));
  links.mon.resize(static_cast<size_t>(n_pes));
  std::vector<std::string> from(static_cast<size_t>(n_pes));
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
  const int need = 2 * (n_pes - 1);
  int have = 0;

  // A misconfigured job stops at once, for everyone already here: waiting out the timeout would
  // only hide the cause.
  auto fail = [&](errc code, const std::string& why, unique_fd* offender) {
    auto msg = error_message(code, true, why);
    auto notify_deadline = clock::now() + notify_budget;
    auto tell = [&](const unique_fd& fd) {
      if (fd.valid()) net::send_all(fd.get(), msg.data(), msg.size(), notify_deadline, -1);
    };
    if (offender != nullptr) tell(*offender);
    for (int r = 1; r < n_pes; ++r) {
      tell(links.coll[r]);
      tell(links.mon[r]);
    }
    SHOAL_THROW(code, init_call, "{}", why);
  };

  while (have < need) {
    auto now = clock::now();
    if (now >= deadline) {
      std::vector<int> missing;
      for (int r = 1; r < n_pes; ++r)
        if (!links.coll[r].valid() || !links.mon[r].valid()) missing.push_back(r);
      fail(errc::timeout,
           fmt::format("bootstrap rendezvous timed out after {} ms: PE{} {} never arrived ({} of {} PEs did; PE 0 "
                       "listens on {})",
                       opts_.connect_timeout.count(), missing.size() == 1 ? "" : "s", link::rank_list(missing),
                       n_pes - static_cast<int>(missing.size()), n_pes, where),
           nullptr);
    }
    std::vector<pollfd> fds;
    fds.push_back({listener.get(), POLLIN, 0});
    for (auto& p : pend) fds.push_back({p.fd.get(), POLLIN, 0});
    int timeout = static_cast<int>(std::max<int64_t>(1, count_ms(deadline - now)));
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, init_call);

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
        net::send_all(p.fd.get(), msg.data(), msg.size(), clock::now() + notify_budget, -1);
        p.fd.reset();
        continue;
      }
      // Authenticated from here on: configuration errors stop the rendezvous for everyone.
      if (hello.version != wire::protocol_version)
        fail(errc::mismatch,
             fmt::format("PE {} speaks bootstrap protocol {}, PE 0 speaks {}: PEs run different shoal versions",
                         hello.rank, hello.version, wire::protocol_version),
             &p.fd);
      if (hello.size != n_pes)
        fail(errc::mismatch,
             fmt::format("PE {} was started with {} PEs, PE 0 with {}: PEs disagree on the job size", hello.rank,
                         hello.size, n_pes),
             &p.fd);
      if (hello.rank <= 0 || hello.rank >= n_pes)
        fail(errc::invalid_argument,
             hello.rank == 0 ? fmt::format("a PE at {} also claims rank 0", p.from)
                             : fmt::format("a PE at {} claims rank {}, outside 0..{}", p.from, hello.rank, n_pes - 1),
             &p.fd);
      if (hello.chan != wire::channel::collective && hello.chan != wire::channel::monitor) {
        SHOAL_LOG(warn, bootstrap, "dropping connection from {}: unknown channel", p.from);
        p.fd.reset();
        continue;
      }
      unique_fd& slot = (hello.chan == wire::channel::collective ? links.coll : links.mon)[hello.rank];
      if (slot.valid())
        fail(errc::invalid_argument,
             fmt::format("two PEs claim rank {} (from {} and {})", hello.rank, from[hello.rank], p.from), &p.fd);
      slot = std::move(p.fd);
      from[hello.rank] = p.from;
      ++have;
      SHOAL_LOG(trace, bootstrap, "PE {} {} connection from {}", hello.rank,
                hello.chan == wire::channel::collective ? "collective" : "monitor", from[hello.rank]);
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
          SHOAL_SYSCHECK(fd, init_call);
        }
        net::set_nodelay(fd);
        pend.push_back({unique_fd(fd), {}, net::to_string(from)});
      }
    }
  }

  auto welcome = wire::build(wire::msg::welcome, 0, {}, {});
  for (int r = 1; r < n_pes; ++r) {
    io_status st = net::send_all(links.coll[r].get(), welcome.data(), welcome.size(), deadline + notify_budget, -1);
    if (st != io_status::ok)
      fail(errc::peer_failure, fmt::format("PE {} closed its connection during the bootstrap rendezvous", r), nullptr);
  }
  SHOAL_LOG(info, bootstrap, "all {} PEs arrived at {} in {} ms", n_pes, where, count_ms(clock::now() - start));
  return links;
}

unique_fd rendezvous::connect_to_root(clock::time_point deadline, int refused_fd) {
  const sockaddr_storage& addr = opts_.uid.addr;
  milliseconds backoff(10);
  int last_error = 0;
  for (;;) {
    unique_fd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    SHOAL_SYSCHECK(fd.get(), init_call);
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), net::length_of(addr));
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
      if (net::wait_fd(fd.get(), POLLOUT, deadline, -1) == io_status::ok) {
        socklen_t len = sizeof(err);
        SHOAL_SYSCHECK(::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len), init_call);
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
      SHOAL_THROW(errc::system, init_call, "cannot connect to PE 0 at {}: {} (errno {})", net::to_string(addr),
                  std::strerror(err), err);
    auto now = clock::now();
    if (now >= deadline) break;
    auto pause_until = now + std::min<clock::duration>(backoff, deadline - now);
    // Our collective connection is already open when the monitor one is made: if PE 0 speaks on it
    // (it refused us and closed its listener), stop retrying and let the caller read why.
    if (refused_fd >= 0) {
      if (net::wait_fd(refused_fd, POLLIN, pause_until, -1) == io_status::ok) return unique_fd();
    } else {
      std::this_thread::sleep_until(pause_until);
    }
    backoff = std::min(backoff * 2, milliseconds(250));
  }
  SHOAL_THROW(errc::timeout, init_call,
              "PE {} could not reach PE 0 at {} within {} ms (last error: {}); is PE 0 running, and is that "
              "address reachable from here?",
              opts_.rank, net::to_string(addr), opts_.connect_timeout.count(), std::strerror(last_error));
}

void rendezvous::wait_for_welcome(const star_links& links, clock::time_point deadline) {
  const unique_fd& coll = links.coll[0];
  const unique_fd& mon = links.mon[0];
  // PE 0's verdict normally comes on the collective connection; a configuration error found on
  // our monitor connection's hello comes there, so watch both until the collective one speaks.
  bool watch_mon = mon.valid();
  auto throw_reply = [&](const message& m) {
    auto e = parse_error(m);
    if (!e) SHOAL_THROW(errc::internal, init_call, "malformed error message from PE 0");
    SHOAL_THROW(e->code, init_call, "{}", e->text);
  };
  for (;;) {
    pollfd fds[2] = {{coll.get(), POLLIN, 0}, {mon.get(), POLLIN, 0}};
    auto now = clock::now();
    if (now >= deadline)
      SHOAL_THROW(errc::timeout, init_call,
                  "PE 0 at {} accepted PE {} but did not complete the rendezvous in time (it has a longer connect "
                  "timeout than this PE's {} ms, or it hangs)",
                  net::to_string(opts_.uid.addr), opts_.rank, opts_.connect_timeout.count());
    int n = ::poll(fds, watch_mon ? 2 : 1, static_cast<int>(std::max<int64_t>(1, count_ms(deadline - now))));
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, init_call);
    if (watch_mon && fds[1].revents != 0) {
      uint8_t raw[wire::header_bytes];
      ssize_t got = ::recv(mon.get(), raw, sizeof(raw), MSG_PEEK | MSG_DONTWAIT);
      if (got == static_cast<ssize_t>(sizeof(raw))) {
        auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(raw));
        if (h && h->type == wire::msg::error) {
          message m;
          bool corrupt = false;
          if (read_message(mon.get(), &m, deadline, -1, &corrupt) == io_status::ok && !corrupt) throw_reply(m);
        }
        watch_mon = false;  // anything else (a heartbeat) means the welcome is on its way
      } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        watch_mon = false;
      }
    }
    if (fds[0].revents != 0) {
      message m;
      bool corrupt = false;
      io_status st = read_message(coll.get(), &m, deadline, -1, &corrupt);
      if (st == io_status::timed_out) continue;
      if (st == io_status::closed) {
        // PE 0 may have said why on the other connection before closing both.
        message why;
        if (mon.valid() &&
            read_message(mon.get(), &why, clock::now() + milliseconds(50), -1, &corrupt) == io_status::ok && !corrupt &&
            why.head.type == wire::msg::error)
          throw_reply(why);
        SHOAL_THROW(errc::peer_failure, init_call,
                    "PE 0 at {} closed the connection during the rendezvous (PE 0 died?)",
                    net::to_string(opts_.uid.addr));
      }
      if (corrupt) SHOAL_THROW(errc::internal, init_call, "malformed message from PE 0 during the rendezvous");
      if (m.head.type == wire::msg::welcome) return;
      if (m.head.type == wire::msg::error) throw_reply(m);
      SHOAL_THROW(errc::internal, init_call, "unexpected message {} from PE 0 during the rendezvous",
                  static_cast<int>(m.head.type));
    }
  }
}

star_links rendezvous::join() {
  star_links links;
  links.coll.resize(1);
  links.mon.resize(1);
  unique_fd& coll = links.coll[0];
  unique_fd& mon = links.mon[0];
  const auto start = clock::now();
  const auto deadline = start + opts_.connect_timeout;
  auto hello_for = [&](wire::channel chan) {
    wire::hello_body b;
    b.chan = chan;
    b.rank = opts_.rank;
    b.size = opts_.size;
    b.secret = opts_.uid.secret;
    uint8_t body[wire::hello_bytes];
    wire::encode(b, std::span<uint8_t, wire::hello_bytes>(body));
    return wire::build(wire::msg::hello, 0, {}, {body});
  };
  // A failed hello send is not reported here: PE 0 closing on us comes with (or without) a reason,
  // which wait_for_welcome reads and reports.
  coll = connect_to_root(deadline, -1);
  auto hello = hello_for(wire::channel::collective);
  net::send_all(coll.get(), hello.data(), hello.size(), deadline, -1);
  // Refused at once (wrong secret, bad rank)? Then do not knock a second time.
  if (net::wait_fd(coll.get(), POLLIN, clock::now(), -1) != io_status::ok) mon = connect_to_root(deadline, coll.get());
  if (mon.valid()) {
    hello = hello_for(wire::channel::monitor);
    net::send_all(mon.get(), hello.data(), hello.size(), deadline, -1);
  }
  // PE 0 answers at the latest at its own deadline, which can be a little after ours (it may
  // have started later); give it that slack before concluding that it hangs.
  auto grace = std::max<milliseconds>(milliseconds(1000), opts_.connect_timeout / 2);
  wait_for_welcome(links, deadline + grace);
  SHOAL_LOG(info, bootstrap, "PE {} joined PE 0 at {} in {} ms", opts_.rank, net::to_string(opts_.uid.addr),
            count_ms(clock::now() - start));
  return links;
}

}  // namespace shoal::detail
