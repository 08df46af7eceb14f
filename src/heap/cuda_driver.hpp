// The CUDA driver API, reached without linking libcuda: libcuda.so.1 is dlopen'ed at first use and
// every entry point is fetched through cuGetProcAddress, so libshoal loads on machines without an
// NVIDIA driver. Also the CHECK macros that turn a CUresult into a shoal::error. CUDA builds only.
#pragma once

#ifdef SHOAL_HAVE_CUDA

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "shoal/error.hpp"

namespace shoal::detail {

/// Every entry point is requested as it was in CUDA 12.0, whatever the toolkit or driver is: the ABI
/// (and the PFN typedef below) then never changes under us, and any driver >= 12.0 serves it.
inline constexpr int kCudaDriverApiVersion = 12000;

// X(name, abi): the field `name` has type PFN_<name>_v<abi>, the ABI that cuGetProcAddress returns
// for <name> at kCudaDriverApiVersion (so a wrong signature is a compile error). To add an entry, add
// one line; pick <abi> as the largest suffix of PFN_<name>_v* in <cudaTypedefs.h> that is <= 12000.
// Stream-ordered entries are the legacy-default-stream variants (stream 0 = the legacy stream).
// Never add cuMulticast*: multicast objects are forbidden on our GPU machines.
#define SHOAL_CUDA_DRIVER_ENTRIES(X)               \
  X(cuGetErrorName, 6000)                          \
  X(cuGetErrorString, 6000)                        \
  X(cuInit, 2000)                                  \
  X(cuDriverGetVersion, 2020)                      \
  X(cuDeviceGet, 2000)                             \
  X(cuDeviceGetCount, 2000)                        \
  X(cuDeviceGetName, 2000)                         \
  X(cuDeviceGetAttribute, 2000)                    \
  X(cuDeviceTotalMem, 3020)                        \
  X(cuDeviceGetPCIBusId, 4010)                     \
  X(cuDeviceGetByPCIBusId, 4010)                   \
  X(cuDeviceCanAccessPeer, 4000)                   \
  X(cuDeviceGetP2PAttribute, 8000)                 \
  X(cuDevicePrimaryCtxRetain, 7000)                \
  X(cuDevicePrimaryCtxRelease, 11000)              \
  X(cuCtxGetCurrent, 4000)                         \
  X(cuCtxCreate, 11040)                            \
  X(cuCtxDestroy, 4000)                            \
  X(cuCtxPushCurrent, 4000)                        \
  X(cuCtxPopCurrent, 4000)                         \
  X(cuCtxSetCurrent, 4000)                         \
  X(cuCtxGetDevice, 2000)                          \
  X(cuCtxSynchronize, 2000)                        \
  X(cuMemGetInfo, 3020)                            \
  X(cuMemGetAllocationGranularity, 10020)          \
  X(cuMemCreate, 10020)                            \
  X(cuMemRelease, 10020)                           \
  X(cuMemExportToShareableHandle, 10020)           \
  X(cuMemImportFromShareableHandle, 10020)         \
  X(cuMemGetAllocationPropertiesFromHandle, 10020) \
  X(cuMemAddressReserve, 10020)                    \
  X(cuMemAddressFree, 10020)                       \
  X(cuMemMap, 10020)                               \
  X(cuMemUnmap, 10020)                             \
  X(cuMemSetAccess, 10020)                         \
  X(cuMemAlloc, 3020)                              \
  X(cuMemFree, 3020)                               \
  X(cuMemcpy, 4000)                                \
  X(cuMemcpyHtoD, 3020)                            \
  X(cuModuleGetGlobal, 3020)                       \
  X(cuLibraryGetGlobal, 12000)                     \
  X(cuMemcpyDtoH, 3020)                            \
  X(cuMemcpyAsync, 4000)                           \
  X(cuMemsetD8, 3020)                              \
  X(cuMemsetD8Async, 3020)                         \
  X(cuPointerGetAttribute, 4000)                   \
  X(cuStreamCreate, 2000)                          \
  X(cuStreamDestroy, 4000)                         \
  X(cuStreamSynchronize, 2000)                     \
  X(cuStreamQuery, 2000)                           \
  X(cuStreamWriteValue32, 11070)                   \
  X(cuStreamWaitValue32, 11070)                    \
  X(cuStreamWriteValue64, 11070)                   \
  X(cuStreamWaitValue64, 11070)                    \
  X(cuEventCreate, 2000)                           \
  X(cuEventDestroy, 4000)                          \
  X(cuEventRecord, 2000)                           \
  X(cuEventSynchronize, 2000)                      \
  X(cuEventElapsedTime, 2000)

/// The driver's entry points, filled once per process (see load_cuda_driver). Every field is
/// non-null in a table that load_cuda_driver returned.
struct cuda_driver {
#define SHOAL_CUDA_DRIVER_FIELD(name, abi) PFN_##name##_v##abi name = nullptr;
  SHOAL_CUDA_DRIVER_ENTRIES(SHOAL_CUDA_DRIVER_FIELD)
#undef SHOAL_CUDA_DRIVER_FIELD
  int driver_version = 0;  ///< cuDriverGetVersion, e.g. 12080 for 12.8
};

/// The driver table, loaded at the first call (thread-safe; later calls return the same pointer).
/// nullptr when libcuda.so.1 cannot be loaded, is older than CUDA 12.0, or lacks an entry; then
/// cuda_driver_load_error() says why. Does not call cuInit. Never throws.
const cuda_driver* load_cuda_driver() noexcept;
/// Why load_cuda_driver() returned nullptr ("" when it did not), one line for error messages.
const std::string& cuda_driver_load_error() noexcept;

/// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", or "CUresult 2" when the driver cannot name it.
std::string describe_cu_result(CUresult result);

/// Throws shoal::error(code, call, "<what> failed: <describe_cu_result(result)>").
[[noreturn]] void throw_cu_error(CUresult result, std::string_view call, std::string_view what, const char* file,
                                 int line, errc code = errc::cuda);

/// The text of a checked expression as it should appear in a message: "drv->cuMemMap(a, b)" ->
/// "cuMemMap(a, b)" (the table's name is noise to the reader).
std::string_view cu_call_text(std::string_view expression) noexcept;

}  // namespace shoal::detail

/// Evaluates `expr` (a CUresult); on failure throws shoal::error(errc::cuda, call, "<expr> failed: ...")
/// at this file and line, e.g. "cuMemCreate(&handle, bytes, &prop_, 0) failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of
/// memory".
#define SHOAL_CU_CHECK(call, expr)                                                                              \
  do {                                                                                                          \
    const CUresult shoal_cu_result_ = (expr);                                                                   \
    if (shoal_cu_result_ != CUDA_SUCCESS)                                                                       \
      ::shoal::detail::throw_cu_error(shoal_cu_result_, (call), ::shoal::detail::cu_call_text(#expr), __FILE__, \
                                      __LINE__);                                                                \
  } while (0)

/// Like SHOAL_CU_CHECK, with the failing call described by fmt::format(__VA_ARGS__), so that the
/// message can carry values: SHOAL_CU_CHECK_MSG(call, drv->cuMemCreate(...), "cuMemCreate({} bytes)", n).
#define SHOAL_CU_CHECK_MSG(call, expr, ...)                                                                      \
  do {                                                                                                           \
    const CUresult shoal_cu_result_ = (expr);                                                                    \
    if (shoal_cu_result_ != CUDA_SUCCESS)                                                                        \
      ::shoal::detail::throw_cu_error(shoal_cu_result_, (call), ::fmt::format(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

#endif  // SHOAL_HAVE_CUDA
