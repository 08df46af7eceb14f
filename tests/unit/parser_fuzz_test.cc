// Seeded random fuzzing of every parser that reads bytes a stranger can send (issue 17): the heap
// exchange's chunk-message decoder and authentication check, and the bootstrap's wire decoders and
// unique-id text parser. Each input is random bytes or a mutation (bit flips, cuts, extensions,
// splices) of a valid message; each result is checked against an independent oracle. Bounded: a
// fixed number of iterations per target, cut short after a time budget (a few seconds in all).
// SHOAL_FUZZ_SEED picks another corpus; a failure prints the seed and the iteration.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/wire.hpp"
#include "heap/fd_exchange.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

constexpr int kIterations = 200000;
constexpr auto kBudget = std::chrono::milliseconds(1500);  // per target

uint64_t seed() {
  const char* text = std::getenv("SHOAL_FUZZ_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 0) : 0x5eed17;
}

class fuzzer {
 public:
  explicit fuzzer(uint64_t salt) : rng_(seed() ^ salt) {}

  uint64_t next() { return rng_(); }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  std::vector<uint8_t> random_bytes(size_t max_bytes) {
    std::vector<uint8_t> out(below(max_bytes + 1));
    for (auto& b : out) b = static_cast<uint8_t>(rng_());
    return out;
  }

  // A mutation of `valid`: a few bit flips, byte sets, a cut, an extension or a splice of two spots.
  std::vector<uint8_t> mutate(std::vector<uint8_t> valid) {
    const size_t edits = 1 + below(4);
    for (size_t e = 0; e < edits; ++e) {
      switch (below(6)) {
        case 0:
          if (!valid.empty()) valid[below(valid.size())] ^= static_cast<uint8_t>(1u << below(8));
          break;
        case 1:
          if (!valid.empty()) valid[below(valid.size())] = static_cast<uint8_t>(rng_());
          break;
        case 2:
          valid.resize(below(valid.size() + 1));
          break;
        case 3:
          valid.push_back(static_cast<uint8_t>(rng_()));
          break;
        case 4:
          if (valid.size() >= 2) std::swap(valid[below(valid.size())], valid[below(valid.size())]);
          break;
        default:  // an interesting value at a random 4-byte spot
          if (valid.size() >= 4) {
            const uint32_t values[] = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, 256, 257};
            const uint32_t v = values[below(std::size(values))];
            std::memcpy(valid.data() + below(valid.size() - 3), &v, 4);
          }
      }
    }
    return valid;
  }

  // Random bytes half the time, a mutation of `valid` the other half (and `valid` itself sometimes).
  std::vector<uint8_t> input(const std::vector<uint8_t>& valid, size_t max_bytes) {
    const size_t pick = below(16);
    if (pick == 0) return valid;
    return pick < 8 ? random_bytes(max_bytes) : mutate(valid);
  }

  // Whether to go on: below the iteration count and the time budget.
  bool more(int i) const { return i < kIterations && std::chrono::steady_clock::now() - start_ < kBudget; }

 private:
  std::mt19937_64 rng_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string where(int i) { return "seed " + std::to_string(seed()) + ", iteration " + std::to_string(i); }

template <class T>
std::vector<uint8_t> bytes_of(const T& value) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

TEST(parser_fuzz, chunk_message_decoder_accepts_exactly_well_formed_messages) {
  fuzzer f(1);
  chunk_header valid{kChunkMagic, 1, 3, 4096, 8192, {}};
  valid.key.fill(0xab);
  const auto valid_bytes = bytes_of(valid);
  int i = 0, accepted = 0;
  for (; f.more(i); ++i) {
    const auto payload = f.input(valid_bytes, 2 * sizeof(chunk_header));
    const size_t num_fds = f.below(8) == 0 ? f.below(6) : 1;
    const bool truncated = f.below(16) == 0;
    chunk_header out{};
    const char* why = decode_chunk_message(payload, num_fds, truncated, &out);
    uint32_t magic = 0;
    if (payload.size() >= 4) std::memcpy(&magic, payload.data(), 4);
    const bool ok = !truncated && num_fds == 1 && payload.size() == sizeof(chunk_header) && magic == kChunkMagic;
    ASSERT_EQ(why == nullptr, ok) << where(i) << ": " << (why ? why : "accepted");
    if (ok) {
      ++accepted;
      ASSERT_EQ(std::memcmp(&out, payload.data(), sizeof(out)), 0) << where(i);
    }
  }
  EXPECT_GT(accepted, 0) << "the corpus never reached the accepting path in " << i << " iterations";
}

TEST(parser_fuzz, exchange_auth_accepts_exactly_the_claimed_peer_with_the_key) {
  fuzzer f(2);
  exchange_auth auth;
  auth.key.fill(0x5a);
  auth.my_local = 1;
  for (int local = 0; local < 4; ++local)
    auth.peers.push_back(exchange_peer{"shoal-heap-job-" + std::to_string(local), 100 + local, 1000, local != 3, true});
  int i = 0, accepted = 0;
  for (; f.more(i); ++i) {
    received_chunk m;
    const int32_t claimed = static_cast<int32_t>(f.below(7)) - 1;  // -1..5
    const size_t real = f.below(4);                                // the socket it really came from
    m.header = chunk_header{kChunkMagic, claimed, 1, 0, 4096, auth.key};
    if (f.below(4) == 0) m.header.key[f.below(16)] ^= static_cast<uint8_t>(1 + f.below(255));
    m.sender_name = f.below(8) == 0 ? std::string() : auth.peers[real].name;
    m.credentials = sender_credentials{f.below(16) != 0, auth.peers[real].pid, 1000};
    if (f.below(6) == 0) m.credentials.pid = static_cast<int32_t>(f.next() % 200);
    if (f.below(6) == 0) m.credentials.uid = static_cast<uint32_t>(f.next() % 2000);
    if (f.below(16) == 0) m.malformed = "wrong size";
    const char* why = auth.check(m);
    const bool known = claimed >= 0 && claimed < 4 && claimed != auth.my_local;
    bool ok = known && m.malformed == nullptr && m.credentials.present && m.header.key == auth.key;
    if (ok) {
      const exchange_peer& p = auth.peers[static_cast<size_t>(claimed)];
      ok = m.sender_name == p.name && m.credentials.uid == p.uid && (!p.check_pid || m.credentials.pid == p.pid);
    }
    ASSERT_EQ(why == nullptr, ok) << where(i) << ": " << (why ? why : "accepted");
    accepted += ok;
  }
  EXPECT_GT(accepted, 0) << i << " iterations";
}

TEST(parser_fuzz, bootstrap_header_decoder_accepts_exactly_valid_headers_and_round_trips) {
  fuzzer f(3);
  std::vector<uint8_t> valid(wire::header_bytes);
  wire::header h;
  h.type = wire::msg::collective;
  h.seq = 7;
  h.call_bytes = 12;
  h.payload_bytes = 64;
  wire::encode(h, std::span<uint8_t, wire::header_bytes>(valid.data(), wire::header_bytes));
  int i = 0, accepted = 0;
  for (; f.more(i); ++i) {
    auto in = f.input(valid, wire::header_bytes);
    in.resize(wire::header_bytes);  // the reader always has exactly a header's bytes
    auto got = wire::decode_header(std::span<const uint8_t, wire::header_bytes>(in.data(), wire::header_bytes));
    const uint32_t magic = wire::get_le<uint32_t>(in.data());
    const uint16_t type = wire::get_le<uint16_t>(in.data() + 4);
    const bool ok = magic == wire::magic && type >= 1 && type <= wire::msg_max &&
                    wire::get_le<uint32_t>(in.data() + 12) <= wire::max_call_bytes &&
                    wire::get_le<uint64_t>(in.data() + 16) <= wire::max_payload_bytes;
    ASSERT_EQ(got.has_value(), ok) << where(i);
    if (ok) {
      ++accepted;
      std::vector<uint8_t> again(wire::header_bytes);
      wire::encode(*got, std::span<uint8_t, wire::header_bytes>(again.data(), wire::header_bytes));
      ASSERT_EQ(again, in) << where(i);
    }
  }
  EXPECT_GT(accepted, 0) << i << " iterations";
}

TEST(parser_fuzz, bootstrap_body_decoders_round_trip_any_bytes) {
  fuzzer f(4);
  int i = 0;
  for (; f.more(i); ++i) {
    auto hello = f.random_bytes(wire::hello_bytes);
    hello.resize(wire::hello_bytes);
    auto b = wire::decode_hello(std::span<const uint8_t, wire::hello_bytes>(hello.data(), wire::hello_bytes));
    std::vector<uint8_t> again(wire::hello_bytes);
    wire::encode(b, std::span<uint8_t, wire::hello_bytes>(again.data(), wire::hello_bytes));
    ASSERT_EQ(again, hello) << where(i);

    auto desc = f.random_bytes(wire::coll_desc_bytes);
    desc.resize(wire::coll_desc_bytes);
    auto d =
        wire::decode_coll_desc(std::span<const uint8_t, wire::coll_desc_bytes>(desc.data(), wire::coll_desc_bytes));
    std::vector<uint8_t> back(wire::coll_desc_bytes);
    wire::encode(d, std::span<uint8_t, wire::coll_desc_bytes>(back.data(), wire::coll_desc_bytes));
    ASSERT_EQ(back, desc) << where(i);
  }
  EXPECT_GT(i, 0);
}

// Text from the environment (SHOAL_BOOTSTRAP_UID) or a rendezvous file: rejected with
// invalid_argument, or parsed into an id whose text form parses back to the same id.
TEST(parser_fuzz, unique_id_text_parser_rejects_cleanly_or_round_trips) {
  fuzzer f(5);
  const std::string samples[] = {"shoal-uid-v1:127.0.0.1:4242:00112233445566778899aabbccddeeff",
                                 "shoal-uid-v1:[::1]:65535:ffeeddccbbaa99887766554433221100"};
  int i = 0, accepted = 0;
  for (; f.more(i); ++i) {
    const std::string& sample = samples[f.below(2)];
    const auto bytes = f.input(std::vector<uint8_t>(sample.begin(), sample.end()), 80);
    const std::string text(bytes.begin(), bytes.end());
    try {
      unique_id id = unique_id::parse(text, "fuzz");
      ++accepted;
      unique_id back = unique_id::parse(id.to_string(), "fuzz");
      ASSERT_EQ(back.to_string(), id.to_string()) << where(i);
      ASSERT_EQ(back.secret, id.secret) << where(i);
    } catch (const error& e) {
      ASSERT_EQ(e.code(), errc::invalid_argument) << where(i) << ": " << e.what();
    }
  }
  EXPECT_GT(accepted, 0) << i << " iterations";
}

}  // namespace
}  // namespace shoal::detail
