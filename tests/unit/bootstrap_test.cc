// Bootstrap: unique id forms, wire format and the listener; whole jobs are in
// bootstrap_job_test.cc and bootstrap_liveness_test.cc.
#include "bootstrap/bootstrap.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "bootstrap/net.hpp"
#include "bootstrap/wire.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

sockaddr_storage addr_of(const char* host, uint16_t port) {
  sockaddr_storage a{};
  EXPECT_TRUE(net::parse_numeric(host, port, &a));
  return a;
}

// ---- unique id ----

TEST(UniqueId, TextRoundTripIpv4) {
  unique_id id = unique_id::generate(addr_of("127.0.0.1", 4242));
  std::string text = id.to_string();
  EXPECT_TRUE(text.starts_with("shoal-uid-v1:127.0.0.1:4242:")) << text;
  EXPECT_EQ(text.size(), std::string("shoal-uid-v1:127.0.0.1:4242:").size() + 32);
  EXPECT_EQ(id.address_string(), "127.0.0.1:4242");
  unique_id back = unique_id::parse(text);
  EXPECT_EQ(back.secret, id.secret);
  EXPECT_EQ(back.to_string(), text);
}

TEST(UniqueId, TextRoundTripIpv6) {
  unique_id id = unique_id::generate(addr_of("::1", 65535));
  std::string text = id.to_string();
  EXPECT_TRUE(text.starts_with("shoal-uid-v1:[::1]:65535:")) << text;
  unique_id back = unique_id::parse(text);
  EXPECT_EQ(back.addr.ss_family, AF_INET6);
  EXPECT_EQ(back.secret, id.secret);
  EXPECT_EQ(back.to_string(), text);
}

TEST(UniqueId, SecretsAreRandom) {
  auto a = unique_id::generate(addr_of("127.0.0.1", 1));
  auto b = unique_id::generate(addr_of("127.0.0.1", 1));
  EXPECT_NE(a.secret, b.secret);
  EXPECT_NE(a.secret, (std::array<uint8_t, 16>{}));
}

TEST(UniqueId, RejectsMalformedText) {
  const std::string hex = "00112233445566778899aabbccddeeff";
  const std::vector<std::string> bad = {
      "",
      "shoal-uid-v2:127.0.0.1:80:" + hex,
      "shoal-uid-v1:127.0.0.1:" + hex,
      "shoal-uid-v1:127.0.0.1:0:" + hex,
      "shoal-uid-v1:127.0.0.1:65536:" + hex,
      "shoal-uid-v1:127.0.0.1:8x:" + hex,
      "shoal-uid-v1:127.0.0.1:80:" + hex.substr(1),
      "shoal-uid-v1:127.0.0.1:80:" + hex + "0",
      "shoal-uid-v1:127.0.0.1:80:g0112233445566778899aabbccddeeff",
      "shoal-uid-v1:localhost:80:" + hex,
      "shoal-uid-v1:::1:80:" + hex,
      "shoal-uid-v1:[127.0.0.1]:80:" + hex,
      "shoal-uid-v1:300.0.0.1:80:" + hex,
  };
  for (const auto& text : bad) {
    try {
      unique_id::parse(text, "TEST_VAR");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << text;
      EXPECT_EQ(e.call(), "TEST_VAR") << text;
    }
  }
  EXPECT_NO_THROW(unique_id::parse("shoal-uid-v1:10.1.2.3:80:" + hex));
}

TEST(UniqueId, BinaryRoundTrip) {
  for (const char* host : {"10.20.30.40", "fe80::1"}) {
    unique_id id = unique_id::generate(addr_of(host, 31337));
    uint8_t bytes[128];
    id.to_bytes(bytes);
    unique_id back = unique_id::from_bytes(bytes, "uid");
    EXPECT_EQ(back.to_string(), id.to_string()) << host;
  }
}

TEST(UniqueId, RejectsGarbageBytes) {
  uint8_t zeros[128] = {};
  EXPECT_THROW(unique_id::from_bytes(zeros, "uid"), shoal::error);
  uint8_t noise[128];
  for (int i = 0; i < 128; ++i) noise[i] = static_cast<uint8_t>(i * 37 + 11);
  EXPECT_THROW(unique_id::from_bytes(noise, "uid"), shoal::error);

  uint8_t good[128];
  unique_id::generate(addr_of("127.0.0.1", 999)).to_bytes(good);
  // Any single flipped byte anywhere (magic, address, port, secret, checksum, padding) is caught.
  for (int i = 0; i < 128; ++i) {
    uint8_t copy[128];
    std::memcpy(copy, good, sizeof(copy));
    copy[i] ^= 0x40;
    try {
      unique_id::from_bytes(copy, "my_uid");
      ADD_FAILURE() << "accepted a flip of byte " << i;
    } catch (const shoal::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      EXPECT_EQ(e.call(), "my_uid");
    }
  }
}

