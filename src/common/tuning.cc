#include "common/tuning.hpp"

#include <span>

#include "common/tuning_gen.hpp"

namespace shoal::detail::tuning {

namespace {
std::span<const coll_row> rows_of(coll_kind kind) {
  switch (kind) {
    case coll_kind::allreduce:
      return k_allreduce;
    case coll_kind::broadcast:
      return k_broadcast;
    case coll_kind::fcollect:
      return k_fcollect;
    case coll_kind::alltoall:
      break;
  }
  return k_alltoall;
}
}  // namespace

const coll_row& coll_default(coll_kind kind, int n_pes) {
  const std::span<const coll_row> rows = rows_of(kind);  // sorted by n_pes, never empty (the generator checks)
  const coll_row* pick = &rows.front();
  for (const coll_row& r : rows)
    if (r.n_pes <= n_pes) pick = &r;
  return *pick;
}

uint64_t stream_kernel_max_bytes(int n_pes) {
  const stream_row* pick = &k_stream_rma[0];  // sorted by n_pes, never empty (the generator checks)
  for (const stream_row& r : k_stream_rma)
    if (r.n_pes <= n_pes) pick = &r;
  return pick->kernel_max_bytes;
}

const char* source_machine() { return kMachine; }
const char* source_commit() { return kCommit; }

}  // namespace shoal::detail::tuning
