/* shoal teams (OpenSHMEM 1.5 teams with the shoal prefix): ordered subsets of the world's PEs.
 * A team handle is an index into the world's team table, identical on every member. Plain C11 and
 * C++; included by <shoal/shoal.h>. Host collectives over teams (shoal_team_sync, shoal_barrier, broadcast,
 * fcollect, collect, alltoall, reduce, reducescatter) are declared in <shoal/detail/host_api.h>. */
#ifndef SHOAL_TEAM_H_
#define SHOAL_TEAM_H_

#include <stddef.h>
#include <stdint.h>

#include "shoal/types.h"

SHOAL_EXTERN_C_BEGIN

/** A team handle: a slot of the world's team table, the same number on every member of the team. */
typedef int32_t shoal_team_t;

#define SHOAL_TEAM_INVALID ((shoal_team_t)-1) /* no team: what a split gives the parent's PEs left out */
#define SHOAL_TEAM_WORLD ((shoal_team_t)0)    /* every PE, team PE == world PE */
#define SHOAL_TEAM_SHARED ((shoal_team_t)1)   /* PEs whose heaps this PE can load/store (same node), by world PE */
#define SHOALX_TEAM_NODE ((shoal_team_t)2)    /* PEs on this PE's node, by world PE */
#define SHOAL_MAX_TEAMS 64                    /* slots in the team table, the four predefined ones included */
/* One PE per node: those whose index among their node's PEs equals this PE's (team_my_pe(SHOALX_TEAM_NODE)), by
 * world PE. On one node, this PE alone. The table's last slot (splits take the lowest free ones). */
#define SHOALX_TEAM_SAME_MYPE_NODE ((shoal_team_t)(SHOAL_MAX_TEAMS - 1))
#define SHOAL_PE_INVALID (-1) /* no PE: what shoal_team_translate_pe returns for a PE outside the destination team */

/** A team id (shoalx_team_get_uniqueid): names one shoalx_team_init among the PEs that were given it. 0 is no id. */
typedef uint64_t shoal_team_uniqueid_t;

/** Team options. A field is read only when its bit is set in the call's config_mask. */
typedef struct {
  int num_contexts; /* contexts the team may create (recorded; shoal has no contexts yet) */
} shoal_team_config_t;
#define SHOAL_TEAM_NUM_CONTEXTS (1L << 0)

/** This PE's number in `team` (0 .. n_pes-1); -1 for SHOAL_TEAM_INVALID. A destroyed or unknown handle is an
 * error. Not collective. */
SHOAL_API int shoal_team_my_pe(shoal_team_t team);
/** Number of PEs in `team`; -1 for SHOAL_TEAM_INVALID. A destroyed or unknown handle is an error. Not collective. */
SHOAL_API int shoal_team_n_pes(shoal_team_t team);
/** Copies the fields selected by config_mask (SHOAL_TEAM_NUM_CONTEXTS) of `team`'s config to *config.
 * Returns 0, or nonzero (a SHOAL_ERR_* code) on a bad handle, mask or null config. SHOAL_TEAM_INVALID returns
 * SHOAL_ERR_INVALID_ARGUMENT and writes nothing, in every error mode (OpenSHMEM's answer). Not collective. */
SHOAL_API int shoal_team_get_config(shoal_team_t team, long config_mask, shoal_team_config_t* config);
/** The number in `dest_team` of the PE numbered src_pe in `src_team`; -1 when that PE is not in dest_team, src_pe
 * is out of range, or either handle is SHOAL_TEAM_INVALID. This PE must belong to both teams. Not collective. */
SHOAL_API int shoal_team_translate_pe(shoal_team_t src_team, int src_pe, shoal_team_t dest_team);

/** Makes the team of parent PEs start, start+stride, …, start+(size-1)*stride (numbers in parent_team; stride
 * may be negative, or anything when size is 1). Collective over the members of parent_team only, with identical
 * arguments; other PEs do not call and may do anything meanwhile (on any heap and transport). A member that does
 * not call makes the others fail after SHOAL_WAIT_TIMEOUT. PEs of the new team get its handle (the same on all), the
 * parent's other PEs SHOAL_TEAM_INVALID. config (may be NULL when config_mask is 0) sets the fields named in
 * config_mask. Returns 0, or a SHOAL_ERR_* code on every member when any member passed a bad or mismatched argument
 * (the job stays usable). As OpenSHMEM specifies, these give SHOAL_TEAM_INVALID and a nonzero return in every error
 * mode, without stopping the job: a triplet that names no team (size < 1, a PE outside the parent;
 * SHOAL_ERR_INVALID_ARGUMENT, with a warning line in abort mode), a full team table (SHOAL_ERR_OUT_OF_MEMORY, with a
 * warning), and parent_team == SHOAL_TEAM_INVALID (SHOAL_ERR_INVALID_ARGUMENT, at once, with no communication and
 * no warning: the parent's PEs outside a team pass it on purpose). */
