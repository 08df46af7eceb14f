/* shoal's NVSHMEM compatibility layer, hand-written part: NVSHMEM's types, constants and struct layouts
 * (NVSHMEM 3.8 ABI sizes, checked below), and the entry points whose NVSHMEM types differ from shoal's
 * (init attributes, unique ids, team configs, status codes), as inline wrappers over shoal's API.
 * Included by the generated <nvshmem.h>; not for direct use. */
#ifndef SHOAL_COMPAT_NVSHMEM_BASE_H_
#define SHOAL_COMPAT_NVSHMEM_BASE_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoal/collective_launch.h"
#include "shoal/shoal.h"

#if defined(__cplusplus)
#define SHOAL_NV_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define SHOAL_NV_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
#if defined(__CUDACC__)
#define SHOAL_NV_HD __host__ __device__
#else
#define SHOAL_NV_HD
#endif

/* --- versions: the NVSHMEM API level this layer provides (vendor 3.8.0), the OpenSHMEM level shoal follows --- */
#define NVSHMEM_MAJOR_VERSION SHOAL_MAJOR_VERSION
#define NVSHMEM_MINOR_VERSION SHOAL_MINOR_VERSION
#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 8
#define NVSHMEM_VENDOR_PATCH_VERSION 0
#define NVSHMEM_VENDOR_VERSION \
  ((NVSHMEM_VENDOR_MAJOR_VERSION)*10000 + (NVSHMEM_VENDOR_MINOR_VERSION)*100 + (NVSHMEM_VENDOR_PATCH_VERSION))
#define NVSHMEM_VENDOR_STRING "shoal (NVSHMEM 3.8.0 API)"
#define NVSHMEM_MAX_NAME_LEN SHOAL_MAX_NAME_LEN
#define SHOAL_NVSHMEM_COMPAT 1 /* this <nvshmem.h> is shoal's */

SHOAL_EXTERN_C_BEGIN

/* --- enums and constants (NVSHMEM's values) --- */
typedef enum nvshmemi_cmp_type {
  NVSHMEM_CMP_EQ = SHOAL_CMP_EQ,
  NVSHMEM_CMP_NE = SHOAL_CMP_NE,
  NVSHMEM_CMP_GT = SHOAL_CMP_GT,
  NVSHMEM_CMP_LE = SHOAL_CMP_LE,
  NVSHMEM_CMP_LT = SHOAL_CMP_LT,
  NVSHMEM_CMP_GE = SHOAL_CMP_GE,
  NVSHMEM_CMP_SENTINEL = INT_MAX,
} nvshmemx_cmp_type_t;
typedef enum nvshmemi_thread_support {
  NVSHMEM_THREAD_SINGLE = SHOAL_THREAD_SINGLE,
  NVSHMEM_THREAD_FUNNELED = SHOAL_THREAD_FUNNELED,
  NVSHMEM_THREAD_SERIALIZED = SHOAL_THREAD_SERIALIZED,
  NVSHMEM_THREAD_MULTIPLE = SHOAL_THREAD_MULTIPLE,
  NVSHMEM_THREAD_TYPE_SENTINEL = INT_MAX,
} nvshmemx_thread_support_t;
typedef enum {
  NVSHMEM_STATUS_NOT_INITIALIZED = SHOALX_STATUS_NOT_INITIALIZED,
  NVSHMEM_STATUS_IS_BOOTSTRAPPED = SHOALX_STATUS_IS_BOOTSTRAPPED,
  NVSHMEM_STATUS_IS_INITIALIZED = SHOALX_STATUS_IS_INITIALIZED,
  NVSHMEM_STATUS_LIMITED_MPG = 3,
  NVSHMEM_STATUS_FULL_MPG = 4,
  NVSHMEM_STATUS_INVALID = INT_MAX,
} nvshmemx_init_status_t;
typedef enum {
  NVSHMEM_PE_INVALID = -1,
} nvshmem_pe_index_t;
enum nvshmemi_signal_op { NVSHMEM_SIGNAL_SET = SHOAL_SIGNAL_SET, NVSHMEM_SIGNAL_ADD = SHOAL_SIGNAL_ADD };
/** The hints of nvshmemx_ask_smem (NVSHMEM 3.8 numbering). */
typedef enum nvshmemx_smem_amount_t {
  NVSHMEMX_SMEM_RECOMMENDED = 0,
  NVSHMEMX_SMEM_MINIMUM = 1,
  NVSHMEMX_SMEM_BARRIERS_ONLY = 2,
  NVSHMEMX_SMEM_AMOUNT_MAX = INT_MAX
} nvshmemx_smem_amount_t;
/* Status codes of the nvshmemx_* calls that return one (NVSHMEM's values). */
enum nvshmemx_status {
  NVSHMEMX_SUCCESS = 0,
  NVSHMEMX_ERROR_INVALID_VALUE,
  NVSHMEMX_ERROR_OUT_OF_MEMORY,
  NVSHMEMX_ERROR_NOT_SUPPORTED,
  NVSHMEMX_ERROR_SYMMETRY,
  NVSHMEMX_ERROR_GPU_NOT_SELECTED,
  NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
  NVSHMEMX_ERROR_INTERNAL,
  NVSHMEMX_ERROR_SENTINEL = 0x7fffffff
};
/* init flags (nvshmemx_init_attr) */
enum flags {
  NVSHMEMX_INIT_THREAD_PES = 1,
  NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1,
  NVSHMEMX_INIT_WITH_SHMEM = 1 << 2,
  NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3,
  NVSHMEMX_INIT_MAX = 1 << 31
};

