// shoal-bench's device-initiated benchmarks through shoal's facade (bench/device/shoal_api.cuh).
// Compiled by nvcc without -rdc: the header-only device API is the point.
#include "device/device_bench.hpp"
#include "device/driver.cuh"
#include "device/kernels.cuh"
#include "device/shoal_api.cuh"

namespace shoal::bench {

bool device_select_gpu() { return dev::select_gpu_from_env(); }

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
