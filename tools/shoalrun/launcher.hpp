// shoalrun's supervisor: starts the PEs of one local job, relays their output, stops them all on
// the first failure, a timeout or a signal, and works out the job's exit status.
#pragma once

#include "options.hpp"

namespace shoal::run {

/// Exit status when --timeout expires (the same as timeout(1)).
inline constexpr int timeout_status = 124;

/// Starts `options.num_pes` PEs, each in its own process group, and supervises them until all have
/// ended. Returns shoalrun's exit status: `timeout_status` if the timeout expired; otherwise, as
/// mpirun, the status of the first PE that ended on its own with a failure (a PE killed by signal N
/// counts as 128+N; PEs shoalrun itself signalled do not count); else 128+N if shoalrun was stopped
/// by signal N; else 0.
/// Throws shoal::error when the job cannot be started (listener, pipes, fork); PEs already started
/// are killed and reaped first.
int run_job(const launch_options& options);

}  // namespace shoal::run
