// shoal's measured defaults: the on-stream collectives' algorithm crossovers and channel size per collective and
// PE count, and the size up to which an on-stream put or get copies with the SMs rather than the copy engine. The
// values live in tuning_gen.hpp, generated (codegen/gen_tuning.py) from the study's measurements
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

/// One PE count's path of host-initiated on-stream puts and gets.
struct stream_row {
  int n_pes;                  ///< the PE count measured (the row of the largest n_pes <= the job's)
  uint64_t kernel_max_bytes;  ///< an SM copy kernel up to this size, the copy engine above; 0: always the copy engine
};

/// The row for a team of n_pes: the measured row of the largest PE count <= n_pes, else the smallest measured.
const coll_row& coll_default(coll_kind kind, int n_pes);

/// The largest on-stream put/get that takes the SM copy kernel in a job of n_pes (0: none).
uint64_t stream_kernel_max_bytes(int n_pes);

/// Where the table's values come from: the machine, commit, date and command of the study run.
const char* source_machine();
const char* source_commit();

}  // namespace shoal::detail::tuning
