// The parts of <shoal/info.h> that need the transport layer: the UCX version and, inside a job, the
// UCX transports towards each proxy peer (common/info.cc holds the rest, below every layer).
#include <string>

#include "runtime/c_api.hpp"
#include "shoal/info.h"
#include "transport/proxy/ucx_info.hpp"

const char* shoal_info_ucx_version(void) {
  static const std::string version = shoal::detail::ucx_runtime_version();
  return version.c_str();
}

const char* shoal_info_peer_transports(int pe) {
  thread_local std::string text;
  try {
    shoal::detail::world_impl& w = shoal::detail::c_api::current("shoal_info_peer_transports");
    if (pe < 0 || pe >= w.transport().n_pes()) return nullptr;
    text = w.transport().proxy_transports(pe);
    return text.c_str();
  } catch (const std::exception&) {
    return nullptr;  // not initialized: an answer, not an error
  }
}
