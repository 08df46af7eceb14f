// The `cuda` chunk backend: chunks are cuMemCreate allocations on this PE's GPU, exported as POSIX
// fds, imported by same-node peers and mapped with cuMemMap + cuMemSetAccess into one reservation
// (cuMemAddressReserve). The driver is reached through cuda_driver.hpp (dlopen at first use), so
// libshoal still loads and runs host-memory PEs on machines with no NVIDIA driver.
#include "heap/cuda_backend.hpp"

#include "common/check.hpp"

#ifdef SHOAL_HAVE_CUDA
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "common/env.hpp"
#include "common/log.hpp"
#include "heap/cuda_driver.hpp"
#endif

namespace shoal::detail {

const cuda_backend_info* cuda_info(const chunk_backend& backend) noexcept {
  return dynamic_cast<const cuda_backend_info*>(&backend);
}

bool can_access_peer(int my_device, int peer_device) noexcept {
  return cuda_peer_link_between(my_device, peer_device).access;
}

#ifdef SHOAL_HAVE_CUDA

namespace {

// The backend cannot know which public call triggered it; symmetric_heap rewraps growth errors with
// the API call, these name the heap operation (as the host backend does).
constexpr const char* kInitCall = "shoal heap init";
constexpr const char* kGrowCall = "shoal heap grow";
constexpr const char* kReleaseCall = "shoal heap release";

static_assert(sizeof(CUmemGenericAllocationHandle) <= sizeof(chunk::handle), "chunk::handle holds the CUDA handle");

// Whether CUDA can serve a heap in this process: decided once (cuInit included), never thrown.
struct cuda_probe {
  const cuda_driver* drv = nullptr;  // non-null when usable
  int num_devices = 0;
  std::string why_not;  // when not usable: one clause for an error message
};

const cuda_probe& probe() noexcept {
  static const cuda_probe result = []() noexcept {
    cuda_probe p;
    try {
      const cuda_driver* drv = load_cuda_driver();
      if (drv == nullptr) {
        p.why_not = cuda_driver_load_error();
        return p;
      }
      CUresult r = drv->cuInit(0);
      if (r != CUDA_SUCCESS) {
        p.why_not = fmt::format("cuInit(0) failed: {}", describe_cu_result(r));
        return p;
      }
      int count = 0;
      r = drv->cuDeviceGetCount(&count);
      if (r != CUDA_SUCCESS) {
        p.why_not = fmt::format("cuDeviceGetCount failed: {}", describe_cu_result(r));
        return p;
      }
      if (count <= 0) {
        p.why_not = "the CUDA driver sees no GPU (is CUDA_VISIBLE_DEVICES empty?)";
        return p;
      }
      p.drv = drv;
      p.num_devices = count;
    } catch (...) {  // only allocation of the message can throw
      p.drv = nullptr;
    }
    return p;
  }();
  return result;
}

// Makes `want` current on this thread for the span of one backend call and restores the caller's
// context after, so the backend works from any thread and never leaves the user's current device
// changed behind their back. With `driver_gone` (release steps), a driver that is already
// deinitialized sets it and leaves the scope inert instead of throwing (see driver_deinitialized).
class context_scope {
 public:
  context_scope(const cuda_driver& drv, CUcontext want, std::string_view call, bool* driver_gone = nullptr)
      : drv_(drv) {
    const CUresult r = drv.cuCtxGetCurrent(&previous_);
    if (r == CUDA_ERROR_DEINITIALIZED && driver_gone != nullptr) {
      *driver_gone = true;
      return;
    }
    SHOAL_CU_CHECK(call, r);
    if (previous_ != want) {
      SHOAL_CU_CHECK(call, drv.cuCtxSetCurrent(want));
      switched_ = true;
    }
  }
  ~context_scope() {
    if (switched_) (void)drv_.cuCtxSetCurrent(previous_);
  }
  context_scope(const context_scope&) = delete;
  context_scope& operator=(const context_scope&) = delete;

 private:
  const cuda_driver& drv_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

// At process exit the CUDA driver may be shut down before shoal's teardown runs: the CUDA runtime's own
// exit handler (torch's, at Python interpreter exit) deinitializes it first, and from then on every
// driver call returns CUDA_ERROR_DEINITIALIZED. The driver has then released every context, mapping
// and allocation of the process itself, so a release step that meets this code has nothing left to
// free: it stops without an error or a warning.
bool driver_deinitialized(CUresult result) noexcept { return result == CUDA_ERROR_DEINITIALIZED; }

CUdeviceptr to_device_ptr(const void* addr) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(addr)); }

std::string mib(uint64_t num_bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(num_bytes) / (1 << 20)); }

