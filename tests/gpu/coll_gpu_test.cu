// Device team collectives (<shoal/device/coll.cuh>) on the explicit handle, written for n PEs (run on
// 2): team_barrier/team_sync interleaved over three teams and barrier_all; broadcastmem (every root),
// fcollectmem and alltoallmem for sizes 0, 1, odd and large; collectmem with per-member sizes; reduce for every type
// and op against a host-computed reference (bitwise: the fold order is fixed). Each case runs 100 times back to back in
// one kernel with new data every iteration (dest alternates between two buffers, as the contract allows), checks every
// iteration in-kernel, and checks the last result and the poisoned guard bytes on the host. Teams: WORLD, WORLD
// reversed (start n-1, stride -1) and a 1-PE team of each PE (split_strided of size 1). Block scope throughout; thread
// and warp scope on a smaller set. The blocking host collectives (every family, several types and ops, on the same
// teams) are checked from the host on the GPU heap. The proxy variant (coll_gpu_test_proxy: every peer behind the UCX
// proxy) runs the same cases through the device collectives' proxy path and the blocking calls' host protocol, and
// the on-stream collectives on WORLD through their proxy algorithm.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "facade_api.cuh"
#include "gpu_env.hpp"
#include "handle_api.cuh"

namespace shoal_test {
namespace {

constexpr size_t kMaxBytes = 65543;  // per PE, for the byte collectives
constexpr size_t kMaxElems = 4099;   // for reduce
constexpr size_t kGuard = 64;        // poisoned bytes after every dest, checked untouched
const int kIters = rounds(100);      // kernel argument; fewer in quick mode
constexpr int kBarrierSlots = 6;     // barrier test: words per writer, reused every 6 rounds
constexpr unsigned kBlock = 256;     // threads of a block-scope kernel

struct team_set {
  shoal::device_team handle[3];
  shoal_team_t host[3] = {SHOAL_TEAM_INVALID, SHOAL_TEAM_INVALID, SHOAL_TEAM_INVALID};  // for the host API
  const char* name[3] = {"WORLD", "WORLD-reversed", "1-PE"};
};

struct coll_buffers {
  uint8_t* src = nullptr;     // symmetric (alltoall sources: n blocks)
  uint8_t* dst[2] = {};       // symmetric, n * kMaxBytes + kGuard each
  void* scratch = nullptr;    // symmetric: reduce scratch for n * kMaxElems 8-byte elements
  uint64_t* slots = nullptr;  // symmetric: barrier test words, kBarrierSlots * n
  void* rsrc = nullptr;       // cudaMalloc: reduce source (local, not symmetric)
  void* rdst = nullptr;       // cudaMalloc: reduce dest (local)
  void* history = nullptr;    // cudaMalloc: every iteration's reduce result
  size_t dst_bytes = 0;
  device_report* report = nullptr;
  team_set teams;
};

shoal::device_team device_team_of(shoal_team_t team) {
  shoal::device_team d{};
  if (shoalx_team_device_handle(team, &d, sizeof(d)) != 0)
    ADD_FAILURE() << format("shoalx_team_device_handle(%d) failed", team);
  return d;
}

coll_buffers& bufs() {
  static coll_buffers b = [] {
    coll_buffers x;
    const size_t n = static_cast<size_t>(npes());
    x.dst_bytes = n * kMaxBytes + kGuard;
    x.src = static_cast<uint8_t*>(shoal_malloc(n * kMaxBytes + kGuard));
    x.dst[0] = static_cast<uint8_t*>(shoal_malloc(x.dst_bytes));
    x.dst[1] = static_cast<uint8_t*>(shoal_malloc(x.dst_bytes));
    x.scratch = shoal_malloc(n * kMaxElems * 8);
    x.slots = static_cast<uint64_t*>(shoal_malloc(kBarrierSlots * n * sizeof(uint64_t)));
    if (!x.src || !x.dst[0] || !x.dst[1] || !x.scratch || !x.slots) ADD_FAILURE() << "shoal_malloc returned NULL";
    GT_CUDA(cudaMalloc(&x.rsrc, kMaxElems * 8));
    GT_CUDA(cudaMalloc(&x.rdst, kMaxElems * 8 + 64));
    GT_CUDA(cudaMalloc(&x.history, kIters * kMaxElems * 8 + 8));
    x.report = new_device_report();
    // Teams: WORLD; WORLD reversed; this PE alone (one size-1 split per PE, each PE keeps its own).
    x.teams.handle[0] = device_team_of(SHOAL_TEAM_WORLD);
    x.teams.host[0] = SHOAL_TEAM_WORLD;
    shoal_team_t reversed = SHOAL_TEAM_INVALID;
    if (shoal_team_split_strided(SHOAL_TEAM_WORLD, npes() - 1, -1, npes(), nullptr, 0, &reversed) != 0 ||
        reversed == SHOAL_TEAM_INVALID) {
      ADD_FAILURE() << format("split_strided(WORLD, %d, -1, %d) failed", npes() - 1, npes());
    }
    x.teams.handle[1] = device_team_of(reversed);
    x.teams.host[1] = reversed;
    shoal_team_t alone = SHOAL_TEAM_INVALID;
    for (int s = 0; s < npes(); ++s) {
      shoal_team_t t = SHOAL_TEAM_INVALID;
      if (shoal_team_split_strided(SHOAL_TEAM_WORLD, s, 1, 1, nullptr, 0, &t) != 0)
        ADD_FAILURE() << "split_strided size 1";
      if (s == me()) alone = t;
    }
    if (alone == SHOAL_TEAM_INVALID) ADD_FAILURE() << "no 1-PE team for this PE";
    x.teams.handle[2] = device_team_of(alone);
    x.teams.host[2] = alone;
    const shoal::device_team& r = x.teams.handle[1];
    if (r.n_pes != npes() || r.world_pe(r.my_pe_in_team) != me() || x.teams.handle[2].n_pes != 1) {
      ADD_FAILURE() << "unexpected device team handles";
    }
    return x;
  }();
  return b;
}

uint32_t next_salt() {
  static uint32_t salt = 0;
  return ++salt;
}

template <class Scope>
unsigned threads_of() {
  if constexpr (warps_of<Scope> != 0) return warps_of<Scope> * 32;  // one group: the whole block
  return is_thread<Scope> ? 1 : (is_warp<Scope> ? 32 : kBlock);
}

// ---- data -------------------------------------------------------------------------------------

__host__ __device__ inline uint32_t mix(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  uint32_t x = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 0x165667B1u) * 0xC2B2AE3Du ^ d * 0x27D4EB2Fu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x *= 0x297A2D39u;
  x ^= x >> 15;
  return x;
}

constexpr int kAnyPe = 0xFFFF;  // "to" of data that goes to every member

/// Byte j of what team PE `from` sends to team PE `to` (kAnyPe: to all) in iteration `it`: never the
/// poison byte.
__host__ __device__ inline uint8_t coll_byte(int from, int to, int it, uint32_t salt, size_t j) {
  uint8_t b = static_cast<uint8_t>(mix(static_cast<uint32_t>(from) * 65537u + static_cast<uint32_t>(to),
                                       static_cast<uint32_t>(it), salt, static_cast<uint32_t>(j)));
  return b == kPoison ? static_cast<uint8_t>(b + 1) : b;
}

enum class kind { broadcast, fcollect, alltoall };
const char* kind_name(kind k) {
  return k == kind::broadcast ? "broadcastmem" : (k == kind::fcollect ? "fcollectmem" : "alltoallmem");
}
__host__ __device__ inline size_t src_bytes_of(kind k, size_t nb, int n) {
  return k == kind::alltoall ? nb * static_cast<size_t>(n) : nb;
}
__host__ __device__ inline size_t dst_bytes_of(kind k, size_t nb, int n) {
  return k == kind::broadcast ? nb : nb * static_cast<size_t>(n);
}
/// Expected byte i of dest on team PE `me` after iteration `it`.
__host__ __device__ inline uint8_t expected_byte(kind k, int me, int root, size_t nb, int it, uint32_t salt, size_t i) {
  if (k == kind::broadcast) return coll_byte(root, kAnyPe, it, salt, i);
  const int from = static_cast<int>(i / nb);
  return coll_byte(from, k == kind::alltoall ? me : kAnyPe, it, salt, i % nb);
}

// ---- byte collectives -------------------------------------------------------------------------

template <class Scope>
__device__ void run_mem(kind k, const shoal::device_world& w, const shoal::device_team& t, void* dst, const void* src,
                        size_t nb, int root) {
  if (k == kind::broadcast) sd::broadcastmem(Scope{}, w, t, dst, src, nb, root);
  if (k == kind::fcollect) sd::fcollectmem(Scope{}, w, t, dst, src, nb);
  if (k == kind::alltoall) sd::alltoallmem(Scope{}, w, t, dst, src, nb);
}

/// One block of the scope's size: kIters rounds of fill source -> collective -> check dest.
template <class Scope>
__global__ void mem_kernel(shoal::device_world w, shoal::device_team t, kind k, uint8_t* src, uint8_t* dst0,
                           uint8_t* dst1, size_t nb, int root, uint32_t salt, int iters, device_report* report) {
  const int me = t.my_pe_in_team;
  const int n = t.n_pes;
  const size_t sb = src_bytes_of(k, nb, n);
  const size_t db = dst_bytes_of(k, nb, n);
  for (int it = 0; it < iters; ++it) {
    uint8_t* dst = (it & 1) != 0 ? dst1 : dst0;
    for (size_t i = threadIdx.x; i < sb; i += blockDim.x) {
      src[i] = k == kind::alltoall ? coll_byte(me, static_cast<int>(i / nb), it, salt, i % nb)
                                   : coll_byte(me, kAnyPe, it, salt, i);
    }
    run_mem<Scope>(k, w, t, dst, src, nb, root);  // syncs the scope on entry and on return
    for (size_t i = threadIdx.x; i < db; i += blockDim.x) {
      const uint8_t want = expected_byte(k, me, root, nb, it, salt, i);
      if (dst[i] != want) report_failure(report, static_cast<unsigned long long>(it), i, want, dst[i]);
    }
    __syncthreads();
  }
}

template <class Scope>
void mem_case(int team_index, kind k, size_t nb, int root, int iters) {
  coll_buffers& b = bufs();
  const shoal::device_team& t = b.teams.handle[team_index];
  const uint32_t salt = next_salt();
  const std::string what = format("%s (%s scope) on %s, %zu bytes per PE, root %d, %d iterations", kind_name(k),
                                  scope_name<Scope>, b.teams.name[team_index], nb, root, iters);
  for (uint8_t* d : b.dst) GT_CUDA(cudaMemset(d, kPoison, b.dst_bytes));
  reset_device_report(b.report);
  sync_all_pes();  // every PE poisoned before any pushes
  mem_kernel<Scope>
      <<<1, threads_of<Scope>()>>>(device_handle(), t, k, b.src, b.dst[0], b.dst[1], nb, root, salt, iters, b.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), b.report));
  const size_t db = dst_bytes_of(k, nb, t.n_pes);
  const int last = iters - 1;
  std::vector<uint8_t> seen(db + kGuard), want(db + kGuard, kPoison);
  for (size_t i = 0; i < db; ++i) want[i] = expected_byte(k, t.my_pe_in_team, root, nb, last, salt, i);
  GT_CUDA(cudaMemcpy(seen.data(), b.dst[last & 1], db + kGuard, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal((what + ": last dest + guard").c_str(), seen.data(), want.data(), db + kGuard));
  if (iters >= 2) {
    GT_CUDA(cudaMemcpy(seen.data(), b.dst[(last - 1) & 1] + db, kGuard, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(bytes_equal((what + ": other dest guard").c_str(), seen.data(), want.data() + db, kGuard));
  }
  sync_all_pes();
}

// 4096 and 49168 (3073 x 16): multiples of 16 bytes, so alltoallmem takes copy_vec16 (one partial
// round; several rounds and a partial one).
const size_t kSizes[] = {0, 1, 3, 8, 37, 1000, 4096, 4099, 49168, kMaxBytes};

TEST(coll_gpu, broadcast_block) {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t nb : kSizes)
      for (int root = 0; root < bufs().teams.handle[ti].n_pes; ++root)
        mem_case<block_scope>(ti, kind::broadcast, nb, root, kIters);
}
TEST(coll_gpu, fcollect_block) {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t nb : kSizes) mem_case<block_scope>(ti, kind::fcollect, nb, 0, kIters);
}
TEST(coll_gpu, alltoall_block) {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t nb : kSizes) mem_case<block_scope>(ti, kind::alltoall, nb, 0, kIters);
}
TEST(coll_gpu, mem_thread_warp) {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t nb : {size_t{0}, size_t{37}, size_t{1000}, size_t{1024}})
      for (kind k : {kind::broadcast, kind::fcollect, kind::alltoall}) {
        const int root = k == kind::broadcast ? bufs().teams.handle[ti].n_pes - 1 : 0;
        mem_case<thread_scope>(ti, k, nb, root, 10);
        mem_case<warp_scope>(ti, k, nb, root, 10);
        mem_case<warps_scope<4>>(ti, k, nb, root, 10);
      }
}

