// The device handle of a world: everything a kernel needs to reach the symmetric heap, in one
// trivially-copyable struct passed to kernels by value (or held in the facade's per-translation-
// unit __constant__ copy). Plain C++: host code builds and inspects it; <shoal/device/*.cuh> use it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "shoal/types.h"

#if defined(__CUDACC__)
#define SHOAL_HOST_DEVICE __host__ __device__
#else
#define SHOAL_HOST_DEVICE
#endif

namespace shoal {

struct device_team;
namespace detail {
struct proxy_ring;
}

/// How this PE reaches a peer PE, chosen once at init (transport layer) and the same for host calls
/// and kernels. self, shared_memory, p2p_nvlink and p2p_pcie are load/store through the peer's heap
/// mapped into this process; proxy goes through the host proxy (network engine); none: unreachable.
enum class peer_path : uint8_t { self, shared_memory, p2p_nvlink, p2p_pcie, none, proxy };

/// True for the paths that reach the peer's heap by plain loads and stores.
SHOAL_HOST_DEVICE constexpr bool is_load_store(peer_path path) { return path <= peer_path::p2p_pcie; }

namespace detail {

/// device_world::flags bit 1: some PE of the job has a proxy peer. Device barriers then signal with
/// the epoch or count they reached (a proxy peer's signal is a p through the ring); without it they
/// count arrivals with red.add and consume them with red.add of -1, which needs no load of private
/// state before the signal (device_sync). Set or clear on every PE alike.
constexpr uint32_t kFlagBarrierEpochs = 1u << 1;

/// Text of a SHOAL_CMP_* operator, for the reports of device waits (device printf, and the host that prints a
/// device_report_box).
SHOAL_HOST_DEVICE constexpr const char* cmp_text(int cmp) {
  switch (cmp) {
    case SHOAL_CMP_EQ:
      return "==";
    case SHOAL_CMP_NE:
      return "!=";
    case SHOAL_CMP_GT:
      return ">";
    case SHOAL_CMP_LE:
      return "<=";
    case SHOAL_CMP_LT:
      return "<";
    case SHOAL_CMP_GE:
      return ">=";
    default:
      return "?";
  }
}

/// What a kernel's failure report says (device_report_box::kind).
enum class device_report_kind : uint32_t {
  wait_timeout = 1,  ///< a bounded device wait expired (addr, pe = the word's owner, cmp, expected, seen, elapsed_ns)
  pe_out_of_range,   ///< pe not in [0, n_pes)
  pe_behind_proxy,   ///< pe is a proxy peer and the call has no proxy route
  pe_unreachable,    ///< pe has no load/store mapping here
  bad_argument,      ///< `what` had the bad `value`
  proxy_failed,      ///< the proxy answered `what` with status `value` (pe < 0: fence or quiet, no one peer)
  global_exit,       ///< shoal_global_exit(value) in a kernel
  peer_stalled,      ///< shoal::device::report_stall: a protocol's own wait on `pe` expired (addr, value = channel
                     ///< or -1, expected = the value wanted, seen = the value read, elapsed_ns = the time waited)
};

/// A kernel's failure report, in pinned host memory mapped into the device (device_world::report_box): the first
/// failing thread of the PE claims it (state 0 -> 1), fills it, makes it visible at system scope, sets state 2 and
/// traps; the host prints it (src/runtime/device_reports.hpp: a thread that looks every 10 ms, and a last look when
/// the world stops), after the trap too, since it reads host memory and not the failed context. Kernels do not call
/// printf: a kernel whose code may call an external function (vprintf) pays a shared-memory drain before every
/// system fence (ptxas), 0.075 us per fence on the H200 (docs/results/gpu-1xh200/protocol/README.md).
struct device_report_box {
  static constexpr int kTextBytes = 96;
  uint32_t state;  ///< 0 free, 1 being written, 2 ready, 3 printed (host)
  uint32_t kind;   ///< device_report_kind
  int32_t my_pe;
  int32_t pe;     ///< the peer or owner the report names (-1: none)
  int32_t n_pes;  ///< pe_out_of_range
  int32_t cmp;    ///< wait_timeout: the SHOAL_CMP_* operator
  uint64_t elapsed_ns;
  uint64_t addr;
  uint64_t expected;
  uint64_t seen;
  int64_t value;
  char call[kTextBytes];  ///< the call's name, cut to kTextBytes - 1 characters
  char what[kTextBytes];  ///< bad_argument, proxy_failed: what was wrong
};

/// Producer-side cache of the words the proxy writes, in memory local to the producers (device memory for
/// kernels: device_sync::proxy_gate), and a cap on how many producers read the ring's own words at once. A
/// kernel's poll of the ring is a read of host memory across PCIe; with every thread of a 132 x 512 grid
/// polling, a put + quiet round over the proxy takes 240-440 ms and a p + quiet from every thread finds no
/// answer in 20 s; through the gate, 2-7 ms and 2.1 s (docs/results/proxy/analysis.md). At most 2 x kRingPollers
/// threads read the ring at a time and publish what they read; the others watch the gate's copies (lower bounds: the
/// counters only grow). shoal/detail/proxy_ring.hpp (ring_gated) uses it.
struct ring_gate {
  uint64_t released;    ///< a lower bound of proxy_ring::released
  uint64_t quiet_done;  ///< a lower bound of proxy_ring::quiet_done
  uint64_t pollers;     ///< producers reading the ring's words now through a place of the gate
  uint64_t waiting;     ///< producers in a wait now (the first kRingPollers read the ring without a place)
};

/// shoal's device-side sync words, at `device_world::sync_offset` in every PE's heap (GPU memory).
/// Zero-filled when the heap grows; never reset: epochs only grow, counts return to zero.
struct device_sync {
  static constexpr int kMaxRounds = 32;
  /// Dissemination barrier: word r is signalled by PE (me - 2^r) mod n and awaited (acquire polls) by
  /// this PE. With kFlagBarrierEpochs the signal stores the barrier epoch the sender has reached (a
  /// proxy peer's through the ring) and the wait is for the word >= this PE's epoch. Without it the
  /// signal is red.add(1) and this PE consumes it with red.add(-1) before its wait for the word >= 0 (as
  /// int64): the word counts signals not yet consumed, and no private epoch is loaded before the signal.
  uint64_t barrier_round[kMaxRounds];
  /// This PE's own barrier epoch (kFlagBarrierEpochs only): written and read only by this PE's GPU (the
  /// one thread that runs the barrier), kept here so that it survives across kernels.
  uint64_t barrier_epoch;
  /// The proxy ring's gate (ring_gate): read and written by this PE's kernels only.
  ring_gate proxy_gate;
  /// The word a fetching AMO (<shoal/device/amo.cuh>) issues its atom on when its peer is outside the direct run,
  /// before its cold path gives the real result (detail::amo_target): written by this PE's kernels only, never read.
  uint64_t amo_scratch;
  uint64_t reserved[10];

