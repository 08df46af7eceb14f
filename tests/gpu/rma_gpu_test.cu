// Device RMA on 2 GPUs, both API forms (explicit handle and facade), data checked on the host:
// putmem/getmem at thread, warp and block scope, blocking and _nbi (+ quiet), at sizes 1 B .. 1 MiB+5
// with unaligned and mis-co-aligned offsets (the vector head/tail paths); the block TMA put; puts
// from and gets into non-symmetric memory; typed put/get; p/g; iput/iget; ptr on the device; a
// global refused by the host API (globals are not symmetric on GPU heaps); p + quiet from every thread of a
// full grid (the quiet shared in the warp and in the proxy ring).
// Every destination is poisoned first and checked byte for byte, including guard bytes around it.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "facade_api.cuh"
#include "gpu_env.hpp"
#include "handle_api.cuh"

namespace shoal_test {
namespace {

constexpr size_t kMaxBytes = (size_t{1} << 20) + 5;
constexpr size_t kSlack = 64;  // room for offsets before the data and the guard after it
constexpr size_t kRegion = kMaxBytes + 2 * kSlack;
constexpr size_t kGuard = 32;  // bytes after the data that must still hold the poison

// Symmetric buffers (and one plain cudaMalloc buffer), allocated once per program.
struct buffers {
  uint8_t* src = nullptr;    // symmetric: what this PE sends (puts) or serves (gets)
  uint8_t* dst = nullptr;    // symmetric: where data lands
  uint8_t* plain = nullptr;  // cudaMalloc, not symmetric: a put's source or a get's destination
};

buffers& bufs() {
  static buffers b = [] {
    buffers x;
    x.src = static_cast<uint8_t*>(shoal_malloc(kRegion));
    x.dst = static_cast<uint8_t*>(shoal_malloc(kRegion));
    GT_CUDA(cudaMalloc(&x.plain, kRegion));
    if (x.src == nullptr || x.dst == nullptr) ADD_FAILURE() << format("shoal_malloc(%zu) returned NULL", kRegion);
    return x;
  }();
  return b;
}

int left() { return (me() + npes() - 1) % npes(); }

/// Each group moves bytes [n*g/G, n*(g+1)/G) (odd slice boundaries on purpose), then every thread
/// quiets when nbi.
template <class Api, class Scope>
__global__ void mem_kernel(Api api, uint8_t* dst, const uint8_t* src, size_t n, int pe, bool nbi, bool is_get) {
  size_t g, groups;
  group_of<Scope>(g, groups);
  const size_t lo = n * g / groups, hi = n * (g + 1) / groups;
  if (is_get) {
    api.template getmem<Scope>(dst + lo, src + lo, hi - lo, pe, nbi);
  } else {
    api.template putmem<Scope>(dst + lo, src + lo, hi - lo, pe, nbi);
  }
  if (nbi) api.quiet();
}

/// Block TMA put (handle form): each block its slice.
__global__ void tma_kernel(shoal::device_world w, uint8_t* dst, const uint8_t* src, size_t n, int pe) {
  extern __shared__ __align__(16) unsigned char smem[];
  const size_t lo = n * blockIdx.x / gridDim.x, hi = n * (blockIdx.x + 1) / gridDim.x;
  shoal::device::putmem_tma(shoal::block, w, dst + lo, src + lo, hi - lo, pe, smem);
}

/// Copies [0, dst_off + n + kGuard) of `dev` back and checks: poison, then `data`, then poison.
void check_landed(const std::string& what, const uint8_t* dev, size_t dst_off, const std::vector<uint8_t>& data) {
  const size_t span = dst_off + data.size() + kGuard;
  std::vector<uint8_t> seen(span), expected(span, kPoison);
  GT_CUDA(cudaMemcpy(seen.data(), dev, span, cudaMemcpyDeviceToHost));
  std::memcpy(expected.data() + dst_off, data.data(), data.size());
  EXPECT_TRUE(bytes_equal(what.c_str(), seen.data(), expected.data(), span));
}

// The cases are identical on every PE (same order, same salts): all reach every barrier.
uint32_t next_salt() {
  static uint32_t salt = 0;
  return ++salt;
}

// 240 and 48000: every group's slice a multiple of 16 bytes (3 groups), so co-aligned puts of wide
// scopes take the vector path (copy_vec16: a partial round, then several rounds).
// 30001: slices of ~10000 bytes, which a proxy peer's puts carry in three payload pieces (4 KiB each) under
// SHOAL_PROXY_PAYLOAD_MAX=16K (rma_gpu_test_proxy).
const size_t kSizes[] = {1, 3, 17, 240, 4095, 30001, 48000, 65536 + 7, kMaxBytes};
struct offsets {
  size_t dst, src;
};
// Co-aligned (16-byte vector path with a head), mis-co-aligned by 8, 4 and 1 (narrower paths).
const offsets kOffsets[] = {{0, 0}, {5, 5}, {8, 0}, {4, 12}, {1, 3}};

/// One put or get of n bytes at the given offsets through Api/Scope; `plain`: the local side is
/// the non-symmetric buffer.
template <class Api, class Scope>
void mem_case(Api api, bool is_get, bool nbi, size_t n, offsets off, bool plain) {
  buffers& b = bufs();
  const uint32_t salt = next_salt();
  const std::string what =
      format("%s %smem%s %s-scope, %zu bytes, dst_off=%zu src_off=%zu%s", Api::kName, is_get ? "get" : "put",
             nbi ? "_nbi" : "", scope_name<Scope>, n, off.dst, off.src, plain ? ", local side not symmetric" : "");
  // The source of a put is local (maybe plain); of a get, the peer's symmetric src.
  uint8_t* local_src = plain && !is_get ? b.plain : b.src;
  uint8_t* local_dst = plain && is_get ? b.plain : b.dst;
  GT_CUDA(cudaMemset(local_dst, kPoison, kRegion));
  GT_CUDA(cudaMemset(local_src, kPoison, kRegion));
  std::vector<uint8_t> mine = pattern(me(), salt, n);
  GT_CUDA(cudaMemcpy(local_src + off.src, mine.data(), n, cudaMemcpyHostToDevice));
  sync_all_pes();  // every PE's buffers poisoned and filled before anyone moves data
  mem_kernel<Api, Scope>
      <<<grid_of<Scope>(), block_of<Scope>()>>>(api, local_dst + off.dst, local_src + off.src, n, peer(), nbi, is_get);
  GT_LAUNCHED(what.c_str());
  sync_all_pes();  // every put landed; nobody refills a source a peer still reads
  // A put to my right lands on my right; what landed here came from my left. A get reads my right.
  check_landed(what, local_dst, off.dst, pattern(is_get ? peer() : left(), salt, n));
}

template <class Api, class Scope>
void mem_all(Api api) {
  for (bool is_get : {false, true})
    for (bool nbi : {false, true})
      for (size_t n : kSizes)
        for (offsets off : kOffsets) mem_case<Api, Scope>(api, is_get, nbi, n, off, false);
  // Non-symmetric local side: one small unaligned and one large case each way.
  for (bool is_get : {false, true}) {
    mem_case<Api, Scope>(api, is_get, false, 4095, {1, 3}, true);
    mem_case<Api, Scope>(api, is_get, false, kMaxBytes, {5, 5}, true);
  }
}

template <class Api>
void mem_all_scopes(Api api) {
  mem_all<Api, thread_scope>(api);
  mem_all<Api, warp_scope>(api);
  mem_all<Api, block_scope>(api);
  if constexpr (Api::kAnyScope) {  // the explicit API takes groups of warps too (the facade has no such names)
    mem_all<Api, warps_scope<2>>(api);
    mem_all<Api, warps_scope<4>>(api);
  }
}

TEST(rma_gpu, putmem_getmem_handle) { mem_all_scopes(handle_api{device_handle()}); }
TEST(rma_gpu, putmem_getmem_facade) { mem_all_scopes(facade_api{}); }

TEST(rma_gpu, putmem_block_tma_handle) {
  buffers& b = bufs();
  const shoal::device_world w = device_handle();
  const size_t smem = shoal::device::tma_workspace_bytes<>;
  GT_CUDA(cudaFuncSetAttribute(tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const size_t sizes[] = {shoal::device::kTmaMinBytes - 1, shoal::device::kTmaMinBytes, 65536 + 7, kMaxBytes};
  const offsets offs[] = {{0, 0}, {5, 5}, {1, 3}, {16, 0}};
  for (unsigned blocks : {1u, 3u})
    for (size_t n : sizes)
      for (offsets off : offs) {
        const uint32_t salt = next_salt();
        const std::string what =
            format("putmem_block_tma, %u block(s), %zu bytes, dst_off=%zu src_off=%zu", blocks, n, off.dst, off.src);
        GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
        std::vector<uint8_t> mine = pattern(me(), salt, n);
        GT_CUDA(cudaMemcpy(b.src + off.src, mine.data(), n, cudaMemcpyHostToDevice));
        sync_all_pes();
        tma_kernel<<<blocks, 128, smem>>>(w, b.dst + off.dst, b.src + off.src, n, peer());
        GT_LAUNCHED(what.c_str());
        sync_all_pes();
        check_landed(what, b.dst, off.dst, pattern(left(), salt, n));
      }
}

// ---- typed put/get ------------------------------------------------------------------------------

template <class Api, class Scope, class T>
__global__ void typed_kernel(Api api, T* dst, const T* src, size_t nelems, int pe, bool nbi, bool is_get) {
  size_t g, groups;
  group_of<Scope>(g, groups);
  const size_t lo = nelems * g / groups, hi = nelems * (g + 1) / groups;
  if (is_get) {
    api.template get<Scope, T>(dst + lo, src + lo, hi - lo, pe, nbi);
  } else {
    api.template put<Scope, T>(dst + lo, src + lo, hi - lo, pe, nbi);
  }
  if (nbi) api.quiet();
}

template <class Api, class Scope, class T>
void typed_scope(Api api, const char* type_name) {
  buffers& b = bufs();
  const size_t counts[] = {1, 17, 4095, 70001};
  const offsets offs[] = {{0, 0}, {1, 2}};  // in elements
  for (bool is_get : {false, true})
    for (bool nbi : {false, true})
      for (size_t nelems : counts)
        for (offsets off : offs) {
          const uint32_t salt = next_salt();
          const size_t n = nelems * sizeof(T);
          const std::string what =
              format("%s %s_%s%s %s-scope, %zu elements, dst_off=%zu src_off=%zu (elements)", Api::kName, type_name,
                     is_get ? "get" : "put", nbi ? "_nbi" : "", scope_name<Scope>, nelems, off.dst, off.src);
          GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
          std::vector<uint8_t> mine = pattern(me(), salt, n);
          GT_CUDA(cudaMemcpy(b.src + off.src * sizeof(T), mine.data(), n, cudaMemcpyHostToDevice));
          sync_all_pes();
          typed_kernel<Api, Scope, T><<<grid_of<Scope>(), block_of<Scope>()>>>(
              api, reinterpret_cast<T*>(b.dst) + off.dst, reinterpret_cast<const T*>(b.src) + off.src, nelems, peer(),
              nbi, is_get);
          GT_LAUNCHED(what.c_str());
          sync_all_pes();
          check_landed(what, b.dst, off.dst * sizeof(T), pattern(is_get ? peer() : left(), salt, n));
        }
}

template <class Api, class T>
void typed_all(Api api, const char* type_name) {
  typed_scope<Api, thread_scope, T>(api, type_name);
  typed_scope<Api, warp_scope, T>(api, type_name);
  typed_scope<Api, block_scope, T>(api, type_name);
  if constexpr (Api::kAnyScope) typed_scope<Api, warps_scope<4>, T>(api, type_name);
}

template <class Api>
void typed_all_types(Api api) {
  typed_all<Api, char>(api, "char");
  typed_all<Api, short>(api, "short");
  typed_all<Api, int>(api, "int");
  typed_all<Api, long long>(api, "longlong");
  typed_all<Api, uint64_t>(api, "uint64");
  typed_all<Api, float>(api, "float");
  typed_all<Api, double>(api, "double");
}

TEST(rma_gpu, typed_put_get_handle) { typed_all_types(handle_api{device_handle()}); }
TEST(rma_gpu, typed_put_get_facade) { typed_all_types(facade_api{}); }

// ---- p / g ----------------------------------------------------------------------------------------

/// A value of T that PE `pe` writes at index i in case `salt`, exact in T and never the poison.
template <class T>
__host__ __device__ T value_of(int pe, size_t i, uint32_t salt) {
  const long long v = 1 + pe * 1000 + static_cast<long long>(i % 97) * 3 + (salt % 7) * 11;
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v) + static_cast<T>(0.5);
  } else {
    return static_cast<T>(v % 120 + 1);  // fits in char, differs from the 0xA5 poison
  }
}

constexpr unsigned kPgThreads = 2 * 128;

/// Thread t stores value_of(me, t) to dst[t] on pe (p), or loads src[t] on pe into dst[t] (g).
template <class Api, class T>
__global__ void pg_kernel(Api api, T* dst, const T* src, int pe, uint32_t salt, bool is_g) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (is_g) {
    dst[t] = api.g(src + t, pe);
  } else {
    api.p(dst + t, value_of<T>(api.my_pe(), t, salt), pe);
    api.quiet();
  }
}

template <class Api, class T>
void pg_type(Api api, const char* type_name) {
  buffers& b = bufs();
  for (bool is_g : {false, true}) {
    const uint32_t salt = next_salt();
    const std::string what = format("%s %s_%s from %u threads", Api::kName, type_name, is_g ? "g" : "p", kPgThreads);
    std::vector<T> mine(kPgThreads);
    for (size_t i = 0; i < kPgThreads; ++i) mine[i] = value_of<T>(me(), i, salt);
    GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
    GT_CUDA(cudaMemcpy(b.src, mine.data(), sizeof(T) * kPgThreads, cudaMemcpyHostToDevice));
    sync_all_pes();
    pg_kernel<Api, T><<<2, kPgThreads / 2>>>(api, reinterpret_cast<T*>(b.dst), reinterpret_cast<const T*>(b.src),
                                             peer(), salt, is_g);
    GT_LAUNCHED(what.c_str());
    sync_all_pes();
    std::vector<T> expected(kPgThreads);
    const int from = is_g ? peer() : left();
    for (size_t i = 0; i < kPgThreads; ++i) expected[i] = value_of<T>(from, i, salt);
    std::vector<uint8_t> bytes(sizeof(T) * kPgThreads);
    std::memcpy(bytes.data(), expected.data(), bytes.size());
    check_landed(what, b.dst, 0, bytes);
  }
}

template <class Api>
void pg_all(Api api) {
  pg_type<Api, char>(api, "char");
  pg_type<Api, short>(api, "short");
  pg_type<Api, int>(api, "int");
  pg_type<Api, long long>(api, "longlong");
  pg_type<Api, uint64_t>(api, "uint64");
  pg_type<Api, float>(api, "float");
  pg_type<Api, double>(api, "double");
}

TEST(rma_gpu, p_g_handle) { pg_all(handle_api{device_handle()}); }
TEST(rma_gpu, p_g_facade) { pg_all(facade_api{}); }

// ---- a grid whose every thread quiets -----------------------------------------------------------

/// Thread t stores storm_value(me, t) to dst[t] on pe with p and quiets; the lanes of each warp split into
/// two branches that both quiet (odd lanes after a lane-dependent pause), so a quiet shared in the warp meets
/// lanes that may or may not have reconverged, and the warps of the last block quiet twice.
__host__ __device__ uint32_t storm_value(int pe, size_t t, uint32_t salt) {
  return static_cast<uint32_t>(0x10000000u + pe * 0x01000000u + (t * 2654435761u) % 0x00ffffffu + salt % 13);
}

template <class Api>
__global__ void quiet_storm_kernel(Api api, int* dst, int pe, uint32_t salt) {
  const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  api.p(dst + t, static_cast<int>(storm_value(api.my_pe(), t, salt)), pe);
  if ((threadIdx.x & 1) != 0) {
    __nanosleep(32 * (threadIdx.x % 32));
    api.quiet();
  } else {
    api.quiet();
  }
  if (blockIdx.x + 1 == gridDim.x) api.quiet();
}

template <class Api>
void quiet_storm(Api api) {
  buffers& b = bufs();
  int dev = 0, sms = 0;
  GT_CUDA(cudaGetDevice(&dev));
  GT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  constexpr unsigned kThreads = 512;
  const size_t n = static_cast<size_t>(sms) * kThreads;  // a full grid: 67,584 threads on an H200
  if (n * sizeof(int) > kMaxBytes)
    ADD_FAILURE() << format("quiet_storm: %zu threads do not fit the %zu-byte buffer", n, kMaxBytes);
  const uint32_t salt = next_salt();
  const std::string what = format("%s p + quiet from every thread of %d x %u", Api::kName, sms, kThreads);
  GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
  sync_all_pes();
  quiet_storm_kernel<Api><<<sms, kThreads>>>(api, reinterpret_cast<int*>(b.dst), peer(), salt);
  GT_LAUNCHED(what.c_str());
  sync_all_pes();
  std::vector<int> expected(n);
  for (size_t t = 0; t < n; ++t) expected[t] = static_cast<int>(storm_value(left(), t, salt));
  std::vector<uint8_t> bytes(n * sizeof(int));
  std::memcpy(bytes.data(), expected.data(), bytes.size());
  check_landed(what, b.dst, 0, bytes);
}

TEST(rma_gpu, quiet_from_every_thread_handle) { quiet_storm(handle_api{device_handle()}); }
TEST(rma_gpu, quiet_from_every_thread_facade) { quiet_storm(facade_api{}); }

// ---- iput / iget ----------------------------------------------------------------------------------

template <class Api, class Scope, class T>
__global__ void strided_kernel(Api api, T* dst, const T* src, ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems,
                               int pe, bool is_get) {
  if (is_get) {
    api.template iget<Scope, T>(dst, src, dst_stride, src_stride, nelems, pe);
  } else {
    api.template iput<Scope, T>(dst, src, dst_stride, src_stride, nelems, pe);
  }
}

template <class Api, class Scope, class T>
void strided_scope(Api api, const char* type_name) {
  buffers& b = bufs();
  struct strides {
    ptrdiff_t dst, src;
  };
  const strides all[] = {{1, 1}, {3, 2}, {2, 5}};
  for (bool is_get : {false, true})
    for (strides s : all)
      for (size_t nelems : {size_t{1}, size_t{33}, size_t{1000}}) {
        const uint32_t salt = next_salt();
        const std::string what = format("%s %s_%s %s-scope, %zu elements, dst_stride=%td src_stride=%td", Api::kName,
                                        type_name, is_get ? "iget" : "iput", scope_name<Scope>, nelems, s.dst, s.src);
        const size_t src_elems = (nelems - 1) * s.src + 1, dst_elems = (nelems - 1) * s.dst + 1;
        std::vector<T> mine(src_elems);
        for (size_t i = 0; i < src_elems; ++i) mine[i] = value_of<T>(me(), i, salt);
        GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
        GT_CUDA(cudaMemset(b.src, kPoison, kRegion));
        GT_CUDA(cudaMemcpy(b.src, mine.data(), sizeof(T) * src_elems, cudaMemcpyHostToDevice));
        sync_all_pes();
        // One group of the scope does the whole transfer.
        const unsigned threads =
            warps_of<Scope> != 0 ? 32 * warps_of<Scope> : (is_thread<Scope> ? 1 : (is_warp<Scope> ? 32 : 160));
        strided_kernel<Api, Scope, T><<<1, threads>>>(
            api, reinterpret_cast<T*>(b.dst), reinterpret_cast<const T*>(b.src), s.dst, s.src, nelems, peer(), is_get);
        GT_LAUNCHED(what.c_str());
        sync_all_pes();
        // Element i landed at i*dst_stride; every byte between elements still holds the poison.
        const int from = is_get ? peer() : left();
        std::vector<uint8_t> expected(sizeof(T) * dst_elems, kPoison);
        for (size_t i = 0; i < nelems; ++i) {
          T v = value_of<T>(from, i * s.src, salt);
          std::memcpy(expected.data() + i * s.dst * sizeof(T), &v, sizeof(T));
        }
        check_landed(what, b.dst, 0, expected);
      }
}

template <class Api, class T>
void strided_all(Api api, const char* type_name) {
  strided_scope<Api, thread_scope, T>(api, type_name);
  strided_scope<Api, warp_scope, T>(api, type_name);
  strided_scope<Api, block_scope, T>(api, type_name);
  if constexpr (Api::kAnyScope) strided_scope<Api, warps_scope<2>, T>(api, type_name);
}

template <class Api>
void strided_all_types(Api api) {
  strided_all<Api, char>(api, "char");
  strided_all<Api, short>(api, "short");
  strided_all<Api, int>(api, "int");
  strided_all<Api, double>(api, "double");
}

TEST(rma_gpu, iput_iget_handle) { strided_all_types(handle_api{device_handle()}); }
TEST(rma_gpu, iput_iget_facade) { strided_all_types(facade_api{}); }

// ---- ptr on the device ---------------------------------------------------------------------------

/// out[0] = ptr(buf, peer), out[1] = ptr(buf, me), out[2] = ptr(buf, n_pes) (out of range); then
/// every thread stores its pattern word through out[0] with plain stores.
template <class Api>
__global__ void ptr_kernel(Api api, uint32_t* buf, uintptr_t* out, int pe, uint32_t salt) {
  uint32_t* remote = api.ptr(buf, pe);
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = reinterpret_cast<uintptr_t>(remote);
    out[1] = reinterpret_cast<uintptr_t>(api.ptr(buf, api.my_pe()));
    out[2] = reinterpret_cast<uintptr_t>(api.ptr(buf, api.n_pes()));
  }
  if (remote != nullptr) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    remote[t] = 0x10000u * static_cast<uint32_t>(api.my_pe() + 1) + salt * 1024u + t;
  }
  api.quiet();
}

