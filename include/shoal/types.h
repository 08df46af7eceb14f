/* shoal's C-visible types and constants (OpenSHMEM values, shoal prefix).
 * Plain C11 and C++; included by <shoal/shoal.h>. */
#ifndef SHOAL_TYPES_H_
#define SHOAL_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define SHOAL_API __attribute__((visibility("default")))
#else
#define SHOAL_API
#endif

#ifdef __cplusplus
#define SHOAL_EXTERN_C_BEGIN extern "C" {
#define SHOAL_EXTERN_C_END }
#else
#define SHOAL_EXTERN_C_BEGIN
#define SHOAL_EXTERN_C_END
#endif

#define SHOAL_MAJOR_VERSION 1 /* OpenSHMEM specification this API follows */
#define SHOAL_MINOR_VERSION 5
#define SHOAL_VENDOR_STRING "shoal"
#define SHOAL_MAX_NAME_LEN 256
#define SHOAL_VERSION_MAJOR 0 /* shoal's own release */
#define SHOAL_VERSION_MINOR 1
#define SHOAL_VERSION_PATCH 0

/* Thread levels (shoal_init_thread / shoal_query_thread). */
enum {
  SHOAL_THREAD_SINGLE = 0,
  SHOAL_THREAD_FUNNELED = 1,
  SHOAL_THREAD_SERIALIZED = 2,
  SHOAL_THREAD_MULTIPLE = 3,
};

/* Comparison operators for wait_until / test. */
enum {
  SHOAL_CMP_EQ = 0,
  SHOAL_CMP_NE = 1,
  SHOAL_CMP_GT = 2,
  SHOAL_CMP_LE = 3,
  SHOAL_CMP_LT = 4,
  SHOAL_CMP_GE = 5,
};

/* Signal operators for put-with-signal and signal_op (values as NVSHMEM's). */
enum {
  SHOAL_SIGNAL_SET = 9,
  SHOAL_SIGNAL_ADD = 10,
};

/* Status codes returned by the C API in SHOAL_ERRORS_RETURN mode and by shoal_last_error(). */
enum {
  SHOAL_OK = 0,
  SHOAL_ERR_INVALID_ARGUMENT = 1,
  SHOAL_ERR_NOT_INITIALIZED = 2,
  SHOAL_ERR_OUT_OF_MEMORY = 3,
  SHOAL_ERR_MISMATCH = 4,
  SHOAL_ERR_TIMEOUT = 5,
  SHOAL_ERR_PEER_FAILURE = 6,
  SHOAL_ERR_SYSTEM = 7,
  SHOAL_ERR_CUDA = 8,
  SHOAL_ERR_UNSUPPORTED = 9,
  SHOAL_ERR_INTERNAL = 10,
};

/* Library state (shoalx_init_status; NVSHMEM's nvshmemx_init_status values). */
enum {
  SHOALX_STATUS_NOT_INITIALIZED = 0,
  SHOALX_STATUS_IS_BOOTSTRAPPED = 1,
  SHOALX_STATUS_IS_INITIALIZED = 2,
};

/* What the C API does when a call fails (shoal_set_error_mode). */
enum {
  SHOAL_ERRORS_ABORT = 0,  /* default: print the error and stop every PE of the job */
  SHOAL_ERRORS_RETURN = 1, /* print nothing; record it for shoal_last_error() and return */
};

/* 16-bit floating-point element types of the half/bfloat16 reductions (shoal_half_sum_reduce, ...).
 * shoal_half_t is IEEE binary16; shoal_bfloat16_t is bfloat16 (a float's upper 16 bits). Under nvcc they
 * are CUDA's __half and __nv_bfloat16; elsewhere (C11, host C++) a 2-byte struct holding the bit
 * pattern, of the same size and alignment. The API takes them by pointer, or by value (p/g, half atomics): both
 * views are trivially copyable 2-byte objects, passed and returned in the same integer register, so they share one
 * C ABI. */
#if defined(__CUDACC__) && defined(__cplusplus)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __half shoal_half_t;
typedef __nv_bfloat16 shoal_bfloat16_t;
#else
typedef struct {
  uint16_t bits; /* IEEE binary16: sign, 5-bit exponent, 10-bit mantissa */
} shoal_half_t;
typedef struct {
  uint16_t bits; /* bfloat16: sign, 8-bit exponent, 7-bit mantissa */
} shoal_bfloat16_t;
#endif

/* A rendezvous id: address of PE 0's bootstrap listener plus a random 128-bit secret.
 * Made by shoal_get_uniqueid on one PE, passed to the others out of band (MPI, a file…). */
#define SHOAL_UNIQUEID_BYTES 128
typedef struct {
  unsigned char internal[SHOAL_UNIQUEID_BYTES];
} shoal_uniqueid_t;

/* Explicit init: this PE's rank and the job size, plus the rendezvous id. */
typedef struct {
  int version; /* SHOAL_INIT_ATTR_VERSION */
  int rank;    /* this PE, 0 <= rank < size */
  int size;    /* number of PEs */
  shoal_uniqueid_t uid;
} shoal_init_attr_t;
#define SHOAL_INIT_ATTR_VERSION 1

#endif /* SHOAL_TYPES_H_ */
