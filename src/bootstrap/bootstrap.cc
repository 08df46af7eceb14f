// The bootstrap composes its three parts: the rendezvous makes the star of connections, the
// collective relay runs all-gathers, barriers and broadcasts over the collective connections, and
// the liveness monitor watches the monitor connections. This file owns their lifetime and the
// orderly end (finalize).
#include "bootstrap/bootstrap.hpp"

#include <unistd.h>

#include <utility>

#include "bootstrap/liveness.hpp"
#include "bootstrap/relay.hpp"
#include "bootstrap/rendezvous.hpp"
#include "common/check.hpp"

namespace shoal::detail {

namespace {

using link::finalize_call;
using link::init_call;
using net::unique_fd;

class tcp_bootstrap final : public bootstrap {
 public:
  tcp_bootstrap(const bootstrap_options& options, star_links links, failure_handler on_failure)
      : rank_(options.rank),
        size_(options.size),
        relay_(options, std::move(links.coll), state_),
        monitor_(options, std::move(links.mon), state_, std::move(on_failure)) {
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
  void abort_job(int status, const std::string& why) override { monitor_.abort_job(status, why); }
  void finalize() override;

 private:
  void shutdown() noexcept {
    monitor_.stop();
    relay_.close();
  }

  const int rank_;
  const int size_;
  link::job_state state_;  // declared before the parts that share it
  collective_relay relay_;
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

}  // namespace

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