// ---- collect (per-member sizes) ---------------------------------------------------------------

/// Bytes team PE `r` contributes to collect in iteration `it` (differs per member, 0 now and then).
__host__ __device__ inline size_t collect_bytes(int r, int it) {
  return (static_cast<size_t>(r) * 4099 + static_cast<size_t>(it) * 37) % 5000 + (r % 2 == 0 ? 0 : 1);
}

/// kIters rounds of fill source -> collectmem -> check every member's block in dest.
template <class Scope>
__global__ void collect_kernel(shoal::device_world w, shoal::device_team t, uint8_t* src, uint8_t* dst0, uint8_t* dst1,
                               uint32_t salt, int iters, device_report* report) {
  const int me = t.my_pe_in_team;
  for (int it = 0; it < iters; ++it) {
    uint8_t* dst = (it & 1) != 0 ? dst1 : dst0;
    const size_t nb = collect_bytes(me, it);
    for (size_t i = threadIdx.x; i < nb; i += blockDim.x) src[i] = coll_byte(me, kAnyPe, it, salt, i);
    sd::collectmem(Scope{}, w, t, dst, src, nb);
    size_t at = 0;
    for (int r = 0; r < t.n_pes; ++r) {
      const size_t rb = collect_bytes(r, it);
      for (size_t i = threadIdx.x; i < rb; i += blockDim.x) {
        const uint8_t want = coll_byte(r, kAnyPe, it, salt, i);
        if (dst[at + i] != want) report_failure(report, static_cast<unsigned long long>(it), at + i, want, dst[at + i]);
      }
      at += rb;
    }
    __syncthreads();
  }
}

