// shoalrun's command line: what one local job is (PE count, program, limits, extra environment)
// and the parser that turns argv into it.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::run {

/// Most PEs one local job may start (each costs two pipes and a process).
inline constexpr int max_pes = 1024;
/// Exit status for a bad command line (as getopt-style tools); distinct from 124 (timeout), 126/127 (exec).
inline constexpr int usage_status = 2;

/// Environment variables shoalrun sets in every PE itself; inherited values are replaced and `-x` may
/// not set them. SHOAL_BOOTSTRAP_FD is set for PE 0 only and removed from the others' environment.
/// SHOAL_BOOTSTRAP_ADDR is managed too (inherited values dropped) when --bootstrap-addr is given.
inline constexpr std::array<std::string_view, 6> managed_env_names = {
    "SHOAL_RANK", "SHOAL_SIZE", "SHOAL_LOCAL_RANK", "SHOAL_LOCAL_SIZE", "SHOAL_BOOTSTRAP_UID", "SHOAL_BOOTSTRAP_FD",
};

/// Most PEs one job may have over all hosts (--job-pes).
inline constexpr int max_job_pes = 1 << 20;

/// One local job, as given on the command line.
struct launch_options {
  int num_pes = 0;                      ///< -n/--np: PEs to start, 1..max_pes
  double timeout_s = 0;                 ///< --timeout: limit on the whole job in seconds; 0 = none
  double kill_grace_s = 3;              ///< --kill-grace: seconds between SIGTERM and SIGKILL when stopping
  bool prefix = true;                   ///< --prefix/--no-prefix: "[rank] " before every output line
  std::vector<std::string> extra_env;   ///< -x NAME=VALUE, in command-line order (later wins)
  std::string bind_host = "127.0.0.1";  ///< --bind-host: address of PE 0's bootstrap listener
  // One part of a job over several hosts: this shoalrun starts ranks first_rank..first_rank+num_pes-1
  // of job_pes, and every PE meets PE 0 at bootstrap_addr (PE 0 listens there on all interfaces).
  int job_pes = 0;                   ///< --job-pes: PEs in the whole job; 0 = num_pes (a one-host job)
  int first_rank = 0;                ///< --first-rank: rank of this shoalrun's first PE
  std::string bootstrap_addr;        ///< --bootstrap-addr HOST:PORT; empty = shoalrun's own listener
  std::vector<std::string> command;  ///< the program (looked up in PATH) and its arguments
};

/// What the command line asks for: a job to run, or (for --help, --version and usage errors, whose
/// text has already been printed) no job and the status to exit with: 0 or usage_status.
struct parse_outcome {
  std::optional<launch_options> options;
  int exit_status = 0;
};

/// Parses `shoalrun [options] [--] program args...`. Parsing stops at the first argument that is not
/// one of shoalrun's options (or after `--`), so the program's own options pass through untouched.
/// Errors name the offending option, e.g. "--np: must be an integer from 1 to 1024, not 0".
parse_outcome parse_command_line(int argc, char** argv);

}  // namespace shoal::run
