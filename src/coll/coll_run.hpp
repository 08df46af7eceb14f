// run(): the C error contract of the collective entry points (host code only).
//
// Kept out of coll.hpp, which the collective kernels' translation unit also includes: this header
// brings <shoal/shoal.h>, and under nvcc that header brings the device facade, whose per-unit state
// would make shoal_init load (and reserve local memory for) every collective kernel of libshoal.
#pragma once

#if defined(__CUDACC__)
#error "coll/coll_run.hpp is host code: include it from .cc files only"
#endif

#include "runtime/c_api.hpp"
#include "shoal/shoal.h"

namespace shoal::detail::coll {

/// Runs f() for C entry point `call` under the C API's error contract; 0 or the SHOAL_ERR_* code.
template <class F>
int run(const char* call, F&& f) noexcept {
  bool ok = c_api::guarded(
      call,
      [&] {
        f();
        return true;
      },
      false);
  return c_api::status_of(ok);
}

}  // namespace shoal::detail::coll
