#include "bootstrap/liveness.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail {

namespace {

using link::clock;
using link::count_ms;
using link::message;
using link::notify_budget;
using link::parse_status;
using link::pump;
using link::pump_result;
using link::status_message;
using net::io_status;
using std::chrono::milliseconds;

milliseconds heartbeat_period(milliseconds peer_timeout) {
  return std::clamp(peer_timeout / 5, milliseconds(1), milliseconds(1000));
}

}  // namespace

liveness_monitor::liveness_monitor(const bootstrap_options& options, std::vector<net::unique_fd> mon,
                                   link::job_state& state, mailbox& mail, failure_handler on_failure)
    : rank_(options.rank),
      size_(options.size),
      peer_timeout_(options.peer_timeout),
      state_(state),
      mail_(mail),
      on_failure_(std::move(on_failure)),
      peers_(mon.size()),
      wake_fd_(link::make_eventfd()) {
  for (size_t r = 0; r < mon.size(); ++r) peers_[r].fd = std::move(mon[r]);
}

void liveness_monitor::start() {
  std::lock_guard lock(mutex_);
  running_ = true;
  thread_ = std::thread([this] { main(); });
}

void liveness_monitor::main() {
  try {
    if (rank_ == 0)
      root_loop();
    else
      peer_loop();
  } catch (const std::exception& e) {
    // A broken monitor must not leave the job unwatched.
    report_failure(peer_failure_status, fmt::format("PE {}'s bootstrap monitor failed: {}", rank_, e.what()));
  }
  std::optional<std::pair<int, std::string>> abort;
  {
    std::lock_guard lock(mutex_);
    running_ = false;
    abort = std::exchange(pending_abort_, std::nullopt);
  }
  if (abort) report_failure(abort->first, abort->second);
}

