#include "transport/proxy/ucx_info.hpp"

#include <ucp/api/ucp.h>

namespace shoal::detail {

// The loaded library's version, not the headers': a job may run on another libucp than it was built on.
std::string ucx_runtime_version() { return ucp_get_version_string(); }

}  // namespace shoal::detail
