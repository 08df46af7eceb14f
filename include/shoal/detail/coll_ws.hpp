// Layout of the collective workspace: shoal-owned symmetric memory (in the reserved block of every
// GPU heap, at device_world::coll_offset) that the team collectives use besides the caller's buffers.
// Plain C++: the runtime sizes and allocates it, <shoal/device/coll.cuh> addresses it.
//
//   channel words   channels 1 .. coll_channels-1 (channel 0 is device_sync's team words): per
//                   channel, three arrays of n_local uint64_t -- arrived (written by peers), sent,
//                   consumed (private) -- the per-pair signal counts of that channel's team barrier
//   LL counters     ll_sent[n_local], ll_recv[n_local]: LL messages this PE sent to / consumed from
//                   each node-local PE (private to this PE)
//   LL slots        [parity 2][sender n_local][2 * coll_ll_bytes]: where node-local PE s writes its
//                   LL message to this PE; 16-byte lines of {data 4 B, flag 4 B, data 4 B, flag 4 B}
//   proxy slots     worlds with proxy peers only (device_world::proxy_ring): [team PE n_pes][proxy_slot_bytes]:
//                   where team PE s puts (routed device RMA: ring or NVLink) its piece of a symmetric
//                   reduce / reducescatter, and its size in a collect, for this PE; read by this PE after a
//                   team barrier, free again after the next one
#pragma once

#include <cstdint>

#include "shoal/device_world.hpp"  // SHOAL_HOST_DEVICE

namespace shoal::detail::coll_ws {

SHOAL_HOST_DEVICE constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// Bytes of one channel's barrier words.
SHOAL_HOST_DEVICE constexpr uint64_t channel_bytes(int32_t n_local) {
  return round_up(3ull * 8 * static_cast<uint64_t>(n_local), 128);
}
/// Offset of channel c's words (c >= 1).
SHOAL_HOST_DEVICE constexpr uint64_t channel_offset(int32_t n_local, uint32_t c) {
  return (c - 1ull) * channel_bytes(n_local);
}
/// Offset of ll_sent (ll_recv follows it).
SHOAL_HOST_DEVICE constexpr uint64_t ll_counters_offset(int32_t n_local, uint32_t channels) {
  return channel_bytes(n_local) * (channels > 1 ? channels - 1ull : 0ull);
}
/// Bytes of one LL slot: a 16-byte line carries 8 payload bytes.
SHOAL_HOST_DEVICE constexpr uint64_t ll_slot_bytes(uint32_t ll_bytes) { return 2ull * ll_bytes; }
/// Offset of the LL slots.
SHOAL_HOST_DEVICE constexpr uint64_t ll_slots_offset(int32_t n_local, uint32_t channels) {
  return round_up(ll_counters_offset(n_local, channels) + 16ull * static_cast<uint64_t>(n_local), 256);
}
/// Offset of the slot that sender `s` (node-local) writes with `parity`.
SHOAL_HOST_DEVICE constexpr uint64_t ll_slot_offset(int32_t n_local, uint32_t channels, uint32_t ll_bytes,
                                                    uint32_t parity, int32_t s) {
  return ll_slots_offset(n_local, channels) +
         (static_cast<uint64_t>(parity) * static_cast<uint64_t>(n_local) + static_cast<uint64_t>(s)) *
             ll_slot_bytes(ll_bytes);
}
/// Bytes of the workspace before the proxy slots.
SHOAL_HOST_DEVICE constexpr uint64_t base_bytes(int32_t n_local, uint32_t channels, uint32_t ll_bytes) {
  return ll_slots_offset(n_local, channels) + 2ull * static_cast<uint64_t>(n_local) * ll_slot_bytes(ll_bytes);
}
/// Bytes of one proxy slot in a world of n_pes PEs: 64 KiB, less in large worlds so that the slots of
/// all PEs stay near 1 MiB (never below 256 bytes); a multiple of 256.
SHOAL_HOST_DEVICE constexpr uint64_t proxy_slot_bytes(int32_t n_pes) {
  const uint64_t share = n_pes > 0 ? (1ull << 20) / static_cast<uint64_t>(n_pes) / 256 * 256 : 65536;
  return share > 65536 ? 65536 : (share < 256 ? 256 : share);
}
/// Offset of the proxy slots (worlds with proxy peers).
SHOAL_HOST_DEVICE constexpr uint64_t proxy_slots_offset(int32_t n_local, uint32_t channels, uint32_t ll_bytes) {
  return round_up(base_bytes(n_local, channels, ll_bytes), 256);
}
/// Bytes of the whole workspace; proxy_pes: the world's PE count when it has proxy peers, else 0.
SHOAL_HOST_DEVICE constexpr uint64_t total_bytes(int32_t n_local, uint32_t channels, uint32_t ll_bytes,
                                                 int32_t proxy_pes = 0) {
  return proxy_pes <= 0 ? base_bytes(n_local, channels, ll_bytes)
                        : proxy_slots_offset(n_local, channels, ll_bytes) +
                              static_cast<uint64_t>(proxy_pes) * proxy_slot_bytes(proxy_pes);
}

}  // namespace shoal::detail::coll_ws