  /// Team barriers (<shoal/device/coll.cuh>) count signals per pair of PEs, indexed by node-local PE
  /// index (device_world::local_of), so that any number of teams share the words: a team barrier's
  /// dissemination round sends PE `to` at most one signal from this PE, and members call a team's
  /// collectives in the same order, so the n-th signal from a PE is always the one awaited n-th.
  static constexpr int kMaxTeamPeers = 128;
  /// Word k: team-barrier signals from node-local PE k. With kFlagBarrierEpochs: how many PE k has sent
  /// this PE (written st.release.sys by PE k only, with its own team_sent count; read with acquire polls
  /// by this PE). Without it: how many are not yet consumed (PE k adds 1 per signal, this PE adds -1 per
  /// wait, before it waits for the word >= 0 as int64), as barrier_round.
  uint64_t team_arrived[kMaxTeamPeers];
  /// Word k: signals this PE has sent to node-local PE k (kFlagBarrierEpochs only). Private to this PE's
  /// barrier thread.
  uint64_t team_sent[kMaxTeamPeers];
  /// Word k: signals from node-local PE k that this PE's team barriers have consumed (kFlagBarrierEpochs
  /// only). Private.
  uint64_t team_consumed[kMaxTeamPeers];
};
static_assert(std::is_trivially_copyable_v<device_sync>);

}  // namespace detail

/// A world's view for kernels. Remote address of local pointer p on PE pe:
///   region + local_of(pe) * stride + (p - heap_base)
struct device_world {
  int32_t my_pe = -1;
  int32_t n_pes = 0;
  char* heap_base = nullptr;  ///< this PE's heap, in this process's address space
  char* region = nullptr;     ///< heap of node-local index 0; local k's heap at region + k*stride
  uint64_t stride = 0;        ///< bytes between consecutive local PEs' heaps (= heap reserve)
  /// Device memory, n_pes entries: the PE's node-local index if its heap is mapped here and the
  /// GPU can load/store it (NVLink/PCIe P2P), else -1. nullptr means the identity (every PE is
  /// local and reachable, local index == pe): the common single-node case. Device calls read it only
  /// for a PE outside the direct run below.
  const int32_t* local_of_pe = nullptr;
  /// The direct run: PEs direct_first .. direct_first + direct_count - 1 are load/store peers with node-local indices
  /// direct_local, direct_local + 1, ... (the longest such run of local_of_pe: all PEs of one node when the job
  /// places PEs by node, every PE on a single node). A device call finds such a PE's local index by a subtraction
  /// and a compare, with no memory read; any other PE takes the call's cold path, which reads the tables.
  /// direct_count 0 (a world not made by shoal_init): every PE takes the cold path.
  int32_t direct_first = 0;
  int32_t direct_count = 0;
  int32_t direct_local = 0;
  /// Device memory, direct_count entries, written once at init: entry k is the distance in bytes from this PE's heap
  /// to the heap of PE direct_first + k as mapped here (region + (direct_local + k) * stride - heap_base, modulo
  /// 2^64), so that a run peer's copy of p is p + entry k. The AMOs read it (detail::run_peer_ptr) with a load the
  /// compiler may keep in a register across a loop and across their cold call, where the arithmetic above is redone
  /// from the kernel's constant bank after every result. nullptr when direct_count is 0.
  const uint64_t* direct_offset = nullptr;
  /// Device memory, n_pes entries: how kernels reach each PE (load/store, proxy, none), so device
  /// calls branch per peer. nullptr: every PE is load/store-reachable (same case as local_of_pe).
  const peer_path* path_of_pe = nullptr;
  uint64_t sync_offset = 0;      ///< offset of detail::device_sync in every heap
  uint64_t wait_timeout_ns = 0;  ///< a device wait longer than this reports and traps; 0: unbounded
  uint32_t flags = 0;  ///< bit 0: SHOAL_COLL_ALGO=direct (device/coll.cuh kFlagCollDirect); bit 1: kFlagBarrierEpochs
  /// Device memory, max_teams entries indexed by shoal_team_t: each team's device handle as this PE
  /// sees it (n_pes 0 for a free slot or a team this PE is not in). Written by the runtime when a
  /// team is created or destroyed; read by the facade's team collectives (device::team_of).
  const struct device_team* teams = nullptr;
  int32_t max_teams = 0;
  int32_t n_local = 0;         ///< PEs whose heaps are mapped here (node-local indices 0 .. n_local-1)
  uint64_t coll_offset = 0;    ///< offset of the collective workspace (device/coll.cuh, coll_ws) in every heap
  uint32_t coll_channels = 0;  ///< channels (CTAs of one on-stream collective) the workspace has words for
  uint32_t coll_ll_bytes = 0;  ///< payload bytes of one low-latency (LL) slot: the largest LL message
  /// This PE's proxy request ring (shoal/detail/proxy_ring.hpp) as the GPU sees it (pinned host
  /// memory, device-mapped) when some peer's path is proxy; nullptr otherwise. Read only in the
  /// cold branch of a device call (local_of(pe) < 0) and by fence/quiet/barriers of such a world.
  detail::proxy_ring* proxy_ring = nullptr;
  /// The ring's geometry, so that a kernel finds a slot's payload area without reading host memory: its slots, the
  /// bytes of each slot's payload area (0: none), and the largest put (in payload-sized pieces) or blocking get (one
  /// piece) a kernel sends through payload areas (SHOAL_PROXY_PAYLOAD_MAX; 0: none).
  uint32_t proxy_slots = 0;
  uint32_t proxy_payload = 0;
  uint32_t proxy_payload_max = 0;
  /// Where this PE's kernels report a failure before they trap (detail::device_report_box, pinned host memory as
  /// the device sees it); nullptr: no report, the trap alone (a world not made by shoal_init).
  detail::device_report_box* report_box = nullptr;