template <class Api>
void ptr_case(Api api) {
  buffers& b = bufs();
  const uint32_t salt = next_salt() % 64;
  constexpr unsigned kThreads = 256;
  auto* out = reinterpret_cast<uintptr_t*>(b.plain);
  auto* buf = reinterpret_cast<uint32_t*>(b.dst);
  GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
  GT_CUDA(cudaMemset(out, 0xEE, 3 * sizeof(uintptr_t)));
  sync_all_pes();
  ptr_kernel<Api><<<2, kThreads / 2>>>(api, buf, out, peer(), salt);
  GT_LAUNCHED(format("%s ptr", Api::kName).c_str());
  sync_all_pes();
  uintptr_t seen[3];
  GT_CUDA(cudaMemcpy(seen, out, sizeof(seen), cudaMemcpyDeviceToHost));
  const auto host_peer = reinterpret_cast<uintptr_t>(shoal_ptr(buf, peer()));
  // A proxy peer (SHOAL_DISABLE_P2P=1) has no address on either side, and no stores land through it.
  const bool proxy = host_peer == 0 && seen[0] == 0;
  if (!proxy && (seen[0] == 0 || seen[0] != host_peer))
    ADD_FAILURE() << format(
        "%s ptr(buf, peer %d) on the device = %#zx, host shoal_ptr = %#zx (both must be the same non-null address)",
        Api::kName, peer(), static_cast<size_t>(seen[0]), static_cast<size_t>(host_peer));
  if (seen[1] != reinterpret_cast<uintptr_t>(buf))
    ADD_FAILURE() << format("%s ptr(buf, my PE) = %#zx, expected buf itself %p", Api::kName,
                            static_cast<size_t>(seen[1]), static_cast<void*>(buf));
  if (seen[2] != 0)
    ADD_FAILURE() << format("%s ptr(buf, n_pes) = %#zx, expected nullptr for an out-of-range PE", Api::kName,
                            static_cast<size_t>(seen[2]));
  std::vector<uint8_t> expected(kThreads * 4);
  for (unsigned t = 0; t < kThreads; ++t) {
    uint32_t v = 0x10000u * static_cast<uint32_t>(left() + 1) + salt * 1024u + t;
    std::memcpy(expected.data() + 4 * t, &v, 4);
  }
  if (!proxy)
    check_landed(format("%s stores through ptr(buf, peer) from PE %d", Api::kName, left()), b.dst, 0, expected);
}

