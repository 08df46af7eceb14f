// Where this PE stands in the job, read from whatever started it (shoalrun, mpirun, srun,
// torchrun, or nothing), and how it meets PE 0: the bootstrap options built from that.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/bootstrap.hpp"

namespace shoal::detail {

struct launch_env {
  int rank = 0;
  int size = 1;
  int local_rank = 0;                          ///< rank among this node's PEs; -1 when the launcher does not say
  int local_size = 1;                          ///< PEs on this node; -1 when the launcher does not say
  std::string source = "single";               ///< "shoalrun", "ompi", "slurm", "pmi", "torchrun", "single"
  std::optional<std::string> uid_text;         ///< SHOAL_BOOTSTRAP_UID
  int listen_fd = -1;                          ///< SHOAL_BOOTSTRAP_FD: PE 0's inherited listener, or -1
  std::optional<std::string> rendezvous_addr;  ///< "HOST:PORT" where PE 0 listens when there is no uid
  std::optional<std::string> job_id;           ///< the launcher's job id; names the node-local rendezvous file
};

/// Reads the environment, first match wins: SHOAL_RANK/SHOAL_SIZE (shoalrun, or set by hand);
/// Open MPI (OMPI_COMM_WORLD_*); MPICH hydra (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS);
/// torchrun when TORCHELASTIC_RUN_ID is set (so torchrun inside an srun step is torchrun);
/// Slurm inside an srun step (SLURM_PROCID with SLURM_STEP_ID: a batch script alone is no launch);
/// torchrun-style RANK/WORLD_SIZE with MASTER_ADDR; else a single PE. The SHOAL_BOOTSTRAP_*
/// variables apply under every launcher. Throws shoal::error(invalid_argument) naming the variable
/// when a value is malformed or the values contradict each other (rank >= size, ...).
launch_env detect_launch_env();

/// The bootstrap options for this PE (timeouts from SHOAL_BOOTSTRAP_TIMEOUT, SHOAL_PEER_TIMEOUT and,
/// for collectives, SHOAL_WAIT_TIMEOUT):
///  - uid_text: parsed; PE 0 uses the inherited listen_fd if there is one.
///  - rendezvous_addr: PE 0 listens on that port (all interfaces) and opens the listener here. The
///    secret is derived from the job id and the address: it keeps PEs of different jobs apart, but
///    it is no protection against a user who can read the job's environment.
///  - otherwise a node-local file: PE 0 opens a listener on 127.0.0.1 and writes the unique id to
///    rendezvous_file_path(job_id) (atomically, mode 0600); the others wait for that file up to the
///    bootstrap timeout. Throws shoal::error(invalid_argument) when the PEs span several nodes or
///    there is no job id, saying to set SHOAL_BOOTSTRAP_ADDR.
/// A single PE without a uid gets a locally generated one and no listener. PE 0's listener travels
/// in options.listen_fd and is owned by bootstrap::connect from then on.
bootstrap_options resolve_bootstrap(const launch_env& env);

/// "/tmp/shoal-<job id>.uid", with characters other than [A-Za-z0-9._-] in the id replaced by '_'.
std::string rendezvous_file_path(std::string_view job_id);

}  // namespace shoal::detail
