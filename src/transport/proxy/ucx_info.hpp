// What shoal-info reports about the UCX library under the proxy transport; no UCX header here, so
// builds without UCX link the stub in proxy_stub.cc.
#pragma once

#include <string>

namespace shoal::detail {

/// The UCX library loaded at run time ("1.13.1"), or "" when this build has no UCX.
std::string ucx_runtime_version();

}  // namespace shoal::detail
