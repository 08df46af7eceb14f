#include "common/env.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "shoal/error.hpp"

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

TEST(Env, BadValueNamesTheVariable) {
  setenv("SHOAL_PEER_TIMEOUT", "soon", 1);
  try {
    env::get_ms("SHOAL_PEER_TIMEOUT");
    FAIL() << "expected an error";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), shoal::errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("SHOAL_PEER_TIMEOUT='soon'"), std::string::npos) << e.what();
  }
  unsetenv("SHOAL_PEER_TIMEOUT");
}

TEST(Env, UndeclaredOrMistypedReadIsInternalError) {
  EXPECT_THROW(env::get_string("SHOAL_NOT_A_VARIABLE"), shoal::error);
  EXPECT_THROW(env::get_size("SHOAL_BACKEND"), shoal::error);  // a string read as a size
}