/* --- teams --- */
typedef int32_t nvshmem_team_t;
typedef nvshmem_team_t nvshmemx_team_t;
typedef uint64_t nvshmemx_team_uniqueid_t;
#define NVSHMEM_TEAM_INVALID ((nvshmem_team_t)SHOAL_TEAM_INVALID)
#define NVSHMEM_TEAM_WORLD ((nvshmem_team_t)SHOAL_TEAM_WORLD)
#define NVSHMEM_TEAM_SHARED ((nvshmem_team_t)SHOAL_TEAM_SHARED)
#define NVSHMEMX_TEAM_NODE ((nvshmem_team_t)SHOALX_TEAM_NODE)
#define NVSHMEM_TEAM_WORLD_INDEX SHOAL_TEAM_WORLD
#define NVSHMEM_TEAM_SHARED_INDEX SHOAL_TEAM_SHARED
#define NVSHMEM_TEAM_NODE_INDEX SHOALX_TEAM_NODE
#define NVSHMEMX_TEAM_SAME_MYPE_NODE ((nvshmem_team_t)SHOALX_TEAM_SAME_MYPE_NODE)
#define NVSHMEM_TEAM_SAME_MYPE_NODE_INDEX SHOALX_TEAM_SAME_MYPE_NODE
/* Not provided (a compile error naming it when used): see docs/nvshmem-compat.md. */
#define NVSHMEM_TEAM_MC_SHARED NVSHMEM_TEAM_MC_SHARED_is_not_provided_by_shoal
#define NVSHMEM_MAX_TEAMS SHOAL_MAX_TEAMS

typedef struct {
  int version;
  int num_contexts;
  char padding[56];
} nvshmem_team_config_v1;
typedef struct {
  int version;
  int num_contexts;
  nvshmemx_team_uniqueid_t uniqueid;
  char padding[48];
} nvshmem_team_config_v2;
typedef nvshmem_team_config_v2 nvshmem_team_config_t;
#define NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS 0x0000000000000001
#define NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID 0x0000000000000002
#define NVSHMEM_TEAM_UNIQUID_INITIALIZER ((nvshmemx_team_uniqueid_t)0)
#define NVSHMEM_TEAM_CONFIG_INITIALIZER                           \
  {                                                               \
    (int)((2 << 16) + sizeof(nvshmem_team_config_t)), 0, 0, { 0 } \
  }

