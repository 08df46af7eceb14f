// main() for multi-PE GoogleTest programs run through shoalrun (tests/mp/, tests/gpu/): every PE runs the same tests
// in the same order (no shuffling), then the PEs reduce their results so all agree on pass/fail and all exit with the
// same status. A program with hooks (mp_main.hpp) gets them called around shoal_init and around each test.
#include "mp_main.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "shoal/shoal.h"

namespace shoal_test {
namespace {

pe_main_hooks& hooks() {
  static pe_main_hooks h;
  return h;
}

// A check in a loop can fail thousands of times: each PE prints the first ones of each test and counts the rest.
constexpr int kMaxPrintedPerTest = 24;

// What PEs other than 0 print instead of GoogleTest's full output: their failures only, with the PE and the test.
class failure_printer : public ::testing::EmptyTestEventListener {
 public:
  explicit failure_printer(int me) : me_(me) {}
  // The test's name is kept here: GoogleTest calls OnTestPartResult under the lock that current_test_info() takes.
  void OnTestStart(const ::testing::TestInfo& test) override {
    printed_ = 0;
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    if (++printed_ > kMaxPrintedPerTest) {
      if (printed_ == kMaxPrintedPerTest + 1)
        std::printf("PE %d: further failures of this test are counted, not printed\n", me_);
      return;
    }
    std::printf("PE %d FAIL [%s] %s:%d: Failure\n%s\n", me_, test_.c_str(),
                result.file_name() != nullptr ? result.file_name() : "unknown file", result.line_number(),
                result.message());
    std::fflush(stdout);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) std::printf("[  FAILED  ] %s.%s\n", info.test_suite_name(), info.name());
    test_ = "teardown";
  }

 private:
  int me_;
  int printed_ = 0;
  std::string test_ = "setup";
};

// PE 0's GoogleTest printer with the same cap on the failures it prints; everything else is passed on.
class capped_printer : public ::testing::TestEventListener {
 public:
  explicit capped_printer(::testing::TestEventListener* inner) : inner_(inner) {}
  void OnTestProgramStart(const ::testing::UnitTest& u) override { inner_->OnTestProgramStart(u); }
  void OnTestIterationStart(const ::testing::UnitTest& u, int i) override { inner_->OnTestIterationStart(u, i); }
  void OnEnvironmentsSetUpStart(const ::testing::UnitTest& u) override { inner_->OnEnvironmentsSetUpStart(u); }
  void OnEnvironmentsSetUpEnd(const ::testing::UnitTest& u) override { inner_->OnEnvironmentsSetUpEnd(u); }
  void OnTestSuiteStart(const ::testing::TestSuite& s) override { inner_->OnTestSuiteStart(s); }
#ifndef GTEST_REMOVE_LEGACY_TEST_CASEAPI_
  void OnTestCaseStart(const ::testing::TestCase& s) override { inner_->OnTestCaseStart(s); }
  void OnTestCaseEnd(const ::testing::TestCase& s) override { inner_->OnTestCaseEnd(s); }
#endif
  void OnTestStart(const ::testing::TestInfo& t) override {
    printed_ = 0;
    inner_->OnTestStart(t);
  }
  void OnTestDisabled(const ::testing::TestInfo& t) override { inner_->OnTestDisabled(t); }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed() && ++printed_ > kMaxPrintedPerTest) {
      if (printed_ == kMaxPrintedPerTest + 1)
        std::printf("PE 0: further failures of this test are counted, not printed\n");
      return;
    }
    inner_->OnTestPartResult(r);
  }
  void OnTestEnd(const ::testing::TestInfo& t) override { inner_->OnTestEnd(t); }
  void OnTestSuiteEnd(const ::testing::TestSuite& s) override { inner_->OnTestSuiteEnd(s); }
  void OnEnvironmentsTearDownStart(const ::testing::UnitTest& u) override { inner_->OnEnvironmentsTearDownStart(u); }
  void OnEnvironmentsTearDownEnd(const ::testing::UnitTest& u) override { inner_->OnEnvironmentsTearDownEnd(u); }
  void OnTestIterationEnd(const ::testing::UnitTest& u, int i) override { inner_->OnTestIterationEnd(u, i); }
  void OnTestProgramEnd(const ::testing::UnitTest& u) override { inner_->OnTestProgramEnd(u); }

 private:
  std::unique_ptr<::testing::TestEventListener> inner_;
  int printed_ = 0;
};

// Calls the program's test_start/test_end hooks (appended after the printers: its test_end runs before theirs).
class hook_caller : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& test) override {
    if (hooks().test_start != nullptr) hooks().test_start(test);
  }
  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (hooks().test_end == nullptr) return;
    int failures = 0;
    for (int i = 0; i < test.result()->total_part_count(); ++i)
      failures += test.result()->GetTestPartResult(i).failed();
    hooks().test_end(test, failures);
  }
};

}  // namespace

bool set_pe_main_hooks(const pe_main_hooks& h) {
  hooks() = h;
  return true;
}

}  // namespace shoal_test

int main(int argc, char** argv) {
  using shoal_test::hooks;
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::GTEST_FLAG(shuffle) = false;
  if (hooks().before_init != nullptr) hooks().before_init(argc, argv);
  int provided = -1;
  if (shoal_init_thread(SHOAL_THREAD_MULTIPLE, &provided) != 0 || provided != SHOAL_THREAD_MULTIPLE) {
    std::fprintf(stderr, "shoal_init_thread failed or gave thread level %d\n", provided);
    return 1;
  }
  int me = shoal_my_pe();
  if (hooks().after_init != nullptr && !hooks().after_init()) {
    std::fflush(nullptr);
    return 1;
  }
  // Only PE 0 prints the per-test lines; every PE still prints its failures, at most kMaxPrintedPerTest per test.
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  ::testing::TestEventListener* printer = listeners.Release(listeners.default_result_printer());
  if (me == 0) {
    listeners.Append(new shoal_test::capped_printer(printer));
  } else {
    delete printer;
    listeners.Append(new shoal_test::failure_printer(me));
  }
  listeners.Append(new shoal_test::hook_caller);
  int rc = RUN_ALL_TESTS();
  if (rc != 0) {
    std::fprintf(stderr, "PE %d: %d of %d tests failed\n", me, ::testing::UnitTest::GetInstance()->failed_test_count(),
                 ::testing::UnitTest::GetInstance()->test_to_run_count());
  }
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "PE %d: no test ran (does the filter match any?)\n", me);
    rc = 1;
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
