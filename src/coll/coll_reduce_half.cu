// The on-stream reduce kernels of the half and bfloat16 types (see coll_reduce_kernels.hpp).
#include "coll/coll_reduce_kernels.cuh"

namespace shoal::detail::coll {

SHOAL_COLL_REDUCE_TYPED(__half);
SHOAL_COLL_REDUCE_TYPED(__nv_bfloat16);

}  // namespace shoal::detail::coll
