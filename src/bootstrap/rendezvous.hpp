// Rendezvous: how the PEs of a job find each other. A TCP star around PE 0: every other PE opens
// two connections to PE 0's listener (collective, monitor) and proves on each that it knows the
// job's 128-bit secret; PE 0 checks versions, sizes and ranks and welcomes all once all arrived.
#pragma once

#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/link.hpp"

namespace shoal::detail {

/// The connections of one PE after the rendezvous, indexed by rank. PE 0: [r] for every other PE r
/// ([0] empty); other PEs: [0] only, to PE 0.
struct star_links {
  std::vector<net::unique_fd> coll;  ///< collective connections (the relay's)
  std::vector<net::unique_fd> mon;   ///< monitor connections (heartbeats, failures)
};

class rendezvous {
 public:
  explicit rendezvous(const bootstrap_options& options) : opts_(options) {}

  /// PE 0: accepts two authenticated connections from every other PE on `listener`, then welcomes
  /// all. Throws shoal::error (timeout naming the missing ranks, mismatch, invalid_argument) after
  /// telling every PE already connected, so no PE waits out its own timeout.
  star_links accept_all(net::unique_fd listener);
  /// Other PEs: connects both channels to PE 0 and waits for its welcome; throws PE 0's verdict.
  star_links join();

 private:
  net::unique_fd connect_to_root(link::clock::time_point deadline, int refused_fd);
  void wait_for_welcome(const star_links& links, link::clock::time_point deadline);

  const bootstrap_options& opts_;
};

}  // namespace shoal::detail
