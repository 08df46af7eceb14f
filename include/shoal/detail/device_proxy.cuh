// Device producers of the proxy ring (shoal/detail/proxy_ring.hpp): how a kernel hands an operation
// on a proxy peer to its PE's proxy thread. One descriptor per call, posted by rank 0 of the scope
// between two syncs of the scope (so the whole scope's earlier writes to a put's source are
// visible, and a get's data is visible to the whole scope after the call). Waits are bounded by the
// world's wait_timeout_ns: a lost proxy reports and traps. Not a public header.
//
// Not yet reached from the device API: detail::peer_local's cold branch and a proxy_ring pointer in
// device_world are the next step (docs/design.md, "The proxy ring").
#pragma once

#include <cstdint>
#include <cstdio>

#include "shoal/detail/proxy_ring.hpp"
#include "shoal/device/ptx.cuh"
#include "shoal/device_world.hpp"

namespace shoal::detail {

/// The bounded wait of one ring call: false until wait_timeout_ns (0: never) has passed.
struct ring_clock {
  uint64_t timeout_ns;
  uint64_t start = 0;
  uint32_t polls = 0;
  __device__ __forceinline__ bool operator()() {
    if (timeout_ns == 0 || (++polls & 63u) != 0) return false;
    const uint64_t now = ptx::globaltimer();
    if (start == 0) start = now;
    return now - start > timeout_ns;
  }
};

inline __device__ __noinline__ void proxy_failed(const char* call, int my_pe, int pe, const char* what, long long st) {
  printf("shoal: PE %d: %s to PE %d over the proxy: %s (status %lld)\n", my_pe, call, pe, what, st);
  __trap();
}

/// Posts `d` from this thread; waiting descriptors (kProxyWait) return the proxy's reply.
__device__ __forceinline__ uint64_t proxy_post(proxy_ring* ring, const device_world& w, const proxy_desc& d,
                                               const char* call) {
  ring_clock clock{w.wait_timeout_ns};
  ptx::fence_sc_sys();  // this thread's earlier stores (a put's source) before the proxy reads them
  const uint64_t ticket = ring_post(ring, d, clock);
  if (ticket == ~uint64_t{0}) proxy_failed(call, w.my_pe, d.pe, "no ring credit within SHOAL_WAIT_TIMEOUT", 0);
  uint64_t reply = 0;
  if ((d.flags & kProxyWait) == 0) return 0;
  int64_t status = 0;
  if (!ring_wait(ring, ticket, &reply, &status, clock))
    proxy_failed(call, w.my_pe, d.pe, "no reply within SHOAL_WAIT_TIMEOUT", 0);
  if (status != 0) proxy_failed(call, w.my_pe, d.pe, "the engine failed", status);
  return reply;
}

/// The scoped form (put/get and their nbi variants at any scope): rank 0 posts, the scope syncs
/// before (the scope's writes to the source are made) and after (a blocking get's data is there for
/// every rank). Replies are for thread-scope calls (g, fetching AMOs), which use proxy_post.
template <class Scope>
__device__ __forceinline__ void proxy_post_scoped(proxy_ring* ring, const device_world& w, const proxy_desc& d,
                                                  const char* call) {
  Scope::sync();
  if (Scope::rank() == 0) proxy_post(ring, w, d, call);
  Scope::sync();
}

/// A descriptor for `op` towards `pe` at heap offset `offset`.
__device__ __forceinline__ proxy_desc proxy_make(proxy_op op, bool wait, int pe, uint64_t offset) {
  proxy_desc d{};
  d.op = op;
  d.flags = wait ? kProxyWait : 0;
  d.pe = pe;
  d.offset = offset;
  return d;
}

}  // namespace shoal::detail