template <class Scope>
void collect_case(int team_index, int iters) {
  coll_buffers& b = bufs();
  const shoal::device_team& t = b.teams.handle[team_index];
  const uint32_t salt = next_salt();
  const std::string what = format("collectmem (%s scope) on %s, per-member sizes, %d iterations", scope_name<Scope>,
                                  b.teams.name[team_index], iters);
  for (uint8_t* d : b.dst) GT_CUDA(cudaMemset(d, kPoison, b.dst_bytes));
  reset_device_report(b.report);
  sync_all_pes();
  collect_kernel<Scope>
      <<<1, threads_of<Scope>()>>>(device_handle(), t, b.src, b.dst[0], b.dst[1], salt, iters, b.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), b.report));
  // The guard after the largest total written into the last iteration's dest buffer: untouched.
  const int last = iters - 1;
  size_t total = 0;
  for (int it = last & 1; it < iters; it += 2) {
    size_t sum = 0;
    for (int r = 0; r < t.n_pes; ++r) sum += collect_bytes(r, it);
    total = sum > total ? sum : total;
  }
  std::vector<uint8_t> seen(kGuard), want(kGuard, kPoison);
  GT_CUDA(cudaMemcpy(seen.data(), b.dst[last & 1] + total, kGuard, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal((what + ": last dest guard").c_str(), seen.data(), want.data(), kGuard));
  sync_all_pes();
}

TEST(coll_gpu, collect_all_scopes) {
  for (int ti = 0; ti < 3; ++ti) {
    collect_case<block_scope>(ti, kIters);
    collect_case<warp_scope>(ti, 10);
    collect_case<thread_scope>(ti, 10);
    collect_case<warps_scope<4>>(ti, 10);
  }
}

// ---- on-stream collectives on WORLD (with proxy members in the proxy variant) ---------------------

/// Byte i of PE pe's contribution in round r.
uint8_t stream_byte(int pe, size_t i, int round) {
  return static_cast<uint8_t>((i * 7 + static_cast<size_t>(pe) * 31 + static_cast<size_t>(round) * 13) ^ (i >> 8));
}

