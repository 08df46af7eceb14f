#include "bootstrap/relay.hpp"

#include <poll.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include "common/check.hpp"

namespace shoal::detail {

namespace {

using link::clock;
using link::message;
using link::notify_budget;
using link::read_message;
using net::io_status;
using std::chrono::milliseconds;

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

// What a PE did, for mismatch reports: "called <call> (<what>)"; or, for the finalize a PE runs when it
// leaves without shoal_finalize, what happened ("exited with status 3 without calling shoal_finalize"):
// the program never made that call, so the report must not say it did. Beside such a PE the others are
// just "in <call>": how their call is carried out says nothing about a PE that left.
std::string conduct(std::string_view call, const wire::coll_desc& d, bool someone_left) {
  if (auto left = left_without_finalize(call)) return *left;
  if (someone_left) return fmt::format("was in {}", call);
  return "called " + describe(call, d);
}

// Bytes of data a PE sends in a collective, besides the descriptor.
uint64_t sent_bytes(const wire::coll_desc& d, int rank) {
  if (d.flags & wire::coll_flag_null_buffer) return 0;
  if (d.operation == wire::op::allgather) return d.bytes;
  if (d.operation == wire::op::broadcast && d.root == rank) return d.bytes;
  return 0;
}

}  // namespace

collective_relay::collective_relay(const bootstrap_options& options, std::vector<net::unique_fd> coll,
                                   link::job_state& state)
    : rank_(options.rank),
      size_(options.size),
      collective_timeout_(options.collective_timeout),
      state_(state),
      coll_(std::move(coll)) {}

void collective_relay::allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view call) {
  wire::coll_desc d;
  d.operation = wire::op::allgather;
  d.bytes = bytes_per_pe;
  if (bytes_per_pe > 0 && (mine == nullptr || all == nullptr)) d.flags |= wire::coll_flag_null_buffer;
  collective(call, d, mine, all);
}

void collective_relay::barrier(std::string_view call) {
  wire::coll_desc d;
  d.operation = wire::op::barrier;
  collective(call, d, nullptr, nullptr);
}

void collective_relay::broadcast(void* data, size_t bytes, int root, std::string_view call) {
  wire::coll_desc d;
  d.operation = wire::op::broadcast;
  d.root = root;
  d.bytes = bytes;
  if (bytes > 0 && data == nullptr) d.flags |= wire::coll_flag_null_buffer;
  collective(call, d, data, data);
}

void collective_relay::finalize_round() {
  wire::coll_desc d;
  d.operation = wire::op::finalize;
  collective(link::finalize_call, d, nullptr, nullptr);
}

void collective_relay::close() noexcept {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (auto& fd : coll_) fd.reset();
}

bool collective_relay::closed() {
  std::lock_guard lock(mutex_);
  return closed_;
}

size_t collective_relay::result_bytes(const wire::coll_desc& d, int rank) const {
  if (d.operation == wire::op::allgather) return d.bytes * static_cast<size_t>(size_);
  if (d.operation == wire::op::broadcast && d.root != rank) return d.bytes;
  return 0;
}

void collective_relay::throw_broken(errc code, std::string_view call, const std::string& why) {
  state_.mark_broken(why);
  SHOAL_THROW(code, call, "{}", why);
}

