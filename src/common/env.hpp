// Every SHOAL_* environment variable, declared once in one table (env.cc) that drives both the
// parser below and `shoal-info`. Reading a name missing from the table is an internal error.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace shoal::detail::env {

enum class kind { boolean, integer, size, duration_ms, string };

struct variable {
  const char* name;           ///< e.g. "SHOAL_HEAP_RESERVE"
  kind type;                  ///< how the value is parsed
  const char* default_value;  ///< text form, parsed like a user value
  const char* doc;            ///< one line for shoal-info and docs/env.md
};

/// The whole table, in documentation order.
std::span<const variable> table();

/// Name of a kind: "bool", "int", "size", "ms", "string".
const char* to_string(kind k);

/// The value in the environment, or nullopt when unset (or empty).
std::optional<std::string> raw(std::string_view name);

/// Typed readers: the environment value if set, else the default. A value that does not parse
/// throws shoal::error(invalid_argument) naming the variable and the text.
bool get_bool(std::string_view name);
int64_t get_int(std::string_view name);
uint64_t get_size(std::string_view name);
std::chrono::milliseconds get_ms(std::string_view name);
std::string get_string(std::string_view name);

/// The value as it will be used (environment or default), as text; for shoal-info.
std::string effective(std::string_view name);

/// "64G", "512M", "4096", "1k" (binary multiples) -> bytes. nullopt when malformed.
std::optional<uint64_t> parse_size(std::string_view text);
/// "1", "true", "yes", "on" / "0", "false", "no", "off" (any case). nullopt when malformed.
std::optional<bool> parse_bool(std::string_view text);
/// Decimal integer with optional sign. nullopt when malformed or out of range.
std::optional<int64_t> parse_int(std::string_view text);
/// Milliseconds: "1500", "1500ms", "2s", "1m". nullopt when malformed.
std::optional<std::chrono::milliseconds> parse_ms(std::string_view text);

}  // namespace shoal::detail::env
