// shoal-bench's --pairs parsing and the packed rows that carry other PEs' figures to PE 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/options.hpp"
#include "common/report.hpp"

namespace {

using pairs = std::vector<std::pair<int, int>>;
using shoal::bench::parse_pairs;

pairs parse_ok(const std::string& text, int n) {
  std::string error;
  pairs out = parse_pairs(text, n, error);
  EXPECT_EQ(error, "") << text << " at " << n << " PEs";
  return out;
}

std::string parse_error(const std::string& text, int n) {
  std::string error;
  pairs out = parse_pairs(text, n, error);
  EXPECT_TRUE(out.empty()) << text;
  return error;
}

TEST(bench_pairs, named_sets) {
  EXPECT_EQ(parse_ok("all", 2), (pairs{{0, 1}}));
  EXPECT_EQ(parse_ok("all", 4), (pairs{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(parse_ok("all", 8).size(), 28u);
  EXPECT_EQ(parse_ok("from0", 4), (pairs{{0, 1}, {0, 2}, {0, 3}}));
  EXPECT_EQ(parse_ok("ring", 2), (pairs{{0, 1}}));
  EXPECT_EQ(parse_ok("ring", 4), (pairs{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  EXPECT_TRUE(parse_ok("all", 1).empty());
  EXPECT_TRUE(parse_ok("0:1", 1).empty());  // one PE: nothing to pair, whatever the text
}

TEST(bench_pairs, lists) {
  EXPECT_EQ(parse_ok("0:1", 2), (pairs{{0, 1}}));
  EXPECT_EQ(parse_ok("1:0", 2), (pairs{{1, 0}}));
  EXPECT_EQ(parse_ok("2:7,0:5,7:2", 8), (pairs{{2, 7}, {0, 5}, {7, 2}}));
}

TEST(bench_pairs, bad_text_names_the_option_and_the_item) {
  const std::string out_of_range = parse_error("0:2", 2);
  EXPECT_NE(out_of_range.find("--pairs '0:2'"), std::string::npos) << out_of_range;
  EXPECT_NE(out_of_range.find("outside 0..1"), std::string::npos) << out_of_range;
  EXPECT_NE(parse_error("1:1", 4).find("itself"), std::string::npos);
  EXPECT_NE(parse_error("0:1,0:1", 4).find("twice"), std::string::npos);
  for (const char* bad : {"", "0", "0:", ":1", "a:b", "0:1,", "0-1", "-1:0", "0:1:2", "ring4"})
    EXPECT_NE(parse_error(bad, 4).find("--pairs"), std::string::npos) << "'" << bad << "'";
}

TEST(bench_rows, pack_then_unpack_is_exact) {
  std::vector<shoal::bench::row> rows(3);
  rows[0].benchmark = "put_bw";
  rows[0].impl = "shoal";
  rows[0].backend = "cuda";
  rows[0].num_pes = 8;
  rows[0].scope = "block/32x512";
  rows[0].size_bytes = size_t{256} << 20;
  rows[0].iterations = 7;
  rows[0].latency_us = 1.0 / 3.0;
  rows[0].bandwidth_gbps = 351.123456789012345;
  rows[0].ratio = std::numeric_limits<double>::denorm_min();
  rows[0].baseline = "sm_copy";
  rows[0].pair = "3-6";
  rows[1].benchmark = "p_ping_pong";
  rows[1].latency_us = -0.0;
  rows[1].busbw_gbps = std::numeric_limits<double>::infinity();
  rows[1].baseline = "DATA-CHECK-FAILED";
  // rows[2]: every field empty or zero
  const std::vector<shoal::bench::row> back = shoal::bench::unpack_rows(shoal::bench::pack_rows(rows));
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].benchmark, rows[i].benchmark);
    EXPECT_EQ(back[i].impl, rows[i].impl);
    EXPECT_EQ(back[i].backend, rows[i].backend);
    EXPECT_EQ(back[i].num_pes, rows[i].num_pes);
    EXPECT_EQ(back[i].scope, rows[i].scope);
    EXPECT_EQ(back[i].size_bytes, rows[i].size_bytes);
    EXPECT_EQ(back[i].iterations, rows[i].iterations);
    EXPECT_EQ(back[i].latency_us, rows[i].latency_us);
    EXPECT_EQ(std::signbit(back[i].latency_us), std::signbit(rows[i].latency_us));
    EXPECT_EQ(back[i].bandwidth_gbps, rows[i].bandwidth_gbps);
    EXPECT_EQ(back[i].ratio, rows[i].ratio);
    EXPECT_EQ(back[i].baseline, rows[i].baseline);
    EXPECT_EQ(back[i].busbw_gbps, rows[i].busbw_gbps);
    EXPECT_EQ(back[i].pair, rows[i].pair);
  }
  EXPECT_TRUE(shoal::bench::unpack_rows("").empty());
}

TEST(bench_rows, unpack_rejects_what_pack_did_not_make) {
  std::vector<shoal::bench::row> one(1);
  one[0].benchmark = "put_bw";
  const std::string packed = shoal::bench::pack_rows(one);
  EXPECT_THROW(shoal::bench::unpack_rows(packed.substr(0, packed.size() - 1)), std::runtime_error);  // cut short
  EXPECT_THROW(shoal::bench::unpack_rows("put_bw\x1e"), std::runtime_error);                         // too few fields
  std::string bad_number = packed;
  bad_number.replace(bad_number.find("\x1f"
                                     "0\x1f"),
                     3, "\x1fzz\x1f");  // num_pes
  EXPECT_THROW(shoal::bench::unpack_rows(bad_number), std::runtime_error);
  one[0].scope = std::string(
      "a\x1f"
      "b");
  EXPECT_THROW(shoal::bench::pack_rows(one), std::runtime_error);
}

}  // namespace