  /// The node-local index of `pe`, or -1 when this GPU cannot load/store its heap.
  SHOAL_HOST_DEVICE int32_t local_of(int32_t pe) const { return local_of_pe == nullptr ? pe : local_of_pe[pe]; }
  /// The node-local index of `pe` if it is in the direct run, else -1 (any pe, in range or not): no memory read.
  SHOAL_HOST_DEVICE int32_t direct_local_of(int32_t pe) const {
    const uint32_t d = direct_index(pe);
    return d < static_cast<uint32_t>(direct_count) ? static_cast<int32_t>(d) + direct_local : -1;
  }
  /// `pe`'s index in the direct run, pe - direct_first as unsigned: below direct_count exactly when `pe` is in it.
  SHOAL_HOST_DEVICE uint32_t direct_index(int32_t pe) const {
    return static_cast<uint32_t>(pe) - static_cast<uint32_t>(direct_first);
  }
  /// How kernels reach `pe` (0 <= pe < n_pes).
  SHOAL_HOST_DEVICE peer_path path_of(int32_t pe) const {
    if (path_of_pe != nullptr) return path_of_pe[pe];
    return pe == my_pe ? peer_path::self : peer_path::p2p_nvlink;
  }
};
static_assert(std::is_trivially_copyable_v<device_world>);
static_assert(std::is_standard_layout_v<device_world>);

namespace detail {

/// A world's direct run (device_world::direct_first, direct_count, direct_local).
struct direct_run {
  int32_t first = 0;
  int32_t count = 0;
  int32_t local = 0;
};

/// The longest run of consecutive PEs whose node-local indices are consecutive and >= 0 in `local_of`
/// (`n` entries, -1 where no load/store path), the first of equal runs: the one whose PEs device calls reach
/// without reading a table. count 0 when no entry is >= 0.
inline direct_run longest_direct_run(const int32_t* local_of, int32_t n) {
  direct_run best;
  for (int32_t pe = 0; pe < n;) {
    if (local_of[pe] < 0) {
      ++pe;
      continue;
    }
    int32_t end = pe + 1;
    while (end < n && local_of[end] >= 0 && local_of[end] == local_of[end - 1] + 1) ++end;
    if (end - pe > best.count) best = {pe, end - pe, local_of[pe]};
    pe = end;
  }
  return best;
}

/// The entries of device_world::direct_offset for `run` (run.count of them, into `out`) in a world whose local k's
/// heap is at region + k * stride and whose own heap is at heap_base: entry k takes heap_base to local run.local + k.
inline void direct_offsets(direct_run run, uint64_t region, uint64_t stride, uint64_t heap_base, uint64_t* out) {
  for (int32_t k = 0; k < run.count; ++k) out[k] = region + static_cast<uint64_t>(run.local + k) * stride - heap_base;
}

}  // namespace detail

}  // namespace shoal