TEST(OpenListener, BindsAnyPortWithCloexec) {
  sockaddr_storage bound{};
  net::unique_fd fd(open_listener("127.0.0.1", 0, &bound));
  ASSERT_TRUE(fd.valid());
  EXPECT_NE(net::port_of(bound), 0);
  EXPECT_EQ(net::host_of(bound), "127.0.0.1");
  EXPECT_TRUE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC);
  int accepting = 0;
  socklen_t len = sizeof(accepting);
  ASSERT_EQ(::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len), 0);
  EXPECT_EQ(accepting, 1);
  EXPECT_THROW(open_listener("127.0.0.1", net::port_of(bound), nullptr), shoal::error);  // port taken
}

// ---- wire format ----

TEST(Wire, HeaderIsLittleEndian) {
  wire::header h;
  h.type = wire::msg::collective;
  h.flags = 0x0102;
  h.seq = 0x03040506;
  h.call_bytes = 12;
  h.payload_bytes = 0x0708090a0b0c0d0eull;
  std::array<uint8_t, wire::header_bytes> raw{};
  wire::encode(h, raw);
  const std::array<uint8_t, wire::header_bytes> expected = {'S',  'H',  'B',  'T',  4,    0,    0x02, 0x01,
                                                            0x06, 0x05, 0x04, 0x03, 12,   0,    0,    0,
                                                            0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07};
  EXPECT_EQ(raw, expected);
  EXPECT_FALSE(wire::decode_header(raw));  // over max_payload_bytes
  h.payload_bytes = 0xfedcba98;
  wire::encode(h, raw);
  auto back = wire::decode_header(raw);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->type, wire::msg::collective);
  EXPECT_EQ(back->flags, 0x0102);
  EXPECT_EQ(back->seq, 0x03040506u);
  EXPECT_EQ(back->call_bytes, 12u);
  EXPECT_EQ(back->payload_bytes, 0xfedcba98u);
}

TEST(Wire, DecodeRejectsForeignHeaders) {
  wire::header h;
  h.type = wire::msg::heartbeat;
  std::array<uint8_t, wire::header_bytes> raw{};
  wire::encode(h, raw);
  ASSERT_TRUE(wire::decode_header(raw));
  auto bad_magic = raw;
  bad_magic[0] ^= 1;
  EXPECT_FALSE(wire::decode_header(bad_magic));
  auto bad_type = raw;
  bad_type[4] = 0;
  EXPECT_FALSE(wire::decode_header(bad_type));
  bad_type[4] = wire::msg_max + 1;
  EXPECT_FALSE(wire::decode_header(bad_type));
  h.call_bytes = wire::max_call_bytes + 1;
  wire::encode(h, raw);
  EXPECT_FALSE(wire::decode_header(raw));
  h.call_bytes = 0;
  h.payload_bytes = wire::max_payload_bytes + 1;
  wire::encode(h, raw);
  EXPECT_FALSE(wire::decode_header(raw));
}

TEST(Wire, BodiesRoundTrip) {
  wire::hello_body hello;
  hello.chan = wire::channel::monitor;
  hello.rank = 7;
  hello.size = 8;
  for (int i = 0; i < 16; ++i) hello.secret[i] = static_cast<uint8_t>(i + 1);
  std::array<uint8_t, wire::hello_bytes> raw{};
  wire::encode(hello, raw);
  EXPECT_EQ(raw[8], 7);  // rank at offset 8, little-endian
  auto h2 = wire::decode_hello(raw);
  EXPECT_EQ(h2.version, wire::protocol_version);
  EXPECT_EQ(h2.chan, wire::channel::monitor);
  EXPECT_EQ(h2.rank, 7);
  EXPECT_EQ(h2.size, 8);
  EXPECT_EQ(h2.secret, hello.secret);

  wire::coll_desc d;
  d.operation = wire::op::broadcast;
  d.root = -3;
  d.bytes = 1ull << 40;
  d.flags = wire::coll_flag_null_buffer;
  std::array<uint8_t, wire::coll_desc_bytes> draw{};
  wire::encode(d, draw);
  auto d2 = wire::decode_coll_desc(draw);
  EXPECT_EQ(d2.operation, wire::op::broadcast);
  EXPECT_EQ(d2.root, -3);
  EXPECT_EQ(d2.bytes, 1ull << 40);
  EXPECT_EQ(d2.flags, wire::coll_flag_null_buffer);

  auto msg = wire::build(wire::msg::collective, 5, "shoal_malloc", {wire::as_bytes("abc")});
  ASSERT_EQ(msg.size(), wire::header_bytes + 12 + 3);
  auto h = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(msg.data(), wire::header_bytes));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->seq, 5u);
  EXPECT_EQ(h->call_bytes, 12u);
  EXPECT_EQ(h->payload_bytes, 3u);
  EXPECT_EQ(std::string(msg.begin() + wire::header_bytes, msg.begin() + wire::header_bytes + 12), "shoal_malloc");
}

}  // namespace
}  // namespace shoal::detail
