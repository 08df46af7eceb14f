// Every SHOAL_* environment variable, declared once in one table (env.cc) that drives both the
// parser below and `shoal-info`. Reading a name missing from the table is an internal error.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::detail::env {

enum class kind { boolean, integer, size, duration_ms, string };

struct variable {
  const char* name;           ///< e.g. "SHOAL_HEAP_RESERVE"
  kind type;                  ///< how the value is parsed
  const char* default_value;  ///< text form, parsed like a user value
  const char* doc;            ///< one line for shoal-info and docs/env.md
  const char* min = nullptr;  ///< smallest allowed value (text form, parsed like the value); null: none
  const char* max = nullptr;  ///< largest allowed value; null: none
};

/// The whole table, in documentation order.
std::span<const variable> table();

/// Name of a kind: "bool", "int", "size", "ms", "string".
const char* to_string(kind k);

/// "4K..64G", "1..", "..1M" or "" (no bound): the allowed range as docs/env.md shows it.
std::string allowed(const variable& v);

/// The table's entry for `name`, or null when libshoal does not read that variable.
const variable* find(std::string_view name);

/// Whether `name` (a SHOAL_* name) belongs to shoal's tools, tests, benchmarks or build scripts
/// (SHOAL_BENCH_*, SHOAL_GPU_TEST_PES, ...): set in the environment, libshoal ignores it silently.
bool is_tool_variable(std::string_view name);

/// The table's name closest to `name` (edit distance), or null when none is close enough to be a
/// likely typo.
const char* closest(std::string_view name);

/// Every SHOAL_* name in the environment that libshoal does not read and that no tool uses.
std::vector<std::string> unknown_in_environment();

/// Warns (log level warn) once per process about each unknown SHOAL_* variable, naming the closest
/// known one. Called at init; later calls do nothing.
void warn_unknown_once();

/// The value in the environment, or nullopt when unset (or empty).
std::optional<std::string> raw(std::string_view name);

/// Typed readers: the environment value if set, else the default. A value that does not parse, or
/// lies outside the variable's range, throws shoal::error(invalid_argument) naming the variable,
/// the text and the allowed range.
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
