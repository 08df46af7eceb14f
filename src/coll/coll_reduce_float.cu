// The on-stream reduce kernels of the float and double types (see coll_reduce_kernels.hpp).
#include "coll/coll_reduce_kernels.cuh"

namespace shoal::detail::coll {

SHOAL_COLL_REDUCE_TYPED(float);
SHOAL_COLL_REDUCE_TYPED(double);

}  // namespace shoal::detail::coll
