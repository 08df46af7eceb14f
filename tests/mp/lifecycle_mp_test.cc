// Use before init and after finalize, on N PEs (own main: the tests run in order around
// shoal_init_thread and shoal_finalize, so no cross-PE reduction; each PE exits non-zero on a
// failure and shoalrun reports the first failing status). Also shoal_init_thread/shoal_query_thread and a
// second init.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "shoal/shoal.h"
#include "shoal/world.hpp"

namespace {

std::string last_message() {
  const char* msg = nullptr;
  shoal_last_error(&msg);
  return msg != nullptr ? msg : "";
}

void expect_error(int code, const std::string& call, const std::string& part) {
  std::string msg = last_message();
  EXPECT_EQ(shoal_last_error(nullptr), code) << msg;
  EXPECT_NE(msg.find(call), std::string::npos) << "'" << msg << "' lacks '" << call << "'";
  EXPECT_NE(msg.find(part), std::string::npos) << "'" << msg << "' lacks '" << part << "'";
  shoal_clear_error();
}

// shoal::default_world_device_handle() throws errc::not_initialized naming itself and `when`.
void expect_no_device_handle(const std::string& when) {
  try {
    (void)shoal::default_world_device_handle();
    ADD_FAILURE() << "default_world_device_handle returned " << when;
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), shoal::errc::not_initialized) << e.what();
    EXPECT_EQ(e.call(), "shoal::default_world_device_handle") << e.what();
    EXPECT_NE(e.message().find(when), std::string::npos) << "'" << e.what() << "' lacks '" << when << "'";
  }
}

// A PE-private word to aim at: not symmetric, but the not-initialized check must come first.
int g_word = 0;

TEST(Lifecycle, A_CallsBeforeInitFailWithNotInitialized) {
  shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_clear_error();
  int provided = -1;
  shoal_query_thread(&provided);
  EXPECT_EQ(provided, SHOAL_THREAD_SINGLE) << "no thread level before init";
  EXPECT_STREQ(shoalx_backend_name(), "");
  int major = 0, minor = 0;
  shoal_info_get_version(&major, &minor);  // allowed any time
  EXPECT_EQ(major, 1);
  shoal_clear_error();

  shoal_int_p(&g_word, 1, 0);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_int_p", "shoal_init");
  EXPECT_EQ(shoal_my_pe(), -1);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_my_pe", "not initialized");
  EXPECT_EQ(shoal_n_pes(), -1);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_n_pes", "not initialized");
  EXPECT_EQ(shoal_malloc(64), nullptr);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_malloc", "not initialized");
  shoal_barrier_all();
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_barrier_all", "not initialized");
  shoal_quiet();
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_quiet", "not initialized");
  EXPECT_EQ(shoal_int_atomic_fetch(&g_word, 0), 0);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_int_atomic_fetch", "not initialized");
  EXPECT_EQ(shoal_ptr(&g_word, 0), nullptr);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_ptr", "not initialized");
  shoal_finalize();
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_finalize", "not initialized");
  EXPECT_EQ(g_word, 0);
  expect_no_device_handle("shoal_init");
}

TEST(Lifecycle, B_InitThreadGivesMultipleAndWorks) {
  int provided = -1;
  ASSERT_EQ(shoal_init_thread(SHOAL_THREAD_SINGLE, &provided), 0) << last_message();
  EXPECT_EQ(provided, SHOAL_THREAD_MULTIPLE);
  shoal_query_thread(&provided);
  EXPECT_EQ(provided, SHOAL_THREAD_MULTIPLE);
  EXPECT_STREQ(shoalx_backend_name(), "host");
  const int me = shoal_my_pe(), n = shoal_n_pes();
  ASSERT_GE(me, 0);
  ASSERT_GE(n, 1);
  // The default world's device handle: this PE and size; a host heap has no device view (heap_base null).
  const shoal::device_world w = shoal::default_world_device_handle();
  EXPECT_EQ(w.my_pe, me);
  EXPECT_EQ(w.n_pes, n);
  EXPECT_EQ(w.heap_base, nullptr);

  // a second init is refused and does not disturb the first
  shoal_init();
  expect_error(SHOAL_ERR_INVALID_ARGUMENT, "shoal_init", "already initialized");
  EXPECT_NE(shoal_init_thread(SHOAL_THREAD_MULTIPLE, &provided), 0);
  shoal_clear_error();

  auto* x = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  ASSERT_NE(x, nullptr);
  shoal_int_p(x, 500 + me, (me + 1) % n);
  shoal_barrier_all();
  EXPECT_EQ(*x, 500 + (me + n - 1) % n);
  shoal_barrier_all();
  shoal_free(x);
  EXPECT_EQ(shoal_last_error(nullptr), SHOAL_OK) << last_message();
  shoal_finalize();
  EXPECT_EQ(shoal_last_error(nullptr), SHOAL_OK) << last_message();
}

TEST(Lifecycle, C_CallsAfterFinalizeFailWithNotInitialized) {
  shoal_int_p(&g_word, 1, 0);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_int_p", "finalize");
  EXPECT_EQ(shoal_my_pe(), -1);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_my_pe", "finalize");
  EXPECT_EQ(shoal_malloc(64), nullptr);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_malloc", "finalize");
  shoal_free(nullptr);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_free", "finalize");
  shoal_barrier_all();
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_barrier_all", "finalize");
  shoal_sync_all();
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_sync_all", "finalize");
  uint64_t sig = 0;
  shoalx_signal_op(&sig, 1, SHOAL_SIGNAL_SET, 0);
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoalx_signal_op", "finalize");
  shoal_int_wait_until(&g_word, SHOAL_CMP_EQ, 1);  // would hang if it waited
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_int_wait_until", "finalize");
  shoal_finalize();
  expect_error(SHOAL_ERR_NOT_INITIALIZED, "shoal_finalize", "finalize");
  int provided = -1;
  shoal_query_thread(&provided);
  EXPECT_EQ(provided, SHOAL_THREAD_SINGLE);
  EXPECT_STREQ(shoalx_backend_name(), "");
  EXPECT_EQ(g_word, 0);
  EXPECT_EQ(sig, 0u);
  expect_no_device_handle("finalize");
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::GTEST_FLAG(shuffle) = false;
  return RUN_ALL_TESTS();
}
