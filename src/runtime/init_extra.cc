// Entry points for other init modes and run-time-loaded kernels: init over an MPI communicator (MPI reached by
// dlopen/dlsym, never linked), status names, sync_all on a stream, and the facade world of kernels loaded with
// cuModuleLoad/cuLibraryLoad.
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <map>
#include <mutex>

#include "common/check.hpp"
#include "runtime/facade.hpp"
#include "shoal/shoal.h"

// Throws shoal::error(code, call, ...) unless cond.
#define SHOAL_REQUIRE(cond, code, call, ...)           \
  do {                                                 \
    if (!(cond)) SHOAL_THROW(code, call, __VA_ARGS__); \
  } while (0)

#ifdef SHOAL_HAVE_CUDA
#include "heap/cuda_driver.hpp"
#endif

namespace f = shoal::detail::facade;
using shoal::errc;

namespace {

// The two MPI ABIs in use: Open MPI (handles are pointers to library objects) and MPICH and its derivatives
// (handles are ints). Told apart by Open MPI's exported world communicator.
struct mpi_api {
  bool ompi = false;
  void* comm_rank = nullptr;
  void* comm_size = nullptr;
  void* bcast = nullptr;
  void* byte_type = nullptr;  // Open MPI: &ompi_mpi_byte
};

void* mpi_symbol(const char* name) {
  if (void* p = dlsym(RTLD_DEFAULT, name)) return p;
  for (const char* lib : {"libmpi.so", "libmpi.so.40", "libmpi.so.12"}) {
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
      if (void* p = dlsym(h, name)) return p;
  }
  return nullptr;
}

mpi_api load_mpi(const char* call) {
  mpi_api api;
  api.comm_rank = mpi_symbol("MPI_Comm_rank");
  api.comm_size = mpi_symbol("MPI_Comm_size");
  api.bcast = mpi_symbol("MPI_Bcast");
  SHOAL_REQUIRE(api.comm_rank != nullptr && api.comm_size != nullptr && api.bcast != nullptr, errc::unsupported, call,
                "MPI is not loaded in this process (no MPI_Comm_rank/MPI_Comm_size/MPI_Bcast); link the program with "
                "MPI and call MPI_Init first");
  api.ompi = mpi_symbol("ompi_mpi_comm_world") != nullptr;
  if (api.ompi) {
    api.byte_type = mpi_symbol("ompi_mpi_byte");
    SHOAL_REQUIRE(api.byte_type != nullptr, errc::unsupported, call, "Open MPI without ompi_mpi_byte");
  }
  return api;
}

constexpr int kMpichByte = 0x4c00010d;  // MPICH ABI: MPI_BYTE

}  // namespace

extern "C" {

int shoalx_init_mpi_comm(const void* mpi_comm) {
  const char* call = "shoalx_init_mpi_comm";
  int rc = f::guarded(
      call,
      [&] {
        SHOAL_CHECK_ARG(mpi_comm != nullptr, call, "mpi_comm is null");
        mpi_api api = load_mpi(call);
        int rank = -1, size = 0, e1 = 0, e2 = 0, e3 = 0;
        shoal_init_attr_t attr{};
        attr.version = SHOAL_INIT_ATTR_VERSION;
        std::array<unsigned char, SHOAL_UNIQUEID_BYTES> uid{};
        if (api.ompi) {
          void* comm = *static_cast<void* const*>(mpi_comm);
          e1 = reinterpret_cast<int (*)(void*, int*)>(api.comm_rank)(comm, &rank);
          e2 = reinterpret_cast<int (*)(void*, int*)>(api.comm_size)(comm, &size);
          if (e1 == 0 && e2 == 0 && rank == 0)
            SHOAL_REQUIRE(shoal_get_uniqueid(&attr.uid) == 0, errc::system, call,
                          "shoal_get_uniqueid failed on rank 0");
          std::memcpy(uid.data(), attr.uid.internal, uid.size());
          if (e1 == 0 && e2 == 0)
            e3 = reinterpret_cast<int (*)(void*, int, void*, int, void*)>(api.bcast)(uid.data(), int(uid.size()),
                                                                                     api.byte_type, 0, comm);
        } else {
          int comm = *static_cast<const int*>(mpi_comm);
          e1 = reinterpret_cast<int (*)(int, int*)>(api.comm_rank)(comm, &rank);
          e2 = reinterpret_cast<int (*)(int, int*)>(api.comm_size)(comm, &size);
          if (e1 == 0 && e2 == 0 && rank == 0)
            SHOAL_REQUIRE(shoal_get_uniqueid(&attr.uid) == 0, errc::system, call,
                          "shoal_get_uniqueid failed on rank 0");
          std::memcpy(uid.data(), attr.uid.internal, uid.size());
          if (e1 == 0 && e2 == 0)
            e3 = reinterpret_cast<int (*)(void*, int, int, int, int)>(api.bcast)(uid.data(), int(uid.size()),
                                                                                 kMpichByte, 0, comm);
        }
        SHOAL_REQUIRE(e1 == 0 && e2 == 0 && e3 == 0, errc::system, call,
                      "MPI failed (MPI_Comm_rank {}, MPI_Comm_size {}, MPI_Bcast {}); is mpi_comm an MPI_Comm*?", e1,
                      e2, e3);
        std::memcpy(attr.uid.internal, uid.data(), uid.size());
        attr.rank = rank;
        attr.size = size;
        return shoal_init_attr(&attr);
      },
      int(SHOAL_ERR_INTERNAL));
  return rc;
}

const char* shoalx_status_string(int code) {
  static constexpr std::array<const char*, 11> names = {
      "SHOAL_OK",           "SHOAL_ERR_INVALID_ARGUMENT", "SHOAL_ERR_NOT_INITIALIZED", "SHOAL_ERR_OUT_OF_MEMORY",
      "SHOAL_ERR_MISMATCH", "SHOAL_ERR_TIMEOUT",          "SHOAL_ERR_PEER_FAILURE",    "SHOAL_ERR_SYSTEM",
      "SHOAL_ERR_CUDA",     "SHOAL_ERR_UNSUPPORTED",      "SHOAL_ERR_INTERNAL"};
  return code >= 0 && code < int(names.size()) ? names[size_t(code)] : "unknown";
}

}  // extern "C"

