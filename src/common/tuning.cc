#include "common/tuning.hpp"

#include <span>

#include "common/tuning_gen.hpp"

namespace shoal::detail::tuning {

namespace {
/// The row of the largest measured PE count <= n_pes, else the smallest; rows are sorted by n_pes and never empty
/// (the generator checks both).
template <class Row>
const Row& row_for(std::span<const Row> rows, int n_pes) {
  const Row* pick = &rows.front();
  for (const Row& r : rows)
    if (r.n_pes <= n_pes) pick = &r;
  return *pick;
}

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

const coll_row& coll_default(coll_kind kind, int n_pes) { return row_for(rows_of(kind), n_pes); }

uint64_t stream_kernel_max_bytes(int n_pes) {
  return row_for(std::span<const stream_row>(k_stream_rma), n_pes).kernel_max_bytes;
}

const char* source_machine() { return kMachine; }
const char* source_commit() { return kCommit; }

}  // namespace shoal::detail::tuning
