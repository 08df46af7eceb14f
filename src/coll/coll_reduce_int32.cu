// The on-stream reduce kernels of the 32- and 64-bit signed integer types (see coll_reduce_kernels.hpp).
#include "coll/coll_reduce_kernels.cuh"

namespace shoal::detail::coll {

SHOAL_COLL_REDUCE_TYPED(int32_t);
SHOAL_COLL_REDUCE_TYPED(int64_t);

}  // namespace shoal::detail::coll
