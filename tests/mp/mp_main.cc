// main() for multi-PE GoogleTest programs run through shoalrun: every PE runs the same tests in
// the same order (no shuffling), then the PEs reduce their results so all agree on pass/fail and
// all exit with the same status.
#include <gtest/gtest.h>

#include <cstdio>

#include "shoal/shoal.h"

namespace {

// What PEs other than 0 print instead of GoogleTest's full output: their failures only.
class failure_printer : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("%s:%d: Failure\n%s\n", result.file_name() != nullptr ? result.file_name() : "unknown file",
                result.line_number(), result.message());
    std::fflush(stdout);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) std::printf("[  FAILED  ] %s.%s\n", info.test_suite_name(), info.name());
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::GTEST_FLAG(shuffle) = false;
  int provided = -1;
  if (shoal_init_thread(SHOAL_THREAD_MULTIPLE, &provided) != 0 || provided != SHOAL_THREAD_MULTIPLE) {
    std::fprintf(stderr, "shoal_init_thread failed or gave thread level %d\n", provided);
    return 1;
  }
  int me = shoal_my_pe();
  // Only PE 0 prints the per-test lines; every PE still prints its failures.
  if (me != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failure_printer);
  }
  int rc = RUN_ALL_TESTS();
  if (rc != 0) {
    std::fprintf(stderr, "PE %d: %d of %d tests failed\n", me, ::testing::UnitTest::GetInstance()->failed_test_count(),
                 ::testing::UnitTest::GetInstance()->test_to_run_count());
  }

  // Tests may leave the error mode changed; the reduction below must not fail silently.
  shoal_set_error_mode(SHOAL_ERRORS_ABORT);
  auto* failures = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  shoal_int_atomic_add(failures, rc != 0 ? 1 : 0, 0);
  shoal_barrier_all();
  int total = shoal_int_g(failures, 0);
  shoal_barrier_all();
  shoal_free(failures);
  if (me == 0) std::printf("shoal mp test: %d of %d PEs failed\n", total, shoal_n_pes());
  // A PE that exits non-zero makes shoalrun stop the others: get everything out first.
  std::fflush(nullptr);
  shoal_finalize();
  return total == 0 ? 0 : 1;
}
