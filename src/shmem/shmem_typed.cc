// libshoal_shmem: the typed OpenSHMEM 1.5 routines shoal has no call for, built on its public C API, with
// their entry points generated into typed_gen.inc (codegen/gen_shmem_api.py):
// - the non-blocking fetching AMOs (shmem_<TYPE>_atomic_fetch_add_nbi & co.): shoal's blocking AMO, whose
//   value is written to fetch before the call returns (the spec asks for it by the next quiet);
// - the team reductions of long double (min, max, sum, prod) and of the complex types (sum, prod), which
//   shoal's reductions do not take: every member reads every member's source in team order and reduces it
//   locally, as the legacy to_all reductions do (so every member gets the same bits).
#include <cstring>
#include <vector>

#include "shmem.h"
#include "shmem_internal.hpp"

namespace {
namespace typed {  // internal to this file and typed_gen.inc

using shoal_shmem::fail;
using shoal_shmem::op_max;
using shoal_shmem::op_min;
using shoal_shmem::op_prod;
using shoal_shmem::op_sum;

bool fetch_ok(const char* call, const void* fetch) { return fetch != nullptr || fail(call, "fetch is NULL"); }

// A team barrier (every member's source is ready), a get of every member's source in team order, reduced
// into a local buffer, a second barrier (every source has been read: dest may be source), then dest.
// Collective over `team`; returns 0, or nonzero after reporting a bad argument or a failed barrier.
template <class Op, class T>
int team_reduce(const char* call, shmem_team_t team, T* dest, const T* source, size_t nreduce) {
  if (team == SHMEM_TEAM_INVALID) return fail(call, "team is SHMEM_TEAM_INVALID"), SHOAL_ERR_INVALID_ARGUMENT;
  const int n = shoal_team_n_pes(team);  // reports a handle that is not a team of this PE
  if (n < 1) return SHOAL_ERR_INVALID_ARGUMENT;
  size_t bytes = 0;
  if (__builtin_mul_overflow(nreduce, sizeof(T), &bytes))
    return fail(call, "nreduce=%zu x %zu bytes overflows size_t", nreduce, sizeof(T)), SHOAL_ERR_INVALID_ARGUMENT;
  const int me = shoal_my_pe();
  if (bytes > 0 && !shoal_addr_accessible(dest, me))
    return fail(call, "dest=%p is neither in the symmetric heap nor a symmetric global/static variable",
                static_cast<void*>(dest)),
           SHOAL_ERR_INVALID_ARGUMENT;
  if (bytes > 0 && !shoal_addr_accessible(source, me))
    return fail(call, "source=%p is neither in the symmetric heap nor a symmetric global/static variable",
                static_cast<const void*>(source)),
           SHOAL_ERR_INVALID_ARGUMENT;
  std::vector<T> acc(nreduce), got(nreduce);
  if (int rc = shoal_team_sync(team); rc != SHOAL_OK) return rc;
  for (int r = 0; r < n && bytes > 0; ++r) {
    // Through shoal_getmem, which reaches every member's heap or globals (mapped, or through the proxy) and
    // a GPU heap from the host.
    shoal_getmem(r == 0 ? acc.data() : got.data(), source, bytes, shoal_team_translate_pe(team, r, SHMEM_TEAM_WORLD));
    if (r > 0)
      for (size_t k = 0; k < nreduce; ++k) acc[k] = Op{}(acc[k], got[k]);
  }
  if (int rc = shoal_team_sync(team); rc != SHOAL_OK) return rc;
  if (bytes > 0) shoal_putmem(dest, acc.data(), bytes, me);  // dest may be GPU memory
  return SHOAL_OK;
}

}  // namespace typed
}  // namespace

extern "C" {

#include "typed_gen.inc"

}  // extern "C"