// The local rank from the launcher when SHOAL_LOCAL_RANK is unset: the backend is chosen before the
// bootstrap numbers PEs on the node, so the launchers' own variables are read here. 0 when unknown.
int local_rank_hint() {
  const int64_t shoal_local = env::get_int("SHOAL_LOCAL_RANK");
  if (shoal_local >= 0) return static_cast<int>(shoal_local);
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    if (auto value = env::parse_int(text); value && *value >= 0 && *value <= INT32_MAX) return static_cast<int>(*value);
  }
  return 0;
}

// SHOAL_DEVICE if set; else the device of the context current on this thread (the CUDA runtime's
// current device once the application used it); else local rank modulo the visible GPUs.
std::pair<int, std::string> pick_device(const cuda_driver& drv, int num_devices, std::string_view call) {
  const int64_t requested = env::get_int("SHOAL_DEVICE");
  if (requested >= 0) {
    SHOAL_CHECK_ARG(requested < num_devices, call,
                    "SHOAL_DEVICE={} but only {} GPU(s) are visible to this process (ordinals 0..{}; check "
                    "CUDA_VISIBLE_DEVICES)",
                    requested, num_devices, num_devices - 1);
    return {static_cast<int>(requested), "SHOAL_DEVICE"};
  }
  CUcontext current = nullptr;
  SHOAL_CU_CHECK(call, drv.cuCtxGetCurrent(&current));
  if (current != nullptr) {
    CUdevice device = 0;
    SHOAL_CU_CHECK(call, drv.cuCtxGetDevice(&device));
    for (int ordinal = 0; ordinal < num_devices; ++ordinal) {
      CUdevice d = 0;
      SHOAL_CU_CHECK(call, drv.cuDeviceGet(&d, ordinal));
      if (d == device) return {ordinal, "the current CUDA context"};
    }
  }
  const int local = local_rank_hint();
  return {local % num_devices, fmt::format("local rank {} of {} visible GPU(s)", local, num_devices)};
}