TEST(rma_gpu, ptr_handle) { ptr_case(handle_api{device_handle()}); }
TEST(rma_gpu, ptr_facade) { ptr_case(facade_api{}); }

// A global is host memory, which the peers' GPUs cannot reach: on a GPU heap the host API refuses it,
// naming the call and the argument and saying why, and nothing is written.
long g_not_symmetric_here = 3;

TEST(rma_gpu, global_variable_is_refused_on_gpu_heaps) {
  const int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  shoal_clear_error();
  const long value = 5;
  shoal_long_put(&g_not_symmetric_here, &value, 1, peer());
  const char* msg = nullptr;
  const int code = shoal_last_error(&msg);
  const std::string text = msg != nullptr ? msg : "";
  if (code != SHOAL_ERR_INVALID_ARGUMENT || text.find("shoal_long_put") == std::string::npos ||
      text.find("global/static variable") == std::string::npos || text.find("GPU memory") == std::string::npos)
    ADD_FAILURE() << format(
        "a put to a global on a GPU heap gave code %d, '%s'; expected invalid_argument saying the heap is GPU memory",
        code, text.c_str());
  shoal_clear_error();
  shoal_set_error_mode(old_mode);
  sync_all_pes();
  if (g_not_symmetric_here != 3)
    ADD_FAILURE() << format("a refused put changed the global to %ld", g_not_symmetric_here);
}

}  // namespace
}  // namespace shoal_test
