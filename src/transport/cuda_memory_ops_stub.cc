// Builds without CUDA: the cuda memory path does not exist.
#include "common/check.hpp"
#include "transport/memory_ops.hpp"

namespace shoal::detail {

std::unique_ptr<memory_ops> make_cuda_memory_ops() {
  SHOAL_THROW(errc::unsupported, "shoal_init", "this build of shoal has no CUDA support (configured without nvcc)");
}

}  // namespace shoal::detail
