// The multi-process suites' check of a call that returned an error (SHOAL_ERRORS_RETURN mode).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "shoal/shoal.h"

namespace shoal_mp {

/// The last error of this thread: its code, and every part in its message. Then clears it.
inline void expect_error(int code, std::initializer_list<std::string> parts) {
  const char* msg = nullptr;
  const int got = shoal_last_error(&msg);
  const std::string text = msg != nullptr ? msg : "";
  EXPECT_EQ(got, code) << "message: " << text;
  for (const auto& part : parts)
    EXPECT_NE(text.find(part), std::string::npos) << "'" << text << "' lacks '" << part << "'";
  shoal_clear_error();
}

}  // namespace shoal_mp

/// expect_error with the code's name in the failure trace.
#define EXPECT_SHOAL_ERROR(code, ...)          \
  do {                                         \
    SCOPED_TRACE(#code);                       \
    shoal_mp::expect_error(code, __VA_ARGS__); \
  } while (0)
