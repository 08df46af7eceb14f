// The device facade's per-translation-unit state: this unit's __constant__ copy of the default
// world's device_world and the static-initialization registration that lets libshoal fill it.
// Included by <shoal/device/facade.cuh> only. Not a public header.
#ifndef SHOAL_DETAIL_DEVICE_FACADE_WORLD_CUH_
#define SHOAL_DETAIL_DEVICE_FACADE_WORLD_CUH_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "shoal/detail/device_registry.h"
#include "shoal/device_world.hpp"

/// This translation unit's copy of the default world's device handle (a zero world before init:
/// n_pes 0, so checked calls trap with "pe out of range"). Written only by the registered update
/// function below (cudaMemcpyToSymbol from the host); read by every facade call in this unit.
static __constant__ shoal::device_world shoal_detail_world_c;

namespace shoal::detail {
namespace {

/// The facade's world as a call argument (the RMA calls): an empty tag whose world_ref is this unit's __constant__
/// world. A cold path that gets the tag reads the world there itself, so its caller keeps none of the world's fields
/// live for it and takes no address of a world (device_common.cuh world_ref).
struct facade_world_tag {};
__device__ __forceinline__ const device_world& world_ref(facade_world_tag) { return shoal_detail_world_c; }

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

#endif  // SHOAL_DETAIL_DEVICE_FACADE_WORLD_CUH_