class cuda_backend final : public chunk_backend, public cuda_backend_info {
 public:
  cuda_backend(const cuda_driver& drv, int ordinal, const std::string& chosen_by, std::string_view call)
      : drv_(drv), ordinal_(ordinal) {
    SHOAL_CU_CHECK(call, drv_.cuDeviceGet(&device_, ordinal_));
    char name[256] = {};
    SHOAL_CU_CHECK(call, drv_.cuDeviceGetName(name, sizeof(name) - 1, device_));
    char bus_id[64] = {};
    SHOAL_CU_CHECK(call, drv_.cuDeviceGetPCIBusId(bus_id, sizeof(bus_id) - 1, device_));
    pci_bus_id_ = bus_id;
    for (char& ch : pci_bus_id_) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));

    if (attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, call) == 0)
      SHOAL_THROW(errc::unsupported, call,
                  "GPU {} ({}, PCI {}) does not support CUDA virtual memory management (cuMemCreate/cuMemMap), "
                  "which the cuda heap backend needs; set SHOAL_BACKEND=host to run on host memory",
                  ordinal_, name, pci_bus_id_);
    if (attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, call) == 0)
      SHOAL_THROW(errc::unsupported, call,
                  "GPU {} ({}, PCI {}) cannot export memory as a POSIX file descriptor, which the cuda heap "
                  "backend needs to share chunks between processes; set SHOAL_BACKEND=host to run on host memory",
                  ordinal_, name, pci_bus_id_);

    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device_;
    // Lets a NIC read and write the heap later (proxy/GDA transports) at no cost where it is offered.
    prop_.allocFlags.gpuDirectRDMACapable =
        attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, call) != 0 ? 1 : 0;

    // Access is granted to this GPU only, for every chunk this process maps, its own and its peers'
    // alike: a peer's chunk lives on the peer's GPU, and granting *this* GPU read/write on its mapping
    // is what makes this GPU's loads and stores to it go over NVLink/PCIe (peer access). The peer's
    // GPU needs no grant here: it reaches the memory through its own process's mapping.
    access_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access_.location.id = device_;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

    size_t minimum = 0;
    size_t recommended = 0;
    SHOAL_CU_CHECK(call, drv_.cuMemGetAllocationGranularity(&minimum, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    SHOAL_CU_CHECK(call,
                   drv_.cuMemGetAllocationGranularity(&recommended, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    if (minimum == 0)
      SHOAL_THROW(errc::cuda, call, "cuMemGetAllocationGranularity reported a granularity of 0 on GPU {}", ordinal_);
    // Every chunk size and map offset must be a multiple of the minimum; the recommended one (2 MiB on
    // current GPUs) is for speed. It is a multiple of the minimum in practice; lcm keeps both true.
    granularity_ = recommended == 0 ? minimum : std::lcm(minimum, recommended);

    SHOAL_CU_CHECK(call, drv_.cuDevicePrimaryCtxRetain(&context_, device_));
    CUcontext caller_context = nullptr;
    bool switched = false;
    try {
      // The CUDA runtime uses the primary context, so making it current here lets the application's
      // later runtime calls on this thread land on the same GPU and context. A context the caller made
      // current on this very GPU (even a non-primary one) is left alone.
      SHOAL_CU_CHECK(call, drv_.cuCtxGetCurrent(&caller_context));
      bool keep = caller_context == context_;
      if (!keep && caller_context != nullptr) {
        CUdevice current_device = 0;
        SHOAL_CU_CHECK(call, drv_.cuCtxGetDevice(&current_device));
        keep = current_device == device_;
      }
      if (!keep) {
        SHOAL_CU_CHECK(call, drv_.cuCtxSetCurrent(context_));
        switched = true;
      }
      // A private non-blocking stream, so that zero-filling a new chunk waits for nothing of the
      // application's work (the legacy default stream would wait for all of it).
      context_scope scope(drv_, context_, call);
      SHOAL_CU_CHECK(call, drv_.cuStreamCreate(&zero_stream_, CU_STREAM_NON_BLOCKING));
      SHOAL_LOG(info, heap, "cuda backend: GPU {} ({}, PCI {}, chosen by {}), driver {}.{}, granularity {}{}", ordinal_,
                name, pci_bus_id_, chosen_by, drv_.driver_version / 1000, drv_.driver_version % 1000 / 10,
                mib(granularity_), prop_.allocFlags.gpuDirectRDMACapable != 0 ? ", GPUDirect RDMA capable" : "");
    } catch (...) {
      if (zero_stream_ != nullptr) (void)drv_.cuStreamDestroy(zero_stream_);
      if (switched) (void)drv_.cuCtxSetCurrent(caller_context);
      (void)drv_.cuDevicePrimaryCtxRelease(device_);
      throw;
    }
  }

  ~cuda_backend() override {
    if (driver_gone_) return;  // the driver freed the stream and the context (driver_deinitialized)
    try {
      context_scope scope(drv_, context_, kReleaseCall, &driver_gone_);
      if (driver_gone_) return;
      if (zero_stream_ != nullptr) (void)drv_.cuStreamDestroy(zero_stream_);
    } catch (const std::exception& e) {
      SHOAL_LOG(warn, heap, "destroying the cuda backend's stream: {}", e.what());
    }
    // The last release resets the primary context (the CUDA runtime holds its own reference if the
    // application uses it, so this only tears down what shoal alone brought up).
    (void)drv_.cuDevicePrimaryCtxRelease(device_);
  }

  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  // ---- chunk_backend -------------------------------------------------------------------------------

  const char* name() const override { return "cuda"; }
  size_t granularity() const override { return granularity_; }
  bool host_accessible() const override { return false; }

  void* reserve(size_t bytes) override {
    check_multiple(bytes, "reservation", kInitCall);
    context_scope scope(drv_, context_, kInitCall);
    CUdeviceptr base = 0;
    // The alignment makes every heap base, and so every chunk offset, granularity-aligned.
    SHOAL_CU_CHECK_MSG(kInitCall, drv_.cuMemAddressReserve(&base, bytes, granularity_, 0, 0),
                       "cuMemAddressReserve({} bytes, alignment {})", bytes, granularity_);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(base));
  }

  void release(void* base, size_t bytes) override {
    if (base == nullptr || bytes == 0 || driver_gone_) return;
    context_scope scope(drv_, context_, kReleaseCall, &driver_gone_);
    if (driver_gone_) return;
    const CUresult r = drv_.cuMemAddressFree(to_device_ptr(base), bytes);
    if (gone(r)) return;
    SHOAL_CU_CHECK_MSG(kReleaseCall, r, "cuMemAddressFree({}, {} bytes)", base, bytes);
  }

  chunk create(size_t bytes) override {
    check_multiple(bytes, "chunk", kGrowCall);
    context_scope scope(drv_, context_, kGrowCall);
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = drv_.cuMemCreate(&handle, bytes, &prop_, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      // Physical GPU memory, not the heap's reservation, ran out: still the caller's out_of_memory.
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      (void)drv_.cuMemGetInfo(&free_bytes, &total_bytes);
      throw_cu_error(r, kGrowCall,
                     fmt::format("cuMemCreate({} on GPU {}; {} of {} free)", mib(bytes), ordinal_, mib(free_bytes),
                                 mib(total_bytes)),
                     __FILE__, __LINE__, errc::out_of_memory);
    }
    if (r != CUDA_SUCCESS)
      throw_cu_error(r, kGrowCall, fmt::format("cuMemCreate({} bytes on GPU {})", bytes, ordinal_), __FILE__, __LINE__);

    int fd = -1;
    try {
      SHOAL_CU_CHECK_MSG(kGrowCall,
                         drv_.cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                         "cuMemExportToShareableHandle(POSIX file descriptor, {} bytes on GPU {})", bytes, ordinal_);
      // Best effort: keep chunk fds out of programs the PE may exec.
      (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
      std::lock_guard lock(mutex_);
      unzeroed_.insert(handle);
    } catch (...) {
      if (fd >= 0) close(fd);
      (void)drv_.cuMemRelease(handle);
      throw;
    }
    // The fd stays open for the chunk's life: symmetric_heap sends it to each peer (possibly again,
    // when a peer joins a later growth), and destroy() closes it.
    return chunk{fd, bytes, static_cast<uint64_t>(handle)};
  }

  chunk import(int fd, size_t bytes) override {
    // The fd is ours from here on and is closed before we return, success or not: the imported handle
    // alone keeps the memory alive, and holding one fd per peer per chunk would run into RLIMIT_NOFILE
    // (8 PEs x thousands of chunks). An imported chunk therefore has fd == -1.
    struct fd_closer {
      int fd;
      ~fd_closer() {
        if (fd >= 0) close(fd);
      }
    } closer{fd};
    if (fd < 0) SHOAL_THROW(errc::internal, kGrowCall, "asked to import a chunk from fd {}", fd);
    check_multiple(bytes, "imported chunk", kGrowCall);
    context_scope scope(drv_, context_, kGrowCall);
    CUmemGenericAllocationHandle handle = 0;
    SHOAL_CU_CHECK_MSG(kGrowCall,
                       drv_.cuMemImportFromShareableHandle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                       "cuMemImportFromShareableHandle(fd {} of a peer's {}-byte chunk, on GPU {})", fd, bytes,
                       ordinal_);
    return chunk{-1, bytes, static_cast<uint64_t>(handle)};
  }

  void map(void* addr, const chunk& c) override {
    if (c.handle == 0) SHOAL_THROW(errc::internal, kGrowCall, "asked to map a destroyed chunk at {}", addr);
    check_multiple(c.bytes, "mapped chunk", kGrowCall);
    if (to_device_ptr(addr) % granularity_ != 0)
      SHOAL_THROW(errc::internal, kGrowCall, "chunk address {} is not a multiple of the granularity {}", addr,
                  granularity_);
    const auto handle = static_cast<CUmemGenericAllocationHandle>(c.handle);
    const CUdeviceptr ptr = to_device_ptr(addr);
    context_scope scope(drv_, context_, kGrowCall);
    SHOAL_CU_CHECK_MSG(kGrowCall, drv_.cuMemMap(ptr, c.bytes, 0, handle, 0), "cuMemMap({} bytes at {} on GPU {})",
                       c.bytes, addr, ordinal_);
    try {
      CUresult r = drv_.cuMemSetAccess(ptr, c.bytes, &access_, 1);
      if (r != CUDA_SUCCESS) {
        // Own chunks keep their fd, imported ones do not (see import): a failure on a peer's chunk
        // most likely means this GPU has no peer access to the peer's GPU.
        const bool imported = c.fd < 0;
        throw_cu_error(r, kGrowCall,
                       fmt::format("cuMemSetAccess(read/write for GPU {} on {} bytes at {}{})", ordinal_, c.bytes, addr,
                                   imported ? ", a same-node peer's chunk: can this GPU reach the peer's GPU over "
                                              "NVLink/PCIe peer access?"
                                            : ""),
                       __FILE__, __LINE__);
      }
      zero_if_new(ptr, handle, c.bytes);
    } catch (...) {
      (void)drv_.cuMemUnmap(ptr, c.bytes);
      throw;
    }
  }

  void unmap(void* addr, size_t bytes) override {
    // The range stays reserved (cuMemAddressReserve) after this, as the host backend keeps its hole.
    if (driver_gone_) return;
    context_scope scope(drv_, context_, kReleaseCall, &driver_gone_);
    if (driver_gone_) return;
    const CUresult r = drv_.cuMemUnmap(to_device_ptr(addr), bytes);
    if (gone(r)) return;
    SHOAL_CU_CHECK_MSG(kReleaseCall, r, "cuMemUnmap({} bytes at {})", bytes, addr);
  }

  void destroy(chunk& c) override {
    const auto handle = static_cast<CUmemGenericAllocationHandle>(c.handle);
    const int fd = c.fd;
    c = chunk{};
    int close_errno = 0;
    // close() on Linux releases the fd even when it reports an error; never retry it.
    if (fd >= 0 && close(fd) == -1) close_errno = errno;
    if (handle != 0) {
      {
        std::lock_guard lock(mutex_);
        unzeroed_.erase(handle);
      }
      // The physical memory goes when the last reference does: this handle and every mapping of it
      // (a chunk is unmapped before it is destroyed, so normally that is now). The fd above is closed
      // in any case: it is the process's, not the driver's.
      if (!driver_gone_) {
        context_scope scope(drv_, context_, kReleaseCall, &driver_gone_);
        if (!driver_gone_) {
          const CUresult r = drv_.cuMemRelease(handle);
          if (!gone(r)) SHOAL_CU_CHECK(kReleaseCall, r);
        }
      }
    }
    if (close_errno != 0)
      SHOAL_THROW(errc::system, kReleaseCall, "close(chunk fd {}) failed: {} (errno {})", fd,
                  std::strerror(close_errno), close_errno);
  }

  // ---- cuda_backend_info ---------------------------------------------------------------------------

  int device_ordinal() const override { return ordinal_; }
  std::string pci_bus_id() const override { return pci_bus_id_; }
  void* primary_context() const override { return context_; }
  int multiprocessor_count() const override {
    return attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "shoal_init");
  }

 private:
  int attribute(CUdevice_attribute which, std::string_view call) const {
    int value = 0;
    SHOAL_CU_CHECK_MSG(call, drv_.cuDeviceGetAttribute(&value, which, device_),
                       "cuDeviceGetAttribute(attribute {}, GPU {})", static_cast<int>(which), ordinal_);
    return value;
  }

  // True (and from then on for every release step) when `result` says the driver is deinitialized.
  bool gone(CUresult result) {
    if (driver_deinitialized(result)) driver_gone_ = true;
    return driver_gone_;
  }

  void check_multiple(size_t bytes, const char* what, const char* call) const {
    if (bytes == 0 || bytes % granularity_ != 0)
      SHOAL_THROW(errc::invalid_argument, call, "{} of {} bytes is not a positive multiple of the GPU granularity {}",
                  what, bytes, granularity_);
  }

  // cuMemCreate promises no contents, the heap promises zeros: the first mapping of a chunk created
  // here clears it, and the chunk reaches peers only after that (symmetric_heap maps its own chunk
  // before the exchange), so they never see stale bytes. Imported chunks were cleared by their owner.
  void zero_if_new(CUdeviceptr ptr, CUmemGenericAllocationHandle handle, size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      if (unzeroed_.count(handle) == 0) return;
    }
    SHOAL_CU_CHECK_MSG(kGrowCall, drv_.cuMemsetD8Async(ptr, 0, bytes, zero_stream_),
                       "cuMemsetD8Async(zero {} bytes of a new chunk on GPU {})", bytes, ordinal_);
    // Done on the GPU before any peer may map it (the heap's next step is an all-gather).
    SHOAL_CU_CHECK(kGrowCall, drv_.cuStreamSynchronize(zero_stream_));
    std::lock_guard lock(mutex_);
    unzeroed_.erase(handle);
  }

  const cuda_driver& drv_;
  int ordinal_ = 0;
  CUdevice device_ = 0;
  std::string pci_bus_id_;
  CUcontext context_ = nullptr;     // primary context of device_, retained until the destructor
  CUstream zero_stream_ = nullptr;  // non-blocking, only for zero-filling new chunks
  CUmemAllocationProp prop_{};      // every chunk: pinned, on device_, exportable as a POSIX fd
  CUmemAccessDesc access_{};        // every mapping: read/write for device_
  size_t granularity_ = 0;
  // Set by the first release step that finds the driver deinitialized (process exit, driver_deinitialized);
  // then every later release step returns at once. Only release steps touch it, and the heap runs them
  // one at a time (its teardown, or the roll-back of a failed growth).
  bool driver_gone_ = false;
  std::mutex mutex_;  // guards unzeroed_ (the heap serializes growth; this keeps the backend safe alone)
  std::unordered_set<CUmemGenericAllocationHandle> unzeroed_;  // created here, not yet mapped and zeroed
};

}  // namespace

