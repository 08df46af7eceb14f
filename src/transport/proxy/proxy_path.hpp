// The proxy path: PEs reached through the UCX engine (another node, or every peer under
// SHOAL_DISABLE_P2P=1), for host and GPU heaps; addresses of proxy peers do not exist here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/data_segment.hpp"
#include "heap/symmetric_heap.hpp"
#include "shoal/detail/proxy_ring.hpp"
#include "shoal/device_world.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

/// path_ops plus what only the proxy needs: heap registration and a collective close.
class proxy_ops : public path_ops {
 public:
  /// Collective: re-registers the heap when it grew since the last registration.
  virtual void heap_grown(std::string_view call) = 0;
  /// Collective: completes everything and closes the endpoints (shoal_finalize).
  virtual void close(std::string_view call) = 0;
  /// The request ring as kernels see it (GPU heaps), else nullptr (device_world::proxy_ring).
  virtual proxy_ring* device_ring() = 0;
  /// That ring's slots and payload bytes per slot.
  virtual proxy_ring_shape device_ring_shape() = 0;
  /// The UCX transports towards `pe` (empty when none).
  virtual std::string describe(int pe) = 0;
  /// Put-with-signal as one descriptor (put, fence, signal add or set): returns once `source` may be
  /// reused; the signal update completes in the background (fence/quiet wait for it).
  virtual void put_signal(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes,
                          uint64_t sig_offset, uint64_t signal, bool add) = 0;
};

/// Collective over every PE. `data`: this PE's shared data segment (global and static variables;
/// empty when they are not symmetric), registered beside the heap. Throws errc::unsupported naming
/// this PE when the build has no UCX.
std::unique_ptr<proxy_ops> make_proxy_path(bootstrap& boot, symmetric_heap& heap, const std::vector<peer_path>& paths,
                                           data_segment_span data);

/// True when this build has the UCX engine.
bool proxy_built();

}  // namespace shoal::detail
