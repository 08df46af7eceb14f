// reduce_typed<T>: the on-stream reduce (or reducescatter) kernels of one element type T, launched
// by launch_reduce (coll_kernels.cu). Defined in coll_reduce_kernels.cuh and instantiated, a few
// types per unit, in coll_reduce_{int8,int32,uint32,float,half}.cu, so that the 144 reduce kernels compile
// in parallel instead of in one unit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "coll/coll_kernels.hpp"

namespace shoal::detail::coll {

/// The kernel of op on T (and/or/xor: integer T only; cudaErrorInvalidValue otherwise).
template <class T>
cudaError_t reduce_typed(const device_world& w, const device_team& t, bool scatter, reduce_op op, void* dest,
                         const void* source, size_t nreduce, const launch_config& cfg);

// One line per instantiating unit's type; the .cu named beside it defines them.
#define SHOAL_COLL_REDUCE_TYPED(T)                                                                              \
  template cudaError_t reduce_typed<T>(const device_world& w, const device_team& t, bool scatter, reduce_op op, \
                                       void* dest, const void* source, size_t nreduce, const launch_config& cfg)
extern SHOAL_COLL_REDUCE_TYPED(int8_t);  // coll_reduce_int8.cu
extern SHOAL_COLL_REDUCE_TYPED(int16_t);
extern SHOAL_COLL_REDUCE_TYPED(uint8_t);
extern SHOAL_COLL_REDUCE_TYPED(uint16_t);
extern SHOAL_COLL_REDUCE_TYPED(int32_t);  // coll_reduce_int32.cu
extern SHOAL_COLL_REDUCE_TYPED(int64_t);
extern SHOAL_COLL_REDUCE_TYPED(uint32_t);  // coll_reduce_uint32.cu
extern SHOAL_COLL_REDUCE_TYPED(uint64_t);
extern SHOAL_COLL_REDUCE_TYPED(float);  // coll_reduce_float.cu
extern SHOAL_COLL_REDUCE_TYPED(double);
extern SHOAL_COLL_REDUCE_TYPED(__half);  // coll_reduce_half.cu
extern SHOAL_COLL_REDUCE_TYPED(__nv_bfloat16);

}  // namespace shoal::detail::coll