bool cuda_usable() noexcept { return probe().drv != nullptr; }

std::unique_ptr<chunk_backend> make_cuda_backend(const char* call) {
  const cuda_probe& p = probe();
  if (p.drv == nullptr)
    SHOAL_THROW(errc::unsupported, call,
                "the cuda heap backend cannot run here: {}; set SHOAL_BACKEND=host to run on host memory", p.why_not);
  auto [ordinal, chosen_by] = pick_device(*p.drv, p.num_devices, call);
  return std::make_unique<cuda_backend>(*p.drv, ordinal, chosen_by, call);
}

cuda_peer_link cuda_peer_link_between(int my_device, int peer_device) noexcept {
  const cuda_probe& p = probe();
  cuda_peer_link link;
  if (p.drv == nullptr || my_device < 0 || peer_device < 0 || my_device >= p.num_devices ||
      peer_device >= p.num_devices)
    return link;
  if (my_device == peer_device) return cuda_peer_link{true, true, 0};
  const cuda_driver& drv = *p.drv;
  CUdevice mine = 0;
  CUdevice peer = 0;
  int can = 0;
  if (drv.cuDeviceGet(&mine, my_device) != CUDA_SUCCESS || drv.cuDeviceGet(&peer, peer_device) != CUDA_SUCCESS ||
      drv.cuDeviceCanAccessPeer(&can, mine, peer) != CUDA_SUCCESS || can == 0)
    return link;
  link.access = true;
  int value = 0;
  if (drv.cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, mine, peer) == CUDA_SUCCESS)
    link.native_atomics = value != 0;
  if (drv.cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, mine, peer) == CUDA_SUCCESS)
    link.performance_rank = value;
  return link;
}

