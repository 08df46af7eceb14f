// The bootstrap's wire format: every message on a bootstrap TCP connection is a 24-byte header,
// then `call_bytes` bytes of the public call's name (collectives only), then `payload_bytes` bytes.
// All integers are little-endian on the wire, whatever the host; the structs below are the decoded forms.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shoal::detail::wire {

inline constexpr uint32_t magic = 0x54424853;  // "SHBT" as little-endian bytes
/// Bumped whenever a layout below changes; PEs of different versions refuse each other.
inline constexpr uint32_t protocol_version = 2;
inline constexpr size_t header_bytes = 24;
inline constexpr uint32_t max_call_bytes = 256;
/// Larger messages are treated as corruption: bootstrap blobs are small (handles, addresses).
inline constexpr uint64_t max_payload_bytes = uint64_t{1} << 32;

enum class msg : uint16_t {
  hello = 1,       ///< PE k -> PE 0, first message on each connection: hello_body
  welcome = 2,     ///< PE 0 -> PE k on the collective connection: every PE arrived, no payload
  error = 3,       ///< PE 0 -> PE k: error_body + message text; the receiver throws it
  collective = 4,  ///< PE k -> PE 0: call name, coll_desc, this PE's data
  result = 5,      ///< PE 0 -> PE k: the collective's result bytes for PE k
  heartbeat = 6,   ///< both directions on the monitor connection, no payload
  bye = 7,         ///< both directions on the monitor connection: finalize started, EOF is orderly now
  abort = 8,       ///< PE k -> PE 0 on the monitor connection: status_body + reason (abort_job)
  failure = 9,     ///< PE 0 -> PE k on the monitor connection: status_body + reason; the job must stop
  mail = 10,       ///< monitor connections, both ways: mail_body + data, from one PE to another through PE 0
};
inline constexpr uint16_t msg_max = 10;

/// Which of a PE's two connections a hello opens.
enum class channel : uint32_t { collective = 0, monitor = 1 };

/// Collective operations, as carried in coll_desc::op.
enum class op : uint32_t { allgather = 1, barrier = 2, broadcast = 3, finalize = 4 };

struct header {
  uint32_t magic = wire::magic;
  msg type = msg::heartbeat;
  uint16_t flags = 0;          ///< unused, sent as 0
  uint32_t seq = 0;            ///< collective messages: the sender's collective count (from 1)
  uint32_t call_bytes = 0;     ///< length of the call name that follows the header
  uint64_t payload_bytes = 0;  ///< bytes after the call name
};
static_assert(sizeof(header) == header_bytes, "decoded header mirrors the wire layout");

inline constexpr size_t hello_bytes = 32;
struct hello_body {
  uint32_t version = protocol_version;
  channel chan = channel::collective;
  int32_t rank = -1;
  int32_t size = -1;
  std::array<uint8_t, 16> secret{};
};
static_assert(sizeof(hello_body) == hello_bytes);

inline constexpr size_t coll_desc_bytes = 24;
inline constexpr uint32_t coll_flag_null_buffer = 1u;  ///< the PE passed a null buffer with bytes > 0
struct coll_desc {
  op operation = op::barrier;
  int32_t root = 0;    ///< broadcast: the PE whose data is sent; otherwise 0
  uint64_t bytes = 0;  ///< allgather: per PE; broadcast: total; barrier/finalize: 0
  uint32_t flags = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(coll_desc) == coll_desc_bytes);

/// A point-to-point message of allgather_among: PE `from` -> PE 0 -> PE `to` (PE 0's monitor
/// thread forwards it, or keeps it when `to` is 0); `tag` names the exchange it belongs to.
inline constexpr size_t mail_body_bytes = 16;
struct mail_body {
  int32_t from = -1;
  int32_t to = -1;
  uint64_t tag = 0;
};
static_assert(sizeof(mail_body) == mail_body_bytes);

inline constexpr size_t error_body_bytes = 8;   ///< {u32 errc, u32 fatal} then the message text
inline constexpr size_t status_body_bytes = 8;  ///< {i32 status, u32 reserved} then the reason text

// ---- little-endian primitives ----

template <class T>
struct wire_int {  // the unsigned integer a T travels as
  using type = std::make_unsigned_t<T>;
};
template <class T>
requires std::is_enum_v<T>
struct wire_int<T> {
  using type = std::make_unsigned_t<std::underlying_type_t<T>>;
};