SHOAL_API int shoal_team_split_strided(shoal_team_t parent_team, int start, int stride, int size,
                                       const shoal_team_config_t* config, long config_mask, shoal_team_t* new_team);
/** Splits parent_team into a grid of xrange columns: parent PE r is at x = r % xrange, y = r / xrange. Each PE
 * gets its row (x-axis team: the PEs with its y, numbered by x) and its column (y-axis team: the PEs with its x,
 * numbered by y). xrange > n_pes(parent) acts as n_pes(parent). Collective over the members of parent_team, as
 * shoal_team_split_strided (xrange < 1 is refused as a triplet that names no team is); all x-axis teams share one
 * handle, all y-axis teams another. */
SHOAL_API int shoal_team_split_2d(shoal_team_t parent_team, int xrange, const shoal_team_config_t* xaxis_config,
                                  long xaxis_mask, shoal_team_t* xaxis_team, const shoal_team_config_t* yaxis_config,
                                  long yaxis_mask, shoal_team_t* yaxis_team);
/** Releases this PE's membership of `team`; its handle is reused by a later split once every member destroyed it.
 * Called by each member; needs no communication. SHOAL_TEAM_INVALID is a no-op; predefined teams cannot be
 * destroyed. */
SHOAL_API void shoal_team_destroy(shoal_team_t team);

/** Makes a new team id, to be handed to the PEs of one shoalx_team_init out of band (by RMA, a broadcast, MPI...).
 * The id's rendezvous words live on this PE, which need not join the team; at most SHOALX_TEAM_INIT_IDS ids of one PE
 * may be pending (made and not yet used by every member) at once. Returns 0, or a SHOAL_ERR_* code (null uniqueid,
 * too many pending ids). Not collective. */
SHOAL_API int shoalx_team_get_uniqueid(shoal_team_uniqueid_t* uniqueid);
#define SHOALX_TEAM_INIT_IDS 8
#define SHOALX_TEAM_INIT_MAX_PES 1024 /* the most PEs one shoalx_team_init can join */
/** Makes a team of any n_pes_in_team PEs of the world: each calls with the same `uniqueid` (from
 * shoalx_team_get_uniqueid) and n_pes_in_team, and its own my_index (0 .. n_pes_in_team-1, each once), which is its
 * number in the new team. Collective over those PEs only (no parent team; other PEs do not call). Every member gets
 * the same handle in *team. config (may be NULL when config_mask is 0) as for the splits. Bounded by
 * SHOAL_WAIT_TIMEOUT while the members gather. Returns 0, or a SHOAL_ERR_* code: bad arguments (null team, an id not
 * made by shoalx_team_get_uniqueid, my_index out of range; this PE only); on every member, two members with one
 * my_index or no team slot free on every member; a member whose n_pes_in_team differs from the first member's, or
 * that comes once the team is complete (the id is then used up), fails (SHOAL_ERR_MISMATCH, SHOAL_ERR_INVALID_ARGUMENT)
 * with every member that has not yet left. A team that is not strided in world PEs has no device handle
 * (shoalx_team_device_handle), so its collectives work on host-memory heaps only (GPU heaps run them as kernels on the
 * device handle: SHOAL_ERR_UNSUPPORTED there); its point-to-point use (translate_pe) works everywhere. */
SHOAL_API int shoalx_team_init(shoal_team_t* team, shoal_team_uniqueid_t uniqueid, const shoal_team_config_t* config,
                               long config_mask, int n_pes_in_team, int my_index);

/** Writes `team`'s shoal::device_team (<shoal/device_team.hpp>) to out, for kernels; nbytes must be
 * sizeof(shoal::device_team). Only teams that are strided in world PEs have one (SHOAL_ERR_UNSUPPORTED else).
 * Returns 0 or a SHOAL_ERR_* code. Not collective. */
SHOAL_API int shoalx_team_device_handle(shoal_team_t team, void* out, size_t nbytes);

SHOAL_EXTERN_C_END

#endif /* SHOAL_TEAM_H_ */
