// The one primitive a symmetric-heap backend supplies: physical chunks that can be exported as a
// file descriptor, imported by a same-node peer, and mapped at a chosen address inside a reserved
// range. `host` uses memfd + mmap; `cuda` uses cuMemCreate/Export/Import/Map/SetAccess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace shoal::detail {

/// Physical memory, owned by this process (created here or imported from a peer).
struct chunk {
  int fd = -1;          ///< shareable handle: memfd, or the POSIX fd exported by cuMemExportToShareableHandle
  uint64_t bytes = 0;   ///< size, a multiple of the backend's granularity
  uint64_t handle = 0;  ///< backend-specific (CUmemGenericAllocationHandle for cuda; unused for host)
};

class chunk_backend {
 public:
  virtual ~chunk_backend() = default;
  virtual const char* name() const = 0;      ///< "host" or "cuda"
  virtual size_t granularity() const = 0;    ///< chunk sizes and map offsets are multiples of this
  virtual bool host_accessible() const = 0;  ///< the CPU may load/store mapped memory directly
  /// Reserves `bytes` of address space, inaccessible until mapped. Throws on failure.
  virtual void* reserve(size_t bytes) = 0;
  virtual void release(void* base, size_t bytes) = 0;
  /// New zero-filled physical memory of `bytes` with an exportable fd.
  virtual chunk create(size_t bytes) = 0;
  /// Wraps an fd received from a peer (takes ownership of `fd`).
  virtual chunk import(int fd, size_t bytes) = 0;
  /// Maps `c` at `addr` (inside a reservation) read/write for this process (and its GPU).
  virtual void map(void* addr, const chunk& c) = 0;
  virtual void unmap(void* addr, size_t bytes) = 0;
  /// Releases the physical memory reference and the fd.
  virtual void destroy(chunk& c) = 0;
};

std::unique_ptr<chunk_backend> make_host_backend();

}  // namespace shoal::detail

namespace shoal::detail {
/// True when the CUDA driver can be loaded and at least one GPU is visible (never throws).
bool cuda_usable() noexcept;
/// The CUDA backend for this PE's current device. Throws errc::unsupported (naming `call`) when the
/// build has no CUDA or no GPU is usable.
std::unique_ptr<chunk_backend> make_cuda_backend(const char* call);
}  // namespace shoal::detail
