// A stand-in libcuda.so.1 for CPU-only machines: one fake GPU whose "device memory" is host memory
// (memfd chunks, mmap'ed into PROT_NONE reservations), enough of the driver API for the cuda heap
// backend. Lets cuda_heap_test exercise the backend's own logic (driver loading, context handling,
// fd ownership, zero-fill, error paths) in CPU CI. Not a model of GPU semantics beyond that.
#include <cuda.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace {

constexpr size_t kGranularity = size_t{2} << 20;
constexpr size_t kTotalBytes = size_t{8} << 30;  // what cuMemGetInfo reports; larger chunks fail with OOM

std::mutex g_mutex;
bool g_initialized = false;
// Set by shoal_fake_cuda_shutdown(1): the driver is deinitialized (as after the CUDA runtime's exit
// handler ran) and every call that needs it returns CUDA_ERROR_DEINITIALIZED; cuGetErrorName cannot
// name it either, as with the real driver, so messages read "CUresult 4".
std::atomic<bool> g_deinitialized{false};
int g_primary_refs = 0;
thread_local CUcontext t_current = nullptr;
CUcontext const kPrimary = reinterpret_cast<CUcontext>(uintptr_t{0x1000});
unsigned long long g_next_handle = 1;
std::map<unsigned long long, int> g_handles;   // handle -> memfd backing it
std::set<std::pair<dev_t, ino_t>> g_exported;  // inodes of our memfds
std::map<uintptr_t, size_t> g_reservations;    // base -> bytes
size_t g_used = 0;

bool inside_reservation(uintptr_t addr, size_t bytes) {
  for (auto& [base, size] : g_reservations)
    if (addr >= base && addr + bytes <= base + size) return true;
  return false;
}

CUresult fake_not_supported() { return CUDA_ERROR_NOT_SUPPORTED; }

