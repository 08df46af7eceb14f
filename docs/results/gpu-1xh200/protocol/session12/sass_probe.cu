// SASS probe of the block put's per-call cost (docs/results/gpu-1xh200/protocol/README.md, session 12).
// Not built by CMake and never run: compile to a cubin and read it with cuobjdump -sass (command in the
// README). Three kernels with shoal-bench's put_bw loop (one block put per iteration, block b takes bytes
// [b*chunk, (b+1)*chunk)):
//   lib_put:        the facade's shoalx_putmem_nbi_block every iteration (what shoal-bench measures);
//   hoisted_lookup: the peer lookup once per kernel, then shoal's own 4-deep copy (copy_vec16) and a block
//                   barrier every iteration (a caller that hoists the lookup);
//   lean_put:       every iteration a checked lookup first, then one 16-byte load/store per thread per step
//                   (shoal's ptx accessors, 32-bit index), then the block barrier (a small-put path shaped
//                   like raw_block_put_kernel and NVSHMEM's copy).
#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_copy.cuh"
#include "shoal/device/facade.cuh"
#include "shoal/device/ptx.cuh"

namespace {

__device__ __forceinline__ size_t block_bytes(size_t nbytes, size_t chunk) {
  const size_t off = static_cast<size_t>(blockIdx.x) * chunk;
  return off < nbytes ? (nbytes - off < chunk ? nbytes - off : chunk) : 0;
}

}  // namespace

__global__ void lib_put(char* dst, const char* src, size_t nbytes, size_t chunk, int iters, int peer) {
  const size_t off = static_cast<size_t>(blockIdx.x) * chunk;
  const size_t n = block_bytes(nbytes, chunk);
  for (int i = 0; i < iters && n != 0; ++i) shoalx_putmem_nbi_block(dst + off, src + off, n, peer);
}

__global__ void hoisted_lookup(char* dst, const char* src, size_t nbytes, size_t chunk, int iters, int peer) {
  const shoal::device_world& w = shoal::device::facade_world();
  const size_t off = static_cast<size_t>(blockIdx.x) * chunk;
  const size_t n = block_bytes(nbytes, chunk);
  char* remote = shoal::detail::local_peer_ptr(w, dst, shoal::detail::peer_local(w, peer, "hoisted_lookup"));
  for (int i = 0; i < iters && n != 0; ++i) {
    shoal::detail::copy_vec16<shoal::block_scope, 4>(remote + off, src + off, n);
    __syncthreads();
  }
}

__global__ void lean_put(char* dst, const char* src, size_t nbytes, size_t chunk, int iters, int peer) {
  const shoal::device_world& w = shoal::device::facade_world();
  const size_t off = static_cast<size_t>(blockIdx.x) * chunk;
  const size_t n = block_bytes(nbytes, chunk);
  for (int i = 0; i < iters && n != 0; ++i) {
    const int32_t local = shoal::detail::peer_route(w, peer, "lean_put");
    if (local >= 0) {
      auto* d = reinterpret_cast<uint4*>(shoal::detail::local_peer_ptr(w, dst + off, local));
      const auto* s = reinterpret_cast<const uint4*>(src + off);
      const uint32_t num_vecs = static_cast<uint32_t>(n / 16);
      for (uint32_t v = threadIdx.x; v < num_vecs; v += blockDim.x)
        shoal::ptx::st_global_v4(d + v, shoal::ptx::ld_global_v4(s + v));
    }
    __syncthreads();
  }
}