/// The on-stream collectives on WORLD, on a stream of their own, results checked on the host: fcollect, broadcast
/// (last PE the root), alltoall, int32 sum reduce, int64 sum reducescatter, collect (per-member sizes), barrier,
/// and fcollect captured into a CUDA graph and replayed with new data. In the proxy variant every other member is a
/// proxy peer, so every call takes the proxy algorithm (one CTA on the device API's proxy path); in the load/store
/// variant the usual algorithms. 20000 bytes per PE: several of the proxy ring's 4 KiB payload pieces.
TEST(coll_gpu, on_stream_collectives_on_world) {
  coll_buffers& b = bufs();
  const int n = npes();
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  auto ok = [&](const char* call, int rc) {
    if (rc == 0) return;
    const char* message = nullptr;
    (void)shoal_last_error(&message);
    ADD_FAILURE() << format("%s on WORLD returned %d: %s", call, rc, message != nullptr ? message : "");
  };
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr size_t kBytes = 20000;
  const size_t total = static_cast<size_t>(n) * kBytes;
  std::vector<uint8_t> host(total), got(total);
  auto put_source = [&](size_t bytes) { GT_CUDA(cudaMemcpy(b.src, host.data(), bytes, cudaMemcpyHostToDevice)); };
  auto fetch = [&](const void* dest, size_t bytes) {
    GT_CUDA(cudaStreamSynchronize(s));
    GT_CUDA(cudaMemcpy(got.data(), dest, bytes, cudaMemcpyDeviceToHost));
  };
  auto expect_block = [&](const char* what, int round, size_t at, int pe, size_t bytes) {
    size_t bad = 0;
    for (size_t i = 0; i < bytes; ++i) bad += got[at + i] != stream_byte(pe, i, round);
    if (bad != 0)
      ADD_FAILURE() << format("%s round %d: %zu of %zu bytes of PE %d's block wrong", what, round, bad, bytes, pe);
  };
  for (int round = 0; round < 2; ++round) {
    uint8_t* dest = b.dst[round % 2];
    // fcollect: every member's block in every dest.
    for (size_t i = 0; i < kBytes; ++i) host[i] = stream_byte(me(), i, round);
    put_source(kBytes);
    shoal_barrier_all();  // every member is done reading this dest (round - 2) and has set its source
    ok("shoalx_fcollectmem_on_stream", shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, dest, b.src, kBytes, s));
    fetch(dest, total);
    for (int j = 0; j < n; ++j) expect_block("fcollect", round, static_cast<size_t>(j) * kBytes, j, kBytes);
    // broadcast from the last PE.
    shoal_barrier_all();
    ok("shoalx_broadcastmem_on_stream", shoalx_broadcastmem_on_stream(SHOAL_TEAM_WORLD, dest, b.src, kBytes, n - 1, s));
    fetch(dest, kBytes);
    expect_block("broadcast", round, 0, n - 1, kBytes);
    // alltoall: block j of member i's source is i's bytes for j (round + j) and lands as block i on member j.
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < kBytes; ++i) host[static_cast<size_t>(j) * kBytes + i] = stream_byte(me(), i, round + j);
    put_source(total);
    shoal_barrier_all();
    ok("shoalx_alltoallmem_on_stream", shoalx_alltoallmem_on_stream(SHOAL_TEAM_WORLD, dest, b.src, kBytes, s));
    fetch(dest, total);
    for (int i = 0; i < n; ++i) {
      size_t bad = 0;
      for (size_t k = 0; k < kBytes; ++k)
        bad += got[static_cast<size_t>(i) * kBytes + k] != stream_byte(i, k, round + me());
      if (bad != 0) ADD_FAILURE() << format("alltoall round %d: %zu bytes of PE %d's block wrong", round, bad, i);
    }
    // int32 sum reduce of 3001 elements: element k is sum over PEs of (pe * 1000 + k + round).
    constexpr size_t kReduce = 3001;
    std::vector<int32_t> ints(kReduce), sums(kReduce);
    for (size_t k = 0; k < kReduce; ++k) ints[k] = me() * 1000 + static_cast<int32_t>(k) + round;
    GT_CUDA(cudaMemcpy(b.src, ints.data(), kReduce * sizeof(int32_t), cudaMemcpyHostToDevice));
    shoal_barrier_all();
    ok("shoalx_int32_sum_reduce_on_stream",
       shoalx_int32_sum_reduce_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<int32_t*>(dest),
                                         reinterpret_cast<const int32_t*>(b.src), kReduce, s));
    GT_CUDA(cudaStreamSynchronize(s));
    GT_CUDA(cudaMemcpy(sums.data(), dest, kReduce * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < kReduce; ++k) {
      int32_t want = 0;
      for (int pe = 0; pe < n; ++pe) want += pe * 1000 + static_cast<int32_t>(k) + round;
      if (sums[k] != want) {
        ADD_FAILURE() << format("int32 sum reduce round %d: element %zu is %d, expected %d", round, k, sums[k], want);
        break;
      }
    }
    // int64 sum reducescatter of 1000 elements per member: source block j element k = pe * 7 + j * 100000 + k.
    constexpr size_t kScatter = 1000;
    std::vector<int64_t> longs(static_cast<size_t>(n) * kScatter), mine(kScatter);
    for (int j = 0; j < n; ++j)
      for (size_t k = 0; k < kScatter; ++k)
        longs[static_cast<size_t>(j) * kScatter + k] = me() * 7 + j * 100000 + static_cast<int64_t>(k) + round;
    GT_CUDA(cudaMemcpy(b.src, longs.data(), longs.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
    shoal_barrier_all();
    ok("shoalx_int64_sum_reducescatter_on_stream",
       shoalx_int64_sum_reducescatter_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<int64_t*>(dest),
                                                reinterpret_cast<const int64_t*>(b.src), kScatter, s));
    GT_CUDA(cudaStreamSynchronize(s));
    GT_CUDA(cudaMemcpy(mine.data(), dest, kScatter * sizeof(int64_t), cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < kScatter; ++k) {
      int64_t want = 0;
      for (int pe = 0; pe < n; ++pe) want += pe * 7 + me() * 100000 + static_cast<int64_t>(k) + round;
      if (mine[k] != want) {
        ADD_FAILURE() << format("int64 sum reducescatter round %d: element %zu is %lld, expected %lld", round, k,
                                static_cast<long long>(mine[k]), static_cast<long long>(want));
        break;
      }
    }
    // collect: member j sends (j + 1) * 1000 bytes, concatenated in team order.
    const size_t my_bytes = static_cast<size_t>(me() + 1) * 1000;
    for (size_t i = 0; i < my_bytes; ++i) host[i] = stream_byte(me(), i, round);
    put_source(my_bytes);
    shoal_barrier_all();
    ok("shoalx_collectmem_on_stream", shoalx_collectmem_on_stream(SHOAL_TEAM_WORLD, dest, b.src, my_bytes, s));
    size_t at = 0;
    for (int j = 0; j < n; ++j) at += static_cast<size_t>(j + 1) * 1000;
    fetch(dest, at);
    at = 0;
    for (int j = 0; j < n; ++j) {
      expect_block("collect", round, at, j, static_cast<size_t>(j + 1) * 1000);
      at += static_cast<size_t>(j + 1) * 1000;
    }
    ok("shoalx_barrier_on_stream", shoalx_barrier_on_stream(SHOAL_TEAM_WORLD, s));
    GT_CUDA(cudaStreamSynchronize(s));
  }
  // fcollect captured into a graph, replayed twice with new sources.
  shoal_barrier_all();
  cudaGraph_t graph = nullptr;
  GT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const int rc = shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, b.dst[0], b.src, kBytes, s);
  GT_CUDA(cudaStreamEndCapture(s, &graph));
  ok("shoalx_fcollectmem_on_stream (captured)", rc);
  cudaGraphExec_t exec = nullptr;
  GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    const int round = 10 + replay;
    for (size_t i = 0; i < kBytes; ++i) host[i] = stream_byte(me(), i, round);
    put_source(kBytes);
    shoal_barrier_all();
    GT_CUDA(cudaGraphLaunch(exec, s));
    fetch(b.dst[0], total);
    for (int j = 0; j < n; ++j) expect_block("graph fcollect", round, static_cast<size_t>(j) * kBytes, j, kBytes);
  }
  GT_CUDA(cudaGraphExecDestroy(exec));
  GT_CUDA(cudaGraphDestroy(graph));
  GT_CUDA(cudaStreamDestroy(s));
  // The blocking calls on the same team and heap (the host protocol in the proxy variant).
  ok("shoal_team_sync", shoal_team_sync(SHOAL_TEAM_WORLD));
  ok("shoal_barrier", shoal_barrier(SHOAL_TEAM_WORLD));
  shoal_set_error_mode(previous);
  sync_all_pes();
}

// ---- reduce -----------------------------------------------------------------------------------

