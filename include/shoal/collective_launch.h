/* Cooperative ("collective") kernel launch for kernels that synchronize across PEs (device barriers, waits on
 * other PEs' signals): every block of the grid must be resident at once, or the kernel can wait forever.
 * Header-only on purpose: the launch must go through the program's own CUDA runtime, which registered `func`
 * (libshoal links its own static copy). Needs <cuda_runtime.h> and linking the CUDA runtime; C11 or C++. */
#ifndef SHOAL_COLLECTIVE_LAUNCH_H_
#define SHOAL_COLLECTIVE_LAUNCH_H_

#include <cuda_runtime.h>
#include <stdio.h>

#include "shoal/types.h"

/** The largest grid (in blocks) of `func` with `block` threads per block and shared_nbytes of dynamic shared memory
 * that the current device can keep resident at once, in *gridsize. Returns 0, SHOAL_ERR_INVALID_ARGUMENT (null
 * func/gridsize) or SHOAL_ERR_CUDA. args is unused (NVSHMEM's signature). */
static inline int shoalx_collective_launch_query_gridsize(const void* func, dim3 block, void** args,
                                                          size_t shared_nbytes, int* gridsize) {
  int device = 0, sms = 0, per_sm = 0;
  (void)args;
  if (func == NULL || gridsize == NULL) return SHOAL_ERR_INVALID_ARGUMENT;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)(block.x * block.y * block.z), shared_nbytes) !=
          cudaSuccess)
    return SHOAL_ERR_CUDA;
  *gridsize = per_sm * sms;
  return SHOAL_OK;
}

/** Launches `func` on `grid` x `block` with cudaLaunchCooperativeKernel on `stream`, after checking that the grid can
 * be co-resident: if not, prints why to stderr (blocks asked, blocks that fit, per SM x SMs) and returns
 * SHOAL_ERR_INVALID_ARGUMENT without launching. Returns 0, that, or SHOAL_ERR_CUDA (message printed). */
static inline int shoalx_collective_launch(const void* func, dim3 grid, dim3 block, void** args, size_t shared_nbytes,
                                           cudaStream_t stream) {
  int device = 0, coop = 0, fit = 0;
  unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
  cudaError_t err;
  int rc = shoalx_collective_launch_query_gridsize(func, block, args, shared_nbytes, &fit);
  if (rc != SHOAL_OK) {
    fprintf(stderr, "shoalx_collective_launch: cannot query the occupancy of func=%p (%s)\n", func,
            rc == SHOAL_ERR_CUDA ? cudaGetErrorString(cudaGetLastError()) : "null func");
    return rc;
  }
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device) == cudaSuccess && !coop) {
    fprintf(stderr, "shoalx_collective_launch: device %d does not support cooperative launch\n", device);
    return SHOAL_ERR_UNSUPPORTED;
  }
  if (blocks == 0 || blocks > (unsigned long long)fit) {
    fprintf(
        stderr,
        "shoalx_collective_launch: a grid of %llu blocks cannot be co-resident: at most %d blocks of %u threads "
        "with %zu bytes of dynamic shared memory fit on device %d at once (shoalx_collective_launch_query_gridsize)\n",
        blocks, fit, block.x * block.y * block.z, shared_nbytes, device);
    return SHOAL_ERR_INVALID_ARGUMENT;
  }
  err = cudaLaunchCooperativeKernel(func, grid, block, args, shared_nbytes, stream);
  if (err != cudaSuccess) {
    fprintf(stderr, "shoalx_collective_launch: cudaLaunchCooperativeKernel failed: %s\n", cudaGetErrorString(err));
    return SHOAL_ERR_CUDA;
  }
  return SHOAL_OK;
}

/** The most launch attributes shoalx_collective_launch_config takes in config->attrs. */
#define SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS 31

