// The OpenSHMEM/NVSHMEM-style device facade: shoal_* / shoalx_* functions on the default world, for
// kernels that take no handle (shoal_int_p, shoalx_putmem_block, shoal_barrier_all, ...). Included
// by <shoal/shoal.h> under nvcc. Header-only, no -rdc: each translation unit keeps its own
// __constant__ copy of the default world's device_world, registered with libshoal at static
// initialization and filled when the world is created. Define SHOAL_NO_DEVICE_FACADE to leave it out.
#ifndef SHOAL_DEVICE_FACADE_CUH_
#define SHOAL_DEVICE_FACADE_CUH_

// The host API first: under nvcc its host entry points that have a device twin are declared under
// shoal_detail_host_* names (see host_api.h), and this header defines the shoal_* functions.
#include "shoal/shoal.h"

#if SHOAL_DETAIL_DEVICE_FACADE

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "shoal/detail/device_registry.h"
#include "shoal/device/device.cuh"
#include "shoal/device_world.hpp"

/// This translation unit's copy of the default world's device handle (a zero world before init:
/// n_pes 0, so checked calls trap with "pe out of range"). Written only by the registered update
/// function below (cudaMemcpyToSymbol from the host); read by every facade call in this unit.
static __constant__ shoal::device_world shoal_detail_world_c;

namespace shoal::detail {
namespace {

/// Called by libshoal (default world created or finalized): copies the world into this unit's
/// __constant__ copy on the current device. Runs in this unit, with this unit's CUDA runtime.
void update_facade_world(const void* world, size_t bytes) {
  if (bytes != sizeof(device_world)) {
    fprintf(stderr, "shoal: device facade: world of %zu bytes, this translation unit expects %zu (mixed versions?)\n",
            bytes, sizeof(device_world));
    return;
  }
  const cudaError_t err = cudaMemcpyToSymbol(shoal_detail_world_c, world, bytes);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // no GPU here (host-backend world): no kernel can read the copy anyway
    return;
  }
  if (err != cudaSuccess) {
    fprintf(stderr, "shoal: device facade: cudaMemcpyToSymbol of the device world failed: %s\n",
            cudaGetErrorString(err));
  }
}

struct facade_registrar {
  facade_registrar() { shoal_detail_register_device_facade(&update_facade_world); }
};
const facade_registrar facade_registrar_instance;

}  // namespace
}  // namespace shoal::detail

#include "shoal/detail/device_api.cuh"
#include "shoal/detail/device_facade.cuh"

#endif  // SHOAL_DETAIL_DEVICE_FACADE
#endif  // SHOAL_DEVICE_FACADE_CUH_