void collective_relay::collective(std::string_view call, wire::coll_desc desc, const void* send, void* recv) {
  std::lock_guard lock(mutex_);
  if (closed_) SHOAL_THROW(errc::not_initialized, call, "the bootstrap was finalized");
  if (state_.broken())
    SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable since an earlier failure: {}", state_.broken_reason());
  call = call.substr(0, wire::max_call_bytes);
  ++seq_;
  auto deadline = net::forever;
  if (collective_timeout_.count() > 0) {
    deadline = clock::now() + collective_timeout_;
    // PE 0 judges the round and names the late PE; the others only time out themselves if PE 0
    // does not answer at all, so they allow it some slack.
    if (rank_ != 0) deadline += std::max<milliseconds>(milliseconds(1000), collective_timeout_ / 2);
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

void collective_relay::peer_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                                  clock::time_point deadline) {
  uint8_t d[wire::coll_desc_bytes];
  wire::encode(desc, std::span<uint8_t, wire::coll_desc_bytes>(d));
  uint64_t data_bytes = sent_bytes(desc, rank_);
  auto msg = wire::build(wire::msg::collective, seq_, call,
                         {d, std::span<const uint8_t>(static_cast<const uint8_t*>(send), data_bytes)});
  auto check = [&](io_status st, const char* doing) {
    if (st == io_status::ok) return;
    if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", state_.broken_reason());
    if (st == io_status::closed) {
      // A PE 0 that stops for a reason sends it on the monitor connection before it closes this one:
      // report that reason, not a death, once the monitor has it.
      if (net::wait_fd(state_.broken_fd(), POLLIN, clock::now() + notify_budget, -1) == io_status::ok)
        SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", state_.broken_reason());
      throw_broken(errc::peer_failure, call,
                   fmt::format("PE 0 closed its bootstrap connection while PE {} was {} (PE 0 died?)", rank_, doing));
    }
    throw_broken(errc::timeout, call,
                 fmt::format("PE {} had no answer from PE 0 in {} although the collective timeout is {} ms (PE 0 "
                             "hangs?)",
                             rank_, call, collective_timeout_.count()));
  };
  check(net::send_all(coll_[0].get(), msg.data(), msg.size(), deadline, state_.broken_fd()), "sending");
  message reply;
  bool corrupt = false;
  check(read_message(coll_[0].get(), &reply, deadline, state_.broken_fd(), &corrupt), "waiting for the others");
  if (corrupt) throw_broken(errc::internal, call, "malformed bootstrap message from PE 0");
  if (reply.head.type == wire::msg::error) {
    auto e = link::parse_error(reply);
    if (!e) throw_broken(errc::internal, call, "malformed error message from PE 0");
    if (e->fatal) state_.mark_broken(e->text);
    SHOAL_THROW(e->code, call, "{}", e->text);
  }
  if (reply.head.type != wire::msg::result || reply.head.seq != seq_ ||
      reply.payload.size() != result_bytes(desc, rank_))
    throw_broken(errc::internal, call,
                 fmt::format("unexpected reply from PE 0 to collective #{} ({} bytes)", seq_, reply.payload.size()));
  if (!reply.payload.empty()) std::memcpy(recv, reply.payload.data(), reply.payload.size());
}

void collective_relay::fail_round(errc code, std::string_view call, const std::string& why) {
  state_.mark_broken(why);
  auto msg = link::error_message(code, true, why);
  auto notify_deadline = clock::now() + notify_budget;
  for (int r = 1; r < size_; ++r)
    if (coll_[r].valid()) net::send_all(coll_[r].get(), msg.data(), msg.size(), notify_deadline, -1);
  SHOAL_THROW(code, call, "{}", why);
}

void collective_relay::root_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                                  clock::time_point deadline) {
  std::vector<message> in(static_cast<size_t>(size_));
  std::vector<wire::coll_desc> descs(static_cast<size_t>(size_));
  descs[0] = desc;
  for (int r = 1; r < size_; ++r) {
    bool corrupt = false;
    io_status st = read_message(coll_[r].get(), &in[r], deadline, state_.broken_fd(), &corrupt);
    if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", state_.broken_reason());
    if (st == io_status::closed) {
      // A PE that stops for a reason sends it on its monitor connection before this one closes, but this read can
      // see the close first: report (and pass on) that reason, not a death, once the monitor has it, as peer_round
      // does for PE 0.
      if (net::wait_fd(state_.broken_fd(), POLLIN, clock::now() + notify_budget, -1) == io_status::ok)
        fail_round(errc::peer_failure, call, fmt::format("bootstrap unusable: {}", state_.broken_reason()));
      fail_round(errc::peer_failure, call,
                 fmt::format("PE {} died during {} (its bootstrap connection closed)", r, call));
    }
    if (st == io_status::timed_out)
      fail_round(errc::timeout, call,
                 fmt::format("PE {} did not enter {} within {} ms", r, call, collective_timeout_.count()));
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
    auto msg = link::error_message(code, fatal, why);
    // Not woken by a failure found meanwhile: every PE is in this round and reads its reply now, and
    // the one that broke the job may be a PE that was just told about this very error.
    auto reply_deadline = clock::now() + notify_budget;
    for (int r = 1; r < size_; ++r)
      if (net::send_all(coll_[r].get(), msg.data(), msg.size(), reply_deadline, -1) != io_status::ok)
        state_.mark_broken(fmt::format("PE {} died during {}", r, call));
    if (fatal) state_.mark_broken(why);
    SHOAL_THROW(code, call, "{}", why);
  };

  for (int r = 1; r < size_; ++r)
    if (in[r].head.seq != seq_)
      fail_round(errc::mismatch, call,
                 fmt::format("PE {} is at bootstrap collective #{} while PE 0 is at #{}", r, in[r].head.seq, seq_));
  std::vector<std::string> differ;
  bool with_finalize = desc.operation == wire::op::finalize;
  bool someone_left = left_without_finalize(call).has_value();
  for (int r = 1; r < size_; ++r) someone_left |= left_without_finalize(in[r].call).has_value();
  for (int r = 1; r < size_; ++r) {
    const wire::coll_desc& d = descs[r];
    const bool same_call = in[r].call == call || (is_finalize_call(in[r].call) && is_finalize_call(call));
    if (!same_call || d.operation != desc.operation || d.bytes != desc.bytes || d.root != desc.root) {
      if (differ.size() < 8)
        differ.push_back(fmt::format("PE {} {}", r, conduct(in[r].call, d, someone_left)));
      else if (differ.size() == 8)
        differ.push_back("…");
      with_finalize |= d.operation == wire::op::finalize;
    }
  }
  if (!differ.empty()) {
    std::string list;
    for (auto& s : differ) list += (list.empty() ? "" : ", ") + s;
    reply_error(errc::mismatch, with_finalize,
                fmt::format("{} while PE 0 {}", list, conduct(call, desc, someone_left)));
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
    io_status st = net::send_all(coll_[r].get(), msg.data(), msg.size(), deadline, state_.broken_fd());
    if (st == io_status::woken) SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable: {}", state_.broken_reason());
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

}  // namespace shoal::detail
