// The bootstrap composes its parts: the rendezvous makes the star of connections, the collective
// relay runs all-gathers, barriers and broadcasts over the collective connections, the liveness
// monitor watches the monitor connections and carries mail into the mailbox. This file owns their
// lifetime, the orderly end (finalize), and allgather_among (on mail).
#include "bootstrap/bootstrap.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

#include "bootstrap/liveness.hpp"
#include "bootstrap/mailbox.hpp"
#include "bootstrap/relay.hpp"
#include "bootstrap/rendezvous.hpp"
#include "common/check.hpp"

namespace shoal::detail {

namespace {

using link::finalize_call;
using link::init_call;
using net::unique_fd;

// The first 8 bytes of the first member's answer in allgather_among: {u32 errc (0: ok), u32 0}, then
// the result, or the text of the error every member then throws.
constexpr size_t kAnswerHead = 8;

class tcp_bootstrap final : public bootstrap {
 public:
  tcp_bootstrap(const bootstrap_options& options, star_links links, failure_handler on_failure)
      : rank_(options.rank),
        size_(options.size),
        collective_timeout_(options.collective_timeout),
        relay_(options, std::move(links.coll), state_),
        mailbox_(state_),
        monitor_(options, std::move(links.mon), state_, mailbox_, std::move(on_failure)) {
    if (size_ > 1) monitor_.start();
  }
  ~tcp_bootstrap() override { shutdown(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view call) override {
    relay_.allgather(mine, all, bytes_per_pe, call);
  }
  void barrier(std::string_view call) override { relay_.barrier(call); }
  void broadcast(void* data, size_t bytes, int root, std::string_view call) override {
    relay_.broadcast(data, bytes, root, call);
  }
  void allgather_among(const std::vector<int>& members, uint64_t tag, const void* mine, void* all, size_t bytes_per_pe,
                       std::string_view call) override;
  void abort_job(int status, const std::string& why) override { monitor_.abort_job(status, why); }
  void finalize() override;

 private:
  void shutdown() noexcept {
    monitor_.stop();
    relay_.close();
  }

  const int rank_;
  const int size_;
  const std::chrono::milliseconds collective_timeout_;
  link::job_state state_;  // declared before the parts that share it
  collective_relay relay_;
  mailbox mailbox_;  // before the monitor, which delivers into it
  liveness_monitor monitor_;
};

void tcp_bootstrap::finalize() {
  if (relay_.closed()) return;
  if (state_.broken()) {
    shutdown();
    SHOAL_THROW(errc::peer_failure, finalize_call, "bootstrap unusable since an earlier failure: {}",
                state_.broken_reason());
  }
  // Bye before the closing round: every PE's bye is then on the wire before any PE can pass the
  // round and close its sockets, so no monitor mistakes an orderly exit for a death.
  if (size_ > 1) monitor_.send_bye();
  try {
    relay_.finalize_round();
  } catch (...) {
    shutdown();
    throw;
  }
  shutdown();
}

void tcp_bootstrap::allgather_among(const std::vector<int>& members, uint64_t tag, const void* mine, void* all,
                                    size_t bytes_per_pe, std::string_view call) {
  const auto me = std::find(members.begin(), members.end(), rank_);
  SHOAL_CHECK_ARG(me != members.end(), call, "PE {} is not among the PEs of its own exchange", rank_);
  for (size_t i = 0; i < members.size(); ++i) {
    SHOAL_CHECK_ARG(members[i] >= 0 && members[i] < size_, call, "member {} is PE {}, not a PE (0..{})", i, members[i],
                    size_ - 1);
    SHOAL_CHECK_ARG(std::find(members.begin(), members.begin() + i, members[i]) == members.begin() + i, call,
                    "PE {} is listed twice among the members", members[i]);
  }
  SHOAL_CHECK_ARG(bytes_per_pe == 0 || (mine != nullptr && all != nullptr), call, "null buffer for {} bytes",
                  bytes_per_pe);
  if (relay_.closed()) SHOAL_THROW(errc::not_initialized, call, "the bootstrap was finalized");
  if (state_.broken())
    SHOAL_THROW(errc::peer_failure, call, "bootstrap unusable since an earlier failure: {}", state_.broken_reason());
  const size_t n = members.size();
  const size_t my_index = static_cast<size_t>(me - members.begin());
  if (bytes_per_pe > 0) std::memmove(static_cast<uint8_t*>(all) + my_index * bytes_per_pe, mine, bytes_per_pe);
  if (n == 1) return;
  const auto started = link::clock::now();
  const auto deadline = collective_timeout_.count() > 0 ? started + collective_timeout_ : net::forever;
  const int first = members[0];
  auto waited_ms = [&] { return link::count_ms(link::clock::now() - started); };

  if (rank_ != first) {
    monitor_.send_mail(first, tag, {static_cast<const uint8_t*>(mine), bytes_per_pe}, call);
    // The first member answers with some slack: it times out at its own deadline, and tells us why.
    auto slack = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(1000), collective_timeout_ / 2);
    auto answer = mailbox_.take(first, tag, deadline == net::forever ? deadline : deadline + slack, call);
    if (!answer)
      SHOAL_THROW(errc::timeout, call,
                  "PE {} had no answer in {} ms from PE {}, the first of PEs {} (the collective "
                  "timeout is {} ms)",
                  rank_, waited_ms(), first, link::rank_list(members), collective_timeout_.count());
    if (answer->size() < kAnswerHead) SHOAL_THROW(errc::internal, call, "malformed answer from PE {}", first);
    auto code = static_cast<errc>(wire::get_le<uint32_t>(answer->data()));
    if (code != errc::ok)
      SHOAL_THROW(
          code, call, "{}",
          std::string_view(reinterpret_cast<const char*>(answer->data()) + kAnswerHead, answer->size() - kAnswerHead));
    if (answer->size() != kAnswerHead + n * bytes_per_pe)
      SHOAL_THROW(errc::internal, call, "PE {} answered {} bytes for {} PEs of {} bytes", first,
                  answer->size() - kAnswerHead, n, bytes_per_pe);
    if (bytes_per_pe > 0) std::memcpy(all, answer->data() + kAnswerHead, n * bytes_per_pe);
    return;
  }

