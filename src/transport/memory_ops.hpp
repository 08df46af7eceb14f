// How host-issued operations touch memory once its address in this process is known
// (the peer's heap is mapped here). `host`: plain loads/stores/atomics on shared host memory.
// `cuda`: the memory is GPU memory (ours or a peer's over NVLink), reached with copies and tiny
// kernels on an internal stream.
#pragma once

#include <cstddef>
#include <memory>

#include "shoal/device_world.hpp"
#include "transport/scalar.hpp"

namespace shoal::detail {

class memory_ops {
 public:
  virtual ~memory_ops() = default;
  /// Copies nbytes; either side may be symmetric memory (local or a peer's) or private host memory.
  virtual void copy(void* dest, const void* source, size_t nbytes) = 0;
  /// Atomic `op` on `target` (symmetric memory); see host_atomic for the value conventions.
  virtual void atomic(amo_op op, scalar type, void* target, const void* operand, const void* compare_value,
                      void* fetched) = 0;
  /// Acquire load of one value of `type` at `addr` (symmetric memory) into `out`.
  virtual void load(scalar type, const void* addr, void* out) = 0;
  virtual void zero(void* dest, size_t nbytes) = 0;
  /// Completes every operation issued through this object.
  virtual void quiet() = 0;
  /// True when the CPU can load/store the memory directly (shoal_ptr may return it).
  virtual bool direct() const = 0;
  /// GPU memory: the box kernels write a failure report into before they trap (pinned host memory, zeroed and
  /// device-mapped), as the host sees it and as kernels see it (device_world::report_box). nullptr otherwise.
  virtual device_report_box* report_box_host() const { return nullptr; }
  virtual device_report_box* report_box_device() const { return nullptr; }
};

std::unique_ptr<memory_ops> make_host_memory_ops();
/// Throws errc::unsupported in builds without CUDA.
std::unique_ptr<memory_ops> make_cuda_memory_ops();

}  // namespace shoal::detail
