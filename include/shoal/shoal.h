/* shoal: one include for the host API (C11 and C++). OpenSHMEM 1.5 names with the shoal_ prefix,
 * so an OpenSHMEM or NVSHMEM host program is a rename away. Every call is thread-safe
 * (SHOAL_THREAD_MULTIPLE). On bad input or failure a call reports "<call>: <what> [file:line]"
 * and, by default, stops every PE of the job; shoal_set_error_mode(SHOAL_ERRORS_RETURN) makes
 * it record the error for shoal_last_error() and return instead. */
#ifndef SHOAL_SHOAL_H_
#define SHOAL_SHOAL_H_

#include <stddef.h>
#include <stdint.h>

#include "shoal/types.h"

SHOAL_EXTERN_C_BEGIN

/* --- library setup (collective over every PE unless noted) --- */

/** Joins the job described by the launcher's environment (shoalrun, mpirun, srun, torchrun). */
SHOAL_API void shoal_init(void);
/** Same as shoal_init; `*provided` = SHOAL_THREAD_MULTIPLE (every call may come from any thread). Returns 0. */
SHOAL_API int shoal_init_thread(int requested, int* provided);
/** The thread level granted (SHOAL_THREAD_MULTIPLE once initialized). Not collective. */
SHOAL_API void shoal_query_thread(int* provided);
/** Joins the job given explicitly: attr->rank of attr->size, rendezvous attr->uid. Returns 0 or a SHOAL_ERR_* code. */
SHOAL_API int shoal_init_attr(const shoal_init_attr_t* attr);
/** Makes a rendezvous id on the PE that will be rank 0 (opens its listener). Not collective. Returns 0 or SHOAL_ERR_*.
 */
SHOAL_API int shoal_get_uniqueid(shoal_uniqueid_t* uid);
/** Joins the job of an MPI communicator: `mpi_comm` points to an MPI_Comm (Open MPI or MPICH ABI) of an
 * initialized MPI; rank and size are the communicator's, and rank 0's rendezvous id reaches the others by
 * MPI_Bcast. MPI is reached at run time (dlopen of the process's libmpi), libshoal does not link it. Collective over
 * the communicator. Returns 0 or a SHOAL_ERR_* code. */
SHOAL_API int shoalx_init_mpi_comm(const void* mpi_comm);
/** SHOALX_STATUS_IS_INITIALIZED while the default world is live, else SHOALX_STATUS_NOT_INITIALIZED. Not collective. */
SHOAL_API int shoalx_init_status(void);
/** Barrier, then releases the heap and disconnects. Calls after it fail with SHOAL_ERR_NOT_INITIALIZED. */
SHOAL_API void shoal_finalize(void);
/** Stops every PE with `status`. Does not return. */
SHOAL_API void shoal_global_exit(int status);

SHOAL_API int shoal_my_pe(void);
SHOAL_API int shoal_n_pes(void);
/** OpenSHMEM spec version this API follows (SHOAL_MAJOR_VERSION.SHOAL_MINOR_VERSION). */
SHOAL_API void shoal_info_get_version(int* major, int* minor);
/** The symmetric heap's backend of the default world: "host" or "cuda" ("" before init). */
SHOAL_API const char* shoalx_backend_name(void);
/** Writes SHOAL_VENDOR_STRING (at most SHOAL_MAX_NAME_LEN bytes including the terminator) to name. */
SHOAL_API void shoal_info_get_name(char* name);

/* --- errors --- */

/** The name of SHOAL_OK or a SHOAL_ERR_* code ("SHOAL_ERR_TIMEOUT"); "unknown" for other values. */
SHOAL_API const char* shoalx_status_string(int code);
/** SHOAL_ERRORS_ABORT (default) or SHOAL_ERRORS_RETURN; returns the previous mode. Process-wide. */
SHOAL_API int shoal_set_error_mode(int mode);
/** The calling thread's last error code (SHOAL_OK if none since the last clear) and its message. */
SHOAL_API int shoal_last_error(const char** message);
SHOAL_API void shoal_clear_error(void);

