// Host team collectives: the generic, type-erased implementations behind the generated typed entry
// points (src/coll/coll_api_gen.cc, from codegen/gen_host_api.py). Each takes the public call's name
// for its errors, runs on the default world, converts shoal::error into the C error contract
// (c_api::guarded) and returns 0 or the SHOAL_ERR_* code.
//
// Two implementations: on a GPU heap, a team that is strided and whose members are all
// load/store-reachable runs the on-stream kernels (below, runs_on_gpu_kernels); every other call --
// host-memory heaps, and GPU heaps whose team has a proxy member (another node, SHOAL_DISABLE_P2P=1)
// or is not strided -- runs the host protocol:
//   1. validate locally; write this PE's description of the call (kind, type, op, root, nelems,
//      dest/source offsets: in the heap, or of a global/static variable in the data segment with
//      kDataOffsetBit, or its local error) into its team_sync post buffer (seq parity);
//   2. team barrier A (dissemination over T's members, team_sync::barrier_round, epochs): every
//      source is ready, every dest is free to be written;
//   3. read every member's description: any local error, or any disagreement, throws on every
//      member alike (same records, same decision), before any data moves;
//   4. move data by pulling from peers' memory (peer_transport::get: a copy from a mapped heap or data
//      segment, a get through the proxy) into this PE's own dest (or a local buffer for reductions, so
//      dest may alias source);
//   5. team barrier B: nobody reads a source any more (reductions then write dest locally). A call that
//      moves no data (a sync, an empty transfer) on a team other than the predefined ones still ends with
//      barrier B, so that nobody reads a member's description after that member left (it may destroy the
//      team and zero its words of the slot for a new team there).
// Each member is reached through its own path: on host heaps, mapped members' sync words by loads
// and stores, proxy members' by get (posts) and atomic set (barrier rounds) at the same heap offsets.
// On GPU heaps the team_sync words are GPU memory, so every member's (this PE's too) go through the
// transport: CUDA copies and one-thread atomic kernels for mapped members, the proxy for the others;
// a GPU-heap call first waits for the caller's earlier work on the legacy default stream.
// Memory ordering: barrier rounds are release stores / acquire loads (transport: a blocking atomic,
// complete at the target before the next round), so a member's writes before it enters a collective
// are visible to the pulls of every member, and dest is complete on return.
#pragma once

#include <cstddef>

#include "shoal/team.h"
#include "transport/scalar.hpp"

namespace shoal::detail::coll {

enum class reduce_op : int { and_ = 1, or_, xor_, min_, max_, sum_, prod_ };

const char* to_string(reduce_op op);

/// shoal_team_sync (quiet = false) and shoal_barrier (quiet first).
int sync(const char* call, shoal_team_t team, bool quiet) noexcept;
int broadcast(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems, size_t elem_bytes,
              int root) noexcept;
int fcollect(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
             size_t elem_bytes) noexcept;
/// Each member contributes its own nelems; dest gets them concatenated in team-rank order.
int collect(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
            size_t elem_bytes) noexcept;
int alltoall(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
             size_t elem_bytes) noexcept;
int reduce(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
           reduce_op op) noexcept;
/// source holds n_pes(team) * nreduce elements; team PE r gets block r of the reduced vector.
int reducescatter(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
                  reduce_op op) noexcept;

// --- on a CUDA stream (GPU heaps; src/coll/coll_stream.cc + coll_kernels.cu) -------------------
// Validated on the host when called (same checks and messages as the blocking calls, minus the
// cross-PE agreement); the work is enqueued on `stream` (a cudaStream_t) and is capturable in a CUDA
// graph. dest and source are symmetric (GPU heap). On host-memory worlds: SHOAL_ERR_UNSUPPORTED. A
// team with a member that this GPU cannot load/store (a proxy peer) is refused on the host, naming
// the member, before any stream work (a host protocol cannot run inside a stream or a graph).
// Return 0 or the SHOAL_ERR_* code (errors follow the C API's error mode, as the blocking calls).
// blocking (the blocking host calls on GPU heaps): the members first exchange their arguments (or
// local errors) by an LL fcollect and fail alike on a bad or mismatched call, before data moves.
int sync_on_stream(const char* call, shoal_team_t team, bool quiet, void* stream, bool blocking = false) noexcept;
int broadcast_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                        size_t elem_bytes, int root, void* stream, bool blocking = false) noexcept;
int fcollect_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                       size_t elem_bytes, void* stream, bool blocking = false) noexcept;
int alltoall_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                       size_t elem_bytes, void* stream, bool blocking = false) noexcept;
/// dest's extent is checked on the device side only (it depends on the other members' sizes).
int collect_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                      size_t elem_bytes, void* stream) noexcept;
int reduce_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
                     reduce_op op, void* stream, bool blocking = false) noexcept;
int reducescatter_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce,
                            scalar type, reduce_op op, void* stream, bool blocking = false) noexcept;

// --- the blocking host collectives on GPU heaps (coll_stream.cc) ----------------------------------
// On a GPU heap each blocking call above whose team runs_on_gpu_kernels runs as its on-stream form on
// the legacy default stream (so it follows the caller's earlier work there, as cudaMemcpy does) and
// waits for it; the others run the host protocol (coll.cc).
/// True when the default world's heap is GPU memory and `team` is strided with every member
/// load/store-reachable from this GPU: the same answer on every member (a proxy path is symmetric:
/// another node, or the job-wide SHOAL_DISABLE_P2P). False when not initialized or `team` is not a
/// team of this PE (the host protocol reports it).
bool runs_on_gpu_kernels(const char* call, shoal_team_t team) noexcept;
/// Waits until the work the caller enqueued earlier on the legacy default stream (and, by CUDA's
/// implicit synchronization, on every blocking stream) is complete; throws on a CUDA error (or
/// errc::peer_failure after a recorded job failure). Unsupported in builds without CUDA.
void wait_for_earlier_gpu_work(const char* call);
/// rc of an on-stream call; when 0, waits for the legacy default stream (errors reported as usual).
int finish_blocking(const char* call, int rc) noexcept;
/// shoal_collectmem on a GPU heap: members' sizes by an LL exchange, then pulls by the copy engines
/// between two team barriers.
int collect_on_gpu(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                   size_t elem_bytes) noexcept;

/// dst[i] = dst[i] op src[i] for n elements of `type` (exposed for unit tests).
void combine(scalar type, reduce_op op, void* dst, const void* src, size_t n);

}  // namespace shoal::detail::coll
