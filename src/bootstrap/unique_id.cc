#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/net.hpp"
#include "bootstrap/wire.hpp"
#include "common/check.hpp"

namespace shoal::detail {

namespace {

constexpr std::string_view kTextPrefix = "shoal-uid-v1:";

// Binary form (shoal_uniqueid_t): a magic and a checksum so that an uninitialized or foreign
// 128-byte blob is rejected instead of sending us to a random address.
constexpr uint8_t kBinaryMagic[8] = {'S', 'H', 'O', 'A', 'L', 'U', 'I', 'D'};
constexpr uint32_t kBinaryVersion = 1;
constexpr size_t kOffVersion = 8, kOffFamily = 12, kOffPort = 14, kOffAddr = 16, kOffSecret = 32, kOffSum = 48,
                 kUsedBytes = 52;

uint32_t fnv1a(const uint8_t* data, size_t num_bytes) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < num_bytes; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

unique_id unique_id::generate(const sockaddr_storage& listen_addr) {
  unique_id id;
  id.addr = listen_addr;
  size_t got = 0;
  while (got < id.secret.size()) {
    ssize_t n = ::getrandom(id.secret.data() + got, id.secret.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    SHOAL_SYSCHECK(n, "shoal_get_uniqueid");
    got += static_cast<size_t>(n);
  }
  return id;
}

unique_id unique_id::parse(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    SHOAL_THROW(errc::invalid_argument, what, "'{}' is not a shoal unique id ({}); expected {}ADDR:PORT:SECRET", text,
                why, kTextPrefix);
  };
  if (!text.starts_with(kTextPrefix)) bad("wrong prefix");
  std::string_view rest = text.substr(kTextPrefix.size());
  auto last = rest.rfind(':');
  if (last == std::string_view::npos) bad("no secret");
  std::string_view hex = rest.substr(last + 1);
  std::string_view host_port = rest.substr(0, last);
  if (hex.size() != 32) bad("the secret must be 32 hex digits");
  unique_id id;
  for (size_t i = 0; i < 16; ++i) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) bad("the secret must be 32 hex digits");
    id.secret[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  auto colon = host_port.rfind(':');
  if (colon == std::string_view::npos) bad("no port");
  std::string_view host = host_port.substr(0, colon);
  std::string_view port_text = host_port.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535)
    bad("the port must be 1..65535");
  bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  sockaddr_storage addr{};
  if (!net::parse_numeric(host, static_cast<uint16_t>(port), &addr))
    bad("the address must be a numeric IPv4 or [IPv6]");
  if ((addr.ss_family == AF_INET6) != bracketed) bad("an IPv6 address must be in brackets, an IPv4 one must not");
  id.addr = addr;
  return id;
}

std::string unique_id::address_string() const { return net::to_string(addr); }

std::string unique_id::to_string() const {
  std::string hex;
  hex.reserve(32);
  constexpr char kDigits[] = "0123456789abcdef";
  for (uint8_t b : secret) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return fmt::format("{}{}:{}", kTextPrefix, address_string(), hex);
}

void unique_id::to_bytes(uint8_t (&out)[128]) const {
  std::memset(out, 0, sizeof(out));
  std::memcpy(out, kBinaryMagic, sizeof(kBinaryMagic));
  wire::put_le(out + kOffVersion, kBinaryVersion);
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    wire::put_le(out + kOffFamily, uint16_t{4});
    std::memcpy(out + kOffAddr, &a.sin_addr, 4);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    wire::put_le(out + kOffFamily, uint16_t{6});
    std::memcpy(out + kOffAddr, &a.sin6_addr, 16);
  }
  wire::put_le(out + kOffPort, net::port_of(addr));
  std::memcpy(out + kOffSecret, secret.data(), secret.size());
  wire::put_le(out + kOffSum, fnv1a(out, kOffSum));
}

unique_id unique_id::from_bytes(const uint8_t (&in)[128], std::string_view what) {
  auto bad = [&](std::string_view why) {
    SHOAL_THROW(errc::invalid_argument, what, "not a shoal unique id ({}); was it made by shoal_get_uniqueid?", why);
  };
  if (std::memcmp(in, kBinaryMagic, sizeof(kBinaryMagic)) != 0) bad("bad magic");
  if (wire::get_le<uint32_t>(in + kOffVersion) != kBinaryVersion) bad("unknown version");
  if (wire::get_le<uint32_t>(in + kOffSum) != fnv1a(in, kOffSum)) bad("checksum mismatch");
  if (std::any_of(in + kUsedBytes, in + 128, [](uint8_t b) { return b != 0; })) bad("non-zero padding");
  uint16_t family = wire::get_le<uint16_t>(in + kOffFamily);
  uint16_t port = wire::get_le<uint16_t>(in + kOffPort);
  if (port == 0) bad("port 0");
  unique_id id;
  if (family == 4) {
    if (std::any_of(in + kOffAddr + 4, in + kOffSecret, [](uint8_t b) { return b != 0; })) bad("bad IPv4 address");
    auto& a = reinterpret_cast<sockaddr_in&>(id.addr);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    std::memcpy(&a.sin_addr, in + kOffAddr, 4);
  } else if (family == 6) {
    auto& a = reinterpret_cast<sockaddr_in6&>(id.addr);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    std::memcpy(&a.sin6_addr, in + kOffAddr, 16);
  } else {
    bad("unknown address family");
  }
  std::memcpy(id.secret.data(), in + kOffSecret, id.secret.size());
  return id;
}

int open_listener(const std::string& bind_host, uint16_t port, sockaddr_storage* bound) {
  constexpr std::string_view kCall = "shoal bootstrap listener";
  // Empty host: every IPv4 interface (the address other PEs use is chosen by the caller).
  sockaddr_storage addr = net::resolve(bind_host.empty() ? std::string("0.0.0.0") : bind_host, port, kCall);
  net::unique_fd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  SHOAL_SYSCHECK(fd.get(), kCall);
  // A restarted job must be able to reuse the port while the old one's connections sit in TIME_WAIT.
  int one = 1;
  SHOAL_SYSCHECK(::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), kCall);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), net::length_of(addr)) != 0) {
    int err = errno;
    SHOAL_THROW(errc::system, kCall, "cannot listen on {}: {} (errno {})", net::to_string(addr), std::strerror(err),
                err);
  }
  // Every PE opens two connections at once at start-up; a short backlog drops SYNs and costs
  // seconds of retransmission at scale.
  SHOAL_SYSCHECK(::listen(fd.get(), std::max(SOMAXCONN, 4096)), kCall);
  if (bound != nullptr) {
    sockaddr_storage got{};
    socklen_t len = sizeof(got);
    SHOAL_SYSCHECK(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&got), &len), kCall);
    *bound = got;
  }
  return fd.release();
}

}  // namespace shoal::detail
