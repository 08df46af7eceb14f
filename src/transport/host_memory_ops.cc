#include <atomic>
#include <cstring>

#include "transport/memory_ops.hpp"

namespace shoal::detail {

namespace {

// Every PE's heap is the same physical memory mapped into each process: the C++ memory model
// applies directly. Copies are plain memcpy; ordering comes from the seq_cst atomics and fences.
class host_memory_ops final : public memory_ops {
 public:
  void copy(void* dest, const void* source, size_t nbytes) override { std::memcpy(dest, source, nbytes); }
  void atomic(amo_op op, scalar type, void* target, const void* operand, const void* compare_value,
              void* fetched) override {
    host_atomic(op, type, target, operand, compare_value, fetched);
  }
  void load(scalar type, const void* addr, void* out) override { host_atomic_load(type, addr, out); }
  void zero(void* dest, size_t nbytes) override { std::memset(dest, 0, nbytes); }
  void quiet() override { std::atomic_thread_fence(std::memory_order_seq_cst); }
  bool direct() const override { return true; }
};

}  // namespace

std::unique_ptr<memory_ops> make_host_memory_ops() { return std::make_unique<host_memory_ops>(); }

}  // namespace shoal::detail
