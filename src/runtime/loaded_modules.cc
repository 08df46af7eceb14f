// shoalx_cumodule_init / shoalx_culibrary_init: kernels loaded at run time (cuModuleLoad*, cuLibraryLoad*) get the
// default world's device handle in their facade world, as the device facade gives kernels linked into the program.
#include "common/check.hpp"
#include "runtime/c_api.hpp"
#include "shoal/shoal.h"

#ifdef SHOAL_HAVE_CUDA
#include "heap/cuda_driver.hpp"
#endif

namespace capi = shoal::detail::c_api;
using shoal::errc;

namespace {

// The facade world's name in a module compiled without -rdc (a static __constant__; with -rdc nvcc makes the name
// unique per translation unit, so such modules cannot be found by name).
constexpr const char* kWorldSymbol = "shoal_detail_world_c";

template <class GetGlobal>
int init_loaded_code(const char* call, const void* handle, GetGlobal&& get_global) {
  return capi::guarded(
      call,
      [&]() -> int {
        SHOAL_CHECK_ARG(handle != nullptr, call, "the module/library is null");
        const auto& world = capi::current(call).device_handle();
#ifdef SHOAL_HAVE_CUDA
        const auto* drv = shoal::detail::load_cuda_driver();
        if (drv == nullptr)
          SHOAL_THROW(errc::cuda, call, "no CUDA driver: {}", shoal::detail::cuda_driver_load_error());
        CUdeviceptr ptr = 0;
        size_t nbytes = 0;
        CUresult r = get_global(*drv, &ptr, &nbytes);
        SHOAL_CHECK_ARG(r == CUDA_SUCCESS, call,
                        "the module has no facade world ({}: {}); was it compiled with <shoal/shoal.h> (or nvshmem.h) "
                        "and without -rdc?",
                        kWorldSymbol, shoal::detail::describe_cu_result(r));
        SHOAL_CHECK_ARG(nbytes == sizeof(world), call, "the module's {} has {} bytes, this libshoal's world {}",
                        kWorldSymbol, nbytes, sizeof(world));
        SHOAL_CU_CHECK(call, drv->cuMemcpyHtoD(ptr, &world, sizeof(world)));
        return SHOAL_OK;
#else
        (void)world;
        (void)get_global;
        SHOAL_THROW(errc::unsupported, call, "this libshoal was built without CUDA");
#endif
      },
      int(SHOAL_ERR_INTERNAL));
}

}  // namespace

extern "C" {

int shoalx_cumodule_init(void* cu_module) {
  return init_loaded_code("shoalx_cumodule_init", cu_module, [&](const auto& drv, auto* ptr, size_t* nbytes) {
#ifdef SHOAL_HAVE_CUDA
    return drv.cuModuleGetGlobal(ptr, nbytes, static_cast<CUmodule>(cu_module), kWorldSymbol);
#endif
  });
}

int shoalx_culibrary_init(void* cu_library) {
  return init_loaded_code("shoalx_culibrary_init", cu_library, [&](const auto& drv, auto* ptr, size_t* nbytes) {
#ifdef SHOAL_HAVE_CUDA
    return drv.cuLibraryGetGlobal(ptr, nbytes, static_cast<CUlibrary>(cu_library), kWorldSymbol);
#endif
  });
}

}  // extern "C"
