// The on-stream collective tests' shared part (coll_stream_gpu_test.cu, coll_stream_errors_gpu_test.cu):
// limits, the checking kernels, the API under test by type, the job (stream, teams, buffers) and the
// reduce / move cases against the host reference. Each including unit gets its own copy (anonymous
// namespace): its own stream, buffers and teams, made on first use, in the same order on every PE.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "coll_test_data.cuh"
#include "gpu_env.hpp"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

constexpr size_t kGuard = 256;                                // poisoned bytes before and after every dest
constexpr size_t kLargeBytes = size_t{1} << 20;               // "large" of the full matrix (several channels)
constexpr size_t kHugeBytes = size_t{4} << 20;                // 4 MiB per PE, on a subset
constexpr size_t kBufBytes = kHugeBytes + 8192 + 2 * kGuard;  // each of the two symmetric test buffers
const int kBackToBack = rounds(100);
const int kReplays = rounds(50);
constexpr int kSlotRows = 4;  // barrier check: rows of slots, reused every kSlotRows rounds

/// The salt a kernel uses: base, plus a device word when set (a graph's replays change it).
struct salt_src {
  uint32_t base = 0;
  const uint32_t* dyn = nullptr;
  __device__ uint32_t get() const { return base + (dyn != nullptr ? *dyn : 0u); }
};

// ---- kernels ----------------------------------------------------------------------------------

constexpr unsigned kThreads = 256;
inline unsigned grid_for(size_t count) {
  return static_cast<unsigned>(std::min<size_t>((count + kThreads - 1) / kThreads, 1024));
}

template <class T>
__global__ void fill_values_kernel(T* buf, size_t count, int op, int pe, salt_src salt) {
  const uint32_t s = salt.get();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    buf[i] = value_of<T>(op, pe, s, i);
}

template <class T>
__global__ void check_reduce_kernel(const T* dest, size_t nreduce, bool scatter, int op, int me, int n, salt_src salt,
                                    device_report* report) {
  const uint32_t s = salt.get();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < nreduce;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const T want = expected_of<T>(op, scatter, me, n, s, nreduce, i);
    if (bits_of(dest[i]) != bits_of(want)) report_failure(report, s, i, bits_of(want), bits_of(dest[i]));
  }
}

__global__ void fill_move_kernel(uint8_t* src, size_t nb, int kind, int me, int n, salt_src salt) {
  const uint32_t s = salt.get();
  const size_t total = move_src_bytes(kind, nb, n);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    src[i] = move_source_byte(kind, me, nb, s, i);
}

__global__ void check_move_kernel(const uint8_t* dest, size_t nb, int kind, int me, int n, int root, salt_src salt,
                                  device_report* report) {
  const uint32_t s = salt.get();
  const size_t total = move_dst_bytes(kind, nb, n);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint8_t want = move_expected(kind, me, root, nb, s, i);
    if (dest[i] != want) report_failure(report, s, i, want, dest[i]);
  }
}

/// Barrier check, before the barrier: store the salt into this PE's slot of row salt % kSlotRows on
/// the next team PE (world PE `to`).
__global__ void put_slot_kernel(uint64_t* slots, int world_n, int my_world_pe, int to, salt_src salt) {
  const uint32_t s = salt.get();
  shoal_uint64_p(&slots[static_cast<size_t>(s % kSlotRows) * world_n + my_world_pe], s, to);
}
/// After the barrier: the previous team PE (world PE `from`) must have stored this round's salt here.
__global__ void check_slot_kernel(const uint64_t* slots, int world_n, int from, salt_src salt, device_report* report) {
  const uint32_t s = salt.get();
  const uint64_t seen =
      *reinterpret_cast<const volatile uint64_t*>(&slots[static_cast<size_t>(s % kSlotRows) * world_n + from]);
  if (seen != s) report_failure(report, s, static_cast<unsigned long long>(from), s, seen);
}

// ---- the API under test, by type --------------------------------------------------------------

template <class T>
struct on_stream;

#define SHOAL_TEST_CASE(ID, FN)                                            \
  case ID:                                                                 \
    return scatter ? FN##scatter_on_stream(team, dest, source, nreduce, s) \
                   : FN##_on_stream(team, dest, source, nreduce, s);
