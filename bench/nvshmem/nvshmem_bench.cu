// The nvcc -rdc part of shoal-bench-nvshmem: NVSHMEM init through the UID bootstrap, then the shared
// driver (bench/common/driver.cuh, the families of bench/rma/, amo/, sync/) on the NVSHMEM adapter, then the
// collectives (nvshmem_coll_bench.cu); and the checks that the NVSHMEM loaded is the one built against (several
// releases may sit side by side).
#include <limits.h>
#include <link.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "amo/amo.cuh"
#include "common/driver.cuh"
#include "nvshmem/nvshmem_api.cuh"
#include "nvshmem/nvshmem_bench.hpp"
#include "order/order.cuh"
#include "rma/rma.cuh"
#include "sync/sync.cuh"

namespace shoal::bench::nvshmem {

static_assert(sizeof(nvshmemx_uniqueid_t) == kUniqueIdBytes);

bool select_gpu() { return select_gpu_from_env(); }

std::string impl_name() { return dev::kNvshmemImpl; }

namespace {
/// The folder of `path` with links resolved ("" if it does not exist).
std::string real_dir(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return "";
  std::string real = buf;
  return real.substr(0, real.rfind('/'));
}

/// The path of the loaded shared object whose file name starts with `stem` ("" if none is loaded).
std::string loaded_object(const std::string& stem) {
  struct query {
    const std::string* stem;
    std::string path;
  } q{&stem, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        auto* q = static_cast<query*>(arg);
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string base = name.substr(name.rfind('/') + 1);
        if (base.rfind(*q->stem, 0) != 0) return 0;
        q->path = name;
        return 1;
      },
      &q);
  return q.path;
}

const std::string kLibDir = SHOAL_NVSHMEM_LIB_DIR;  // realpath'd by CMake
const std::string kUidPlugin = "nvshmem_bootstrap_uid.so." + std::to_string(SHOAL_NVSHMEM_VERSION_MAJOR);
}  // namespace

std::string check_library() {
  const std::string host = loaded_object("libnvshmem_host.so");
  if (host.empty()) return "libnvshmem_host.so is not loaded";
  if (real_dir(host) != kLibDir)
    return "loaded " + host + ", but this binary was built against the NVSHMEM in " + kLibDir +
           " (LD_PRELOAD? a copy moved?)";
  const std::string plugin = kLibDir + "/" + kUidPlugin;
  if (getenv("NVSHMEM_BOOTSTRAP_UID_PLUGIN") == nullptr && !real_dir(plugin).empty())
    setenv("NVSHMEM_BOOTSTRAP_UID_PLUGIN", plugin.c_str(), 1);
  return "";
}

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
  // The rows are named after the headers' version: the library must report the same one.
  int major = 0, minor = 0, patch = 0;
  nvshmemx_vendor_get_version_info(&major, &minor, &patch);
  if (major != SHOAL_NVSHMEM_VERSION_MAJOR || minor != SHOAL_NVSHMEM_VERSION_MINOR ||
      patch != SHOAL_NVSHMEM_VERSION_PATCH)
    throw std::runtime_error("the NVSHMEM library reports " + std::to_string(major) + "." + std::to_string(minor) +
                             "." + std::to_string(patch) + "; this binary was built with the headers of " +
                             dev::kNvshmemImpl);
  const std::string plugin = loaded_object("nvshmem_bootstrap_uid");
  if (!plugin.empty() && real_dir(plugin) != kLibDir)
    throw std::runtime_error("NVSHMEM loaded the UID bootstrap plugin " + plugin + ", not the one in " + kLibDir);
  if (rank == 0) {  // results name the NVSHMEM they were measured against (the summary greps this line)
    std::printf("shoal-bench-nvshmem: NVSHMEM %d.%d.%d, %d PEs (impl %s; %s, plugin %s)\n", major, minor, patch, size,
                dev::kNvshmemImpl, loaded_object("libnvshmem_host.so").c_str(),
                plugin.empty() ? "not loaded" : plugin.c_str());
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