enum op_id { op_sum, op_prod, op_min, op_max, op_and, op_or, op_xor };
const char* op_name(int op) {
  static const char* names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  return names[op];
}
template <int kOp>
struct op_of;
template <>
struct op_of<op_sum> {
  using type = sd::sum_op;
};
template <>
struct op_of<op_prod> {
  using type = sd::prod_op;
};
template <>
struct op_of<op_min> {
  using type = sd::min_op;
};
template <>
struct op_of<op_max> {
  using type = sd::max_op;
};
template <>
struct op_of<op_and> {
  using type = sd::and_op;
};
template <>
struct op_of<op_or> {
  using type = sd::or_op;
};
template <>
struct op_of<op_xor> {
  using type = sd::xor_op;
};

/// Element i of team PE `pe`'s source in iteration `it`. Floating-point products stay near 1.
template <class T>
__host__ __device__ inline T value_of(int op, int pe, int it, uint32_t salt, size_t i) {
  const uint32_t h = mix(static_cast<uint32_t>(pe), static_cast<uint32_t>(it), salt, static_cast<uint32_t>(i));
  if constexpr (std::is_floating_point_v<T>) {
    if (op == op_prod) return static_cast<T>(0.75) + static_cast<T>(h % 4096u) / static_cast<T>(8192);
    return static_cast<T>(static_cast<int32_t>(h)) * static_cast<T>(1.0 / 1048576.0);
  } else if constexpr (sizeof(T) == 8) {
    const uint32_t h2 =
        mix(static_cast<uint32_t>(pe) + 1000u, static_cast<uint32_t>(it), salt, static_cast<uint32_t>(i));
    return static_cast<T>((static_cast<uint64_t>(h2) << 32) | h);
  } else {
    return static_cast<T>(h);
  }
}

/// The host's fold, as the device's ops define it.
template <class T>
T host_apply(int op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case op_sum:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case op_prod:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case op_and:
        return static_cast<T>(a & b);
      case op_or:
        return static_cast<T>(a | b);
      case op_xor:
        return static_cast<T>(a ^ b);
      default:
        break;
    }
  } else {
    if (op == op_sum) return a + b;
    if (op == op_prod) return a * b;
  }
  return op == op_min ? (b < a ? b : a) : (a < b ? b : a);
}

template <class Scope, class Op, class T>
__device__ void run_reduce(const shoal::device_world& w, const shoal::device_team& t, T* d, const T* s, size_t n,
                           void* scratch) {
  sd::reduce<Op>(Scope{}, w, t, d, s, n, scratch);
}

template <class Scope, int kOp, class T>
__global__ void reduce_kernel(shoal::device_world w, shoal::device_team t, T* src, T* dst, T* history, void* scratch,
                              size_t nreduce, uint32_t salt, int iters, bool in_place) {
  for (int it = 0; it < iters; ++it) {
    for (size_t i = threadIdx.x; i < nreduce; i += blockDim.x) src[i] = value_of<T>(kOp, t.my_pe_in_team, it, salt, i);
    T* d = in_place ? src : dst;
    run_reduce<Scope, typename op_of<kOp>::type>(w, t, d, src, nreduce, scratch);
    for (size_t i = threadIdx.x; i < nreduce; i += blockDim.x) history[static_cast<size_t>(it) * nreduce + i] = d[i];
    __syncthreads();
  }
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
  if constexpr (std::is_same_v<T, float>) return "float";
  return "double";
}