/* --- symmetric memory (collective; every PE passes the same sizes in the same order) --- */

/** nbytes of symmetric memory, 16-byte aligned; NULL for 0 bytes or on error. */
SHOAL_API void* shoal_malloc(size_t nbytes);
/** count*elem_bytes zeroed bytes on every PE. */
SHOAL_API void* shoal_calloc(size_t count, size_t elem_bytes);
/** nbytes aligned to `alignment` (a power of two). */
SHOAL_API void* shoal_align(size_t alignment, size_t nbytes);
/** Resizes keeping the contents; may move. NULL ptr acts as malloc, 0 bytes as free. */
SHOAL_API void* shoal_realloc(void* ptr, size_t nbytes);
/** Frees a block from shoal_malloc & co. NULL is a no-op. Double free is an error. */
SHOAL_API void shoal_free(void* ptr);
/** Address of `dest`'s copy on `pe` for direct loads/stores, or NULL: by the CPU on the host backend, by this PE's
 * GPU (in kernels) on the cuda backend. Not collective. */
SHOAL_API void* shoal_ptr(const void* dest, int pe);
SHOAL_API int shoal_pe_accessible(int pe);
SHOAL_API int shoal_addr_accessible(const void* addr, int pe);

/* --- ordering and synchronization --- */

/** Orders this PE's puts, AMOs and signals to each PE: those before arrive before those after. */
SHOAL_API void shoal_fence(void);
/** Completes all of this PE's outstanding puts, AMOs and signals (visible at their targets). */
SHOAL_API void shoal_quiet(void);
/** Collective: quiet, then returns once every PE has arrived. */
SHOAL_API void shoal_barrier_all(void);
/** Collective: returns once every PE has arrived (no completion of outstanding operations). */
SHOAL_API void shoal_sync_all(void);

/* --- signals (sig_addr: a symmetric uint64_t) --- */

/** Atomically reads the local signal word. */
SHOAL_API uint64_t shoal_signal_fetch(const uint64_t* sig_addr);
/** Waits until the local signal word compares true (SHOAL_CMP_*) with cmp_value; returns its value. */
SHOAL_API uint64_t shoal_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
/** Applies sig_op (SHOAL_SIGNAL_SET/ADD) with `signal` to sig_addr on `pe`. */
SHOAL_API void shoalx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
/** Resets the local signal word sig_addr (symmetric) to 0, as a sequentially consistent store: re-arms a signal
 * that senders count up with SHOAL_SIGNAL_ADD (NVSHMEM's counted signals). Not collective; senders must not add to
 * it until this PE tells them it is reset. A sig_addr outside the symmetric heap or misaligned is an error. */
SHOAL_API void shoalx_signal_counted_reset(uint64_t* sig_addr);

/* --- on a CUDA stream (GPU heaps): enqueued in stream order, capturable in CUDA graphs --- */
/* `stream` is a cudaStream_t (struct CUstream_st*; NULL = the legacy default stream). On the host
 * backend these fail with SHOAL_ERR_UNSUPPORTED. Arguments are checked when the call is made. */
struct CUstream_st;

/** Copies nbytes from local `source` to symmetric `dest` on `pe` once earlier work on `stream` is done. */
SHOAL_API void shoalx_putmem_on_stream(void* dest, const void* source, size_t nbytes, int pe,
                                       struct CUstream_st* stream);
/** Copies nbytes from symmetric `source` on `pe` to local `dest`, in stream order. */
SHOAL_API void shoalx_getmem_on_stream(void* dest, const void* source, size_t nbytes, int pe,
                                       struct CUstream_st* stream);
/** shoal_<T>_p in stream order, for 1/2/4/8-byte values passed as their bit pattern (value_bits). */
SHOAL_API void shoalx_p_on_stream(void* dest, uint64_t value_bits, size_t value_bytes, int pe,
                                  struct CUstream_st* stream);