int cuda_device_of_pci_bus_id(const std::string& pci_bus_id) noexcept {
  const cuda_probe& p = probe();
  if (p.drv == nullptr || pci_bus_id.empty()) return -1;
  CUdevice wanted = 0;
  if (p.drv->cuDeviceGetByPCIBusId(&wanted, pci_bus_id.c_str()) != CUDA_SUCCESS) return -1;
  for (int ordinal = 0; ordinal < p.num_devices; ++ordinal) {
    CUdevice d = 0;
    if (p.drv->cuDeviceGet(&d, ordinal) == CUDA_SUCCESS && d == wanted) return ordinal;
  }
  return -1;
}

std::string cuda_status() noexcept {
  try {
    const cuda_probe& p = probe();
    if (p.drv == nullptr) return fmt::format("not usable: {}", p.why_not);
    return fmt::format("driver {}.{}, {} GPU(s) visible", p.drv->driver_version / 1000,
                       p.drv->driver_version % 1000 / 10, p.num_devices);
  } catch (...) {
    return "unknown";
  }
}

#else  // !SHOAL_HAVE_CUDA

namespace {
constexpr const char* kNoCuda =
    "this libshoal was built without CUDA (SHOAL_CUDA=OFF, or no nvcc when it was configured)";
}  // namespace

bool cuda_usable() noexcept { return false; }

std::unique_ptr<chunk_backend> make_cuda_backend(const char* call) {
  SHOAL_THROW(errc::unsupported, call,
              "the cuda heap backend cannot run here: {}; set SHOAL_BACKEND=host to run on "
              "host memory",
              kNoCuda);
}

cuda_peer_link cuda_peer_link_between(int, int) noexcept { return {}; }

int cuda_device_of_pci_bus_id(const std::string&) noexcept { return -1; }

std::string cuda_status() noexcept {
  try {
    return fmt::format("not usable: {}", kNoCuda);
  } catch (...) {
    return "not usable";
  }
}

#endif  // SHOAL_HAVE_CUDA

}  // namespace shoal::detail