template <class Scope, int kOp, class T>
void reduce_case(int team_index, size_t nreduce, int iters, bool in_place) {
  coll_buffers& b = bufs();
  const shoal::device_team& t = b.teams.handle[team_index];
  const uint32_t salt = next_salt();
  const std::string what =
      format("reduce (%s scope) <%s> %s on %s, %zu elements, %d iterations%s", scope_name<Scope>, op_name(kOp),
             type_name<T>(), b.teams.name[team_index], nreduce, iters, in_place ? ", in place" : "");
  const size_t hist_bytes = static_cast<size_t>(iters) * nreduce * sizeof(T);
  GT_CUDA(cudaMemset(b.rdst, kPoison, kMaxElems * 8 + 64));
  GT_CUDA(cudaMemset(b.history, kPoison, hist_bytes + 8));
  GT_CUDA(cudaMemset(b.scratch, kPoison, static_cast<size_t>(t.n_pes) * kMaxElems * 8));
  sync_all_pes();
  reduce_kernel<Scope, kOp, T><<<1, threads_of<Scope>()>>>(device_handle(), t, static_cast<T*>(b.rsrc),
                                                           static_cast<T*>(b.rdst), static_cast<T*>(b.history),
                                                           b.scratch, nreduce, salt, iters, in_place);
  GT_LAUNCHED(what.c_str());
  std::vector<T> seen(static_cast<size_t>(iters) * nreduce), want(seen.size());
  GT_CUDA(cudaMemcpy(seen.data(), b.history, hist_bytes, cudaMemcpyDeviceToHost));
  for (int it = 0; it < iters; ++it)
    for (size_t i = 0; i < nreduce; ++i) {
      T acc = value_of<T>(kOp, 0, it, salt, i);
      for (int r = 1; r < t.n_pes; ++r) acc = host_apply<T>(kOp, acc, value_of<T>(kOp, r, it, salt, i));
      want[static_cast<size_t>(it) * nreduce + i] = acc;
    }
  EXPECT_TRUE(bytes_equal(what.c_str(), seen.data(), want.data(), hist_bytes));  // bitwise, floats included
  uint8_t guard[8], poison[8];
  std::memset(poison, kPoison, sizeof(poison));
  GT_CUDA(cudaMemcpy(guard, static_cast<char*>(b.history) + hist_bytes, 8, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal((what + ": history guard").c_str(), guard, poison, 8));
  if (!in_place) {  // dest is written for nreduce elements only
    GT_CUDA(cudaMemcpy(guard, static_cast<char*>(b.rdst) + nreduce * sizeof(T), 8, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(bytes_equal((what + ": dest guard").c_str(), guard, poison, 8));
  }
  sync_all_pes();
}

const size_t kElems[] = {0, 1, 3, 37, 1000, kMaxElems};

template <int kOp, class T>
void reduce_all_block() {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t n : kElems) reduce_case<block_scope, kOp, T>(ti, n, kIters, false);
}
template <class T>
void reduce_type_block() {
  reduce_all_block<op_sum, T>();
  reduce_all_block<op_prod, T>();
  reduce_all_block<op_min, T>();
  reduce_all_block<op_max, T>();
  if constexpr (std::is_integral_v<T>) {
    reduce_all_block<op_and, T>();
    reduce_all_block<op_or, T>();
    reduce_all_block<op_xor, T>();
  }
}

TEST(coll_gpu, reduce_int32_block) { reduce_type_block<int32_t>(); }
TEST(coll_gpu, reduce_int64_block) { reduce_type_block<int64_t>(); }
TEST(coll_gpu, reduce_uint32_block) { reduce_type_block<uint32_t>(); }
TEST(coll_gpu, reduce_uint64_block) { reduce_type_block<uint64_t>(); }
TEST(coll_gpu, reduce_float_block) { reduce_type_block<float>(); }
TEST(coll_gpu, reduce_double_block) { reduce_type_block<double>(); }
TEST(coll_gpu, reduce_in_place_thread_warp) {
  for (int ti = 0; ti < 3; ++ti) {
    reduce_case<block_scope, op_sum, float>(ti, 1000, kIters, true);
    reduce_case<block_scope, op_xor, uint64_t>(ti, 37, kIters, true);
    reduce_case<thread_scope, op_sum, int32_t>(ti, 37, 10, false);
    reduce_case<thread_scope, op_max, double>(ti, 1000, 10, true);
    reduce_case<warp_scope, op_sum, double>(ti, 1000, 10, false);
    reduce_case<warp_scope, op_min, int64_t>(ti, 3, 10, false);
    reduce_case<warps_scope<2>, op_sum, float>(ti, 1000, 10, false);
  }
}

// ---- team barrier -----------------------------------------------------------------------------

template <class Scope>
__device__ void run_team_sync(const shoal::device_world& w, const shoal::device_team& t, bool barrier) {
  barrier ? sd::team_barrier(Scope{}, w, t) : sd::team_sync(Scope{}, w, t);
}

/// Round r (1..rounds) on team r % 3 (the same on every PE): rank 0 stores r into its slot on the
/// team's next PE, team barrier, then checks the slot of the team's previous PE. Every 7th round
/// also runs barrier_all / sync_all of the scope (other words; must not interfere).
template <class Scope>
__global__ void barrier_kernel(shoal::device_world w, shoal::device_team t0, shoal::device_team t1,
                               shoal::device_team t2, uint64_t* slots, int rounds, device_report* report) {
  const int n = w.n_pes;
  for (int r = 1; r <= rounds; ++r) {
    const shoal::device_team& t = r % 3 == 0 ? t0 : (r % 3 == 1 ? t1 : t2);
    uint64_t* row = slots + static_cast<size_t>(r % kBarrierSlots) * n;
    const bool lead = threadIdx.x == 0;
    if (lead) sd::p(w, &row[w.my_pe], static_cast<uint64_t>(r), t.world_pe((t.my_pe_in_team + 1) % t.n_pes));
    run_team_sync<Scope>(w, t, (r & 1) != 0);
    if (lead) {
      const int from = t.world_pe((t.my_pe_in_team - 1 + t.n_pes) % t.n_pes);
      const uint64_t seen = *reinterpret_cast<volatile uint64_t*>(&row[from]);
      if (seen != static_cast<uint64_t>(r)) report_failure(report, static_cast<unsigned long long>(r), from, r, seen);
    }
    if (r % 7 == 0) {
      if constexpr (is_thread<Scope>) {
        sd::sync_all(Scope{}, w);
      } else {
        sd::barrier_all(Scope{}, w);
      }
    }
  }
}

template <class Scope>
void barrier_case(int rounds) {
  coll_buffers& b = bufs();
  const std::string what =
      format("team_barrier/team_sync (%s scope) over 3 teams, %d rounds", scope_name<Scope>, rounds);
  GT_CUDA(cudaMemset(b.slots, 0, kBarrierSlots * static_cast<size_t>(npes()) * sizeof(uint64_t)));
  reset_device_report(b.report);
  sync_all_pes();
  barrier_kernel<Scope><<<1, threads_of<Scope>()>>>(device_handle(), b.teams.handle[0], b.teams.handle[1],
                                                    b.teams.handle[2], b.slots, rounds, b.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), b.report));
  sync_all_pes();
}

TEST(coll_gpu, team_barrier_all_scopes) {
  barrier_case<block_scope>(3000);
  barrier_case<warp_scope>(1000);
  barrier_case<thread_scope>(1000);
  barrier_case<warps_scope<4>>(1000);
}

// ---- blocking host collectives on the GPU heap --------------------------------------------------
// Every blocking family (team_sync, barrier, broadcast, fcollect, collect, alltoall, reduce and
// reducescatter of several types and ops, in place too; barrier_all, sync_all) on WORLD, WORLD
// reversed and a 1-PE team, host-filled and host-checked, exact. In the proxy variant every member is
// behind the proxy, so they run the host protocol over UCX with CUDA memory; in the load/store
// variant they run the on-stream kernels. Errors are returned (SHOAL_ERRORS_RETURN) and reported.

/// Runs `what`'s call under SHOAL_ERRORS_RETURN; a non-zero return is a failure naming the error.
template <class F>
bool blocking_ok(const std::string& what, F&& call) {
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  const int rc = call();
  const char* message = nullptr;
  if (rc != 0) (void)shoal_last_error(&message);
  shoal_set_error_mode(previous);
  if (rc != 0) ADD_FAILURE() << format("%s returned %d: %s", what.c_str(), rc, message != nullptr ? message : "");
  return rc == 0;
}

