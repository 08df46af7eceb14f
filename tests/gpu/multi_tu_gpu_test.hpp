// The second translation unit of multi_tu_gpu_test (multi_tu_gpu_test_b.cu), as seen by the first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal_test {

/// Launches unit B's kernel (no sync): identity[0..2] = its facade's my_pe, n_pes, ptr(peer) != NULL;
/// then it puts `words` words of src to dst on the next PE with shoal_uint32_put from 4 threads.
void run_unit_b_kernel(int* identity, uint32_t* dst, const uint32_t* src, size_t words);

}  // namespace shoal_test
