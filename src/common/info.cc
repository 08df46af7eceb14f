// The public info API (<shoal/info.h>) over the env table: C entry points for tools, so that they
// need no internal header and no second copy of the env module.
#include "shoal/info.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "common/env.hpp"

namespace {

namespace env = shoal::detail::env;

// The table in its C form, built once; the allowed-range strings live here.
struct c_table {
  std::vector<std::string> ranges;
  std::vector<shoal_env_var> rows;
  c_table() {
    auto t = env::table();
    ranges.reserve(t.size());
    for (const auto& v : t) ranges.push_back(env::allowed(v));
    for (size_t i = 0; i < t.size(); ++i)
      rows.push_back({t[i].name, env::to_string(t[i].type), t[i].default_value, ranges[i].c_str(), t[i].doc});
  }
};

const c_table& table() {
  static const c_table t;
  return t;
}

}  // namespace

size_t shoal_info_env_count(void) { return table().rows.size(); }

const shoal_env_var* shoal_info_env_var(size_t index) {
  return index < table().rows.size() ? &table().rows[index] : nullptr;
}

int shoal_info_env_is_set(const char* name) {
  if (name == nullptr || env::find(name) == nullptr) return -1;
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? 1 : 0;
}

const char* shoal_info_env_value(const char* name) {
  const env::variable* v = name != nullptr ? env::find(name) : nullptr;
  if (v == nullptr) return nullptr;
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : v->default_value;
}

const char* shoal_info_env_closest(const char* name) { return name != nullptr ? env::closest(name) : nullptr; }

size_t shoal_info_env_unknown(void (*fn)(const char* name, const char* closest, void* user), void* user) {
  auto names = env::unknown_in_environment();
  if (fn != nullptr)
    for (const std::string& n : names) fn(n.c_str(), env::closest(n), user);
  return names.size();
}

int shoal_info_has_cuda(void) {
#ifdef SHOAL_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}