/* --- init attributes and unique ids (NVSHMEM 3.8 layouts) --- */
typedef struct {
  int version;
  char internal[124]; /* shoal's rendezvous id: the first 124 of shoal_uniqueid_t's bytes (the rest are zero) */
} nvshmemx_uniqueid_v1;
typedef nvshmemx_uniqueid_v1 nvshmemx_uniqueid_t;
typedef struct {
  int version;
  nvshmemx_uniqueid_v1* id;
  int myrank;
  int nranks;
} nvshmemx_uniqueid_args_v1;
typedef nvshmemx_uniqueid_args_v1 nvshmemx_uniqueid_args_t;
typedef struct {
  int version;
  nvshmemx_uniqueid_args_t uid_args;
  int cuda_device_id;
  char content[92];
} nvshmemx_init_args_v2;
typedef struct {
  int version;
  nvshmemx_uniqueid_args_t uid_args;
  char content[96];
} nvshmemx_init_args_v1;
typedef nvshmemx_init_args_v2 nvshmemx_init_args_t;
typedef struct {
  int version;
  void* mpi_comm;
  nvshmemx_init_args_t args;
} nvshmemx_init_attr_v2;
typedef struct {
  int version;
  void* mpi_comm;
  nvshmemx_init_args_t args;
} nvshmemx_init_attr_v1;
typedef nvshmemx_init_attr_v2 nvshmemx_init_attr_t;
#define NVSHMEM_INIT_ATTR_VER 1
#define NVSHMEMX_UNIQUEID_INITIALIZER                     \
  {                                                       \
    (int)((1 << 16) + sizeof(nvshmemx_uniqueid_t)), { 0 } \
  }
#define NVSHMEMX_UNIQUEID_ARGS_INITIALIZER \
  { (int)((1 << 16) + sizeof(nvshmemx_uniqueid_args_t)), NULL, -1, -1 }
#define NVSHMEM_INIT_ARGS_V2_IDENTIFIER (2 << 16) + sizeof(nvshmemx_init_args_t)
#define NVSHMEMX_INIT_ARGS_V2_INITIALIZER                                                 \
  {                                                                                       \
    (int)(NVSHMEM_INIT_ARGS_V2_IDENTIFIER), NVSHMEMX_UNIQUEID_ARGS_INITIALIZER, -1, { 0 } \
  }
#define NVSHMEMX_INIT_ARGS_INITIALIZER NVSHMEMX_INIT_ARGS_V2_INITIALIZER
#define NVSHMEM_INIT_ATTR_V2_IDENTIFIER (2 << 16) + sizeof(nvshmemx_init_attr_t)
#define NVSHMEM_INIT_ATTR_V1_IDENTIFIER (1 << 16) + sizeof(nvshmemx_init_attr_t)
#define NVSHMEMX_INIT_ATTR_INITIALIZER \
  { (int)(NVSHMEM_INIT_ATTR_V2_IDENTIFIER), NULL, NVSHMEMX_INIT_ARGS_V2_INITIALIZER }
#define NVSHMEMX_INIT_ATTR_V1_INITIALIZER NVSHMEMX_INIT_ATTR_INITIALIZER

SHOAL_NV_STATIC_ASSERT(sizeof(nvshmemx_uniqueid_t) == 128, "nvshmemx_uniqueid_t is 128 bytes, as NVSHMEM's");
SHOAL_NV_STATIC_ASSERT(sizeof(nvshmemx_uniqueid_args_t) == 24, "nvshmemx_uniqueid_args_t is 24 bytes, as NVSHMEM's");
SHOAL_NV_STATIC_ASSERT(sizeof(nvshmemx_init_args_t) == 128, "nvshmemx_init_args_t is 128 bytes, as NVSHMEM's");
SHOAL_NV_STATIC_ASSERT(sizeof(nvshmemx_init_attr_t) == 144, "nvshmemx_init_attr_t is 144 bytes, as NVSHMEM's");
SHOAL_NV_STATIC_ASSERT(sizeof(nvshmem_team_config_t) == 64, "nvshmem_team_config_t is 64 bytes, as NVSHMEM's");
SHOAL_NV_STATIC_ASSERT(sizeof(nvshmem_team_config_v1) == 64, "nvshmem_team_config_v1 is 64 bytes, as NVSHMEM's");
SHOAL_NV_STATIC_ASSERT(offsetof(nvshmemx_init_attr_t, args) == 16, "nvshmemx_init_attr_t.args at offset 16");
SHOAL_NV_STATIC_ASSERT(sizeof(shoal_uniqueid_t) >= 124, "shoal's id fits nvshmemx_uniqueid_t.internal");