/** shoalx_collective_launch with a full CUDA launch configuration (cudaLaunchKernelExC): config's gridDim, blockDim,
 * dynamicSmemBytes, stream and attrs (at most SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS) are used as given, plus
 * cudaLaunchAttributeCooperative = 1 unless attrs sets that attribute itself (the caller's value wins: with 0 the
 * launch is not cooperative and the co-residency check is skipped). A cooperative grid that cannot be co-resident is
 * refused as by shoalx_collective_launch. Returns 0, SHOAL_ERR_INVALID_ARGUMENT (null config/func, too many attrs,
 * a grid that does not fit; message on stderr), SHOAL_ERR_UNSUPPORTED or SHOAL_ERR_CUDA. */
static inline int shoalx_collective_launch_config(const cudaLaunchConfig_t* config, const void* func, void** args) {
  cudaLaunchAttribute attrs[SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS + 1];
  cudaLaunchConfig_t launch;
  unsigned i, n = 0;
  int cooperative = -1, device = 0, coop = 0, fit = 0, rc; /* cooperative: the caller's attribute, -1 if none */
  unsigned long long blocks;
  cudaError_t err;
  if (config == NULL || func == NULL) {
    fprintf(stderr, "shoalx_collective_launch_config: %s is null\n", config == NULL ? "config" : "func");
    return SHOAL_ERR_INVALID_ARGUMENT;
  }
  if (config->numAttrs > SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS || (config->numAttrs > 0 && config->attrs == NULL)) {
    fprintf(stderr, "shoalx_collective_launch_config: config->numAttrs=%u (at most %d, with non-null attrs)\n",
            config->numAttrs, SHOAL_COLLECTIVE_LAUNCH_MAX_ATTRS);
    return SHOAL_ERR_INVALID_ARGUMENT;
  }
  for (i = 0; i < config->numAttrs; ++i) {
    attrs[n++] = config->attrs[i];
    if (config->attrs[i].id == cudaLaunchAttributeCooperative) cooperative = config->attrs[i].val.cooperative != 0;
  }
  if (cooperative == -1) {
    attrs[n].id = cudaLaunchAttributeCooperative;
    attrs[n].val.cooperative = 1;
    ++n;
    cooperative = 1;
  }
  launch = *config;
  launch.attrs = attrs;
  launch.numAttrs = n;
  if (cooperative) {
    blocks = (unsigned long long)config->gridDim.x * config->gridDim.y * config->gridDim.z;
    rc = shoalx_collective_launch_query_gridsize(func, config->blockDim, args, config->dynamicSmemBytes, &fit);
    if (rc != SHOAL_OK) {
      fprintf(stderr, "shoalx_collective_launch_config: cannot query the occupancy of func=%p (%s)\n", func,
              cudaGetErrorString(cudaGetLastError()));
      return rc;
    }
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device) == cudaSuccess && !coop) {
      fprintf(stderr, "shoalx_collective_launch_config: device %d does not support cooperative launch\n", device);
      return SHOAL_ERR_UNSUPPORTED;
    }
    if (blocks == 0 || blocks > (unsigned long long)fit) {
      fprintf(stderr,
              "shoalx_collective_launch_config: a grid of %llu blocks cannot be co-resident: at most %d blocks of %u "
              "threads with %zu bytes of dynamic shared memory fit on device %d at once\n",
              blocks, fit, config->blockDim.x * config->blockDim.y * config->blockDim.z, config->dynamicSmemBytes,
              device);
      return SHOAL_ERR_INVALID_ARGUMENT;
    }
  }
  err = cudaLaunchKernelExC(&launch, func, args);
  if (err != cudaSuccess) {
    fprintf(stderr, "shoalx_collective_launch_config: cudaLaunchKernelExC failed: %s\n", cudaGetErrorString(err));
    return SHOAL_ERR_CUDA;
  }
  return SHOAL_OK;
}

#endif /* SHOAL_COLLECTIVE_LAUNCH_H_ */
