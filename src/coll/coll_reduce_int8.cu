// The on-stream reduce kernels of the 8- and 16-bit integer types (see coll_reduce_kernels.hpp).
#include "coll/coll_reduce_kernels.cuh"

namespace shoal::detail::coll {

SHOAL_COLL_REDUCE_TYPED(int8_t);
SHOAL_COLL_REDUCE_TYPED(int16_t);
SHOAL_COLL_REDUCE_TYPED(uint8_t);
SHOAL_COLL_REDUCE_TYPED(uint16_t);

}  // namespace shoal::detail::coll