CUresult fake_cuGetErrorName(CUresult error, const char** out) {
  if (g_deinitialized) {
    *out = nullptr;
    return CUDA_ERROR_DEINITIALIZED;
  }
  switch (error) {
    case CUDA_SUCCESS:
      *out = "CUDA_SUCCESS";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE:
      *out = "CUDA_ERROR_INVALID_VALUE";
      return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *out = "CUDA_ERROR_OUT_OF_MEMORY";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED:
      *out = "CUDA_ERROR_NOT_INITIALIZED";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT:
      *out = "CUDA_ERROR_INVALID_CONTEXT";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED:
      *out = "CUDA_ERROR_NOT_SUPPORTED";
      return CUDA_SUCCESS;
    default:
      *out = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult fake_cuGetErrorString(CUresult error, const char** out) {
  switch (error) {
    case CUDA_ERROR_INVALID_VALUE:
      *out = "invalid argument";
      return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *out = "out of memory";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT:
      *out = "invalid device context";
      return CUDA_SUCCESS;
    default:
      *out = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// Every call below but the device queries needs cuInit; memory calls also need a current context,
// which the real driver does not always insist on, so the backend is checked for it here.
#define FAKE_NEED_ALIVE() \
  if (g_deinitialized) return CUDA_ERROR_DEINITIALIZED
#define FAKE_NEED_INIT() \
  FAKE_NEED_ALIVE();     \
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED
#define FAKE_NEED_CONTEXT() \
  FAKE_NEED_INIT();         \
  if (t_current != kPrimary) return CUDA_ERROR_INVALID_CONTEXT

CUresult fake_cuInit(unsigned int) {
  std::lock_guard lock(g_mutex);
  g_initialized = true;
  return CUDA_SUCCESS;
}
CUresult fake_cuDriverGetVersion(int* v) {
  *v = 12080;
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetCount(int* n) {
  FAKE_NEED_INIT();
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGet(CUdevice* d, int ordinal) {
  FAKE_NEED_INIT();
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "Fake GPU", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetPCIBusId(char* id, int len, CUdevice) {
  std::strncpy(id, "0000:AB:00.0", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetByPCIBusId(CUdevice* d, const char* id) {
  if (strcasecmp(id, "0000:ab:00.0") != 0) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice) {
  FAKE_NEED_INIT();
  *value = (attr == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED ||
            attr == CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
               ? 1
               : 0;
  return CUDA_SUCCESS;
}
CUresult fake_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice) {
  std::lock_guard lock(g_mutex);
  ++g_primary_refs;
  *ctx = kPrimary;
  return CUDA_SUCCESS;
}
CUresult fake_cuDevicePrimaryCtxRelease(CUdevice) {
  FAKE_NEED_ALIVE();
  std::lock_guard lock(g_mutex);
  return g_primary_refs-- > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult fake_cuCtxGetCurrent(CUcontext* ctx) {
  FAKE_NEED_ALIVE();
  *ctx = t_current;
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  FAKE_NEED_ALIVE();
  if (ctx != nullptr && ctx != kPrimary) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxGetDevice(CUdevice* d) {
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fake_cuSync() { return t_current == kPrimary ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult fake_cuMemGetInfo(size_t* free_bytes, size_t* total) {
  std::lock_guard lock(g_mutex);
  *total = kTotalBytes;
  *free_bytes = kTotalBytes - g_used;
  return CUDA_SUCCESS;
}
CUresult fake_cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop,
                                            CUmemAllocationGranularity_flags) {
  FAKE_NEED_INIT();
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  *g = kGranularity;
  return CUDA_SUCCESS;
}
CUresult fake_cuMemAddressReserve(CUdeviceptr* ptr, size_t bytes, size_t align, CUdeviceptr, unsigned long long) {
  FAKE_NEED_CONTEXT();
  if (bytes == 0 || bytes % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
  if (align == 0) align = kGranularity;
  void* raw = mmap(nullptr, bytes + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + align - 1) / align * align;
  if (aligned > start) munmap(raw, aligned - start);
  if (start + bytes + align > aligned + bytes)
    munmap(reinterpret_cast<void*>(aligned + bytes), start + bytes + align - aligned - bytes);
  std::lock_guard lock(g_mutex);
  g_reservations[aligned] = bytes;
  *ptr = aligned;
  return CUDA_SUCCESS;
}
CUresult fake_cuMemAddressFree(CUdeviceptr ptr, size_t bytes) {
  FAKE_NEED_CONTEXT();
  std::lock_guard lock(g_mutex);
  auto it = g_reservations.find(static_cast<uintptr_t>(ptr));
  if (it == g_reservations.end() || it->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), bytes);
  g_reservations.erase(it);
  return CUDA_SUCCESS;
}
CUresult fake_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes, const CUmemAllocationProp* prop,
                          unsigned long long) {
  FAKE_NEED_CONTEXT();
  if (bytes == 0 || bytes % kGranularity != 0 || prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_mutex);
  if (bytes > kTotalBytes - g_used) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  // Unlike fresh memfd pages, GPU memory may hold old bytes: show that to the backend.
  void* p = mmap(nullptr, bytes, PROT_WRITE, MAP_SHARED, fd, 0);
  std::memset(p, 0xA5, bytes);
  munmap(p, bytes);
  struct stat st {};
  fstat(fd, &st);
  g_exported.insert({st.st_dev, st.st_ino});
  g_used += bytes;
  *handle = g_next_handle++;
  g_handles[*handle] = fd;
  return CUDA_SUCCESS;
}
CUresult fake_cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_NEED_CONTEXT();
  std::lock_guard lock(g_mutex);
  auto it = g_handles.find(handle);
  if (it == g_handles.end()) return CUDA_ERROR_INVALID_VALUE;
  struct stat st {};
  fstat(it->second, &st);
  g_used -= std::min<size_t>(g_used, static_cast<size_t>(st.st_size));
  close(it->second);
  g_handles.erase(it);
  return CUDA_SUCCESS;
}
CUresult fake_cuMemExportToShareableHandle(void* out, CUmemGenericAllocationHandle handle,
                                           CUmemAllocationHandleType type, unsigned long long) {
  FAKE_NEED_CONTEXT();
  std::lock_guard lock(g_mutex);
  auto it = g_handles.find(handle);
  if (it == g_handles.end() || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<int*>(out) = dup(it->second);
  return CUDA_SUCCESS;
}
CUresult fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                             CUmemAllocationHandleType type) {
  FAKE_NEED_CONTEXT();
  const int fd = static_cast<int>(reinterpret_cast<uintptr_t>(os_handle));
  struct stat st {};
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fstat(fd, &st) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_mutex);
  if (g_exported.count({st.st_dev, st.st_ino}) == 0) return CUDA_ERROR_INVALID_VALUE;
  *handle = g_next_handle++;
  g_handles[*handle] = dup(fd);  // the caller keeps (and may close) its fd, as with the real driver
  return CUDA_SUCCESS;
}
CUresult fake_cuMemMap(CUdeviceptr ptr, size_t bytes, size_t offset, CUmemGenericAllocationHandle handle,
                       unsigned long long) {
  FAKE_NEED_CONTEXT();
  std::lock_guard lock(g_mutex);
  auto it = g_handles.find(handle);
  if (it == g_handles.end() || offset != 0 || ptr % kGranularity != 0 || bytes % kGranularity != 0 ||
      !inside_reservation(static_cast<uintptr_t>(ptr), bytes))
    return CUDA_ERROR_INVALID_VALUE;
  // Inaccessible until cuMemSetAccess, as on a GPU.
  void* got = mmap(reinterpret_cast<void*>(ptr), bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, it->second, 0);
  return got == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult fake_cuMemSetAccess(CUdeviceptr ptr, size_t bytes, const CUmemAccessDesc* desc, size_t count) {
  FAKE_NEED_CONTEXT();
  if (count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc->location.id != 0 ||
      desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    return CUDA_ERROR_INVALID_VALUE;
  return mprotect(reinterpret_cast<void*>(ptr), bytes, PROT_READ | PROT_WRITE) == 0 ? CUDA_SUCCESS
                                                                                    : CUDA_ERROR_INVALID_VALUE;
}
CUresult fake_cuMemUnmap(CUdeviceptr ptr, size_t bytes) {
  FAKE_NEED_CONTEXT();
  void* got = mmap(reinterpret_cast<void*>(ptr), bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return got == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult fake_cuMemsetD8(CUdeviceptr ptr, unsigned char value, size_t bytes) {
  FAKE_NEED_CONTEXT();
  std::memset(reinterpret_cast<void*>(ptr), value, bytes);
  return CUDA_SUCCESS;
}
CUresult fake_cuMemsetD8Async(CUdeviceptr ptr, unsigned char value, size_t bytes, CUstream stream) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;  // the backend must use its own stream
  return fake_cuMemsetD8(ptr, value, bytes);
}
CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_NEED_CONTEXT();
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult fake_cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_NEED_CONTEXT();
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult fake_cuStreamCreate(CUstream* stream, unsigned int) {
  FAKE_NEED_CONTEXT();
  *stream = reinterpret_cast<CUstream>(new int(0));
  return CUDA_SUCCESS;
}
CUresult fake_cuStreamDestroy(CUstream stream) {
  FAKE_NEED_ALIVE();
  delete reinterpret_cast<int*>(stream);
  return CUDA_SUCCESS;
}
CUresult fake_cuStreamSynchronize(CUstream) { return fake_cuSync(); }
CUresult fake_cuDeviceCanAccessPeer(int* can, CUdevice, CUdevice) {
  *can = 0;
  return CUDA_SUCCESS;
}

struct entry {
  const char* name;
  void* fn;
};
#define FAKE_ENTRY(name) \
  { #name, reinterpret_cast < void*>(&fake_##name) }
const entry kEntries[] = {
    FAKE_ENTRY(cuGetErrorName),
    FAKE_ENTRY(cuGetErrorString),
    FAKE_ENTRY(cuInit),
    FAKE_ENTRY(cuDriverGetVersion),
    FAKE_ENTRY(cuDeviceGetCount),
    FAKE_ENTRY(cuDeviceGet),
    FAKE_ENTRY(cuDeviceGetName),
    FAKE_ENTRY(cuDeviceGetPCIBusId),
    FAKE_ENTRY(cuDeviceGetByPCIBusId),
    FAKE_ENTRY(cuDeviceGetAttribute),
    FAKE_ENTRY(cuDeviceCanAccessPeer),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease),
    FAKE_ENTRY(cuCtxGetCurrent),
    FAKE_ENTRY(cuCtxSetCurrent),
    FAKE_ENTRY(cuCtxGetDevice),
    {"cuCtxSynchronize", reinterpret_cast<void*>(&fake_cuSync)},
    FAKE_ENTRY(cuMemGetInfo),
    FAKE_ENTRY(cuMemGetAllocationGranularity),
    FAKE_ENTRY(cuMemAddressReserve),
    FAKE_ENTRY(cuMemAddressFree),
    FAKE_ENTRY(cuMemCreate),
    FAKE_ENTRY(cuMemRelease),
    FAKE_ENTRY(cuMemExportToShareableHandle),
    FAKE_ENTRY(cuMemImportFromShareableHandle),
    FAKE_ENTRY(cuMemMap),
    FAKE_ENTRY(cuMemSetAccess),
    FAKE_ENTRY(cuMemUnmap),
    FAKE_ENTRY(cuMemsetD8),
    FAKE_ENTRY(cuMemsetD8Async),
    FAKE_ENTRY(cuMemcpyHtoD),
    FAKE_ENTRY(cuMemcpyDtoH),
    FAKE_ENTRY(cuStreamCreate),
    FAKE_ENTRY(cuStreamDestroy),
    FAKE_ENTRY(cuStreamSynchronize),
};

}  // namespace

// Test hook, not a driver entry (cuda_heap_test finds it with dlsym): down = 1 deinitializes the driver,
// down = 0 brings it back. What the backend left allocated meanwhile stays allocated (a test-only leak).
extern "C" __attribute__((visibility("default"))) void shoal_fake_cuda_shutdown(int down) {
  g_deinitialized = down != 0;
}

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn,
                                                                               int version, cuuint64_t flags,
                                                                               CUdriverProcAddressQueryResult* status) {
  if (version < 12000 || flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM) return CUDA_ERROR_INVALID_VALUE;
  *pfn = reinterpret_cast<void*>(&fake_not_supported);  // the rest of the table: present, always failing
  for (const entry& e : kEntries)
    if (std::strcmp(e.name, symbol) == 0) *pfn = e.fn;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