namespace {
std::mutex g_buffers_mutex;
std::map<uintptr_t, size_t> g_buffers;  // registered local ranges: start -> nbytes
}  // namespace

extern "C" {

int shoalx_buffer_register(void* addr, size_t nbytes) {
  const char* call = "shoalx_buffer_register";
  return f::guarded(
      call,
      [&] {
        (void)f::current(call);
        SHOAL_CHECK_ARG(addr != nullptr && nbytes > 0, call, "addr={} nbytes={}: not a buffer", addr, nbytes);
        const auto start = reinterpret_cast<uintptr_t>(addr);
        std::lock_guard lock(g_buffers_mutex);
        auto next = g_buffers.lower_bound(start);
        SHOAL_CHECK_ARG(next == g_buffers.end() || next->first >= start + nbytes, call,
                        "[{}, +{}) overlaps a registered buffer", addr, nbytes);
        SHOAL_CHECK_ARG(next == g_buffers.begin() || std::prev(next)->first + std::prev(next)->second <= start, call,
                        "[{}, +{}) overlaps a registered buffer", addr, nbytes);
        g_buffers.emplace(start, nbytes);
        return int(SHOAL_OK);
      },
      int(SHOAL_ERR_INTERNAL));
}

int shoalx_buffer_unregister(void* addr) {
  const char* call = "shoalx_buffer_unregister";
  return f::guarded(
      call,
      [&] {
        std::lock_guard lock(g_buffers_mutex);
        SHOAL_CHECK_ARG(g_buffers.erase(reinterpret_cast<uintptr_t>(addr)) == 1, call,
                        "addr={} is not the start of a registered buffer", addr);
        return int(SHOAL_OK);
      },
      int(SHOAL_ERR_INTERNAL));
}

void shoalx_buffer_unregister_all(void) {
  std::lock_guard lock(g_buffers_mutex);
  g_buffers.clear();
}

int shoalx_sync_all_on_stream(struct CUstream_st* stream) {
  return shoalx_team_sync_on_stream(SHOAL_TEAM_WORLD, stream);
}

}  // extern "C"

namespace {

// The facade world's name in a module compiled without -rdc (a static __constant__; with -rdc nvcc makes the name
// unique per translation unit, so such modules cannot be found by name).
constexpr const char* kWorldSymbol = "shoal_detail_world_c";

template <class GetGlobal>
int init_loaded_code(const char* call, const void* handle, GetGlobal&& get_global) {
  return f::guarded(
      call,
      [&]() -> int {
        SHOAL_CHECK_ARG(handle != nullptr, call, "the module/library is null");
        const auto& world = f::current(call).device_handle();
#ifdef SHOAL_HAVE_CUDA
        const auto* drv = shoal::detail::load_cuda_driver();
        SHOAL_REQUIRE(drv != nullptr, errc::cuda, call, "no CUDA driver: {}", shoal::detail::cuda_driver_load_error());
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
