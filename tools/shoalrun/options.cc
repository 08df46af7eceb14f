#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "shoal/types.h"

namespace shoal::run {
namespace {

// Large enough for any real job, small enough that deadlines computed from it cannot overflow.
constexpr double max_seconds = 1e7;

std::string trimmed(std::string text) {
  auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  return text;
}

// The validators check the text before CLI11 converts it, so that "-n abc" and "-n 0" get the same
// message, which says what is expected rather than how conversion failed.
CLI::Validator pe_count_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string t = trimmed(text);
        int value = 0;
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
        if (t.empty() || ec != std::errc() || end != t.data() + t.size() || value < 1 || value > max_pes) {
          return fmt::format("must be an integer from 1 to {}, not '{}'", max_pes, text);
        }
        text = std::to_string(value);  // CLI11 would read "010" as octal
        return {};
      },
      "");
}

CLI::Validator seconds_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string t = trimmed(text);
        char* end = nullptr;
        double value = std::strtod(t.c_str(), &end);
        if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(value) || value < 0 || value > max_seconds) {
          return fmt::format("must be a number of seconds from 0 to {}, not '{}'", max_seconds, text);
        }
        return {};
      },
      "");
}

bool is_managed(std::string_view name) {
  return std::find(managed_env_names.begin(), managed_env_names.end(), name) != managed_env_names.end();
}

CLI::Validator env_assignment_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        size_t eq = text.find('=');
        if (eq == std::string::npos) return fmt::format("expected NAME=VALUE, not '{}'", text);
        std::string_view name(text.data(), eq);
        bool valid =
            !name.empty() && (std::isdigit(static_cast<unsigned char>(name[0])) == 0) &&
            std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
        if (!valid) return fmt::format("'{}' is not a valid environment variable name", name);
        if (is_managed(name)) return fmt::format("{} is set by shoalrun itself and cannot be overridden", name);
        return {};
      },
      "");
}

// CLI11 would print the description first and describe the command as "shoalrun [OPTIONS]"; the
// program and its arguments matter as much, and the usage line reads best on top.
class usage_formatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App*) const override { return {}; }
  std::string make_usage(const CLI::App* app, std::string) const override {
    return "Usage: shoalrun -n N [options] [--] program [args...]\n\n" + app->get_description() + "\n";
  }
};

// --job-pes, --first-rank and --bootstrap-addr together describe this host's share of the job.
std::string check_multi_host(launch_options& o) {
  if (o.job_pes == 0) o.job_pes = o.num_pes;
  if (o.job_pes < 1 || o.job_pes > max_job_pes)
    return fmt::format("--job-pes: must be an integer from 1 to {}, not {}", max_job_pes, o.job_pes);
  if (o.first_rank < 0 || o.first_rank > o.job_pes - o.num_pes)
    return fmt::format("--first-rank: {} PEs from rank {} do not fit in a job of {} PEs (--job-pes)", o.num_pes,
                       o.first_rank, o.job_pes);
  if (o.job_pes != o.num_pes && o.bootstrap_addr.empty())
    return fmt::format("--job-pes {} spans several hosts (-n {} here): --bootstrap-addr HOST:PORT is required",
                       o.job_pes, o.num_pes);
  if (!o.bootstrap_addr.empty() && o.bootstrap_addr.rfind(':') == std::string::npos)
    return fmt::format("--bootstrap-addr: expected HOST:PORT, not '{}'", o.bootstrap_addr);
  return {};
}

int usage_error(const std::string& message) {
  std::cerr << "shoalrun: " << message << "\nRun 'shoalrun --help' for usage.\n";
  return usage_status;
}

}  // namespace

