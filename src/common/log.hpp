// Per-subsystem logging to stderr, off (warn only) by default. SHOAL_DEBUG picks the level,
// SHOAL_DEBUG_SUBSYS the subsystems. Lines read "[shoal pe 3 heap] message".
#pragma once

#include <atomic>
#include <string>

#include <fmt/format.h>

namespace shoal::detail::log {

enum class level : int { none = 0, warn = 1, info = 2, trace = 3 };
enum class subsys : unsigned {
  init = 1u << 0,
  bootstrap = 1u << 1,
  heap = 1u << 2,
  transport = 1u << 3,
  rma = 1u << 4,
  coll = 1u << 5
};

/// Reads SHOAL_DEBUG / SHOAL_DEBUG_SUBSYS (again); called by init, cheap to repeat. The first call
/// also warns about unknown SHOAL_* variables (env::warn_unknown_once).
void configure();
/// The PE shown in log lines ("pe ?" while it is -1, before the rank is known).
void set_pe(int pe);

bool enabled(level lvl, subsys sys) noexcept;
const char* name(subsys sys) noexcept;
void write(level lvl, subsys sys, const std::string& message);

}  // namespace shoal::detail::log

#define SHOAL_LOG(lvl, sys, ...)                                                                            \
  do {                                                                                                      \
    if (::shoal::detail::log::enabled(::shoal::detail::log::level::lvl, ::shoal::detail::log::subsys::sys)) \
      ::shoal::detail::log::write(::shoal::detail::log::level::lvl, ::shoal::detail::log::subsys::sys,      \
                                  ::fmt::format(__VA_ARGS__));                                              \
  } while (0)
