// mp_main.cc is the main() of every multi-PE GoogleTest program (tests/mp/, tests/gpu/). A program whose PEs need
// more than shoal_init around the tests registers hooks here from a static initializer; tests/gpu/gpu_env.cc does
// (it picks the PE's GPU before shoal_init, skips without one, and finishes GPU work around each test).
#pragma once

#include <gtest/gtest.h>

namespace shoal_test {

struct pe_main_hooks {
  /// Before shoal_init, after GoogleTest took its own flags out of argc/argv. May print a "SKIP: <why>" line and
  /// exit 77 (ctest's SKIP_RETURN_CODE); it must then do so on every PE alike.
  void (*before_init)(int argc, char** argv) = nullptr;
  /// After shoal_init, before the first test. Returning false ends this PE with status 1 (after it says why).
  bool (*after_init)() = nullptr;
  /// Before each test, on every PE.
  void (*test_start)(const ::testing::TestInfo& test) = nullptr;
  /// After each test, on every PE; `failures` is the number of failed checks this PE saw in it.
  void (*test_end)(const ::testing::TestInfo& test, int failures) = nullptr;
};

/// Registers this program's hooks (call it once, from a static initializer). Returns true.
bool set_pe_main_hooks(const pe_main_hooks& hooks);

}  // namespace shoal_test
