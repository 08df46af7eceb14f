#include "transport/proxy/proxy_path.hpp"

#include <cstring>

#include "common/check.hpp"
#include "transport/proxy/ucx_engine.hpp"

namespace shoal::detail {

namespace {

bool arithmetic(amo_op op) {
  return op == amo_op::fetch_add || op == amo_op::add || op == amo_op::fetch_inc || op == amo_op::inc;
}

class ucx_proxy_path final : public proxy_ops {
 public:
  ucx_proxy_path(bootstrap& boot, symmetric_heap& heap, std::vector<int> peers, data_segment_span data)
      : heap_(heap), engine_(boot, peers, !heap.backend().host_accessible()) {
    heap_grown("shoal_init");
    engine_.register_data(data.base, data.num_bytes, "shoal_init");
  }

  char* address(std::string_view call, int pe, uint64_t) override {
    SHOAL_THROW(errc::unsupported, call,
                "PE {} is reached through the proxy transport, which has no load/store address (this call needs "
                "one and does not support proxy peers yet)",
                pe);
  }
  void put(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) override {
    if (nbytes != 0) engine_.put(call, pe, offset, source, nbytes);
  }
  void get(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) override {
    if (nbytes != 0) engine_.get(call, dest, pe, offset, nbytes);
  }
  void put_nbi(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) override {
    if (nbytes != 0) engine_.put_nbi(call, pe, offset, source, nbytes);
  }
  void get_nbi(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) override {
    if (nbytes != 0) engine_.get_nbi(call, dest, pe, offset, nbytes);
  }
  void iput(std::string_view call, int pe, uint64_t offset, const void* source, ptrdiff_t dest_stride,
            ptrdiff_t source_stride, size_t nelems, size_t elem_bytes) override {
    const auto* from = static_cast<const char*>(source);
    for (size_t i = 0; i < nelems; ++i)
      engine_.put(call, pe, offset + i * dest_stride * elem_bytes, from + i * source_stride * elem_bytes, elem_bytes);
  }
  void iget(std::string_view call, void* dest, int pe, uint64_t offset, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t nelems, size_t elem_bytes) override {
    auto* to = static_cast<char*>(dest);
    for (size_t i = 0; i < nelems; ++i)
      engine_.get(call, to + i * dest_stride * elem_bytes, pe, offset + i * source_stride * elem_bytes, elem_bytes);
  }
  void atomic(std::string_view call, int pe, uint64_t offset, amo_op op, scalar type, const void* operand,
              const void* compare_value, void* fetched) override {
    if (type.bytes > 8)
      SHOAL_THROW(errc::unsupported, call, "{}-byte atomics are not supported (PE {}, proxy transport)", type.bytes,
                  pe);
    const bool integer = type.kind == scalar_kind::signed_int || type.kind == scalar_kind::unsigned_int;
    if ((type.bytes == 4 || type.bytes == 8) && (integer || !arithmetic(op)))
      native(call, pe, offset, op, type.bytes, operand, compare_value, fetched);
    else
      emulated(call, pe, offset, op, type, operand, compare_value, fetched);
  }
  void quiet() override { engine_.flush("shoal_quiet"); }

  void heap_grown(std::string_view call) override {
    if (heap_.mapped_bytes() == registered_) return;
    engine_.register_heap(heap_.base(), heap_.mapped_bytes(), call);
    registered_ = heap_.mapped_bytes();
  }
  void close(std::string_view call) override { engine_.close(call); }
  std::string describe(int pe) override { return engine_.transports(pe); }
  void put_signal(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes,
                  uint64_t sig_offset, uint64_t signal, bool add) override {
    engine_.put_signal(call, pe, offset, source, nbytes, sig_offset, signal, add ? ucx_amo::add : ucx_amo::swap);
  }
  proxy_ring* device_ring() override { return engine_.device_ring(); }
  proxy_ring_shape device_ring_shape() override { return engine_.device_ring_shape(); }

