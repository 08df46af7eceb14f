#include "shoal/error.hpp"

#include <fmt/format.h>

namespace shoal {

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::ok:
      return "ok";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::not_initialized:
      return "not_initialized";
    case errc::out_of_memory:
      return "out_of_memory";
    case errc::mismatch:
      return "mismatch";
    case errc::timeout:
      return "timeout";
    case errc::peer_failure:
      return "peer_failure";
    case errc::system:
      return "system";
    case errc::cuda:
      return "cuda";
    case errc::unsupported:
      return "unsupported";
    case errc::internal:
      return "internal";
  }
  return "unknown";
}

namespace {
std::string compose(const std::string& call, const std::string& message, const char* file, int line) {
  if (file != nullptr && *file != '\0') return fmt::format("{}: {} [{}:{}]", call, message, file, line);
  return fmt::format("{}: {}", call, message);
}
}  // namespace

error::error(errc code, std::string call, std::string message, const char* file, int line)
    : std::runtime_error(compose(call, message, file, line)),
      code_(code),
      call_(std::move(call)),
      message_(std::move(message)),
      file_(file),
      line_(line) {}

}  // namespace shoal
