// Internal error helpers: CHECK (always on; user and system faults) builds a shoal::error,
// ASSERT (internal invariants) is compiled in with SHOAL_DEBUG_ASSERTS.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "shoal/error.hpp"

namespace shoal::detail {

[[noreturn]] inline void throw_error(errc code, std::string_view call, std::string message, const char* file,
                                     int line) {
  throw error(code, std::string(call), std::move(message), file, line);
}

}  // namespace shoal::detail

/// Throws shoal::error(code, call, fmt::format(...)) at this file and line.
#define SHOAL_THROW(code, call, ...) \
  ::shoal::detail::throw_error((code), (call), ::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

/// Bad input from the caller: the message should name the argument.
#define SHOAL_CHECK_ARG(cond, call, ...)                                            \
  do {                                                                              \
    if (!(cond)) SHOAL_THROW(::shoal::errc::invalid_argument, (call), __VA_ARGS__); \
  } while (0)

/// A system call that returns -1 and sets errno on failure.
#define SHOAL_SYSCHECK(expr, call)                                                                               \
  do {                                                                                                           \
    if ((expr) == -1) {                                                                                          \
      int shoal_errno_ = errno;                                                                                  \
      SHOAL_THROW(::shoal::errc::system, (call), "{} failed: {} (errno {})", #expr, std::strerror(shoal_errno_), \
                  shoal_errno_);                                                                                 \
    }                                                                                                            \
  } while (0)

#ifdef SHOAL_DEBUG_ASSERTS
#define SHOAL_ASSERT(cond)                                                                              \
  do {                                                                                                  \
    if (!(cond)) SHOAL_THROW(::shoal::errc::internal, "shoal", "internal invariant failed: {}", #cond); \
  } while (0)
#else
#define SHOAL_ASSERT(cond) \
  do {                     \
  } while (0)
#endif
