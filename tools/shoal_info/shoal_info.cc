// shoal-info: version, build, backend, heap footprint, the path to every peer, and every SHOAL_*
// variable with its value. Run alone for one PE, or under shoalrun to see the peers.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "common/env.hpp"
#include "shoal/world.hpp"

namespace env = shoal::detail::env;

namespace {

void print_env_table(bool markdown) {
  if (markdown) {
    fmt::print("| variable | type | default | meaning |\n|---|---|---|---|\n");
    for (const auto& v : env::table())
      fmt::print("| `{}` | {} | `{}` | {} |\n", v.name, env::to_string(v.type), v.default_value, v.doc);
    return;
  }
  fmt::print("environment (value in use; * = set in the environment):\n");
  for (const auto& v : env::table()) {
    bool set = env::raw(v.name).has_value();
    fmt::print("  {}{:<26} = {:<12} {}\n", set ? '*' : ' ', v.name, env::effective(v.name), v.doc);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shoal-info: what shoal sees on this machine"};
  bool env_markdown = false, no_init = false;
  app.add_flag("--env-markdown", env_markdown, "print the environment-variable table as Markdown (docs/env.md)");
  app.add_flag("--no-init", no_init, "do not join a job; print build and environment only");
  CLI11_PARSE(app, argc, argv);

  if (env_markdown) {
    print_env_table(true);
    return 0;
  }
  fmt::print("shoal {} (OpenSHMEM {}.{} API)\n", shoal::version(), SHOAL_MAJOR_VERSION, SHOAL_MINOR_VERSION);
#ifdef SHOAL_HAVE_CUDA
  fmt::print("build: CUDA backend compiled in\n");
#else
  fmt::print("build: host backend only (no CUDA)\n");
#endif
  if (!no_init) {
    try {
      shoal::world world;
      std::string peers;
      for (int pe = 0; pe < world.n_pes(); ++pe)
        peers += fmt::format("\n    PE {:<3} {}", pe, shoal::to_string(world.path_to(pe)));
      fmt::print("PE {} of {}: backend {}\n  heap: reserve {} MiB, mapped {} MiB, in use {} B\n  paths from PE {}:{}\n",
                 world.my_pe(), world.n_pes(), world.backend_name(), world.heap_reserve_bytes() >> 20,
                 world.heap_mapped_bytes() >> 20, world.heap_in_use_bytes(), world.my_pe(), peers);
      bool print_env = world.my_pe() == 0;
      world.finalize();
      if (!print_env) return 0;
    } catch (const shoal::error& e) {
      fmt::print(stderr, "shoal-info: {}\n", e.what());
      return 1;
    }
  }
  print_env_table(false);
  return 0;
}
