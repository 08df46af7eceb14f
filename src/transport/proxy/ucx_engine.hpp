// The UCX engine of the proxy transport: one UCP context and one worker per PE
// (UCS_THREAD_MODE_SERIALIZED), used by whichever thread holds it (a try-lock): a host thread that
// drives its own request, a host thread progressing it from a wait (progress_hooks), or the PE's
// proxy thread. Every request, host- or device-posted, is a descriptor in the PE's request ring
// (shoal/detail/proxy_ring.hpp), issued in ticket order by the holder, so host and device requests
// share one ordering domain. The proxy thread runs connect, registration and close, and keeps the
// worker progressing while nobody else does (UCX over TCP emulates get and atomics in the target's
// progress loop): it polls after work, then sleeps in poll() on the worker's event fd and an
// eventfd doorbell; with a device-mapped ring (GPU heaps) it naps ~30 us at a time and checks the
// ring's ticket counter, since kernels ring no doorbell. Worker addresses, heap and data-segment
// base addresses and packed rkeys travel only through the (authenticated) bootstrap. Only this
// folder includes UCX headers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "shoal/detail/proxy_ring.hpp"

namespace shoal::detail {

/// The UCP atomic opcodes the engine issues (ucp_atomic_op_t without the UCX header).
enum class ucx_amo : uint8_t { add, swap, cswap, and_, or_, xor_ };

class ucx_engine {
 public:
  /// Collective over every PE: creates the context, worker and proxy thread, all-gathers worker
  /// addresses and connects to every PE in `peers`. Throws errc::unsupported when `gpu_heap` and
  /// this UCX cannot handle CUDA memory.
  ucx_engine(bootstrap& boot, const std::vector<int>& peers, bool gpu_heap);
  ~ucx_engine();  ///< stops the thread; closes endpoints (forcibly unless close() ran)
  ucx_engine(const ucx_engine&) = delete;
  ucx_engine& operator=(const ucx_engine&) = delete;

  /// Collective: (re-)registers this PE's heap [base, base + nbytes) and all-gathers base addresses
  /// and rkeys. Completes outstanding operations first.
  void register_heap(char* base, uint64_t nbytes, std::string_view call);
  /// Collective, once: registers this PE's shared data segment (global and static variables; host
  /// memory; nbytes 0 when they are not symmetric) and all-gathers base addresses and rkeys. Offsets
  /// with kProxyDataOffset then address it instead of the heap.
  void register_data(const void* base, uint64_t nbytes, std::string_view call);

  // Blocking until complete (put/atomic without fetch: source reusable; get/fetch: value arrived).
  void put(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes);
  void get(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes);
  // Non-blocking: posted (and issued when the worker is free) and complete at the next flush;
  // `source` must stay unchanged and `dest` is undefined until then.
  void put_nbi(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes);
  void get_nbi(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes);
  /// One 4- or 8-byte atomic. cswap (UCP's convention): `value` is the compare value, `reply` holds
  /// the new value in and the old value out. swap needs `reply`; other ops fetch when it is non-null.
  void atomic(std::string_view call, int pe, uint64_t offset, ucx_amo op, size_t nbytes, const void* value,
              void* reply);
  /// Put-with-signal (put, fence, then `op` -- add or swap -- of `signal` on the 8-byte word at
  /// `sig_offset`): returns once the put is locally complete; the signal completes at the next flush.
  void put_signal(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes,
                  uint64_t sig_offset, uint64_t signal, ucx_amo op);
  /// Completes every operation issued so far (ucp_worker_flush_nbx).
  void flush(std::string_view call);
  /// Collective: flushes and closes every endpoint gracefully, then meets the others.
  void close(std::string_view call);
  /// The request ring as kernels see it (pinned, device-mapped) for GPU heaps; nullptr for host heaps.
  proxy_ring* device_ring() const;
  /// That ring's slots and payload bytes per slot (kernels' puts and blocking gets carry their data there).
  proxy_ring_shape device_ring_shape() const;
  /// "tcp/lo.0" or similar: the UCX transports the endpoint to `pe` uses (for shoal-info and logs).
  std::string transports(int pe);

 private:
  struct state;
  std::unique_ptr<state> s_;
  bootstrap& boot_;
};

}  // namespace shoal::detail
