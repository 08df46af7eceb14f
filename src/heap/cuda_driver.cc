// Loads the CUDA driver API at first use: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for every
// entry of SHOAL_CUDA_DRIVER_ENTRIES at a fixed API version. Nothing here links against libcuda.
#ifdef SHOAL_HAVE_CUDA

#include "heap/cuda_driver.hpp"

#include <dlfcn.h>

#include <algorithm>

#include "common/check.hpp"

namespace shoal::detail {

namespace {

struct driver_state {
  cuda_driver table;
  const cuda_driver* usable = nullptr;  // &table once every entry is filled
  std::string error;                    // why `usable` is null
};

// Fills `s` or says in s.error why it cannot. The library handle is never closed: the entry points
// live as long as the process.
void load_into(driver_state& s) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    s.error = fmt::format("the NVIDIA driver library libcuda.so.1 could not be loaded ({})",
                          why != nullptr ? why : "no reason given");
    return;
  }
  // cuGetProcAddress_v2 (with the query-result argument) exists in every driver since CUDA 12.0.
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    s.error =
        "libcuda.so.1 has no cuGetProcAddress_v2: the NVIDIA driver predates CUDA 12.0, and shoal needs a driver "
        "for CUDA 12.0 or newer";
    return;
  }
  // LEGACY_STREAM: stream 0 passed to stream-ordered entries means the legacy default stream, whatever
  // the user's code was compiled with (shoal's own calls pass explicit streams).
  auto fetch = [&](const char* name, void** out) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result = get_proc(name, out, kCudaDriverApiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    if (result == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && *out != nullptr) return true;
    *out = nullptr;
    s.error = fmt::format(
        "libcuda.so.1 does not provide {} for CUDA {}.{} (cuGetProcAddress returned CUresult {}, status {}{})", name,
        kCudaDriverApiVersion / 1000, kCudaDriverApiVersion % 1000 / 10, static_cast<int>(result),
        static_cast<int>(status),
        status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? ": the driver is older than CUDA 12.0" : "");
    return false;
  };
#define SHOAL_CUDA_DRIVER_FETCH(name, abi) \
  if (!fetch(#name, reinterpret_cast<void**>(&s.table.name))) return;
  SHOAL_CUDA_DRIVER_ENTRIES(SHOAL_CUDA_DRIVER_FETCH)
#undef SHOAL_CUDA_DRIVER_FETCH

  // Needs no cuInit. A failure here only loses a figure for logs and shoal-info.
  if (s.table.cuDriverGetVersion(&s.table.driver_version) != CUDA_SUCCESS) s.table.driver_version = 0;
  s.usable = &s.table;
}

const driver_state& state() noexcept {
  // Function-local static: loaded once, thread-safe. load_into allocates only the error string; if even
  // that throws (no memory), the process is past saving and std::terminate is the honest answer.
  static const driver_state s = [] {
    driver_state fresh;
    load_into(fresh);
    return fresh;
  }();
  return s;
}

}  // namespace

const cuda_driver* load_cuda_driver() noexcept { return state().usable; }

const std::string& cuda_driver_load_error() noexcept { return state().error; }

std::string describe_cu_result(CUresult result) {
  const cuda_driver* drv = load_cuda_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (drv != nullptr) {
    // Both leave the pointer null (and return CUDA_ERROR_INVALID_VALUE) for codes they do not know.
    if (drv->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (drv->cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  }
  const int code = static_cast<int>(result);
  if (name != nullptr && text != nullptr) return fmt::format("{} ({}): {}", name, code, text);
  if (name != nullptr) return fmt::format("{} ({})", name, code);
  return fmt::format("CUresult {}", code);
}

void throw_cu_error(CUresult result, std::string_view call, std::string_view what, const char* file, int line,
                    errc code) {
  throw_error(code, call, fmt::format("{} failed: {}", what, describe_cu_result(result)), file, line);
}

std::string_view cu_call_text(std::string_view expression) noexcept {
  // Only the callee (before the first '(') may carry the table prefix: "drv_->cuX(" or "drv.cuX(".
  const size_t callee_end = std::min(expression.find('('), expression.size());
  for (size_t i = 1; i + 1 < callee_end; ++i) {
    if (expression[i] == 'c' && expression[i + 1] == 'u' && (expression[i - 1] == '>' || expression[i - 1] == '.'))
      return expression.substr(i);
  }
  return expression;
}

}  // namespace shoal::detail

#endif  // SHOAL_HAVE_CUDA
