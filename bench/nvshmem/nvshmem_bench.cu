// The nvcc -rdc part of shoal-bench-nvshmem: NVSHMEM init through the UID bootstrap, then the shared
// driver (bench/device/driver.cuh) on the NVSHMEM adapter, then the collectives (nvshmem_coll_bench.cu).
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "device/driver.cuh"
#include "device/kernels.cuh"
#include "nvshmem/nvshmem_api.cuh"
#include "nvshmem/nvshmem_bench.hpp"

namespace shoal::bench::nvshmem {

static_assert(sizeof(nvshmemx_uniqueid_t) == kUniqueIdBytes);

bool select_gpu() { return dev::select_gpu_from_env(); }

unique_id make_unique_id() {
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (int rc = nvshmemx_get_uniqueid(&id); rc != 0)
    throw std::runtime_error("nvshmemx_get_uniqueid failed (" + std::to_string(rc) + ")");
  unique_id out{};
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

bool run(int rank, int size, const unique_id& uid, const options& opts, const selection& sel, std::vector<row>& rows) {
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  std::memcpy(&id, uid.data(), sizeof(id));
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (int rc = nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr); rc != 0)
    throw std::runtime_error("nvshmemx_set_attr_uniqueid_args failed (" + std::to_string(rc) + ")");
  if (int rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr); rc != 0)
    throw std::runtime_error("nvshmemx_init_attr failed (" + std::to_string(rc) + ")");
  if (nvshmem_my_pe() != rank || nvshmem_n_pes() != size)
    throw std::runtime_error("NVSHMEM numbered this PE " + std::to_string(nvshmem_my_pe()) + " of " +
                             std::to_string(nvshmem_n_pes()) + ", the launcher " + std::to_string(rank) + " of " +
                             std::to_string(size));
  if (rank == 0) {  // results name the NVSHMEM they were measured against (the summary greps this line)
    int major = 0, minor = 0, patch = 0;
    nvshmemx_vendor_get_version_info(&major, &minor, &patch);
    std::printf("shoal-bench-nvshmem: NVSHMEM %d.%d.%d, %d PEs\n", major, minor, patch, size);
    std::fflush(stdout);
  }
  bool passed = true;
  if (sel.rma) {
    dev::driver<dev::nvshmem_api> d(opts, rows, "cuda");
    d.run(sel.rma_names);
    passed = !d.any_check_failed();
  }
  passed = run_collectives(opts, sel, rows) && passed;
  nvshmem_finalize();
  return passed;
}

}  // namespace shoal::bench::nvshmem
