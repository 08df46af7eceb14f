#include "common/log.hpp"

#include <cstdio>
#include <string_view>

#include "common/env.hpp"

namespace shoal::detail::log {

namespace {
std::atomic<int> g_level{static_cast<int>(level::warn)};
std::atomic<unsigned> g_mask{~0u};
std::atomic<int> g_pe{-1};

constexpr std::pair<subsys, const char*> kNames[] = {
    {subsys::init, "init"}, {subsys::bootstrap, "bootstrap"}, {subsys::heap, "heap"}, {subsys::transport, "transport"},
    {subsys::rma, "rma"},   {subsys::coll, "coll"},
};
}  // namespace

void configure() {
  std::string lvl = env::get_string("SHOAL_DEBUG");
  level parsed = level::warn;
  if (lvl == "none")
    parsed = level::none;
  else if (lvl == "warn" || lvl == "WARN")
    parsed = level::warn;
  else if (lvl == "info" || lvl == "INFO")
    parsed = level::info;
  else if (lvl == "trace" || lvl == "TRACE")
    parsed = level::trace;
  else
    std::fprintf(stderr, "[shoal] SHOAL_DEBUG='%s' is not one of none, warn, info, trace; using warn\n", lvl.c_str());
  g_level.store(static_cast<int>(parsed));

  std::string list = env::get_string("SHOAL_DEBUG_SUBSYS");
  unsigned mask = 0;
  std::string_view rest = list;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "all") mask = ~0u;
    for (auto& [sys, n] : kNames)
      if (item == n) mask |= static_cast<unsigned>(sys);
  }
  g_mask.store(mask);
  // Now that warnings can be shown: unknown SHOAL_* names are most likely typos.
  env::warn_unknown_once();
}

void set_pe(int pe) { g_pe.store(pe); }

bool enabled(level lvl, subsys sys) noexcept {
  return static_cast<int>(lvl) <= g_level.load(std::memory_order_relaxed) &&
         (g_mask.load(std::memory_order_relaxed) & static_cast<unsigned>(sys)) != 0;
}

const char* name(subsys sys) noexcept {
  for (auto& [s, n] : kNames)
    if (s == sys) return n;
  return "?";
}

void write(level lvl, subsys sys, const std::string& message) {
  const char* tag = lvl == level::warn ? " WARN" : "";
  // Before the rendezvous the rank is not known yet: "pe ?".
  int pe = g_pe.load();
  std::string who = pe >= 0 ? fmt::format("{}", pe) : std::string("?");
  std::string line = fmt::format("[shoal pe {} {}{}] {}\n", who, name(sys), tag, message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace shoal::detail::log
