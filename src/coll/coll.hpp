// Host team collectives: the generic, type-erased implementations behind the generated typed entry
// points (src/coll/coll_api.cc, from codegen/gen_host_api.py). Each takes the public call's name
// for its errors, runs on the default world, converts shoal::error into the C error contract
// (facade::guarded) and returns 0 or the SHOAL_ERR_* code.
//
// Protocol of every call on team T (host-memory heaps; every member calls):
//   1. validate locally; write this PE's description of the call (kind, type, op, root, nelems,
//      dest/source heap offsets, or its local error) into its team_sync post buffer (seq parity);
//   2. team barrier A (dissemination over T's members, team_sync::barrier_round, epochs): every
//      source is ready, every dest is free to be written;
//   3. read every member's description: any local error, or any disagreement, throws on every
//      member alike (same records, same decision), before any data moves;
//   4. move data by pulling from peers' heaps (host memory_ops::copy) into this PE's own dest (or a
//      local buffer for reductions, so dest may alias source);
//   5. team barrier B: nobody reads a source any more (reductions then write dest locally).
// Memory ordering: barrier rounds are release stores / acquire loads, so a member's writes before
// it enters a collective are visible to the pulls of every member, and dest is complete on return.
#pragma once

#include <cstddef>

#include "runtime/scalar.hpp"
#include "shoal/team.h"

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

/// dst[i] = dst[i] op src[i] for n elements of `type` (exposed for unit tests).
void combine(scalar type, reduce_op op, void* dst, const void* src, size_t n);

}  // namespace shoal::detail::coll
