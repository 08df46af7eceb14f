// shoal's C++ host API: a world is one job of PEs with its own bootstrap and symmetric heap.
// Several worlds may live in one process (each with its own heap); the C API of
// <shoal/shoal.h> drives a default one. Every call throws shoal::error on failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/device_world.hpp"
#include "shoal/error.hpp"
#include "shoal/types.h"

namespace shoal {

namespace detail {
class world_impl;
}

/// How to join a job. Unset fields come from the launcher's environment (shoalrun, mpirun,
/// srun, torchrun) and the SHOAL_* variables.
struct init_options {
  int rank = -1;                    ///< this PE, or -1 for the environment's
  int size = -1;                    ///< number of PEs, or -1 for the environment's
  std::string unique_id;            ///< text form from make_unique_id() (shoal-uid-v1:…); empty: environment
  std::string backend;              ///< "host", "cuda", or empty for SHOAL_BACKEND
  uint64_t heap_reserve_bytes = 0;  ///< maximum heap per PE; 0: SHOAL_HEAP_RESERVE
};

/// Opens a bootstrap listener in this process and returns the id that the other PEs pass as
/// init_options::unique_id; the PE of rank 0 must join from this process. `bind_host` is the
/// address the others can reach (default 127.0.0.1: single node).
SHOAL_API std::string make_unique_id(const std::string& bind_host = "127.0.0.1");

/// Library version "major.minor.patch".
SHOAL_API const char* version() noexcept;

/// Where a peer PE is reached from this one: shoal::peer_path (<shoal/device_world.hpp>).
SHOAL_API const char* to_string(peer_path path) noexcept;

/// The device handle of the default world (the one shoal_init creates and the C API drives), by value,
/// for kernels that take a handle (<shoal/device/*.cuh>): the same handle that facade kernels read as
/// shoal::device::facade_world(). Set once at init, valid until shoal_finalize. On the host backend
/// only my_pe and n_pes are set (heap_base is null). Not collective; thread-safe. Throws shoal::error
/// (errc::not_initialized, naming this call) before shoal_init and after shoal_finalize.
SHOAL_API device_world default_world_device_handle();

class SHOAL_API world {
 public:
  /// Collective over every PE of the job: bootstrap, heap reservation, liveness monitor.
  explicit world(const init_options& options = {});
  /// Finalizes if finalize() was not called (collective then too).
  ~world();
  world(world&&) noexcept;
  world& operator=(world&&) noexcept;
  world(const world&) = delete;
  world& operator=(const world&) = delete;

  /// Collective: barrier, unmap, disconnect. Afterwards every call throws errc::not_initialized.
  void finalize();

  int my_pe() const;
  int n_pes() const;
  const char* backend_name() const;
  peer_path path_to(int pe) const;
  /// The UCX transports and devices towards `pe` ("tcp/veth0.0") when it is a proxy peer, else "".
  std::string proxy_transports(int pe) const;
  uint64_t heap_reserve_bytes() const;  ///< per PE
  uint64_t heap_mapped_bytes() const;   ///< per PE, physically backed
  uint64_t heap_in_use_bytes() const;   ///< per PE, allocated to the user (and shoal's own sync words)

  // --- symmetric memory (collective: every PE calls with the same arguments, in the same order) ---
  /// nbytes == 0 returns nullptr. Mismatched arguments across PEs throw errc::mismatch on all.
  void* malloc(size_t nbytes);
  void* calloc(size_t count, size_t elem_bytes);  ///< zeroed on every PE
  void* align(size_t alignment, size_t nbytes);   ///< alignment: a power of two
  /// Resizes, keeping the first min(old, new) bytes; may move. nullptr ptr acts as malloc.
  void* realloc(void* ptr, size_t nbytes);
  void free(void* ptr);  ///< nullptr is a no-op (still collective)

  /// Address of `addr`'s copy on `pe` for direct loads/stores (by the CPU on the host backend, by this PE's GPU on
  /// the cuda backend), or nullptr.
  void* ptr(const void* addr, int pe) const;
  bool pe_accessible(int pe) const;
  bool addr_accessible(const void* addr, int pe) const;

  // --- RMA (one-sided; `dest`/`source` on the remote side must be symmetric) ---
  /// Copies nbytes from local `source` to `dest` on `pe`. Complete (source reusable, data
  /// visible to the target after its next acquire) on return.
  void put(void* dest, const void* source, size_t nbytes, int pe);
  /// Copies nbytes from symmetric `source` on `pe` to local `dest`.
  void get(void* dest, const void* source, size_t nbytes, int pe);
  /// Non-blocking forms: complete by the next quiet() (the host paths complete them at once).
  void put_nbi(void* dest, const void* source, size_t nbytes, int pe);
  void get_nbi(void* dest, const void* source, size_t nbytes, int pe);
  /// Strided: element i goes from source[i*source_stride] to dest[i*dest_stride] (strides in elements).
  void iput(void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride, size_t num_elems,
            size_t elem_bytes, int pe);
  void iget(void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride, size_t num_elems,
            size_t elem_bytes, int pe);
  template <class T>
  void p(T* dest, T value, int pe) {
    put(dest, &value, sizeof(T), pe);
  }
  template <class T>
  T g(const T* source, int pe) {
    T value;
    get(&value, source, sizeof(T), pe);
    return value;
  }

  /// Data then signal: nbytes to `dest` on `pe`, then `signal` applied to the 64-bit `sig_addr`
  /// on `pe` with sig_op (SHOAL_SIGNAL_SET/ADD). A PE that sees the signal sees the data.
  void put_signal(void* dest, const void* source, size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                  int pe);
  /// Applies sig_op with `signal` to sig_addr on `pe` (no data).
  void signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
  /// Local signal word, read atomically.
  uint64_t signal_fetch(const uint64_t* sig_addr);
  /// Waits until the local signal word compares true with `value`; returns the value seen.
  uint64_t signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t value);

  /// Orders this PE's puts/AMOs to each PE (fence) or completes all of them (quiet).
  void fence();
  void quiet();
  /// Every PE arrives, after completing its outstanding operations (barrier_all) or not (sync_all).
  void barrier_all();
  void sync_all();
  /// Stops every PE of the job with `status` (does not return).
  [[noreturn]] void global_exit(int status);

  /// The handle to pass to kernels by value (GPU heaps; on the host backend only my_pe/n_pes are set).
  device_world device_handle() const;

  detail::world_impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<detail::world_impl> impl_;
};

}  // namespace shoal
