// Memory registration and remote keys: this PE's heap and data segment mapped with UCX, every PE's
// base addresses and rkeys all-gathered through the bootstrap, and where an address lies for UCX (the
// local memory handle of a buffer, the remote address and rkey of a PE's offset).
#include <algorithm>

#include "common/check.hpp"
#include "transport/proxy/ucx_engine_state.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

// Collective: (re-)maps [base, base + nbytes) with UCX as `type` memory into `memh` (nothing when
// nbytes is 0), then all-gathers every PE's base address and packed rkey through the bootstrap
// (lengths first, then the rkeys padded to the longest) and unpacks them into `keys`/`bases` (no
// rkey for a PE that mapped nothing). What was registered before is released first.
void ucx_engine::state::register_region(bootstrap& boot, void* base, uint64_t nbytes, ucs_memory_type_t type,
                                        std::string_view what, std::string_view call, ucp_mem_h& memh_out,
                                        uint64_t& base_out, uint64_t& nbytes_out, std::vector<ucp_rkey_h>& keys,
                                        std::vector<uint64_t>& bases_out) {
  const int n_pes = boot.size();
  std::vector<char> packed;
  on_thread([&] {
    for (ucp_rkey_h& k : keys)
      if (k != nullptr) ucp_rkey_destroy(k), k = nullptr;
    keys.assign(n_pes, nullptr);
    if (memh_out != nullptr) ucp_mem_unmap(context, memh_out), memh_out = nullptr;
    base_out = reinterpret_cast<uint64_t>(base), nbytes_out = nbytes;
    if (nbytes == 0) return;
    ucp_mem_map_params_t mp{};
    mp.field_mask =
        UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address = base;
    mp.length = nbytes;
    mp.memory_type = type;
    ucs_status_t st = ucp_mem_map(context, &mp, &memh_out);
    if (st != UCS_OK) fail_ucx(call, fmt::format("ucp_mem_map of {}", what), -1, st);
    void* rkey = nullptr;
    size_t rkey_nbytes = 0;
    st = ucp_rkey_pack(context, memh_out, &rkey, &rkey_nbytes);
    if (st != UCS_OK) fail_ucx(call, "ucp_rkey_pack", -1, st);
    packed.assign(static_cast<char*>(rkey), static_cast<char*>(rkey) + rkey_nbytes);
    ucp_rkey_buffer_release(rkey);
  });
  uint64_t mine[2] = {reinterpret_cast<uint64_t>(base), packed.size()};
  std::vector<uint64_t> heads(2 * n_pes);
  boot.allgather(mine, heads.data(), sizeof(mine), call);
  uint64_t longest = 1;
  for (int pe = 0; pe < n_pes; ++pe) longest = std::max(longest, heads[2 * pe + 1]);
  packed.resize(longest);
  std::vector<char> all(longest * n_pes);
  boot.allgather(packed.data(), all.data(), longest, call);
  on_thread([&] {
    bases_out.assign(n_pes, 0);
    for (int pe = 0; pe < n_pes; ++pe) {
      bases_out[pe] = heads[2 * pe];
      if (eps[pe] == nullptr || heads[2 * pe + 1] == 0) continue;
      ucs_status_t st = ucp_ep_rkey_unpack(eps[pe], all.data() + pe * longest, &keys[pe]);
      if (st != UCS_OK) fail_ucx(call, fmt::format("ucp_ep_rkey_unpack ({})", what), pe, st);
    }
  });
}

// A put's source or a get's destination: when it lies in this PE's registered heap, hand UCX the
// heap's memory handle and type (GPU heaps are VMM allocations, which UCX's own detection may take
// for host memory); other buffers (p/g values, user buffers) are left to UCX's detection.
void ucx_engine::state::describe_local(ucp_request_param_t& param, uint64_t local, uint64_t nbytes) const {
  if (data_memh != nullptr && local >= data_base && local - data_base <= data_nbytes &&
      nbytes <= data_nbytes - (local - data_base)) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memh = data_memh;
    param.memory_type = UCS_MEMORY_TYPE_HOST;
    return;
  }
  if (memh == nullptr || local < heap_base || local - heap_base > heap_nbytes ||
      nbytes > heap_nbytes - (local - heap_base))
    return;
  param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.memh = memh;
  param.memory_type = gpu_heap ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

// Where `offset` of `pe` lives for UCX: its heap, or with kDataOffsetBit its data segment.
ucx_engine::state::remote_word ucx_engine::state::remote_of(int pe, uint64_t offset) const {
  if ((offset & kDataOffsetBit) != 0) return {data_bases[pe] + (offset & ~kDataOffsetBit), data_rkeys[pe]};
  return {bases[pe] + offset, rkeys[pe]};
}

}  // namespace shoal::detail