  // The first member: gather, then answer every member that sent something.
  std::vector<int> late, heard;
  std::string differ;
  for (size_t i = 1; i < n; ++i) {
    auto got = mailbox_.take(members[i], tag, deadline, call);
    if (!got) {
      late.push_back(members[i]);
      continue;
    }
    heard.push_back(members[i]);
    if (got->size() != bytes_per_pe) {
      if (differ.empty())
        differ = fmt::format("PE {} sent {} bytes while PE {} sent {}", members[i], got->size(), rank_, bytes_per_pe);
      continue;
    }
    if (bytes_per_pe > 0) std::memcpy(static_cast<uint8_t*>(all) + i * bytes_per_pe, got->data(), bytes_per_pe);
  }
  errc code = errc::ok;
  std::string why;
  if (!late.empty()) {
    std::sort(late.begin(), late.end());
    code = errc::timeout;
    why = fmt::format("PE(s) {} did not enter {} within {} ms (the collective timeout) among PEs {}",
                      link::rank_list(late), call, collective_timeout_.count(), link::rank_list(members));
  } else if (!differ.empty()) {
    code = errc::mismatch;
    why = fmt::format("the members of {} disagree on its size: {}", call, differ);
  }
  std::vector<uint8_t> answer(kAnswerHead + (code == errc::ok ? n * bytes_per_pe : why.size()));
  wire::put_le(answer.data(), static_cast<uint32_t>(code));
  if (code == errc::ok) {
    if (bytes_per_pe > 0) std::memcpy(answer.data() + kAnswerHead, all, n * bytes_per_pe);
  } else {
    std::memcpy(answer.data() + kAnswerHead, why.data(), why.size());
  }
  for (int pe : heard) monitor_.send_mail(pe, tag, answer, call);
  if (code != errc::ok) SHOAL_THROW(code, call, "{}", why);
}

}  // namespace

namespace {
constexpr std::string_view kExitPrefix = "exit(";
constexpr std::string_view kExitSuffix = ") without shoal_finalize";
constexpr std::string_view kDestroyedCall = "world destroyed without finalize";
}  // namespace

std::string left_without_finalize_call(int exit_status) {
  if (exit_status < 0) return std::string(kDestroyedCall);
  return fmt::format("{}{}{}", kExitPrefix, exit_status, kExitSuffix);
}

std::optional<std::string> left_without_finalize(std::string_view call) {
  if (call == kDestroyedCall) return std::string("destroyed its world without calling finalize");
  if (!call.starts_with(kExitPrefix) || !call.ends_with(kExitSuffix)) return std::nullopt;
  std::string_view status = call.substr(kExitPrefix.size(), call.size() - kExitPrefix.size() - kExitSuffix.size());
  if (status.empty() || status.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return fmt::format("exited with status {} without calling shoal_finalize", status);
}

bool is_finalize_call(std::string_view call) {
  return call == link::finalize_call || left_without_finalize(call).has_value();
}

std::optional<int> left_pe_exit_status(std::string_view message) {
  constexpr std::string_view kBefore = " exited with status ";
  constexpr std::string_view kAfter = " without calling shoal_finalize";
  const size_t at = message.find(kBefore);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(at + kBefore.size());
  int status = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), status);
  if (ec != std::errc() || !std::string_view(end, rest.data() + rest.size() - end).starts_with(kAfter))
    return std::nullopt;
  return status;
}