/* --- entry points whose NVSHMEM types differ from shoal's: wrappers --- */

/** A shoal rendezvous id in NVSHMEM's layout (shoal_get_uniqueid). */
static inline int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t* uid) {
  shoal_uniqueid_t id;
  int rc;
  if (uid == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
  rc = shoal_get_uniqueid(&id);
  if (rc != 0) return NVSHMEMX_ERROR_INTERNAL;
  uid->version = (int)((1 << 16) + sizeof(nvshmemx_uniqueid_t));
  memcpy(uid->internal, id.internal, sizeof(uid->internal));
  return NVSHMEMX_SUCCESS;
}
/** Points attr at uid for rank myrank of nranks (no copy: uid must outlive nvshmemx_init_attr). */
static inline int nvshmemx_set_attr_uniqueid_args(const int myrank, const int nranks,
                                                  const nvshmemx_uniqueid_t* uniqueid, nvshmemx_init_attr_t* attr) {
  if (attr == NULL || uniqueid == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
  attr->args.uid_args.version = (int)((1 << 16) + sizeof(nvshmemx_uniqueid_args_t));
  attr->args.uid_args.id = (nvshmemx_uniqueid_t*)uniqueid;
  attr->args.uid_args.myrank = myrank;
  attr->args.uid_args.nranks = nranks;
  return NVSHMEMX_SUCCESS;
}
/** Records mpi_comm (an MPI_Comm*) in attr for NVSHMEMX_INIT_WITH_MPI_COMM. */
static inline int nvshmemx_set_attr_mpi_comm_args(void* mpi_comm, nvshmemx_init_attr_t* attr) {
  if (attr == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
  attr->mpi_comm = mpi_comm;
  return NVSHMEMX_SUCCESS;
}
/** Init per flags: UNIQUEID (shoal_init_attr), MPI_COMM (shoalx_init_mpi_comm), 0 or THREAD_PES (shoal_init).
 * NVSHMEMX_INIT_WITH_SHMEM: NVSHMEMX_ERROR_NOT_SUPPORTED. */
static inline int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t* attr) {
  if (flags & NVSHMEMX_INIT_WITH_UNIQUEID) {
    shoal_init_attr_t a;
    if (attr == NULL || attr->args.uid_args.id == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
    memset(&a, 0, sizeof(a));
    a.version = SHOAL_INIT_ATTR_VERSION;
    a.rank = attr->args.uid_args.myrank;
    a.size = attr->args.uid_args.nranks;
    memcpy(a.uid.internal, attr->args.uid_args.id->internal, sizeof(attr->args.uid_args.id->internal));
    return shoal_init_attr(&a) == 0 ? NVSHMEMX_SUCCESS : NVSHMEMX_ERROR_INTERNAL;
  }
  if (flags & NVSHMEMX_INIT_WITH_MPI_COMM) {
    if (attr == NULL || attr->mpi_comm == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
    return shoalx_init_mpi_comm(attr->mpi_comm) == 0 ? NVSHMEMX_SUCCESS : NVSHMEMX_ERROR_INTERNAL;
  }
  if (flags & NVSHMEMX_INIT_WITH_SHMEM) return NVSHMEMX_ERROR_NOT_SUPPORTED;
  shoal_init();
  return shoalx_init_status() == SHOALX_STATUS_IS_INITIALIZED ? NVSHMEMX_SUCCESS : NVSHMEMX_ERROR_INTERNAL;
}
/** As nvshmemx_init_attr (shoal has one library: host and device parts are not initialized apart). */
static inline int nvshmemx_hostlib_init_attr(unsigned int flags, nvshmemx_init_attr_t* attr) {
  return nvshmemx_init_attr(flags, attr);
}
static inline void nvshmemx_hostlib_finalize(void) { shoal_finalize(); }

static inline long shoal_nv_team_mask(long mask) {
  return (mask & NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS) ? SHOAL_TEAM_NUM_CONTEXTS : 0;
}
/** As shoal_team_split_strided (config: num_contexts is recorded; the uniqueid field is ignored). */
static inline int nvshmem_team_split_strided(nvshmem_team_t parent_team, int PE_start, int PE_stride, int PE_size,
                                             const nvshmem_team_config_t* config, long config_mask,
                                             nvshmem_team_t* new_team) {
  shoal_team_config_t c;
  c.num_contexts = config != NULL ? config->num_contexts : 0;
  return shoal_team_split_strided(parent_team, PE_start, PE_stride, PE_size, config != NULL ? &c : NULL,
                                  shoal_nv_team_mask(config_mask), new_team);
}
/** As shoal_team_split_2d. */
static inline int nvshmem_team_split_2d(nvshmem_team_t parent_team, int xrange,
                                        const nvshmem_team_config_t* xaxis_config, long xaxis_mask,
                                        nvshmem_team_t* xaxis_team, const nvshmem_team_config_t* yaxis_config,
                                        long yaxis_mask, nvshmem_team_t* yaxis_team) {
  shoal_team_config_t x, y;
  x.num_contexts = xaxis_config != NULL ? xaxis_config->num_contexts : 0;
  y.num_contexts = yaxis_config != NULL ? yaxis_config->num_contexts : 0;
  return shoal_team_split_2d(parent_team, xrange, xaxis_config != NULL ? &x : NULL, shoal_nv_team_mask(xaxis_mask),
                             xaxis_team, yaxis_config != NULL ? &y : NULL, shoal_nv_team_mask(yaxis_mask), yaxis_team);
}
/** A new team id (shoalx_team_get_uniqueid), to share out of band with the PEs of one nvshmemx_team_init. */
static inline int nvshmemx_team_get_uniqueid(nvshmemx_team_uniqueid_t* uniqueid) {
  return shoalx_team_get_uniqueid(uniqueid);
}
/** shoalx_team_init with config->uniqueid: config must be non-null with NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID set in
 * config_mask (else NVSHMEMX_ERROR_INVALID_VALUE); num_contexts is recorded when its bit is set. */
static inline int nvshmemx_team_init(nvshmem_team_t* team, nvshmem_team_config_t* config, long config_mask, int npes,
                                     int pe_idx_in_team) {
  shoal_team_config_t c;
  if (team != NULL) *team = NVSHMEM_TEAM_INVALID;
  if (config == NULL || !(config_mask & NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID)) return NVSHMEMX_ERROR_INVALID_VALUE;
  c.num_contexts = config->num_contexts;
  return shoalx_team_init(team, config->uniqueid, &c, shoal_nv_team_mask(config_mask), npes, pe_idx_in_team);
}
/** Fills *config (version, num_contexts; uniqueid 0) from shoal_team_get_config. */
static inline void nvshmem_team_get_config(nvshmem_team_t team, nvshmem_team_config_t* config) {
  shoal_team_config_t c;
  if (config == NULL) return;
  memset(config, 0, sizeof(*config));
  config->version = (int)((2 << 16) + sizeof(nvshmem_team_config_t));
  if (shoal_team_get_config(team, SHOAL_TEAM_NUM_CONTEXTS, &c) == 0) config->num_contexts = c.num_contexts;
}
/** NVSHMEM's name of status code `status`. */
static inline const char* nvshmemx_status_string(int status) {
  static const char* const names[] = {"NVSHMEMX_SUCCESS",
                                      "NVSHMEMX_ERROR_INVALID_VALUE",
                                      "NVSHMEMX_ERROR_OUT_OF_MEMORY",
                                      "NVSHMEMX_ERROR_NOT_SUPPORTED",
                                      "NVSHMEMX_ERROR_SYMMETRY",
                                      "NVSHMEMX_ERROR_GPU_NOT_SELECTED",
                                      "NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED",
                                      "NVSHMEMX_ERROR_INTERNAL"};
  return status >= 0 && status <= NVSHMEMX_ERROR_INTERNAL ? names[status] : "unknown NVSHMEMX status";
}
/* NVSHMEM's <nvshmemx.h> also defines these message macros (printf-style arguments), which programs use; NVSHMEM's
 * perftest harness, for one. ERROR_PRINT: "file:function:line: <message>" and a newline on stderr; ERROR_EXIT:
 * the same, then exit(-1); WARN_PRINT: "WARN: <message>" and a newline on stdout. */
#define NVSHMEMI_ERROR_PRINT(...)                                    \
  do {                                                               \
    fprintf(stderr, "%s:%s:%d: ", __FILE__, __FUNCTION__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                                    \
    fprintf(stderr, "\n");                                           \
  } while (0)
#define NVSHMEMI_ERROR_EXIT(...)       \
  do {                                 \
    NVSHMEMI_ERROR_PRINT(__VA_ARGS__); \
    exit(-1);                          \
  } while (0)
#define NVSHMEMI_WARN_PRINT(...)  \
  do {                            \
    fprintf(stdout, "WARN: ");    \
    fprintf(stdout, __VA_ARGS__); \
    fprintf(stdout, "\n");        \
  } while (0)
/** The NVSHMEM API level this layer provides (3.8.0), as NVSHMEM reports its own release. */
SHOAL_NV_HD static inline void nvshmemx_vendor_get_version_info(int* major, int* minor, int* patch) {
  *major = NVSHMEM_VENDOR_MAJOR_VERSION;
  *minor = NVSHMEM_VENDOR_MINOR_VERSION;
  *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}

/** shoalx_collective_launch: a grid that cannot be co-resident returns NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED
 * (and says why on stderr). */
static inline int nvshmemx_collective_launch(const void* func, dim3 gridDims, dim3 blockDims, void** args,
                                             size_t sharedMem, cudaStream_t stream) {
  return shoalx_collective_launch(func, gridDims, blockDims, args, sharedMem, stream) == SHOAL_OK
             ? NVSHMEMX_SUCCESS
             : NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
}
/** NVSHMEM 3.8's launch configuration wrapper (a cudaLaunchConfig_t). */
typedef struct nvshmemx_collective_launch_attr {
  cudaLaunchConfig_t cuda_config;
} nvshmemx_collective_launch_attr_t;
/** shoalx_collective_launch_config on attr->cuda_config (launched on its stream; the caller's cooperative attribute
 * wins, as NVSHMEM's); a refused or failed launch returns NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED. */
static inline int nvshmemx_collective_launch_attr(const nvshmemx_collective_launch_attr_t* attr, const void* func,
                                                  void** args) {
  if (attr == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
  return shoalx_collective_launch_config(&attr->cuda_config, func, args) == SHOAL_OK
             ? NVSHMEMX_SUCCESS
             : NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
}
static inline int nvshmemx_collective_launch_query_gridsize(const void* func, dim3 blockDims, void** args,
                                                            size_t sharedMem, int* gridsize) {
  return shoalx_collective_launch_query_gridsize(func, blockDims, args, sharedMem, gridsize) == SHOAL_OK
             ? NVSHMEMX_SUCCESS
             : NVSHMEMX_ERROR_INTERNAL;
}
/** Fills the module's facade world (shoalx_cumodule_init). */
static inline int nvshmemx_cumodule_init(CUmodule module) {
  return shoalx_cumodule_init((void*)module) == SHOAL_OK ? NVSHMEMX_SUCCESS : NVSHMEMX_ERROR_INTERNAL;
}
/** Nothing to release (the module keeps a copy of the world). */
static inline int nvshmemx_cumodule_finalize(CUmodule module) {
  (void)module;
  return NVSHMEMX_SUCCESS;
}
static inline int nvshmemx_culibrary_init(CUlibrary library) {
  return shoalx_culibrary_init((void*)library) == SHOAL_OK ? NVSHMEMX_SUCCESS : NVSHMEMX_ERROR_INTERNAL;
}
static inline int nvshmemx_culibrary_finalize(CUlibrary library) {
  (void)library;
  return NVSHMEMX_SUCCESS;
}
/* Symmetric registration of user memory (NVSHMEM maps a cuMem allocation into every PE's symmetric heap): shoal's
 * symmetric heap is one reserved range per PE, so it is refused when called, not when compiled, so that programs
 * which only reference it build (NVSHMEM's perftest harness calls it only under --mmap). Each says why on stderr;
 * the register forms return NULL (NVSHMEM's failure value), unregister NVSHMEMX_ERROR_NOT_SUPPORTED. */
static inline void* shoal_nv_symmetric_registration_refused(const char* call) {
  fprintf(stderr,
          "%s: not supported by shoal (symmetric registration of user memory; allocate with nvshmem_malloc, or "
          "register local memory with nvshmemx_buffer_register)\n",
          call);
  return NULL;
}
static inline void* nvshmemx_buffer_register_symmetric(void* buf_ptr, size_t size, int flags) {
  (void)buf_ptr;
  (void)size;
  (void)flags;
  return shoal_nv_symmetric_registration_refused("nvshmemx_buffer_register_symmetric");
}
static inline void* nvshmemx_buffer_register_symmetric_at_preferred_address(void* buf_ptr, size_t size,
                                                                            void* preferred_addr, int flags) {
  (void)buf_ptr;
  (void)size;
  (void)preferred_addr;
  (void)flags;
  return shoal_nv_symmetric_registration_refused("nvshmemx_buffer_register_symmetric_at_preferred_address");
}
static inline int nvshmemx_buffer_unregister_symmetric(void* mmap_ptr, size_t size) {
  (void)mmap_ptr;
  (void)size;
  shoal_nv_symmetric_registration_refused("nvshmemx_buffer_unregister_symmetric");
  return NVSHMEMX_ERROR_NOT_SUPPORTED;
}
/* Shared-memory hints (NVSHMEM 3.8 stages TMA transfers through shared memory a kernel gives it). shoal's puts and
 * gets never stage through shared memory, so a given block is not used; ask_smem still answers NVSHMEM's sizes
 * (RECOMMENDED 64 KiB, MINIMUM 32 KiB), which programs use to size their launches and their own tiles, and 0 for
 * BARRIERS_ONLY (shoal keeps no barriers there). give_smem and release_smem (device) do nothing. */
SHOAL_NV_HD static inline int nvshmemx_ask_smem(nvshmemx_smem_amount_t flag) {
  return flag == NVSHMEMX_SMEM_MINIMUM ? 32768 : flag == NVSHMEMX_SMEM_BARRIERS_ONLY ? 0 : 65536;
}
/** NVSHMEM takes a non-const signal word; shoal_signal_fetch reads it the same way. */
SHOAL_NV_HD static inline uint64_t nvshmem_signal_fetch(uint64_t* sig_addr) { return shoal_signal_fetch(sig_addr); }
#if defined(__CUDACC__) && defined(__cplusplus) && SHOAL_DETAIL_DEVICE_FACADE
/** flush (NVSHMEM 3.7: the sources of earlier puts may be reused) at warp/block scope: each thread's quiet, which
 * is stronger (its puts are complete at their targets). */
__device__ static inline void nvshmemx_flush_warp(void) { shoal_quiet(); }
__device__ static inline void nvshmemx_flush_block(void) { shoal_quiet(); }
/** See nvshmemx_ask_smem: the block is not used; every thread may call, no synchronization implied. */
__device__ static inline void nvshmemx_give_smem(void* smem, size_t size) {
  (void)smem;
  (void)size;
}
__device__ static inline void nvshmemx_release_smem(void) {}
/** Team barrier over a warpgroup (4 consecutive warps aligned to 4, every thread calls): shoal's warps<4> scope
 * (which uses a named barrier id; see <shoal/device/scope.cuh>). Returns 0. */
__device__ static inline int nvshmemx_barrier_warpgroup(nvshmem_team_t team) {
  shoal::device::team_barrier(shoal::warps<4>, shoal_detail_world_c,
                              shoal::device::team_of(shoal_detail_world_c, team));
  return 0;
}
#endif
/** shoalx_sync_all_on_stream (errors are reported per shoal's error mode). */
static inline void nvshmemx_sync_all_on_stream(cudaStream_t stream) { (void)shoalx_sync_all_on_stream(stream); }

SHOAL_EXTERN_C_END

#endif /* SHOAL_COMPAT_NVSHMEM_BASE_H_ */