template <class T>
inline void put_le(uint8_t* out, T value) {
  static_assert(std::is_integral_v<T> || std::is_enum_v<T>);
  using U = typename wire_int<T>::type;
  U v = static_cast<U>(value);
  for (size_t i = 0; i < sizeof(U); ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

template <class T>
inline T get_le(const uint8_t* in) {
  using U = typename wire_int<T>::type;
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(static_cast<U>(in[i]) << (8 * i));
  return static_cast<T>(v);
}

// ---- header ----

inline void encode(const header& h, std::span<uint8_t, header_bytes> out) {
  put_le(out.data() + 0, h.magic);
  put_le(out.data() + 4, h.type);
  put_le(out.data() + 6, h.flags);
  put_le(out.data() + 8, h.seq);
  put_le(out.data() + 12, h.call_bytes);
  put_le(out.data() + 16, h.payload_bytes);
}

/// nullopt when the bytes are not a header of this protocol (magic, unknown type, oversized fields):
/// the connection is then out of step or not a shoal peer at all, and is dropped.
inline std::optional<header> decode_header(std::span<const uint8_t, header_bytes> in) {
  header h;
  h.magic = get_le<uint32_t>(in.data() + 0);
  uint16_t type = get_le<uint16_t>(in.data() + 4);
  h.flags = get_le<uint16_t>(in.data() + 6);
  h.seq = get_le<uint32_t>(in.data() + 8);
  h.call_bytes = get_le<uint32_t>(in.data() + 12);
  h.payload_bytes = get_le<uint64_t>(in.data() + 16);
  if (h.magic != magic || type == 0 || type > msg_max) return std::nullopt;
  if (h.call_bytes > max_call_bytes || h.payload_bytes > max_payload_bytes) return std::nullopt;
  h.type = static_cast<msg>(type);
  return h;
}

// ---- bodies ----

inline void encode(const hello_body& b, std::span<uint8_t, hello_bytes> out) {
  put_le(out.data() + 0, b.version);
  put_le(out.data() + 4, b.chan);
  put_le(out.data() + 8, b.rank);
  put_le(out.data() + 12, b.size);
  std::memcpy(out.data() + 16, b.secret.data(), b.secret.size());
}

inline hello_body decode_hello(std::span<const uint8_t, hello_bytes> in) {
  hello_body b;
  b.version = get_le<uint32_t>(in.data() + 0);
  b.chan = get_le<channel>(in.data() + 4);
  b.rank = get_le<int32_t>(in.data() + 8);
  b.size = get_le<int32_t>(in.data() + 12);
  std::memcpy(b.secret.data(), in.data() + 16, b.secret.size());
  return b;
}

inline void encode(const coll_desc& d, std::span<uint8_t, coll_desc_bytes> out) {
  put_le(out.data() + 0, d.operation);
  put_le(out.data() + 4, d.root);
  put_le(out.data() + 8, d.bytes);
  put_le(out.data() + 16, d.flags);
  put_le(out.data() + 20, d.reserved);
}

inline coll_desc decode_coll_desc(std::span<const uint8_t, coll_desc_bytes> in) {
  coll_desc d;
  d.operation = get_le<op>(in.data() + 0);
  d.root = get_le<int32_t>(in.data() + 4);
  d.bytes = get_le<uint64_t>(in.data() + 8);
  d.flags = get_le<uint32_t>(in.data() + 16);
  d.reserved = get_le<uint32_t>(in.data() + 20);
  return d;
}

inline void encode(const mail_body& b, std::span<uint8_t, mail_body_bytes> out) {
  put_le(out.data() + 0, b.from);
  put_le(out.data() + 4, b.to);
  put_le(out.data() + 8, b.tag);
}

inline mail_body decode_mail(std::span<const uint8_t, mail_body_bytes> in) {
  mail_body b;
  b.from = get_le<int32_t>(in.data() + 0);
  b.to = get_le<int32_t>(in.data() + 4);
  b.tag = get_le<uint64_t>(in.data() + 8);
  return b;
}

/// A whole message: header, call name, then the payload pieces back to back.
inline std::vector<uint8_t> build(msg type, uint32_t seq, std::string_view call,
                                  std::initializer_list<std::span<const uint8_t>> payload) {
  uint64_t payload_bytes = 0;
  for (auto part : payload) payload_bytes += part.size();
  std::vector<uint8_t> out(header_bytes + call.size() + payload_bytes);
  header h;
  h.type = type;
  h.seq = seq;
  h.call_bytes = static_cast<uint32_t>(call.size());
  h.payload_bytes = payload_bytes;
  encode(h, std::span<uint8_t, header_bytes>(out.data(), header_bytes));
  size_t at = header_bytes;
  if (!call.empty()) std::memcpy(out.data() + at, call.data(), call.size());
  at += call.size();
  for (auto part : payload) {
    if (!part.empty()) std::memcpy(out.data() + at, part.data(), part.size());
    at += part.size();
  }
  return out;
}

inline std::span<const uint8_t> as_bytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

}  // namespace shoal::detail::wire
