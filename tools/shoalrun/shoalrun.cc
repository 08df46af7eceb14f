// shoalrun: the local launcher. `shoalrun -n N [options] [--] program args...` starts N PEs of a
// shoal program on this machine and supervises them; see options.hpp and launcher.hpp.
#include <cstdio>
#include <exception>

#include "launcher.hpp"
#include "options.hpp"
#include "shoal/error.hpp"

int main(int argc, char** argv) {
  shoal::run::parse_outcome parsed = shoal::run::parse_command_line(argc, argv);
  if (!parsed.options) return parsed.exit_status;
  try {
    return shoal::run::run_job(*parsed.options);
  } catch (const shoal::error& e) {
    // The job could not be started (listener, pipes, fork); PEs already started have been killed.
    // The message is for users of the launcher: no source location.
    if (e.call() == "shoalrun") {
      std::fprintf(stderr, "shoalrun: %s\n", e.message().c_str());
    } else {
      std::fprintf(stderr, "shoalrun: %s: %s\n", e.call().c_str(), e.message().c_str());
    }
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoalrun: %s\n", e.what());
    return 1;
  }
}