void upload(void* dest, const std::vector<uint8_t>& bytes) {
  if (!bytes.empty()) GT_CUDA(cudaMemcpy(dest, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}
std::vector<uint8_t> download(const void* source, size_t num_bytes) {
  std::vector<uint8_t> v(num_bytes);
  if (num_bytes > 0) GT_CUDA(cudaMemcpy(v.data(), source, num_bytes, cudaMemcpyDeviceToHost));
  return v;
}
/// What team PE `from` sends to team PE `to` (kAnyPe: to all) in case `salt`: a pattern per pair.
std::vector<uint8_t> block_of(int from, int to, uint32_t salt, size_t num_bytes) {
  return pattern(from * 1000 + (to == kAnyPe ? 999 : to), salt, num_bytes);
}

const size_t kBlockingSizes[] = {0, 1, 37, 4099, kMaxBytes};

/// dest (poisoned first, kGuard bytes past the result checked untouched) of one byte collective.
void check_dest(const std::string& what, const std::vector<uint8_t>& want) {
  std::vector<uint8_t> expect = want;
  expect.insert(expect.end(), kGuard, kPoison);
  const std::vector<uint8_t> seen = download(bufs().dst[0], expect.size());
  EXPECT_TRUE(bytes_equal(what.c_str(), seen.data(), expect.data(), expect.size()));
}

TEST(coll_gpu, blocking_sync_and_barrier) {
  coll_buffers& b = bufs();
  for (int ti = 0; ti < 3; ++ti) {
    const shoal::device_team& t = b.teams.handle[ti];
    const shoal_team_t team = b.teams.host[ti];
    const std::string on = format(" on %s", b.teams.name[ti]);
    for (int round = 1; round <= 20; ++round) {
      blocking_ok("shoal_team_sync" + on, [&] { return shoal_team_sync(team); });
      // shoal_barrier completes this PE's puts: the next member's slot holds this round afterwards.
      const uint64_t value = static_cast<uint64_t>(ti) * 1000 + static_cast<uint64_t>(round);
      const int next = t.world_pe((t.my_pe_in_team + 1) % t.n_pes);
      shoal_putmem(&b.slots[me()], &value, sizeof value, next);
      if (!blocking_ok("shoal_barrier" + on, [&] { return shoal_barrier(team); })) break;
      const int prev = t.world_pe((t.my_pe_in_team - 1 + t.n_pes) % t.n_pes);
      uint64_t seen = 0;
      GT_CUDA(cudaMemcpy(&seen, &b.slots[prev], sizeof seen, cudaMemcpyDeviceToHost));
      if (seen != value) {
        ADD_FAILURE() << format("round %d%s: after shoal_barrier the slot of PE %d holds %llu, expected %llu", round,
                                on.c_str(), prev, static_cast<unsigned long long>(seen),
                                static_cast<unsigned long long>(value));
        break;
      }
      shoal_barrier_all();  // every PE read its slot before the next round's puts
      shoal_sync_all();
    }
  }
  sync_all_pes();
}

TEST(coll_gpu, blocking_broadcast_fcollect_alltoall) {
  coll_buffers& b = bufs();
  for (int ti = 0; ti < 3; ++ti) {
    const shoal::device_team& t = b.teams.handle[ti];
    const shoal_team_t team = b.teams.host[ti];
    const int n = t.n_pes, rank = t.my_pe_in_team;
    for (size_t nb : kBlockingSizes) {
      const std::string on = format(" on %s, %zu bytes", b.teams.name[ti], nb);
      for (int root = 0; root < n; ++root) {
        const uint32_t salt = next_salt();
        upload(b.src, block_of(rank, kAnyPe, salt, nb));
        GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
        const std::string what = format("shoal_broadcastmem%s, root %d", on.c_str(), root);
        if (blocking_ok(what, [&] { return shoal_broadcastmem(team, b.dst[0], b.src, nb, root); }))
          check_dest(what, block_of(root, kAnyPe, salt, nb));
      }
      {
        const uint32_t salt = next_salt();
        upload(b.src, block_of(rank, kAnyPe, salt, nb));
        GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
        std::vector<uint8_t> want;
        for (int j = 0; j < n; ++j) {
          const std::vector<uint8_t> blk = block_of(j, kAnyPe, salt, nb);
          want.insert(want.end(), blk.begin(), blk.end());
        }
        const std::string what = "shoal_fcollectmem" + on;
        if (blocking_ok(what, [&] { return shoal_fcollectmem(team, b.dst[0], b.src, nb); })) check_dest(what, want);
      }
      {
        const uint32_t salt = next_salt();
        std::vector<uint8_t> source, want;
        for (int j = 0; j < n; ++j) {
          const std::vector<uint8_t> to_j = block_of(rank, j, salt, nb), from_j = block_of(j, rank, salt, nb);
          source.insert(source.end(), to_j.begin(), to_j.end());
          want.insert(want.end(), from_j.begin(), from_j.end());
        }
        upload(b.src, source);
        GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
        const std::string what = "shoal_alltoallmem" + on;
        if (blocking_ok(what, [&] { return shoal_alltoallmem(team, b.dst[0], b.src, nb); })) check_dest(what, want);
      }
      {  // collect: member r contributes nb - r bytes (at least 0)
        const uint32_t salt = next_salt();
        auto bytes_of = [&](int r) { return nb > static_cast<size_t>(r) ? nb - static_cast<size_t>(r) : size_t{0}; };
        upload(b.src, block_of(rank, kAnyPe, salt, bytes_of(rank)));
        GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
        std::vector<uint8_t> want;
        for (int j = 0; j < n; ++j) {
          const std::vector<uint8_t> blk = block_of(j, kAnyPe, salt, bytes_of(j));
          want.insert(want.end(), blk.begin(), blk.end());
        }
        const std::string what = "shoal_collectmem" + on;
        if (blocking_ok(what, [&] { return shoal_collectmem(team, b.dst[0], b.src, bytes_of(rank)); }))
          check_dest(what, want);
      }
    }
    {  // a typed broadcast from the last member
      const uint32_t salt = next_salt();
      const size_t nelems = 1000;
      std::vector<uint8_t> raw = block_of(rank, kAnyPe, salt, nelems * sizeof(int64_t));
      upload(b.src, raw);
      GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
      const std::string what = format("shoal_int64_broadcast on %s", b.teams.name[ti]);
      if (blocking_ok(what, [&] {
            return shoal_int64_broadcast(team, reinterpret_cast<int64_t*>(b.dst[0]),
                                         reinterpret_cast<const int64_t*>(b.src), nelems, n - 1);
          }))
        check_dest(what, block_of(n - 1, kAnyPe, salt, nelems * sizeof(int64_t)));
    }
  }
  sync_all_pes();
}

/// Writes `bytes` of coll_byte data (from team PE `from`, iteration 0) into p after spinning ~2 ms: a source that a
/// blocking collective called right after the launch must wait for.
__global__ void slow_fill_kernel(uint8_t* p, size_t bytes, int from, uint32_t salt) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < 4'000'000) {
    }
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) p[i] = coll_byte(from, kAnyPe, 0, salt, i);
}

/// The caller's kernels on the legacy stream that write the source come first: fcollect launched with
/// no synchronization after a slow kernel that fills the source.
TEST(coll_gpu, blocking_after_kernel_on_legacy_stream) {
  coll_buffers& b = bufs();
  for (int ti = 0; ti < 2; ++ti) {
    const shoal::device_team& t = b.teams.handle[ti];
    const uint32_t salt = next_salt();
    const size_t nb = kMaxBytes;
    GT_CUDA(cudaMemset(b.src, kPoison, nb));
    GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
    GT_CUDA(cudaDeviceSynchronize());
    sync_all_pes();
    slow_fill_kernel<<<1, 256>>>(b.src, nb, t.my_pe_in_team, salt);
    const std::string what = format("shoal_fcollectmem on %s right after a kernel filled the source", b.teams.name[ti]);
    if (blocking_ok(what, [&] { return shoal_fcollectmem(b.teams.host[ti], b.dst[0], b.src, nb); })) {
      std::vector<uint8_t> want(static_cast<size_t>(t.n_pes) * nb);
      for (int j = 0; j < t.n_pes; ++j)
        for (size_t i = 0; i < nb; ++i) want[static_cast<size_t>(j) * nb + i] = coll_byte(j, kAnyPe, 0, salt, i);
      check_dest(what, want);
    }
  }
  sync_all_pes();
}

