// Host-issued operations on GPU symmetric memory (this PE's or a peer's, mapped over NVLink):
// copies with cudaMemcpyAsync, atomics with a one-thread kernel, all on one internal stream that
// quiet() drains. Slow by design (a launch per atomic); the device API is the fast path.
#include <cstring>
#include <mutex>

#include "common/cuda_check.hpp"
#include "transport/amo_kernel.hpp"
#include "transport/memory_ops.hpp"

namespace shoal::detail {

namespace {

class cuda_memory_ops final : public memory_ops {
 public:
  cuda_memory_ops() {
    SHOAL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "shoal_init");
    SHOAL_CUDA_CHECK(cudaMallocHost(&fetched_, sizeof(unsigned long long)), "shoal_init");
    // Loaded now: a host atomic that wakes a spinning kernel must not wait for that kernel to load.
    SHOAL_CUDA_CHECK(preload_amo_kernel(fetched_, stream_), "shoal_init");
    void* box = nullptr;
    SHOAL_CUDA_CHECK(cudaHostAlloc(&box, sizeof(device_report_box), cudaHostAllocMapped | cudaHostAllocPortable),
                     "shoal_init");
    report_box_ = static_cast<device_report_box*>(box);
    std::memset(report_box_, 0, sizeof(device_report_box));
    void* device = nullptr;
    SHOAL_CUDA_CHECK(cudaHostGetDevicePointer(&device, box, 0), "shoal_init");
    report_box_device_ = static_cast<device_report_box*>(device);
  }
  ~cuda_memory_ops() override {
    cudaStreamSynchronize(stream_);
    cudaFreeHost(fetched_);
    cudaFreeHost(report_box_);
    cudaStreamDestroy(stream_);
  }

  void copy(void* dest, const void* source, size_t nbytes) override {
    std::lock_guard lock(mutex_);
    SHOAL_CUDA_CHECK(cudaMemcpyAsync(dest, source, nbytes, cudaMemcpyDefault, stream_), "shoal host RMA");
    SHOAL_CUDA_CHECK(cudaStreamSynchronize(stream_), "shoal host RMA");
  }

  void atomic(amo_op op, scalar type, void* target, const void* operand, const void* compare_value,
              void* fetched) override {
    if (type.bytes != 4 && type.bytes != 8 && type != scalar{scalar_kind::floating, 2})
      SHOAL_THROW(errc::unsupported, "shoal host atomic", "{}-byte atomics are not supported on GPU memory",
                  type.bytes);
    amo_args a{op, 0, 0};
    if (operand != nullptr) std::memcpy(&a.operand, operand, type.bytes);
    if (compare_value != nullptr) std::memcpy(&a.compare, compare_value, type.bytes);
    std::lock_guard lock(mutex_);
    SHOAL_CUDA_CHECK(launch_amo_kernel(type, target, a, fetched_, stream_), "shoal host atomic");
    SHOAL_CUDA_CHECK(cudaStreamSynchronize(stream_), "shoal host atomic");
    if (fetched != nullptr) std::memcpy(fetched, fetched_, type.bytes);
  }

  void load(scalar type, const void* addr, void* out) override { copy(out, addr, type.bytes); }

  void zero(void* dest, size_t nbytes) override {
    std::lock_guard lock(mutex_);
    SHOAL_CUDA_CHECK(cudaMemsetAsync(dest, 0, nbytes, stream_), "shoal_calloc");
    SHOAL_CUDA_CHECK(cudaStreamSynchronize(stream_), "shoal_calloc");
  }

  void quiet() override {
    std::lock_guard lock(mutex_);
    SHOAL_CUDA_CHECK(cudaStreamSynchronize(stream_), "shoal_quiet");
  }

  bool direct() const override { return false; }
  device_report_box* report_box_host() const override { return report_box_; }
  device_report_box* report_box_device() const override { return report_box_device_; }

 private:
  std::mutex mutex_;  // one stream and one result slot for every host thread
  cudaStream_t stream_ = nullptr;
  unsigned long long* fetched_ = nullptr;           // pinned host: the atomic kernel writes the old value here
  device_report_box* report_box_ = nullptr;         // pinned host, device-mapped: kernels' failure reports
  device_report_box* report_box_device_ = nullptr;  // the same box as kernels address it
};

}  // namespace

std::unique_ptr<memory_ops> make_cuda_memory_ops() { return std::make_unique<cuda_memory_ops>(); }

}  // namespace shoal::detail
