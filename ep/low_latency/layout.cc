// Host side of the low-latency EP layer: the buffer layout and the default world's device handle.
#include <string>

#include <shoal/ep/low_latency.hpp>
#include <shoal/error.hpp>
#include <shoal/world.hpp>

namespace shoal::ep::ll {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

[[noreturn]] void bad(const std::string& what) {
  throw shoal::error(errc::invalid_argument, "shoal::ep::ll::make_layout", what);
}

}  // namespace

device_world default_world() {
  const device_world w = shoal::default_world_device_handle();  // throws not_initialized before init
  if (w.heap_base == nullptr) {
    throw shoal::error(errc::unsupported, "shoal::ep::ll",
                       "the default world has no GPU heap (SHOAL_BACKEND=host?): low-latency EP needs the cuda "
                       "backend");
  }
  return w;
}

size_t workspace_nbytes(int num_experts) {
  return align_up(sizeof(workspace) + 2 * sizeof(int32_t) * static_cast<size_t>(num_experts));
}

layout make_layout(int max_tokens, int hidden, int num_ranks, int num_experts) {
  if (max_tokens <= 0) bad("num_max_dispatch_tokens_per_rank must be > 0, got " + std::to_string(max_tokens));
  if (hidden <= 0 || hidden % 128 != 0) bad("hidden must be a positive multiple of 128, got " + std::to_string(hidden));
  if (num_ranks <= 0 || num_ranks > kMaxRanks) bad("num_ranks must be in 1.." + std::to_string(kMaxRanks));
  if (num_experts <= 0 || num_experts % num_ranks != 0) {
    bad("num_experts (" + std::to_string(num_experts) + ") must be a positive multiple of the number of ranks (" +
        std::to_string(num_ranks) + ")");
  }
  layout l;
  l.num_experts = num_experts;
  l.num_ranks = num_ranks;
  l.max_tokens = max_tokens;
  l.hidden = hidden;
  const size_t slots = static_cast<size_t>(num_experts) * static_cast<size_t>(max_tokens);
  const size_t row_nbytes = static_cast<size_t>(hidden) * 2;
  l.msg_nbytes = 16 + row_nbytes;  // BF16 payload is the larger one (FP8: hidden + hidden/128 * 4)
  size_t at = 0;
  l.dispatch_sig = at;
  at = align_up(at + sizeof(uint64_t) * static_cast<size_t>(num_experts));
  l.combine_flag = at;
  at = align_up(at + sizeof(uint64_t) * slots);
  l.combine_finish = at;
  at = align_up(at + sizeof(uint64_t) * static_cast<size_t>(num_experts));
  l.dispatch_data = at;
  at = align_up(at + l.msg_nbytes * slots);
  l.combine_data = at;
  at = align_up(at + row_nbytes * slots);
  l.combine_send = at;
  at = align_up(at + row_nbytes * slots);
  l.half_nbytes = at;
  l.total_nbytes = workspace_nbytes(num_experts) + 2 * l.half_nbytes;
  return l;
}

}  // namespace shoal::ep::ll
