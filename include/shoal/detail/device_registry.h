/* The hook between libshoal and the device facade's per-translation-unit state. Plain C.
 * Every CUDA translation unit that includes <shoal/device/facade.cuh> (or <shoal/shoal.h> under nvcc)
 * registers, at static-initialization time, a function that copies a device_world into that unit's
 * __constant__ copy. libshoal calls each registered function with the default world's device_world
 * (bytes = sizeof(shoal::device_world)) whenever that world is created or finalized, with the PE's
 * GPU current. */
#ifndef SHOAL_DETAIL_DEVICE_REGISTRY_H_
#define SHOAL_DETAIL_DEVICE_REGISTRY_H_

#include <stddef.h>

#include "shoal/types.h"

SHOAL_EXTERN_C_BEGIN

/** Copies `bytes` bytes of a shoal::device_world from host memory `world` to its registrant's state. */
typedef void (*shoal_detail_device_facade_update_fn)(const void* world, size_t bytes);

/** Registers `update` (called from static initializers; thread-safe; never fails). If the default
 * world already exists, libshoal calls `update` with it before returning. Not for direct use. */
SHOAL_API void shoal_detail_register_device_facade(shoal_detail_device_facade_update_fn update);

SHOAL_EXTERN_C_END

#endif /* SHOAL_DETAIL_DEVICE_REGISTRY_H_ */
