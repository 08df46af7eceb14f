// What the runtime needs from the `cuda` heap backend beyond chunk_backend: which GPU it drives, and
// whether two GPUs of this node can reach each other's memory (peer access over NVLink or PCIe).
// Plain C++ with no CUDA types, so it compiles in host-only builds (where every query says "no").
#pragma once

#include <string>

#include "heap/chunk_backend.hpp"

namespace shoal::detail {

/// The GPU behind a cuda backend. Exchange pci_bus_id() (not the ordinal: CUDA_VISIBLE_DEVICES may
/// number GPUs differently in each process) across PEs to decide peer reachability.
class cuda_backend_info {
 public:
  virtual ~cuda_backend_info() = default;
  /// CUDA ordinal of the GPU in this process (as numbered after CUDA_VISIBLE_DEVICES).
  virtual int device_ordinal() const = 0;
  /// PCI bus id, "0000:19:00.0" (domain:bus:device.function, lower case): names the GPU node-wide.
  virtual std::string pci_bus_id() const = 0;
  /// The device's primary context (a CUcontext), retained by the backend for its lifetime. A thread
  /// that calls the driver API for shoal (a proxy thread, say) makes it current first.
  virtual void* primary_context() const = 0;
  /// Streaming multiprocessors of the GPU (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).
  virtual int multiprocessor_count() const = 0;
};

/// The GPU info of `backend` when it is the cuda backend (make_cuda_backend's result); else nullptr.
const cuda_backend_info* cuda_info(const chunk_backend& backend) noexcept;

/// What the link from one GPU to another allows; all false/0 when there is none (or no CUDA).
struct cuda_peer_link {
  bool access = false;          ///< my GPU may map and load/store memory that lives on the peer GPU
  bool native_atomics = false;  ///< every CUDA atomic works over the link (NVLink: yes; PCIe: usually no)
  int performance_rank = 0;     ///< the driver's relative link rank (lower is better); 0 when same GPU
};

/// The link from GPU `my_device` to GPU `peer_device` (ordinals in this process). The same GPU is
/// reachable from itself. Never throws: no usable driver or a bad ordinal gives {}.
cuda_peer_link cuda_peer_link_between(int my_device, int peer_device) noexcept;

/// cuda_peer_link_between(my_device, peer_device).access.
bool can_access_peer(int my_device, int peer_device) noexcept;

/// Ordinal in this process of the GPU with PCI bus id `pci_bus_id` (any case), or -1 when that GPU is
/// not visible here (CUDA_VISIBLE_DEVICES) or CUDA is not usable. Never throws.
int cuda_device_of_pci_bus_id(const std::string& pci_bus_id) noexcept;

/// One line for shoal-info and logs: "driver 12.8, 2 GPUs" or why CUDA cannot be used. Never throws;
/// probes the driver (dlopen + cuInit) on first use, so do not call it before fork() in a launcher.
std::string cuda_status() noexcept;

}  // namespace shoal::detail
