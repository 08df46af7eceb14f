#include "common/env.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include <unistd.h>

#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail::env {

namespace {

// The one declaration of every variable. Keep docs/env.md in step (shoal-info --env-markdown prints it).
constexpr std::array kTable = {
    // launch and rendezvous (set by shoalrun, or by the user under mpirun/srun/torchrun)
    variable{"SHOAL_RANK", kind::integer, "-1",
             "this PE's rank; -1: take it from the launcher (OMPI, PMI, SLURM, torchrun)", "-1"},
    variable{"SHOAL_SIZE", kind::integer, "-1", "number of PEs; -1: take it from the launcher", "-1"},
    variable{"SHOAL_LOCAL_RANK", kind::integer, "-1", "rank among the PEs of this node; -1: from the launcher", "-1"},
    variable{"SHOAL_LOCAL_SIZE", kind::integer, "-1", "number of PEs on this node; -1: from the launcher", "-1"},
    variable{"SHOAL_BOOTSTRAP_UID", kind::string, "", "rendezvous id (shoal-uid-v1:ADDR:PORT:SECRET) set by shoalrun"},
    variable{"SHOAL_BOOTSTRAP_FD", kind::integer, "-1", "listening socket inherited by PE 0 from shoalrun", "-1"},
    variable{"SHOAL_BOOTSTRAP_ADDR", kind::string, "",
             "HOST:PORT where PE 0 listens and every PE meets it: a job over several hosts (shoalrun "
             "--bootstrap-addr, mpirun, srun; docs/multi-node.md); default: MASTER_ADDR:MASTER_PORT+1 under "
             "torchrun, else a node-local file rendezvous"},
    variable{"SHOAL_BOOTSTRAP_TIMEOUT", kind::duration_ms, "30s", "how long init waits for every PE to arrive", "1"},
    variable{"SHOAL_PEER_TIMEOUT", kind::duration_ms, "10s",
             "a PE silent this long (no heartbeat) is declared dead and the job stops", "1"},
    // memory
    variable{"SHOAL_BACKEND", kind::string, "auto",
             "symmetric heap backend: auto (cuda if a GPU is usable), cuda, host"},
    variable{"SHOAL_HEAP_RESERVE", kind::size, "64G",
             "virtual address range reserved for each PE's heap (its maximum size)", "1M", "64T"},
    variable{"SHOAL_HEAP_CHUNK", kind::size, "32M", "physical memory is added to the heap in chunks of this size", "4K",
             "64T"},
    variable{"SHOAL_DEVICE", kind::integer, "-1",
             "GPU ordinal for this PE; -1: the current CUDA context's device if one is current, else local rank modulo "
             "the visible GPUs",
             "-1"},
    variable{"SHOAL_SYMMETRIC_DATA", kind::boolean, "1",
             "1: the program's global and static variables are symmetric (RMA, atomics, signals, waits) between "
             "same-node PEs of a host heap; 0: only shoal_malloc memory is (docs/openshmem.md)"},
    variable{"SHOAL_DISABLE_P2P", kind::boolean, "0",
             "1: reach every other PE through the UCX proxy transport, even same-node PEs whose heap could be "
             "mapped (tests, debugging); UCX's own variables (UCX_TLS, UCX_NET_DEVICES) pick its transports"},
    variable{"SHOAL_PROXY_AM_BYTES", kind::string, "auto",
             "proxy transport on host heaps: puts and gets of at least this size travel as UCX active messages that "
             "land straight in place; auto: from 16K to peers UCX reaches only over TCP (where it emulates RMA), gets "
             "always and puts with UCX's v1 protocols (before 1.16, or UCX_PROTO_ENABLE=n); a size: from that size "
             "to every proxy peer; 0: never"},
    variable{"SHOAL_PROXY_CUDA_CONTEXT", kind::string, "private",
             "proxy transport on GPU heaps: where the proxy runs its staging copies and the owner's atomic kernel; "
             "private: a CUDA context of its own on the heap's GPU, so a program thread blocked in a CUDA call "
             "(a pageable cudaMemcpy behind a kernel waiting for the proxy) cannot hold it back; primary: the "
             "program's primary context"},
    variable{"SHOAL_PROXY_STATS", kind::boolean, "0",
             "proxy transport: at finalize each PE prints where its proxy's drivers spent their time (issuing "
             "descriptors, UCX progress with the owner's side of puts, gets and atomics, copy reports, naps) and the "
             "owner's CUDA copies and atomics, counted and timed"},
    variable{"SHOAL_PROXY_PAYLOAD_MAX", kind::size, "1M",
             "proxy transport on GPU heaps: a kernel's puts up to this size travel in the request ring's payload "
             "areas (4K per slot; a larger put in 4K pieces at consecutive slots, which the proxy sends as messages of "
             "up to 64K), written by the kernel's threads, "
             "so the proxy stages nothing from GPU memory and a blocking put returns once posted; blocking gets up "
             "to min(this, 4K) land there too; 0: never",
             "0", "1M"},
    // behaviour
    variable{"SHOAL_WAIT_TIMEOUT", kind::duration_ms, "600s",
             "a host wait (wait_until, barrier) longer than this fails with a report; 0: unbounded"},
    variable{"SHOAL_COLL_LL_BYTES", kind::size, "16K",
             "GPU team collectives: the size of each LL slot in the collective workspace; set, messages up to it per "
             "PE take the LL algorithm on a stream (no barrier; flags travel with the data); unset, the measured "
             "crossover per collective and PE count (src/common/tuning_gen.hpp), at most the slot",
             "8", "1M"},
    variable{"SHOAL_COLL_THREADS", kind::integer, "512",
             "GPU on-stream collectives: threads per CTA of the direct algorithm (LL calls use fewer for small "
             "messages); 32..512, a multiple of 32",
             "32", "512"},
    variable{"SHOAL_COLL_CHANNELS", kind::integer, "64",
             "GPU on-stream collectives: the most CTAs (channels) one collective uses; the workspace has barrier "
             "words for this many. With PEs sharing a GPU (MPS), at most the job's fewest SMs / its most PEs on one "
             "GPU (the same on every PE), so that every PE's CTAs, which wait for one another, are resident together",
             "1", "1024"},
    variable{"SHOAL_COLL_ALGO", kind::string, "auto",
             "GPU team collectives on a stream: auto (LL up to SHOAL_COLL_LL_BYTES, copy engines for broadcast/"
             "fcollect/alltoall messages from SHOAL_COLL_CE_BYTES, direct otherwise), ll (LL whenever the message fits "
             "a slot), direct (barrier + load/store, two-shot for reductions) or ce (copy engines for the moves)"},
    variable{"SHOAL_COLL_CE_BYTES", kind::size, "4M",
             "GPU on-stream broadcast/fcollect/alltoall: set, messages of at least this size go through the copy "
             "engines (SHOAL_COLL_ALGO=auto; 0: never); unset, the measured crossover per collective and PE count "
             "(src/common/tuning_gen.hpp)"},
    variable{"SHOAL_COLL_CHANNEL_BYTES", kind::size, "64K",
             "GPU on-stream collectives, direct algorithm: set, one CTA (channel) per this many bytes moved through "
             "a PE, up to SHOAL_COLL_CHANNELS; unset, the measured value per collective and PE count "
             "(src/common/tuning_gen.hpp)",
             "256", "1G"},
    variable{"SHOAL_STREAM_KERNEL_BYTES", kind::size, "0",
             "host-initiated on-stream puts and gets (shoalx_putmem_on_stream, ...) between a buffer of this GPU and a "
             "load/store peer: set, messages up to this size are copied by an SM kernel, larger ones by the copy "
             "engine (0: always the copy engine); unset, the measured crossover per PE count "
             "(src/common/tuning_gen.hpp)",
             "0", "1G"},
    variable{"SHOAL_CHECK_COLLECTIVES", kind::boolean, "1",
             "compare every PE's arguments to collective calls (malloc, free, barrier) and fail on mismatch"},
    variable{"SHOAL_TEAM_SPLIT_EXCHANGE", kind::string, "auto",
             "how the members of a parent team exchange a split's records: auto (through their host team words when "
             "every member's are load/store-addressable, else through the bootstrap), bootstrap (always through the "
             "bootstrap; tests); the same on every PE"},
    // diagnostics
    variable{"SHOAL_DEBUG", kind::string, "warn", "log level: none, warn, info, trace"},
    variable{"SHOAL_DEBUG_SUBSYS", kind::string, "all",
             "comma list of subsystems to log: init, bootstrap, heap, transport, rma, coll, all"},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

const variable& lookup(std::string_view name) {
  for (const auto& v : kTable)
    if (name == v.name) return v;
  SHOAL_THROW(errc::internal, "shoal env", "variable {} is not declared in the environment table", name);
}

std::string text_of(const variable& v) {
  auto value = raw(v.name);
  return value ? *value : std::string(v.default_value);
}

// What a valid value of each kind looks like, with an example, for the message that refuses one.
std::string valid_form(const variable& v) {
  switch (v.type) {
    case kind::boolean:
      return "1/0, true/false, yes/no or on/off";
    case kind::integer:
      return fmt::format("an integer, e.g. {}", v.default_value);
    case kind::size:
      return fmt::format("bytes with an optional K, M, G or T suffix (powers of 1024), e.g. {}", v.default_value);
    case kind::duration_ms:
      return fmt::format("milliseconds, or a number with ms, s or min, e.g. {}", v.default_value);
    case kind::string:
      return "text";
  }
  return "?";
}

[[noreturn]] void bad_value(const variable& v, std::string_view text) {
  SHOAL_THROW(errc::invalid_argument, "shoal env", "{}='{}' is not a valid {} value; expected {} ({})", v.name, text,
              to_string(v.type), valid_form(v), v.doc);
}

template <class T>
T parse_or_throw(const variable& v, kind expected, std::optional<T> (*parse)(std::string_view)) {
  if (v.type != expected)
    SHOAL_THROW(errc::internal, "shoal env", "variable {} is a {}, read as a {}", v.name, to_string(v.type),
                to_string(expected));
  std::string text = text_of(v);
  auto value = parse(text);
  if (!value) bad_value(v, text);
  // The bounds are parsed like the value, so that they read in the same units in the table.
  auto below = [&](const char* bound) { return bound != nullptr && *value < *parse(bound); };
  auto above = [&](const char* bound) { return bound != nullptr && *parse(bound) < *value; };
  if (below(v.min) || above(v.max))
    SHOAL_THROW(errc::invalid_argument, "shoal env", "{}='{}' is outside the allowed range {} ({})", v.name, text,
                allowed(v), v.doc);
  return *value;
}

// Variables of shoal's tools, tests, benchmarks, build scripts and of the EP layer above it (shoal.ep,
// SHOAL_EP_*): libshoal ignores them.
constexpr std::string_view kToolPrefixes[] = {"SHOAL_BENCH_",  "SHOAL_GPU_",  "SHOAL_SCALE_",  "SHOAL_SWEEP_",
                                              "SHOAL_STRESS_", "SHOAL_TEST_", "SHOAL_LITMUS_", "SHOAL_MP_",
                                              "SHOAL_EP_",     "SHOAL_STUDY_"};
constexpr std::string_view kToolNames[] = {
    "SHOAL_COLL_TIMEOUT", "SHOAL_NVSHMEM_HOME", "SHOAL_NVSHMEM_BUNDLE", "SHOAL_UCX_WHEEL", "SHOAL_VENV",
    "SHOAL_BUILD_TESTS",  "SHOAL_BUILD_BENCH",  "SHOAL_CUDA",           "SHOAL_WERROR",    "SHOAL_DEBUG_ASSERTS"};

// Compile-time switches (-D...) that are sometimes set in the environment by mistake.
constexpr std::string_view kMacros[] = {"SHOAL_WAIT_ACQUIRE_POLL", "SHOAL_WAIT_ACQUIRE_FENCE", "SHOAL_DEVICE_CHECKS",
                                        "SHOAL_WAIT_POLLS_PER_CLOCK"};

// Names users bring from other libraries (NVSHMEM, OpenSHMEM) or guess, that edit distance would
// not lead to the right variable.
constexpr std::pair<std::string_view, const char*> kAliases[] = {
    {"SHOAL_HEAP_SIZE", "SHOAL_HEAP_RESERVE"},
    {"SHOAL_SYMMETRIC_SIZE", "SHOAL_HEAP_RESERVE"},
    {"SHOAL_HEAP_BYTES", "SHOAL_HEAP_RESERVE"},
    {"SHOAL_CHUNK_SIZE", "SHOAL_HEAP_CHUNK"},
    {"SHOAL_TIMEOUT", "SHOAL_WAIT_TIMEOUT"},
    {"SHOAL_LOG_LEVEL", "SHOAL_DEBUG"},
    {"SHOAL_INFO", "SHOAL_DEBUG"},
    {"SHOAL_NPES", "SHOAL_SIZE"},
};

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::span<const variable> table() { return kTable; }

const char* to_string(kind k) {
  switch (k) {
    case kind::boolean:
      return "bool";
    case kind::integer:
      return "int";
    case kind::size:
      return "size";
    case kind::duration_ms:
      return "ms";
    case kind::string:
      return "string";
  }
  return "?";
}

std::optional<std::string> raw(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<int64_t> parse_int(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  text = trim(text);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end == text.data() || ec != std::errc()) return std::nullopt;
  std::string suffix = lower(trim(std::string_view(end, text.data() + text.size() - end)));
  if (!suffix.empty() && suffix.back() == 'b') suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'i') suffix.pop_back();  // "GiB" == "G"
  unsigned shift = 0;
  if (suffix.empty())
    shift = 0;
  else if (suffix == "k")
    shift = 10;
  else if (suffix == "m")
    shift = 20;
  else if (suffix == "g")
    shift = 30;
  else if (suffix == "t")
    shift = 40;
  else
    return std::nullopt;
  if (shift != 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string t = lower(trim(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> parse_ms(std::string_view text) {
  text = trim(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end == text.data() || ec != std::errc() || value < 0) return std::nullopt;
  std::string suffix = lower(trim(std::string_view(end, text.data() + text.size() - end)));
  int64_t scale = 0;
  if (suffix.empty() || suffix == "ms")
    scale = 1;
  else if (suffix == "s")
    scale = 1000;
  else if (suffix == "m" || suffix == "min")
    scale = 60'000;
  else
    return std::nullopt;
  if (value > INT64_MAX / scale) return std::nullopt;
  return std::chrono::milliseconds(value * scale);
}

bool get_bool(std::string_view name) { return parse_or_throw<bool>(lookup(name), kind::boolean, parse_bool); }
int64_t get_int(std::string_view name) { return parse_or_throw<int64_t>(lookup(name), kind::integer, parse_int); }
uint64_t get_size(std::string_view name) { return parse_or_throw<uint64_t>(lookup(name), kind::size, parse_size); }
std::chrono::milliseconds get_ms(std::string_view name) {
  return parse_or_throw<std::chrono::milliseconds>(lookup(name), kind::duration_ms, parse_ms);
}
std::string get_string(std::string_view name) {
  const variable& v = lookup(name);
  if (v.type != kind::string)
    SHOAL_THROW(errc::internal, "shoal env", "variable {} is a {}, read as a string", v.name, to_string(v.type));
  return text_of(v);
}

std::string effective(std::string_view name) { return text_of(lookup(name)); }

std::string allowed(const variable& v) {
  if (v.min == nullptr && v.max == nullptr) return "";
  return fmt::format("{}..{}", v.min != nullptr ? v.min : "", v.max != nullptr ? v.max : "");
}

const variable* find(std::string_view name) {
  for (const auto& v : kTable)
    if (name == v.name) return &v;
  return nullptr;
}

bool is_tool_variable(std::string_view name) {
  for (auto prefix : kToolPrefixes)
    if (name.starts_with(prefix)) return true;
  return std::find(std::begin(kToolNames), std::end(kToolNames), name) != std::end(kToolNames);
}

const char* closest(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  // The real names and the aliases are candidates alike: a typo of an alias (SHOAL_HEAP_SIZ) leads to
  // the alias's real name.
  const char* best = nullptr;
  size_t best_distance = SIZE_MAX;
  auto consider = [&](std::string_view candidate, const char* real) {
    size_t d = edit_distance(upper, candidate);
    if (d < best_distance) {
      best = real;
      best_distance = d;
    }
  };
  for (auto& [alias, real] : kAliases) consider(alias, real);
  for (const auto& v : kTable) consider(v.name, v.name);
  if (best_distance == 0) return best;  // an alias, exactly
  // A typo changes a few letters; beyond a third of the name it is another word.
  const size_t limit = std::max<size_t>(2, (upper.size() - std::min<size_t>(upper.size(), 6)) / 3);
  return best != nullptr && best_distance <= limit ? best : nullptr;
}

std::vector<std::string> unknown_in_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!entry.starts_with("SHOAL_")) continue;
    std::string_view name = entry.substr(0, entry.find('='));
    if (find(name) == nullptr && !is_tool_variable(name)) out.emplace_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void warn_unknown_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    // One PE says it for the job when the launcher tells which one is first.
    auto rank = raw("SHOAL_RANK");
    if (rank && *rank != "0") return;
    for (const std::string& name : unknown_in_environment()) {
      if (std::find(std::begin(kMacros), std::end(kMacros), name) != std::end(kMacros)) {
        SHOAL_LOG(warn, init,
                  "{} is a compile-time macro (-D{}=..., docs/env.md), not an environment variable; ignored", name,
                  name);
        continue;
      }
      const char* hint = closest(name);
      std::string suggestion = hint != nullptr ? fmt::format("; did you mean {}?", hint) : std::string(".");
      SHOAL_LOG(warn, init, "{} is not a shoal environment variable and is ignored{} (shoal-info lists them all)", name,
                suggestion);
    }
  });
}

}  // namespace shoal::detail::env