void liveness_monitor::beat_if_due(clock::time_point now, clock::time_point& next_beat) {
  if (now < next_beat) return;
  const auto heartbeat = wire::build(wire::msg::heartbeat, 0, {}, {});
  // A thread sending mail holds the lock, maybe waiting for room that only our reading makes; its
  // bytes tell the other side this PE lives. Try again soon.
  std::unique_lock lock(write_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (const peer_link& p : peers_)
    if (p.fd.valid() && !p.closed)  // a full socket buffer means a stopped PE; silence detection handles it
      ::send(p.fd.get(), heartbeat.data(), heartbeat.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  next_beat = now + heartbeat_period(peer_timeout_);
}

void liveness_monitor::root_loop() {
  auto next_beat = clock::now();
  for (int r = 1; r < size_; ++r) peers_[r].last_heard = next_beat;
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  std::vector<message> msgs;
  for (;;) {
    auto now = clock::now();
    beat_if_due(now, next_beat);
    auto wake_at = next_beat;
    for (int r = 1; r < size_; ++r) {
      const peer_link& p = peers_[r];
      if (p.closed || p.said_bye) continue;
      if (now - p.last_heard > peer_timeout_) {
        fail_job(peer_failure_status,
                 fmt::format("PE {} went silent: no heartbeat for {} ms (SHOAL_PEER_TIMEOUT {} ms)", r,
                             count_ms(now - p.last_heard), peer_timeout_.count()),
                 r);
        return;
      }
      wake_at = std::min(wake_at, p.last_heard + peer_timeout_ + milliseconds(1));
    }
    fds.assign(1, {wake_fd_.get(), POLLIN, 0});
    ranks.assign(1, 0);
    for (int r = 1; r < size_; ++r)
      if (!peers_[r].closed) {
        fds.push_back({peers_[r].fd.get(), POLLIN, 0});
        ranks.push_back(r);
      }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(1, count_ms(wake_at - now) + 1)));
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, "shoal bootstrap monitor");
    if (fds[0].revents != 0) {
      link::drain_fd(wake_fd_.get());
      if (stopping_.load()) return;
      std::optional<std::pair<int, std::string>> abort;
      {
        std::lock_guard lock(mutex_);
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
      pump_result got = pump(p.fd.get(), p.inbox, msgs);
      p.last_heard = clock::now();
      for (const message& m : msgs) {
        if (m.head.type == wire::msg::bye) p.said_bye = true;
        if (m.head.type == wire::msg::mail && !route_mail(r, m)) return;
        if (m.head.type == wire::msg::abort) {
          auto [status, why] = parse_status(m);
          fail_job(status, why, -1, r);
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

void liveness_monitor::peer_loop() {
  auto last_heard = clock::now();
  auto next_beat = last_heard;
  bool root_said_bye = false;
  std::vector<uint8_t> inbox;
  std::vector<message> msgs;
  for (;;) {
    auto now = clock::now();
    beat_if_due(now, next_beat);
    auto wake_at = next_beat;
    if (!root_said_bye) {
      if (now - last_heard > peer_timeout_) {
        report_failure(peer_failure_status,
                       fmt::format("PE 0 went silent: no heartbeat for {} ms (SHOAL_PEER_TIMEOUT {} ms)",
                                   count_ms(now - last_heard), peer_timeout_.count()));
        return;
      }
      wake_at = std::min(wake_at, last_heard + peer_timeout_ + milliseconds(1));
    }
    pollfd fds[2] = {{wake_fd_.get(), POLLIN, 0}, {peers_[0].fd.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::max<int64_t>(1, count_ms(wake_at - now) + 1)));
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, "shoal bootstrap monitor");
    if (fds[0].revents != 0) {
      link::drain_fd(wake_fd_.get());
      if (stopping_.load()) return;
    }
    if (fds[1].revents == 0) continue;
    msgs.clear();
    pump_result got = pump(peers_[0].fd.get(), inbox, msgs);
    last_heard = clock::now();
    for (const message& m : msgs) {
      if (m.head.type == wire::msg::bye) root_said_bye = true;
      if (m.head.type == wire::msg::mail) {
        std::optional<wire::mail_body> body;
        if (m.payload.size() >= wire::mail_body_bytes)
          body = wire::decode_mail(
              std::span<const uint8_t, wire::mail_body_bytes>(m.payload.data(), wire::mail_body_bytes));
        if (!body || body->to != rank_ || body->from < 0 || body->from >= size_) {
          report_failure(peer_failure_status, "PE 0 sent malformed mail on the bootstrap monitor connection");
          return;
        }
        mail_.deliver(body->from, body->tag, {m.payload.begin() + wire::mail_body_bytes, m.payload.end()});
      }
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

bool liveness_monitor::route_mail(int from, const message& m) {
  std::optional<wire::mail_body> body;
  if (m.payload.size() >= wire::mail_body_bytes)
    body = wire::decode_mail(std::span<const uint8_t, wire::mail_body_bytes>(m.payload.data(), wire::mail_body_bytes));
  if (!body || body->from != from || body->to < 0 || body->to >= size_ || body->to == from) {
    fail_job(peer_failure_status, fmt::format("PE {} sent malformed mail on its bootstrap monitor connection", from),
             from);
    return false;
  }
  if (body->to == 0) {
    mail_.deliver(from, body->tag, {m.payload.begin() + wire::mail_body_bytes, m.payload.end()});
    return true;
  }
  peer_link& to = peers_[body->to];
  if (to.closed) {
    fail_job(
        peer_failure_status,
        fmt::format("PE {} sent mail to PE {}, which has left (its bootstrap connection is closed)", from, body->to),
        -1);
    return false;
  }
  auto msg = wire::build(wire::msg::mail, 0, {}, {m.payload});
  // The receiver's monitor thread reads all the time; one that takes nothing for this long has stopped.
  io_status st;
  {
    std::lock_guard lock(write_mutex_);
    st = net::send_all(to.fd.get(), msg.data(), msg.size(), clock::now() + peer_timeout_ / 2, -1);
  }
  if (st != io_status::ok) {
    fail_job(peer_failure_status,
             st == io_status::closed
                 ? fmt::format("PE {} died: its bootstrap connection closed while PE 0 forwarded mail to it", body->to)
                 : fmt::format("PE {} took no mail from PE 0 for {} ms (its bootstrap monitor connection is full)",
                               body->to, count_ms(peer_timeout_ / 2)),
             body->to);
    return false;
  }
  return true;
}

void liveness_monitor::send_mail(int to, uint64_t tag, std::span<const uint8_t> data, std::string_view call) {
  SHOAL_ASSERT(to >= 0 && to < size_ && to != rank_);
  if (state_.broken())
    SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable since an earlier failure: {}", state_.broken_reason());
  wire::mail_body body;
  body.from = rank_;
  body.to = to;
  body.tag = tag;
  uint8_t head[wire::mail_body_bytes];
  wire::encode(body, std::span<uint8_t, wire::mail_body_bytes>(head));
  auto msg = wire::build(wire::msg::mail, 0, {}, {head, data});
  const int via = rank_ == 0 ? to : 0;
  {
    std::lock_guard lock(mutex_);
    if (!running_)
      SHOAL_THROW(errc::peer_failure, call, "the bootstrap monitor of PE {} is not running (finalized or failed)",
                  rank_);
  }
  io_status st;
  {
    std::lock_guard lock(write_mutex_);
    if (!peers_[via].fd.valid())
      SHOAL_THROW(errc::peer_failure, call, "PE {}'s bootstrap monitor connection is closed", via);
    st = net::send_all(peers_[via].fd.get(), msg.data(), msg.size(), clock::now() + peer_timeout_, state_.broken_fd());
  }
  if (st == io_status::ok) return;
  if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", state_.broken_reason());
  // Part of a message may be on the wire: the stream is out of step for good.
  state_.mark_broken(fmt::format("PE {} could not send mail to PE {} during {}: the connection {}", rank_, via, call,
                                 st == io_status::closed ? "closed" : "took nothing for SHOAL_PEER_TIMEOUT"));
  SHOAL_THROW(st == io_status::closed ? errc::peer_failure : errc::timeout, call, "bootstrap unusable: {}",
              state_.broken_reason());
}

void liveness_monitor::fail_job(int status, const std::string& why, int except, int last) {
  state_.mark_broken(why);
  auto msg = status_message(wire::msg::failure, status, why);
  auto deadline = clock::now() + notify_budget;
  {
    std::lock_guard lock(write_mutex_);
    auto tell = [&](int r) {
      if (r != except && !peers_[r].closed && peers_[r].fd.valid())
        net::send_all(peers_[r].fd.get(), msg.data(), msg.size(), deadline, -1);
    };
    for (int r = 1; r < size_; ++r)
      if (r != last) tell(r);
    if (last > 0) tell(last);
  }
  report_failure(status, why);
}

void liveness_monitor::report_failure(int status, const std::string& why) {
  if (failure_reported_.exchange(true)) return;
  state_.mark_broken(why);
  mail_.wake();
  SHOAL_LOG(info, bootstrap, "job failure (status {}): {}", status, why);
  if (!on_failure_) {
    std::fprintf(stderr, "[shoal pe %d] stopping: %s\n", rank_, why.c_str());
    std::fflush(stderr);
    ::_exit(status);
  }
  on_failure_(status, why);
  std::lock_guard lock(mutex_);
  handled_ = true;
  handled_cv_.notify_all();
}

void liveness_monitor::wait_until_handled() {
  // The handler normally ends the process; a test's handler returns. Bounded: a PE 0 that is gone
  // is found by the monitor, which runs the handler then.
  std::unique_lock lock(mutex_);
  if (!handled_cv_.wait_for(lock, 4 * notify_budget, [&] { return handled_; })) {
    lock.unlock();
    SHOAL_LOG(warn, bootstrap, "PE {}: no answer from PE 0 to this PE's stop request in {} ms; stopping alone", rank_,
              count_ms(4 * notify_budget));
  }
}

void liveness_monitor::abort_job(int status, const std::string& why) {
  if (rank_ == 0) {
    bool posted = false;
    {
      std::lock_guard lock(mutex_);
      if (running_) {
        pending_abort_ = {status, why};
        link::signal_fd(wake_fd_.get());
        posted = true;
      }
    }
    if (!posted) {
      fail_job(status, why, -1);
      return;
    }
    wait_until_handled();  // the monitor thread tells every PE, then runs the handler
    return;
  }
  bool sent = false;
  {
    std::lock_guard lock(mutex_);
    if (running_ && peers_[0].fd.valid()) {
      // PE 0 relays it to every PE, this one included; our monitor thread then runs the handler.
      auto msg = status_message(wire::msg::abort, status, why);
      std::lock_guard wlock(write_mutex_);
      sent =
          net::send_all(peers_[0].fd.get(), msg.data(), msg.size(), clock::now() + notify_budget, -1) == io_status::ok;
    }
  }
  if (!sent) {
    report_failure(status, why);
    return;
  }
  // Stay until PE 0 has relayed it (back to this PE too): leaving at once would close this PE's
  // connections while the request is in flight, and PE 0 would report a death instead of the reason.
  wait_until_handled();
}

void liveness_monitor::send_bye() {
  auto bye = wire::build(wire::msg::bye, 0, {}, {});
  auto deadline = clock::now() + notify_budget;
  std::lock_guard lock(write_mutex_);
  if (rank_ != 0) {
    net::send_all(peers_[0].fd.get(), bye.data(), bye.size(), deadline, -1);
    return;
  }
  for (int r = 1; r < size_; ++r)
    if (!peers_[r].closed) net::send_all(peers_[r].fd.get(), bye.data(), bye.size(), deadline, -1);
}

void liveness_monitor::stop() noexcept {
  stopping_.store(true);
  link::signal_fd(wake_fd_.get());
  if (thread_.joinable()) {
    // The handler must not destroy its bootstrap; if it does anyway, do not deadlock on ourselves.
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();
    else
      thread_.join();
  }
  std::lock_guard lock(write_mutex_);
  for (auto& p : peers_) p.fd.reset();
}

}  // namespace shoal::detail