parse_outcome parse_command_line(int argc, char** argv) {
  launch_options options;
  CLI::App app{
      "Starts N PEs of a shoal program on this machine, prefixes their output with the PE number,\n"
      "stops them all when one fails and exits with the status of the first PE that failed.",
      "shoalrun"};
  app.formatter(std::make_shared<usage_formatter>());
  app.footer(
      "Each PE gets SHOAL_RANK, SHOAL_SIZE, SHOAL_LOCAL_RANK, SHOAL_LOCAL_SIZE and SHOAL_BOOTSTRAP_UID;\n"
      "PE 0 also inherits the bootstrap listener as SHOAL_BOOTSTRAP_FD. A PE's stdout is a pseudo-terminal\n"
      "(raw mode), so its C library flushes every line: what a PE printed arrives even when it is stopped\n"
      "because another failed; stderr is a pipe.\n"
      "Several hosts: run one shoalrun per host with the same --job-pes and --bootstrap-addr (PE 0's host and\n"
      "a free port) and each host's --first-rank, e.g. host A: -n 2 --job-pes 4 --first-rank 0, host B: -n 2\n"
      "--job-pes 4 --first-rank 2; each shoalrun stops its own PEs, the bootstrap stops the others' "
      "(docs/multi-node.md).\n"
      "Exit status: as mpirun, the status of the first PE that failed on its own (128+N for signal N;\n"
      "PEs shoalrun stopped do not count), 124 on --timeout, else 128+N when shoalrun was stopped by\n"
      "signal N, 2 for a bad command line.");
  app.set_version_flag("--version", fmt::format("shoalrun (shoal) {}.{}.{}", SHOAL_VERSION_MAJOR, SHOAL_VERSION_MINOR,
                                                SHOAL_VERSION_PATCH));
  app.add_option("-n,--np", options.num_pes, "number of PEs to start")
      ->required()
      ->type_name(fmt::format("N (1..{})", max_pes))
      ->transform(pe_count_validator());  // transform: it rewrites the text
  app.add_option("--timeout", options.timeout_s, "stop all PEs and exit 124 after this many seconds (0: never)")
      ->type_name("SECONDS")
      ->check(seconds_validator());
  app.add_option("--kill-grace", options.kill_grace_s, "seconds from SIGTERM to SIGKILL when stopping PEs")
      ->type_name("SECONDS")
      ->capture_default_str()
      ->check(seconds_validator());
  // Two flags rather than "--prefix,!--no-prefix", which CLI11 renders as "--prefix,--no-prefix{false}";
  // applied as they are parsed, so the last one given wins.
  app.add_flag_callback(
         "--prefix", [&options] { options.prefix = true; }, "prefix each output line with \"[PE] \" (the default)")
      ->trigger_on_parse();
  app.add_flag_callback(
         "--no-prefix", [&options] { options.prefix = false; }, "relay each output line as it is")
      ->trigger_on_parse();
  app.add_option("-x", options.extra_env, "set an environment variable in every PE (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false)
      ->check(env_assignment_validator());
  app.add_option("--bind-host", options.bind_host, "address for PE 0's bootstrap listener")
      ->type_name("HOST")
      ->capture_default_str();
  app.add_option("--job-pes", options.job_pes, "PEs in the whole job when it spans several hosts (see --first-rank)")
      ->type_name("N");
  app.add_option("--first-rank", options.first_rank, "rank of the first PE this shoalrun starts (multi-host jobs)")
      ->type_name("RANK");
  app.add_option("--bootstrap-addr", options.bootstrap_addr,
                 "HOST:PORT where PE 0 listens and every PE meets it (multi-host jobs; PE 0's host, a free port)")
      ->type_name("HOST:PORT");
  // Everything from the first non-option on belongs to the program, even words that look like ours.
  app.prefix_command();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return {std::nullopt, app.exit(e)};
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, usage_error(e.what())};
  }

  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    // prefix_command() hands unknown options over as the start of the command; catch typos here
    // rather than trying to execute "--tiemout". A program named like an option needs "--".
    return {std::nullopt, usage_error(fmt::format("unknown option '{}'", rest.front()))};
  }
  if (rest.empty() || rest.front().empty()) {
    return {std::nullopt, usage_error("missing the program to run (shoalrun -n N [options] [--] program [args...])")};
  }
  if (options.bind_host.empty()) return {std::nullopt, usage_error("--bind-host: must not be empty")};
  if (std::string err = check_multi_host(options); !err.empty()) return {std::nullopt, usage_error(err)};
  options.command = std::move(rest);
  return {std::move(options), 0};
}

}  // namespace shoal::run