/** sig_op with `signal` on sig_addr at `pe`, ordered after (and releasing) everything earlier on the stream. */
SHOAL_API void shoalx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                          struct CUstream_st* stream);
/** Holds later work on `stream` until the local signal word compares true with cmp_value. Bounded by
 * SHOAL_WAIT_TIMEOUT. */
SHOAL_API void shoalx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value,
                                                  struct CUstream_st* stream);
/** A barrier with every PE in stream order, without quiet (shoalx_team_sync_on_stream of SHOAL_TEAM_WORLD). */
SHOAL_API int shoalx_sync_all_on_stream(struct CUstream_st* stream);
/** Completes every put issued on or before `stream`'s current position. */
SHOAL_API void shoalx_quiet_on_stream(struct CUstream_st* stream);
/** quiet, then a barrier with every PE, in stream order (shares the device barrier's sync words). */
SHOAL_API void shoalx_barrier_all_on_stream(struct CUstream_st* stream);

/* --- local (non-symmetric) buffers as the private side of RMA (NVSHMEM's buffer registration) --- */

/** Registers [addr, addr+nbytes) as a local buffer for RMA sources/destinations. shoal's paths (load/store on mapped
 * peer heaps, copies, the proxy's host staging) reach any local address, so this records the range only (to check
 * unregistration); a null, empty or overlapping range is an error. Not collective. Returns 0 or a SHOAL_ERR_* code. */
SHOAL_API int shoalx_buffer_register(void* addr, size_t nbytes);
/** Unregisters the range registered at addr (an error if none). Returns 0 or a SHOAL_ERR_* code. */
SHOAL_API int shoalx_buffer_unregister(void* addr);
/** Unregisters every registered range. */
SHOAL_API void shoalx_buffer_unregister_all(void);

/* --- kernels loaded at run time (cuModuleLoad / cuLibraryLoad) --- */

/** Gives the kernels of `cu_module` (a CUmodule) the default world, as the device facade gives kernels linked into
 * the program: fills the module's facade world (shoal_detail_world_c) if it has one. Call after init, with the
 * module's context current. Returns 0, or SHOAL_ERR_INVALID_ARGUMENT (null, or no facade world in the module),
 * SHOAL_ERR_NOT_INITIALIZED, SHOAL_ERR_CUDA. */
SHOAL_API int shoalx_cumodule_init(void* cu_module);
/** As shoalx_cumodule_init for a CUlibrary (cuLibraryLoad*, CUDA 12). */
SHOAL_API int shoalx_culibrary_init(void* cu_library);

SHOAL_EXTERN_C_END

/* Teams: handles, split_strided/split_2d, translate_pe. */
#include "shoal/team.h"

SHOAL_EXTERN_C_BEGIN
/** collect on a CUDA stream: member r's nbytes of symmetric `source` (sizes may differ between
 * members) land in every member's symmetric `dest` after the bytes of members 0..r-1 (NVSHMEM has no
 * collect). One CTA: the sizes travel as LL messages, then each member pushes its block. */
SHOAL_API int shoalx_collectmem_on_stream(shoal_team_t team, void* dest, const void* source, size_t nbytes,
                                          struct CUstream_st* stream);
SHOAL_EXTERN_C_END

/* Typed families: put/get/p/g/iput/iget/_nbi, put_signal, atomics, wait_until/test, and the host team
 * collectives (team sync/barrier, broadcast, fcollect, collect, alltoall, reduce, reducescatter). */
#include "shoal/detail/host_api.h"

/* Under nvcc (C++): the device API too, as the shoal_ and shoalx_ device facade (as nvshmem.h does).
 * Never in libshoal's own sources (SHOAL_DETAIL_LIBSHOAL_BUILD, a private define of its targets), so
 * including this header cannot change libshoal's footprint. */
#if defined(__CUDACC__) && !defined(SHOAL_DETAIL_LIBSHOAL_BUILD)
#include "shoal/device/facade.cuh"
#endif

#endif /* SHOAL_SHOAL_H_ */
