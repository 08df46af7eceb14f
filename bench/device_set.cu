// shoal-bench's device-initiated benchmarks through shoal's facade (bench/common/shoal_api.cuh): the families' members
// of the driver (rma/, amo/, sync/, order/) on shoal's adapter, then the collectives (coll/coll_bench.cu).
// Compiled by nvcc without -rdc: the header-only device API is the point.
#include "device_set.hpp"

#include "amo/amo.cuh"
#include "common/driver.cuh"
#include "common/shoal_api.cuh"
#include "order/order.cuh"
#include "rma/rma.cuh"
#include "rma/shoal_put_paths.cuh"
#include "sync/sync.cuh"

namespace shoal::bench {

bool device_select_gpu() { return select_gpu_from_env(); }

bool run_device_benchmarks(const options& opts, const std::vector<std::string>& which, std::vector<row>& rows,
                           const std::string& backend) {
  bool ok = true;
  {
    dev::driver<dev::shoal_api> d(opts, rows, backend);
    d.run(which);
    ok = !d.any_check_failed();
  }
  return run_collective_benchmarks(opts, which, rows, backend) && ok;
}

}  // namespace shoal::bench