 private:
  // One UCP atomic on a 4- or 8-byte word. FETCH = OR 0, SET = SWAP, INC = ADD 1.
  void native(std::string_view call, int pe, uint64_t offset, amo_op op, size_t nbytes, const void* operand,
              const void* compare_value, void* fetched) {
    uint64_t value = 0, reply = 0;
    if (operand != nullptr) std::memcpy(&value, operand, nbytes);
    bool fetch = fetched != nullptr;
    ucx_amo code = ucx_amo::add;
    switch (op) {
      case amo_op::fetch:
        code = ucx_amo::or_, value = 0, fetch = true;
        break;
      case amo_op::set:
        code = ucx_amo::swap, fetch = true;
        break;
      case amo_op::swap:
        code = ucx_amo::swap, fetch = true;
        break;
      case amo_op::compare_swap:  // UCP: if (buffer == remote) remote = reply; reply = old
        code = ucx_amo::cswap, fetch = true;
        std::memcpy(&reply, operand, nbytes);
        std::memcpy(&value, compare_value, nbytes);
        break;
      case amo_op::fetch_add:
      case amo_op::add:
        code = ucx_amo::add;
        break;
      case amo_op::fetch_inc:
      case amo_op::inc:
        code = ucx_amo::add, value = 1;
        break;
      case amo_op::fetch_and:
      case amo_op::and_:
        code = ucx_amo::and_;
        break;
      case amo_op::fetch_or:
      case amo_op::or_:
        code = ucx_amo::or_;
        break;
      case amo_op::fetch_xor:
      case amo_op::xor_:
        code = ucx_amo::xor_;
        break;
    }
    engine_.atomic(call, pe, offset, code, nbytes, &value, fetch ? &reply : nullptr);
    if (fetched != nullptr) std::memcpy(fetched, &reply, nbytes);
  }

  // 1- and 2-byte values and float arithmetic: a compare-and-swap loop on the containing aligned
  // 4-byte (or the 8-byte) word; the new value comes from applying `op` to a private copy.
  void emulated(std::string_view call, int pe, uint64_t offset, amo_op op, scalar type, const void* operand,
                const void* compare_value, void* fetched) {
    const size_t word_nbytes = type.bytes == 8 ? 8 : 4;
    const uint64_t word_offset = offset & ~static_cast<uint64_t>(word_nbytes - 1);
    const size_t shift = offset - word_offset;  // little-endian byte position inside the word
    uint64_t old = 0;
    native(call, pe, word_offset, amo_op::fetch, word_nbytes, nullptr, nullptr, &old);
    for (;;) {
      uint64_t next = old;
      alignas(8) unsigned char value[8] = {};
      std::memcpy(value, reinterpret_cast<const char*>(&old) + shift, type.bytes);
      alignas(8) unsigned char before[8] = {};
      host_atomic(op, type, value, operand, compare_value, before);
      std::memcpy(reinterpret_cast<char*>(&next) + shift, value, type.bytes);
      uint64_t seen = old;
      native(call, pe, word_offset, amo_op::compare_swap, word_nbytes, &next, &seen, &seen);
      if (seen == old) {
        if (fetched != nullptr) std::memcpy(fetched, before, type.bytes);
        return;
      }
      old = seen;
    }
  }

  symmetric_heap& heap_;
  ucx_engine engine_;
  uint64_t registered_ = 0;
};

}  // namespace

std::unique_ptr<proxy_ops> make_proxy_path(bootstrap& boot, symmetric_heap& heap, const std::vector<peer_path>& paths,
                                           data_segment_span data) {
  std::vector<int> peers;
  for (size_t pe = 0; pe < paths.size(); ++pe)
    if (paths[pe] == peer_path::proxy) peers.push_back(static_cast<int>(pe));
  return std::make_unique<ucx_proxy_path>(boot, heap, std::move(peers), data);
}

bool proxy_built() { return true; }

}  // namespace shoal::detail
