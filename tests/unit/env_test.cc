#include "common/env.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <set>
#include <string>

#include "shoal/error.hpp"
#include "shoal/info.h"

namespace env = shoal::detail::env;

TEST(Env, ParseSize) {
  EXPECT_EQ(env::parse_size("4096"), 4096u);
  EXPECT_EQ(env::parse_size("1k"), 1024u);
  EXPECT_EQ(env::parse_size("32M"), 32u << 20);
  EXPECT_EQ(env::parse_size("64G"), 64ull << 30);
  EXPECT_EQ(env::parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(env::parse_size(" 3 mb "), 3u << 20);
  EXPECT_FALSE(env::parse_size(""));
  EXPECT_FALSE(env::parse_size("G"));
  EXPECT_FALSE(env::parse_size("12Q"));
  EXPECT_FALSE(env::parse_size("-1"));
  EXPECT_FALSE(env::parse_size("99999999999T"));  // overflows 64 bits
}

TEST(Env, ParseBoolIntMs) {
  EXPECT_EQ(env::parse_bool("ON"), true);
  EXPECT_EQ(env::parse_bool("no"), false);
  EXPECT_FALSE(env::parse_bool("maybe"));
  EXPECT_EQ(env::parse_int("-17"), -17);
  EXPECT_EQ(env::parse_int("+5"), 5);
  EXPECT_FALSE(env::parse_int("5x"));
  EXPECT_FALSE(env::parse_int("99999999999999999999"));
  EXPECT_EQ(env::parse_ms("250"), std::chrono::milliseconds(250));
  EXPECT_EQ(env::parse_ms("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(env::parse_ms("2s"), std::chrono::milliseconds(2000));
  EXPECT_EQ(env::parse_ms("1m"), std::chrono::milliseconds(60000));
  EXPECT_FALSE(env::parse_ms("-3s"));
  EXPECT_FALSE(env::parse_ms("3h"));
}

TEST(Env, TableIsWellFormedAndDefaultsParse) {
  std::set<std::string> names;
  for (const auto& v : env::table()) {
    std::string name = v.name;
    EXPECT_EQ(name.rfind("SHOAL_", 0), 0u) << name;
    EXPECT_TRUE(names.insert(name).second) << "declared twice: " << name;
    EXPECT_GT(std::string(v.doc).size(), 10u) << name << " needs a doc line";
    unsetenv(v.name);
    // Every default must parse as its declared type.
    switch (v.type) {
      case env::kind::boolean:
        EXPECT_NO_THROW(env::get_bool(name)) << name;
        break;
      case env::kind::integer:
        EXPECT_NO_THROW(env::get_int(name)) << name;
        break;
      case env::kind::size:
        EXPECT_NO_THROW(env::get_size(name)) << name;
        break;
      case env::kind::duration_ms:
        EXPECT_NO_THROW(env::get_ms(name)) << name;
        break;
      case env::kind::string:
        EXPECT_NO_THROW(env::get_string(name)) << name;
        break;
    }
  }
}

TEST(Env, EnvironmentOverridesDefault) {
  setenv("SHOAL_HEAP_CHUNK", "8M", 1);
  EXPECT_EQ(env::get_size("SHOAL_HEAP_CHUNK"), 8u << 20);
  EXPECT_EQ(env::effective("SHOAL_HEAP_CHUNK"), "8M");
  unsetenv("SHOAL_HEAP_CHUNK");
  EXPECT_EQ(env::get_size("SHOAL_HEAP_CHUNK"), 32u << 20);
}

// Reads `name` set to `value` with `read`; expects invalid_argument with `text` in the message.
template <class F>
void expect_rejected(const char* name, const char* value, F read, const std::string& text) {
  setenv(name, value, 1);
  try {
    read(name);
    ADD_FAILURE() << name << "=" << value << " was accepted";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), shoal::errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
  unsetenv(name);
}

TEST(Env, BadValueNamesTheVariable) {
  expect_rejected("SHOAL_PEER_TIMEOUT", "soon", env::get_ms, "SHOAL_PEER_TIMEOUT='soon'");
}

TEST(Env, BadValueSaysWhatIsValidWithAnExample) {
  expect_rejected("SHOAL_HEAP_RESERVE", "abc", env::get_size,
                  "SHOAL_HEAP_RESERVE='abc' is not a valid size value; expected bytes with an optional K, M, G or T "
                  "suffix (powers of 1024), e.g. 64G");
  expect_rejected("SHOAL_PEER_TIMEOUT", "soon", env::get_ms,
                  "expected milliseconds, or a number with ms, s or min, e.g. 10s");
  expect_rejected("SHOAL_CHECK_COLLECTIVES", "maybe", env::get_bool, "expected 1/0, true/false, yes/no or on/off");
  expect_rejected("SHOAL_DEVICE", "first", env::get_int, "expected an integer, e.g. -1");
}

TEST(Env, UndeclaredOrMistypedReadIsInternalError) {
  EXPECT_THROW(env::get_string("SHOAL_NOT_A_VARIABLE"), shoal::error);
  EXPECT_THROW(env::get_size("SHOAL_BACKEND"), shoal::error);  // a string read as a size
}

TEST(Env, OutOfRangeValueNamesTheVariableAndTheRange) {
  expect_rejected("SHOAL_HEAP_CHUNK", "0", env::get_size, "SHOAL_HEAP_CHUNK='0' is outside the allowed range 4K..64T");
  setenv("SHOAL_HEAP_CHUNK", "4K", 1);  // the bound itself is allowed
  EXPECT_EQ(env::get_size("SHOAL_HEAP_CHUNK"), 4096u);
  unsetenv("SHOAL_HEAP_CHUNK");
  expect_rejected("SHOAL_COLL_THREADS", "1024", env::get_int, "allowed range 32..512");
  expect_rejected("SHOAL_PEER_TIMEOUT", "0", env::get_ms, "allowed range 1..");
}

TEST(Env, EveryDefaultIsInsideItsRange) {
  // Also checks that each bound parses: a bound that does not would throw here.
  for (const auto& v : env::table()) {
    if (v.min == nullptr && v.max == nullptr) continue;
    EXPECT_FALSE(env::allowed(v).empty()) << v.name;
    switch (v.type) {
      case env::kind::integer:
        EXPECT_NO_THROW(env::get_int(v.name)) << v.name;
        break;
      case env::kind::size:
        EXPECT_NO_THROW(env::get_size(v.name)) << v.name;
        break;
      case env::kind::duration_ms:
        EXPECT_NO_THROW(env::get_ms(v.name)) << v.name;
        break;
      default:
        ADD_FAILURE() << v.name << ": a range on a " << env::to_string(v.type);
    }
  }
}

TEST(Env, ClosestNameFindsTyposAndKnownAliases) {
  EXPECT_STREQ(env::closest("SHOAL_PEER_TIMEOTU"), "SHOAL_PEER_TIMEOUT");
  EXPECT_STREQ(env::closest("SHOAL_DEBUG_SUBSYSTEM"), "SHOAL_DEBUG_SUBSYS");
  EXPECT_STREQ(env::closest("SHOAL_HEAP_SIZE"), "SHOAL_HEAP_RESERVE");  // NVSHMEM's habit, not a typo
  EXPECT_STREQ(env::closest("SHOAL_HEAP_SIZ"), "SHOAL_HEAP_RESERVE");   // a typo of that habit
  EXPECT_STREQ(env::closest("SHOAL_LOG_LEVELS"), "SHOAL_DEBUG");
  EXPECT_STREQ(env::closest("shoal_backend"), "SHOAL_BACKEND");
  EXPECT_EQ(env::closest("SHOAL_COMPLETELY_DIFFERENT_THING"), nullptr);
}

TEST(Env, UnknownNamesExcludeTheTableAndTheTools) {
  setenv("SHOAL_HEAP_SIZE", "banana", 1);
  setenv("SHOAL_BENCH_PES", "2", 1);      // a benchmark script's
  setenv("SHOAL_GPU_TEST_PES", "2", 1);   // the GPU test runner's
  setenv("SHOAL_HEAP_RESERVE", "1G", 1);  // a real one
  auto unknown = env::unknown_in_environment();
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "SHOAL_HEAP_SIZE"), unknown.end());
  for (const char* n : {"SHOAL_BENCH_PES", "SHOAL_GPU_TEST_PES", "SHOAL_HEAP_RESERVE"})
    EXPECT_EQ(std::find(unknown.begin(), unknown.end(), n), unknown.end()) << n;
  for (const char* n : {"SHOAL_HEAP_SIZE", "SHOAL_BENCH_PES", "SHOAL_GPU_TEST_PES", "SHOAL_HEAP_RESERVE"}) unsetenv(n);
}

TEST(Info, PublicTableMatchesTheEnvTable) {
  ASSERT_EQ(shoal_info_env_count(), env::table().size());
  for (size_t i = 0; i < shoal_info_env_count(); ++i) {
    const shoal_env_var* v = shoal_info_env_var(i);
    ASSERT_NE(v, nullptr);
    EXPECT_STREQ(v->name, env::table()[i].name);
    EXPECT_STREQ(v->type, env::to_string(env::table()[i].type));
    EXPECT_EQ(std::string(v->allowed), env::allowed(env::table()[i]));
  }
  EXPECT_EQ(shoal_info_env_var(shoal_info_env_count()), nullptr);
  EXPECT_EQ(shoal_info_env_is_set("SHOAL_HEAP_SIZE"), -1);
  EXPECT_EQ(shoal_info_env_value("SHOAL_HEAP_SIZE"), nullptr);
  unsetenv("SHOAL_HEAP_CHUNK");
  EXPECT_EQ(shoal_info_env_is_set("SHOAL_HEAP_CHUNK"), 0);
  EXPECT_STREQ(shoal_info_env_value("SHOAL_HEAP_CHUNK"), "32M");
  setenv("SHOAL_HEAP_CHUNK", "8M", 1);
  EXPECT_EQ(shoal_info_env_is_set("SHOAL_HEAP_CHUNK"), 1);
  EXPECT_STREQ(shoal_info_env_value("SHOAL_HEAP_CHUNK"), "8M");
  unsetenv("SHOAL_HEAP_CHUNK");
  setenv("SHOAL_PEER_TIMEOTU", "1s", 1);
  struct seen_t {
    std::string name, closest;
  } seen;
  size_t n = shoal_info_env_unknown(
      [](const char* name, const char* closest, void* user) {
        auto* s = static_cast<seen_t*>(user);
        if (std::string(name) == "SHOAL_PEER_TIMEOTU") *s = {name, closest != nullptr ? closest : ""};
      },
      &seen);
  unsetenv("SHOAL_PEER_TIMEOTU");
  EXPECT_GE(n, 1u);
  EXPECT_EQ(seen.closest, "SHOAL_PEER_TIMEOUT");
}
