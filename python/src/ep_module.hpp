// The pieces of the nanobind module shoal._ep (python/src/ep_module.cc) that live in other files.
#pragma once

#include <nanobind/nanobind.h>

namespace shoal_python {

/// Adds the low-latency mode's functions (ll_layout, ll_world, ll_dispatch, ll_combine) to shoal._ep.
void register_low_latency(nanobind::module_& m);

}  // namespace shoal_python
