/* What libshoal reads and how it was built, without joining a job: every SHOAL_* environment
 * variable (name, type, default, allowed range, meaning, value in use) and the build's features;
 * and, inside a job, how each peer is reached. Plain C11 and C++; shoal-info is written on it.
 * Callable before shoal_init and after finalize (the per-peer query then answers NULL). */
#ifndef SHOAL_INFO_H_
#define SHOAL_INFO_H_

#include <shoal/types.h>

SHOAL_EXTERN_C_BEGIN

/* One SHOAL_* variable libshoal reads. Strings are static, never NULL ("" when empty). */
typedef struct shoal_env_var {
  const char* name;          /* "SHOAL_HEAP_RESERVE" */
  const char* type;          /* how the value is parsed: "bool", "int", "size", "ms" or "string" */
  const char* default_value; /* the value used when the variable is unset, in the same text form */
  const char* allowed;       /* allowed range, "4K..64T", "1.." or "" (none beyond the type) */
  const char* doc;           /* one line: what it sets */
} shoal_env_var;

/** Number of variables in the table (stable for the life of the process). */
SHOAL_API size_t shoal_info_env_count(void);
/** Entry `index` (0..shoal_info_env_count()-1), in documentation order; NULL when out of range. */
SHOAL_API const shoal_env_var* shoal_info_env_var(size_t index);
/** 1 when `name` is set (non-empty) in the environment, 0 when not; -1 when libshoal does not read it. */
SHOAL_API int shoal_info_env_is_set(const char* name);
/** The value in use: the environment's text if set, else the default; NULL when libshoal does not
 *  read `name`. Valid until the environment changes. The value is not validated here. */
SHOAL_API const char* shoal_info_env_value(const char* name);
/** For a SHOAL_* name libshoal does not read: the closest name it does (a likely typo), or NULL. */
SHOAL_API const char* shoal_info_env_closest(const char* name);
/** Calls fn(name, closest, user) for every SHOAL_* variable in the environment that libshoal does
 *  not read and no shoal tool uses (`closest` as shoal_info_env_closest, may be NULL); returns how
 *  many. The strings live for the call only. */
SHOAL_API size_t shoal_info_env_unknown(void (*fn)(const char* name, const char* closest, void* user), void* user);
/** 1 when this libshoal has the CUDA backend and device API compiled in, 0 for a host-only build. */
SHOAL_API int shoal_info_has_cuda(void);
/** The UCX library the proxy transport runs on ("1.13.1", read from the loaded libucp), or "" when
 *  this libshoal was built without UCX. Static string; needs no job. */
SHOAL_API const char* shoal_info_ucx_version(void);
/** Inside a job (after shoal_init): the UCX transports and devices towards `pe`, e.g. "tcp/veth0.0",
 *  when `pe` is reached through the proxy; "" for a load/store peer. NULL before shoal_init, after
 *  finalize or for a `pe` outside 0..n_pes-1. The text stays valid until this thread calls it again. */
SHOAL_API const char* shoal_info_peer_transports(int pe);

SHOAL_EXTERN_C_END

#endif /* SHOAL_INFO_H_ */
