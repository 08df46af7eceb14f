// Collective relay: the bootstrap's all-gather, barrier and broadcast, run as rounds through PE 0.
// Every PE sends PE 0 its call's name, a descriptor and its data; PE 0 checks that all PEs called
// the same thing (else every PE throws errc::mismatch naming both calls) and answers each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/link.hpp"

namespace shoal::detail {

class collective_relay {
 public:
  /// `coll`: the collective connections from the rendezvous (star_links::coll). `state` is shared
  /// with the liveness monitor: a failure it finds wakes a round blocked here, and the reverse.
  collective_relay(const bootstrap_options& options, std::vector<net::unique_fd> coll, link::job_state& state);

  /// See bootstrap::allgather / barrier / broadcast.
  void allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view call);
  void barrier(std::string_view call);
  void broadcast(void* data, size_t bytes, int root, std::string_view call);
  /// The closing round (wire::op::finalize): a mismatch against it breaks the bootstrap.
  void finalize_round();
  /// Closes the connections; every later round throws errc::not_initialized. Idempotent.
  void close() noexcept;
  /// True once close() ran.
  bool closed();

 private:
  void collective(std::string_view call, wire::coll_desc desc, const void* send, void* recv);
  void root_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                  link::clock::time_point deadline);
  void peer_round(std::string_view call, const wire::coll_desc& desc, const void* send, void* recv,
                  link::clock::time_point deadline);
  size_t result_bytes(const wire::coll_desc& d, int rank) const;
  // PE 0: a round cannot complete. Tell every PE (so none waits forever), break, throw.
  [[noreturn]] void fail_round(errc code, std::string_view call, const std::string& why);
  [[noreturn]] void throw_broken(errc code, std::string_view call, const std::string& why);

  const int rank_;
  const int size_;
  const std::chrono::milliseconds collective_timeout_;
  link::job_state& state_;
  std::vector<net::unique_fd> coll_;  // PE 0: [r] per other PE; others: [0], to PE 0

  std::mutex mutex_;     // one round at a time (OpenSHMEM collectives are not concurrent)
  uint32_t seq_ = 0;     // rounds started by this PE; under mutex_
  bool closed_ = false;  // under mutex_
};

}  // namespace shoal::detail