/// One blocking reduction (or reducescatter) of `nreduce` elements of T with op kOp through `call`
/// (team, dest, source, nreduce), source from value_of, dest checked bitwise against the team-rank
/// fold; in place when `in_place` (dest = source).
template <int kOp, class T, class Call>
void blocking_reduce_case(const char* name, int ti, size_t nreduce, bool scatter, bool in_place, Call&& call) {
  coll_buffers& b = bufs();
  const shoal::device_team& t = b.teams.handle[ti];
  const int n = t.n_pes, rank = t.my_pe_in_team;
  const uint32_t salt = next_salt();
  const size_t src_elems = scatter ? nreduce * static_cast<size_t>(n) : nreduce;
  std::vector<T> source(src_elems);
  for (size_t i = 0; i < src_elems; ++i) source[i] = value_of<T>(kOp, rank, 0, salt, i);
  T* src = static_cast<T*>(b.scratch);
  T* dst = in_place ? src : reinterpret_cast<T*>(b.dst[0]);
  GT_CUDA(cudaMemcpy(src, source.data(), src_elems * sizeof(T), cudaMemcpyHostToDevice));
  if (!in_place) GT_CUDA(cudaMemset(b.dst[0], kPoison, b.dst_bytes));
  std::vector<T> want(nreduce);
  const size_t first = scatter ? static_cast<size_t>(rank) * nreduce : 0;
  for (size_t i = 0; i < nreduce; ++i) {
    T acc = value_of<T>(kOp, 0, 0, salt, first + i);
    for (int r = 1; r < n; ++r) acc = host_apply<T>(kOp, acc, value_of<T>(kOp, r, 0, salt, first + i));
    want[i] = acc;
  }
  const std::string what =
      format("%s on %s, %zu elements%s", name, b.teams.name[ti], nreduce, in_place ? ", in place" : "");
  if (!blocking_ok(what, [&] { return call(b.teams.host[ti], dst, src, nreduce); })) return;
  std::vector<T> seen(nreduce);
  GT_CUDA(cudaMemcpy(seen.data(), dst, nreduce * sizeof(T), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal(what.c_str(), seen.data(), want.data(), nreduce * sizeof(T)));
  if (!in_place) {
    uint8_t guard[kGuard], poison[kGuard];
    std::memset(poison, kPoison, sizeof poison);
    GT_CUDA(cudaMemcpy(guard, b.dst[0] + nreduce * sizeof(T), kGuard, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(bytes_equal((what + ": dest guard").c_str(), guard, poison, kGuard));
  }
}

TEST(coll_gpu, blocking_reductions) {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t nr : {size_t{1}, size_t{37}, size_t{4099}}) {
      blocking_reduce_case<op_sum, int32_t>(
          "shoal_int32_sum_reduce", ti, nr, false, false,
          [](shoal_team_t tm, int32_t* d, const int32_t* s, size_t k) { return shoal_int32_sum_reduce(tm, d, s, k); });
      blocking_reduce_case<op_xor, uint64_t>("shoal_uint64_xor_reduce", ti, nr, false, false,
                                             [](shoal_team_t tm, uint64_t* d, const uint64_t* s, size_t k) {
                                               return shoal_uint64_xor_reduce(tm, d, s, k);
                                             });
      blocking_reduce_case<op_min, int64_t>(
          "shoal_int64_min_reduce", ti, nr, false, false,
          [](shoal_team_t tm, int64_t* d, const int64_t* s, size_t k) { return shoal_int64_min_reduce(tm, d, s, k); });
      blocking_reduce_case<op_max, float>(
          "shoal_float_max_reduce", ti, nr, false, false,
          [](shoal_team_t tm, float* d, const float* s, size_t k) { return shoal_float_max_reduce(tm, d, s, k); });
      blocking_reduce_case<op_sum, double>(
          "shoal_double_sum_reduce", ti, nr, false, false,
          [](shoal_team_t tm, double* d, const double* s, size_t k) { return shoal_double_sum_reduce(tm, d, s, k); });
      blocking_reduce_case<op_prod, double>(
          "shoal_double_prod_reduce", ti, nr, false, false,
          [](shoal_team_t tm, double* d, const double* s, size_t k) { return shoal_double_prod_reduce(tm, d, s, k); });
      blocking_reduce_case<op_sum, float>(
          "shoal_float_sum_reduce", ti, nr, false, true,
          [](shoal_team_t tm, float* d, const float* s, size_t k) { return shoal_float_sum_reduce(tm, d, s, k); });
      blocking_reduce_case<op_sum, int32_t>("shoal_int32_sum_reducescatter", ti, nr, true, false,
                                            [](shoal_team_t tm, int32_t* d, const int32_t* s, size_t k) {
                                              return shoal_int32_sum_reducescatter(tm, d, s, k);
                                            });
      blocking_reduce_case<op_or, uint32_t>("shoal_uint32_or_reducescatter", ti, nr, true, false,
                                            [](shoal_team_t tm, uint32_t* d, const uint32_t* s, size_t k) {
                                              return shoal_uint32_or_reducescatter(tm, d, s, k);
                                            });
    }
  sync_all_pes();
}

/// A bad call fails on every member alike (here: a root out of range everywhere) and leaves the team
/// usable: the next call succeeds.
TEST(coll_gpu, blocking_error_then_success) {
  coll_buffers& b = bufs();
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  const int rc = shoal_broadcastmem(SHOAL_TEAM_WORLD, b.dst[0], b.src, 8, npes());
  const char* message = nullptr;
  (void)shoal_last_error(&message);
  shoal_set_error_mode(previous);
  const std::string text = message != nullptr ? message : "";
  if (rc != SHOAL_ERR_INVALID_ARGUMENT || text.find("PE_root") == std::string::npos)
    ADD_FAILURE() << format(
        "shoal_broadcastmem(WORLD, root %d): expected SHOAL_ERR_INVALID_ARGUMENT naming PE_root, got %d '%s'", npes(),
        rc, text.c_str());
  blocking_ok("shoal_team_sync(WORLD) after a failed call", [] { return shoal_team_sync(SHOAL_TEAM_WORLD); });
  sync_all_pes();
}

}  // namespace
}  // namespace shoal_test