void bootstrap::allgather_among(const std::vector<int>& members, uint64_t, const void* mine, void* all,
                                size_t bytes_per_pe, std::string_view call) {
  // One PE alone needs no messages; other bootstraps (test doubles) do not carry mail.
  if (members.size() == 1 && members[0] == rank()) {
    if (bytes_per_pe > 0) std::memmove(all, mine, bytes_per_pe);
    return;
  }
  SHOAL_THROW(errc::unsupported, call, "this bootstrap has no exchange among a subset of the PEs");
}

std::unique_ptr<bootstrap> bootstrap::connect(const bootstrap_options& options, failure_handler on_failure) {
  unique_fd listener(options.listen_fd);
  struct remove_file {
    std::string path;
    ~remove_file() {
      if (!path.empty()) ::unlink(path.c_str());
    }
  } uid_file{options.rank == 0 ? options.uid_file : std::string()};

  SHOAL_CHECK_ARG(options.size >= 1, init_call, "job size {} must be at least 1", options.size);
  SHOAL_CHECK_ARG(options.rank >= 0 && options.rank < options.size, init_call, "rank {} is outside 0..{}", options.rank,
                  options.size - 1);
  SHOAL_CHECK_ARG(options.connect_timeout.count() > 0, init_call, "connect timeout must be positive (got {} ms)",
                  options.connect_timeout.count());
  SHOAL_CHECK_ARG(options.peer_timeout.count() > 0, init_call, "peer timeout must be positive (got {} ms)",
                  options.peer_timeout.count());
  SHOAL_CHECK_ARG(options.collective_timeout.count() >= 0, init_call, "collective timeout must not be negative");

  star_links links;
  if (options.size > 1) {
    const sockaddr_storage& addr = options.uid.addr;
    SHOAL_CHECK_ARG(addr.ss_family == AF_INET || addr.ss_family == AF_INET6, init_call,
                    "the unique id has no PE 0 address (was it generated?)");
    rendezvous meet(options);
    if (options.rank == 0) {
      if (!listener.valid()) listener.reset(open_listener(net::host_of(addr), net::port_of(addr), nullptr));
      links = meet.accept_all(std::move(listener));
    } else {
      listener.reset();
      links = meet.join();
    }
  }
  return std::make_unique<tcp_bootstrap>(options, std::move(links), std::move(on_failure));
}

}  // namespace shoal::detail
