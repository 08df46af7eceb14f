// Builds without UCX: the proxy path cannot be made.
#include "common/check.hpp"
#include "transport/proxy/proxy_path.hpp"
#include "transport/proxy/ucx_info.hpp"

namespace shoal::detail {

std::unique_ptr<proxy_ops> make_proxy_path(bootstrap& boot, symmetric_heap&, const std::vector<peer_path>&,
                                           data_segment_span) {
  SHOAL_THROW(errc::unsupported, "shoal_init",
              "PE {} reaches some peers only through the proxy transport (another node, or SHOAL_DISABLE_P2P=1), "
              "but this shoal was built without UCX; install libucx-dev (scripts/install_deps.sh) and rebuild "
              "with -DSHOAL_WITH_UCX=ON",
              boot.rank());
}

bool proxy_built() { return false; }

std::string ucx_runtime_version() { return {}; }

}  // namespace shoal::detail
