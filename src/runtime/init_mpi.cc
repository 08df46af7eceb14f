// shoalx_init_mpi_comm: init over an MPI communicator. MPI is reached by dlopen/dlsym, never linked: rank 0 of the
// communicator makes the unique id, MPI_Bcast hands it to the others, and shoal_init_attr does the rest.
#include <dlfcn.h>

#include <array>
#include <cstring>

#include "common/check.hpp"
#include "runtime/c_api.hpp"
#include "shoal/shoal.h"

// Throws shoal::error(code, call, ...) unless cond.
#define SHOAL_REQUIRE(cond, code, call, ...)           \
  do {                                                 \
    if (!(cond)) SHOAL_THROW(code, call, __VA_ARGS__); \
  } while (0)

namespace capi = shoal::detail::c_api;
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
  int rc = capi::guarded(
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

}  // extern "C"
