/* OpenSHMEM extensions of shoal (shmemx_*): everything of <shmem.h>, plus shoal's own extensions
 * under their shoalx_ names (<shoal/shoal.h>), e.g. SHMEMX_TEAM_NODE and shoalx_signal_op. */
#ifndef SHOAL_COMPAT_SHMEMX_H_
#define SHOAL_COMPAT_SHMEMX_H_

#include "shmem.h"

SHOAL_EXTERN_C_BEGIN
/** shoalx_signal_op under the shmemx_ prefix: sig_op with `signal` on sig_addr at `pe`. */
SHOAL_API void shmemx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) __asm__("shoalx_signal_op");
SHOAL_EXTERN_C_END

#endif /* SHOAL_COMPAT_SHMEMX_H_ */
