// Bootstrap listeners opened by make_unique_id() in this process, kept until the rank-0 world that
// presents the same id takes them (so there is no window in which the port could be lost).
#pragma once

#include "bootstrap/bootstrap.hpp"

namespace shoal::detail {

/// The listener fd opened for `uid` by make_unique_id in this process, or -1. Hands ownership over.
int take_listener(const unique_id& uid);

}  // namespace shoal::detail