#define SHOAL_TEST_FLOAT_OPS(NAME)                      \
  SHOAL_TEST_CASE(op_sum, shoalx_##NAME##_sum_reduce)   \
  SHOAL_TEST_CASE(op_prod, shoalx_##NAME##_prod_reduce) \
  SHOAL_TEST_CASE(op_min, shoalx_##NAME##_min_reduce)   \
  SHOAL_TEST_CASE(op_max, shoalx_##NAME##_max_reduce)
#define SHOAL_TEST_INT_OPS(NAME)                      \
  SHOAL_TEST_FLOAT_OPS(NAME)                          \
  SHOAL_TEST_CASE(op_and, shoalx_##NAME##_and_reduce) \
  SHOAL_TEST_CASE(op_or, shoalx_##NAME##_or_reduce)   \
  SHOAL_TEST_CASE(op_xor, shoalx_##NAME##_xor_reduce)
#define SHOAL_TEST_ON_STREAM(T, NAME, OPS)                                                               \
  template <>                                                                                            \
  struct on_stream<T> {                                                                                  \
    static constexpr const char* kName = #NAME;                                                          \
    static int reduce(int op, bool scatter, shoal_team_t team, T* dest, const T* source, size_t nreduce, \
                      cudaStream_t s) {                                                                  \
      switch (op) { OPS(NAME) }                                                                          \
      return -1;                                                                                         \
    }                                                                                                    \
  };

SHOAL_TEST_ON_STREAM(int8_t, int8, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(uint8_t, uint8, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(int16_t, int16, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(int32_t, int32, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(uint32_t, uint32, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(int64_t, int64, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(uint64_t, uint64, SHOAL_TEST_INT_OPS)
SHOAL_TEST_ON_STREAM(float, float, SHOAL_TEST_FLOAT_OPS)
SHOAL_TEST_ON_STREAM(double, double, SHOAL_TEST_FLOAT_OPS)
SHOAL_TEST_ON_STREAM(__half, half, SHOAL_TEST_FLOAT_OPS)
SHOAL_TEST_ON_STREAM(__nv_bfloat16, bfloat16, SHOAL_TEST_FLOAT_OPS)
#undef SHOAL_TEST_ON_STREAM
#undef SHOAL_TEST_INT_OPS
#undef SHOAL_TEST_FLOAT_OPS
#undef SHOAL_TEST_CASE

/// broadcast / fcollect / alltoall on a stream; elem 0: the *mem names (nelems in bytes), else the
/// typed names of that element size (uint8, int16, float, uint64, longdouble).
int move_on_stream(int kind, int elem, shoal_team_t team, void* dest, const void* source, size_t nelems, int root,
                   cudaStream_t s) {
#define SHOAL_TEST_MOVE(T, NAME)                                                                                      \
  if (kind == mv_broadcast)                                                                                           \
    return shoalx_##NAME##_broadcast_on_stream(team, static_cast<T*>(dest), static_cast<const T*>(source), nelems,    \
                                               root, s);                                                              \
  if (kind == mv_fcollect)                                                                                            \
    return shoalx_##NAME##_fcollect_on_stream(team, static_cast<T*>(dest), static_cast<const T*>(source), nelems, s); \
  return shoalx_##NAME##_alltoall_on_stream(team, static_cast<T*>(dest), static_cast<const T*>(source), nelems, s);
  switch (elem) {
    case 0:
      if (kind == mv_broadcast) return shoalx_broadcastmem_on_stream(team, dest, source, nelems, root, s);
      if (kind == mv_fcollect) return shoalx_fcollectmem_on_stream(team, dest, source, nelems, s);
      return shoalx_alltoallmem_on_stream(team, dest, source, nelems, s);
    case 1: {
      SHOAL_TEST_MOVE(uint8_t, uint8)
    }
    case 2: {
      SHOAL_TEST_MOVE(int16_t, int16)
    }
    case 4: {
      SHOAL_TEST_MOVE(float, float)
    }
    case 8: {
      SHOAL_TEST_MOVE(uint64_t, uint64)
    }
    case 16: {
      SHOAL_TEST_MOVE(long double, longdouble)
    }
  }
#undef SHOAL_TEST_MOVE
  return -1;
}
inline const char* move_type_name(int elem) {
  switch (elem) {
    case 0:
      return "mem";
    case 1:
      return "uint8";
    case 2:
      return "int16";
    case 4:
      return "float";
    case 8:
      return "uint64";
    default:
      return "longdouble";
  }
}

// ---- the job: stream, teams, buffers ------------------------------------------------------------

struct team_info {
  shoal_team_t handle = SHOAL_TEAM_INVALID;
  const char* name = "";
  int me = -1;             // this PE's number in the team
  int n = 0;               // team size
  std::vector<int> world;  // world PE of each team PE
  int next_world() const { return world[static_cast<size_t>((me + 1) % n)]; }
  int prev_world() const { return world[static_cast<size_t>((me + n - 1) % n)]; }
};

inline team_info make_team(shoal_team_t handle, const char* name) {
  team_info t;
  t.handle = handle;
  t.name = name;
  t.me = shoal_team_my_pe(handle);
  t.n = shoal_team_n_pes(handle);
  for (int r = 0; r < t.n; ++r) t.world.push_back(shoal_team_translate_pe(handle, r, SHOAL_TEAM_WORLD));
  if (t.n < 1 || t.me < 0 || t.me >= t.n || t.world[static_cast<size_t>(t.me)] != me()) {
    ADD_FAILURE() << format("team %s: my_pe %d of %d PEs does not map back to world PE %d", name, t.me, t.n, me());
    t.me = 0, t.n = 1, t.world.assign(1, me());  // keeps the indexing below in range
  }
  return t;
}

struct stream_env {
  cudaStream_t s = nullptr;
  team_info team[3];
  uint8_t* src = nullptr;  // symmetric, kBufBytes
  uint8_t* dst = nullptr;  // symmetric, kBufBytes
  size_t ll_bytes = 16384;
};

inline stream_env& env() {
  static stream_env e = [] {
    stream_env x;
    GT_CUDA(cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking));
    x.src = static_cast<uint8_t*>(shoal_malloc(kBufBytes));
    x.dst = static_cast<uint8_t*>(shoal_malloc(kBufBytes));
    if (x.src == nullptr || x.dst == nullptr) ADD_FAILURE() << format("shoal_malloc(%zu) returned NULL", kBufBytes);
    const uint32_t ll = device_handle().coll_ll_bytes;
    x.ll_bytes = ll != 0 ? ll : 16384;
    shoal_team_t reversed = SHOAL_TEAM_INVALID;
    if (shoal_team_split_strided(SHOAL_TEAM_WORLD, npes() - 1, -1, npes(), nullptr, 0, &reversed) != 0)
      ADD_FAILURE() << format("split_strided(WORLD, %d, -1, %d) failed", npes() - 1, npes());
    shoal_team_t alone = SHOAL_TEAM_INVALID;
    for (int s = 0; s < npes(); ++s) {
      shoal_team_t t = SHOAL_TEAM_INVALID;
      if (shoal_team_split_strided(SHOAL_TEAM_WORLD, s, 1, 1, nullptr, 0, &t) != 0)
        ADD_FAILURE() << "split_strided size 1";
      if (s == me()) alone = t;
    }
    x.team[0] = make_team(SHOAL_TEAM_WORLD, "WORLD");
    x.team[1] = make_team(reversed, "WORLD-reversed");
    x.team[2] = make_team(alone, "1-PE");
    const char* algo = std::getenv("SHOAL_COLL_ALGO");
    if (me() == 0)
      std::printf("on-stream collectives: SHOAL_COLL_ALGO=%s, LL messages up to %zu bytes, %u channels\n",
                  algo != nullptr ? algo : "(auto)", x.ll_bytes, device_handle().coll_channels);
    return x;
  }();
  return e;
}

inline uint32_t next_salt() {
  static uint32_t salt = 0;
  return ++salt;
}

/// Compares the window [dest - kGuard, dest + nbytes + kGuard) of device memory with `want` (the
/// nbytes of the result) between poisoned guards.
inline void check_window(const std::string& what, const void* dest, const void* want, size_t nbytes) {
  std::vector<uint8_t> seen(nbytes + 2 * kGuard), expected(nbytes + 2 * kGuard, kPoison);
  if (nbytes > 0) std::memcpy(expected.data() + kGuard, want, nbytes);
  GT_CUDA(cudaMemcpy(seen.data(), static_cast<const uint8_t*>(dest) - kGuard, seen.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal((what + " (guard, dest, guard)").c_str(), seen.data(), expected.data(), seen.size()));
}

// ---- reduce / reducescatter and move cases against the host reference ----------------------------

/// f(i) for i < count, on up to 4 host threads for large counts (the host references of the 1 and 4
/// MiB cases dominate the test's run time otherwise).
template <class F>
void parallel_for(size_t count, F&& f) {
  const size_t parts = count < (size_t{1} << 16) ? 1 : 4;
  const size_t per = (count + parts - 1) / parts;
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts; ++p)
    threads.emplace_back([&f, p, per, count] {
      for (size_t i = p * per; i < std::min(count, (p + 1) * per); ++i) f(i);
    });
  for (size_t i = 0; i < std::min(count, per); ++i) f(i);
  for (std::thread& t : threads) t.join();
}

/// True when the call returned 0; else records a failure. SHOAL_ERR_UNSUPPORTED from a blocking host
/// collective is marked "[NOT ROUTED YET]": the GPU heap's blocking collectives are to run the
/// on-stream path and synchronize.
inline bool call_ok(const std::string& what, int rc, bool blocking) {
  if (rc == 0) return true;
  if (blocking && rc == SHOAL_ERR_UNSUPPORTED) {
    ADD_FAILURE() << format(
        "[NOT ROUTED YET] %s returned SHOAL_ERR_UNSUPPORTED on the GPU heap (expected: the on-stream path, then a "
        "stream sync)",
        what.c_str());
  } else {
    ADD_FAILURE() << format("%s: returned %d", what.c_str(), rc);
  }
  return false;
}

/// One reduce (scatter false) or reducescatter case on team `ti`: dest in place or not, dest and
/// source `offset` elements past a 256-byte-aligned address. `call(team, dest, source, nreduce,
/// stream)` runs it; `api` names it. Checks dest bitwise against the host fold, the poisoned guards
/// around dest, and (not in place) that the source is unchanged.
template <class T, class Call>
void reduce_case_with(const char* api, bool blocking, Call&& call, int op, bool scatter, int ti, size_t nreduce,
                      bool in_place, size_t offset) {
  stream_env& e = env();
  const team_info& t = e.team[ti];
  const uint32_t salt = next_salt();
  const size_t src_count = scatter ? nreduce * static_cast<size_t>(t.n) : nreduce;
  const size_t src_bytes = src_count * sizeof(T), out_bytes = nreduce * sizeof(T), off_bytes = offset * sizeof(T);
  const std::string what = format("%s %s<%s> %s on %s, nreduce %zu%s%s", api, scatter ? "reducescatter" : "reduce",
                                  op_name(op), on_stream<T>::kName, t.name, nreduce, in_place ? ", in place" : "",
                                  offset != 0 ? ", 1 element off alignment" : "");
  if (off_bytes + src_bytes + 2 * kGuard > kBufBytes) {
    ADD_FAILURE() << format("%s: test bug: does not fit the buffers", what.c_str());
    return;
  }
  T* src = reinterpret_cast<T*>(e.src + kGuard + off_bytes);
  T* dst = in_place ? src : reinterpret_cast<T*>(e.dst + kGuard + off_bytes);
  GT_CUDA(cudaMemsetAsync(e.src, kPoison, off_bytes + src_bytes + 2 * kGuard, e.s));
  if (!in_place) GT_CUDA(cudaMemsetAsync(e.dst, kPoison, off_bytes + out_bytes + 2 * kGuard, e.s));
  if (src_count > 0) {
    fill_values_kernel<T><<<grid_for(src_count), kThreads, 0, e.s>>>(src, src_count, op, t.me, salt_src{salt});
    GT_CUDA(cudaGetLastError());
  }
  sync_all_pes();  // every member's source filled and dest poisoned
  const int rc = call(t.handle, dst, src, nreduce, e.s);
  GT_CUDA(cudaStreamSynchronize(e.s));
  if (call_ok(what, rc, blocking)) {
    std::vector<T> want(nreduce);
    parallel_for(nreduce, [&](size_t i) { want[i] = expected_of<T>(op, scatter, t.me, t.n, salt, nreduce, i); });
    check_window(what, dst, want.data(), out_bytes);
  }
  if (!in_place) {
    std::vector<T> source(src_count);
    parallel_for(src_count, [&](size_t i) { source[i] = value_of<T>(op, t.me, salt, i); });
    check_window(what + ": source (read only)", src, source.data(), src_bytes);
  }
}

template <class T>
void reduce_case(int op, bool scatter, int ti, size_t nreduce, bool in_place, size_t offset) {
  reduce_case_with<T>(
      "on_stream", false,
      [op, scatter](shoal_team_t team, T* d, const T* s, size_t n, cudaStream_t st) {
        return on_stream<T>::reduce(op, scatter, team, d, s, n, st);
      },
      op, scatter, ti, nreduce, in_place, offset);
}

/// Element counts: 0, 1, odd, the LL/direct boundary (per message: LL bytes - 1 element, LL bytes,
/// + 1 element) and large (large_bytes of source per PE, + 3 elements: no channel split is even).
template <class T>
std::vector<size_t> reduce_sizes(bool scatter, int n, size_t large_bytes) {
  const size_t b = env().ll_bytes / sizeof(T);
  const size_t large = large_bytes / sizeof(T) / (scatter ? static_cast<size_t>(n) : 1) + 3;
  return {0, 1, 7, 1023, b - 1, b, b + 1, large};
}

template <class T>
void reduce_matrix() {
  stream_env& e = env();
  const int n_ops = std::is_integral_v<T> ? 7 : 4;  // op_sum .. op_max, then and/or/xor for integers
  for (int op = 0; op < n_ops; ++op)
    for (bool scatter : {false, true})
      for (int ti = 0; ti < 3; ++ti)
        for (size_t nr : reduce_sizes<T>(scatter, e.team[ti].n, kLargeBytes))
          reduce_case<T>(op, scatter, ti, nr, false, 0);
  const int other = std::is_integral_v<T> ? op_xor : op_max;
  const size_t b = e.ll_bytes / sizeof(T);
  for (int ti = 0; ti < 3; ++ti) {
    const size_t n = static_cast<size_t>(e.team[ti].n);
    for (size_t nr : {size_t{1}, size_t{7}, size_t{1023}, b + 1, kLargeBytes / sizeof(T) + 3}) {
      reduce_case<T>(op_sum, false, ti, nr, true, 0);  // dest == source
      reduce_case<T>(other, false, ti, nr, true, 0);
      reduce_case<T>(op_sum, false, ti, nr, false, 1);  // one element past 16-byte alignment
    }
    for (size_t nr : {size_t{7}, b + 1, kLargeBytes / sizeof(T) / n + 3})
      reduce_case<T>(op_sum, true, ti, nr, false, 1);
    for (int op : {static_cast<int>(op_sum), other})  // 4 MiB of source per PE: every channel
      for (bool scatter : {false, true})
        reduce_case<T>(op, scatter, ti, kHugeBytes / sizeof(T) / (scatter ? n : 1) + 3, false, 0);
  }
}

/// One broadcast / fcollect / alltoall case: nelems elements of `elem` bytes (0: the *mem call, bytes)
/// per PE, on team `ti`; in place: dest == source (broadcast only). Checks dest and its guards
/// against the host's expectation and (not in place) that the source is unchanged.
template <class Call>
void move_case_with(const char* api, bool blocking, Call&& call, int kind, int elem, int ti, size_t nelems, int root,
                    bool in_place) {
  stream_env& e = env();
  const team_info& t = e.team[ti];
  const uint32_t salt = next_salt();
  const size_t nb = nelems * (elem == 0 ? 1 : static_cast<size_t>(elem));
  const size_t sb = move_src_bytes(kind, nb, t.n), db = move_dst_bytes(kind, nb, t.n);
  const std::string what =
      format("%s %s (%s) on %s, %zu element(s) per PE (%zu bytes), root %d%s", api, move_name(kind),
             move_type_name(elem), t.name, nelems, nb, root, in_place ? ", in place" : "");
  if (std::max(sb, db) + 2 * kGuard > kBufBytes) {
    ADD_FAILURE() << format("%s: test bug: does not fit the buffers", what.c_str());
    return;
  }
  uint8_t* src = e.src + kGuard;
  uint8_t* dst = in_place ? src : e.dst + kGuard;
  GT_CUDA(cudaMemsetAsync(e.src, kPoison, sb + 2 * kGuard, e.s));
  if (!in_place) GT_CUDA(cudaMemsetAsync(e.dst, kPoison, db + 2 * kGuard, e.s));
  if (sb > 0) {
    fill_move_kernel<<<grid_for(sb), kThreads, 0, e.s>>>(src, nb, kind, t.me, t.n, salt_src{salt});
    GT_CUDA(cudaGetLastError());
  }
  sync_all_pes();
  const int rc = call(t.handle, dst, src, nelems, root, e.s);
  GT_CUDA(cudaStreamSynchronize(e.s));
  if (call_ok(what, rc, blocking)) {
    std::vector<uint8_t> want(db);
    parallel_for(db, [&](size_t i) { want[i] = move_expected(kind, t.me, root, nb, salt, i); });
    check_window(what, dst, want.data(), db);
  }
  if (!in_place) {
    std::vector<uint8_t> source(sb);
    parallel_for(sb, [&](size_t i) { source[i] = move_source_byte(kind, t.me, nb, salt, i); });
    check_window(what + ": source (read only)", src, source.data(), sb);
  }
}

inline void move_case(int kind, int elem, int ti, size_t nelems, int root, bool in_place) {
  move_case_with(
      "on_stream", false,
      [kind, elem](shoal_team_t team, void* d, const void* s, size_t n, int r, cudaStream_t st) {
        return move_on_stream(kind, elem, team, d, s, n, r, st);
      },
      kind, elem, ti, nelems, root, in_place);
}

}  // namespace
}  // namespace shoal_test
