// shoal-info: version, build (UCX version), backend, heap footprint, the path to every peer (with the
// UCX transports and devices for proxy peers), and every SHOAL_* variable with its value. Run alone for one PE, or
// under shoalrun to see the peers.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <shoal/info.h>
#include <shoal/world.hpp>

namespace {

void print_env_table(bool markdown) {
  const size_t count = shoal_info_env_count();
  if (markdown) {
    fmt::print("| variable | type | default | allowed | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < count; ++i) {
      const shoal_env_var* v = shoal_info_env_var(i);
      fmt::print("| `{}` | {} | `{}` | {} | {} |\n", v->name, v->type, v->default_value, v->allowed, v->doc);
    }
    return;
  }
  fmt::print("environment (value in use; * = set in the environment):\n");
  for (size_t i = 0; i < count; ++i) {
    const shoal_env_var* v = shoal_info_env_var(i);
    bool set = shoal_info_env_is_set(v->name) == 1;
    fmt::print("  {}{:<26} = {:<12} {}\n", set ? '*' : ' ', v->name, shoal_info_env_value(v->name), v->doc);
  }
  shoal_info_env_unknown(
      [](const char* name, const char* closest, void*) {
        fmt::print("  !{:<26}   not a shoal variable, ignored{}{}\n", name, closest != nullptr ? "; did you mean " : "",
                   closest != nullptr ? closest : "");
      },
      nullptr);
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
  fmt::print("build: {}; proxy transport {}\n",
             shoal_info_has_cuda() ? "CUDA backend compiled in" : "host backend only (no CUDA)",
             *shoal_info_ucx_version() != '\0' ? fmt::format("over UCX {}", shoal_info_ucx_version())
                                               : std::string("not built (no UCX)"));
  if (!no_init) {
    try {
      shoal::world world;
      std::string peers;
      bool proxy = false;
      for (int pe = 0; pe < world.n_pes(); ++pe) {
        std::string ucx = world.proxy_transports(pe);
        proxy |= world.path_to(pe) == shoal::peer_path::proxy;
        peers += fmt::format("\n    PE {:<3} {}{}", pe, shoal::to_string(world.path_to(pe)),
                             ucx.empty() ? "" : fmt::format(" (UCX {})", ucx));
      }
      if (proxy) peers += fmt::format("\n  proxy engine: UCX {}", shoal_info_ucx_version());
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
