// shoal's measured defaults: the on-stream collectives' algorithm crossovers and channel size per collective and
// PE count. The values live in tuning_gen.hpp, generated (codegen/gen_tuning.py) from the study's measurements
// (docs/results/study/defaults.json, written by bench/study/study.py with the machine and commit they came from).
#pragma once

#include <cstdint>

namespace shoal::detail::tuning {

/// One PE count's defaults for one collective.
struct coll_row {
  int n_pes;                   ///< the PE count measured; a team uses the row of the largest n_pes <= its size
  uint64_t ll_max_bytes;       ///< LL for messages up to this size (bounded by the LL slot, SHOAL_COLL_LL_BYTES)
  uint64_t ce_min_bytes;       ///< copy engines from this size (broadcast, fcollect, alltoall); 0: never
  uint64_t bytes_per_channel;  ///< direct algorithm: one CTA per this many bytes moved through a PE
};

enum class coll_kind { allreduce, broadcast, fcollect, alltoall };

/// The row for a team of n_pes: the measured row of the largest PE count <= n_pes, else the smallest measured.
const coll_row& coll_default(coll_kind kind, int n_pes);

/// Where the table's values come from: the machine, commit, date and command of the study run.
const char* source_machine();
const char* source_commit();

}  // namespace shoal::detail::tuning
