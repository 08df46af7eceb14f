// On-stream team collectives (shoalx_*_on_stream: one kernel on a cudaStream_t, capturable), written
// for n PEs (run on 2), every result compared bitwise with a host reference that folds in team order:
//  - reduce and reducescatter for every type (int8/uint8/int16/int32/uint32/int64/uint64 wrapping,
//    float, double, half, bfloat16) and op, sizes 0, 1, 7, 1023, the LL/direct boundary (LL bytes - 1
//    element, LL bytes, + 1 element), 1 MiB + 3 elements and 4 MiB + 3 (several channels); in place
//    and one element off alignment; source left untouched, poisoned guard bytes around dest untouched;
//  - broadcastmem (every root, and in place), fcollectmem, alltoallmem over the same sizes, and the
//    typed names of 1-, 2-, 4-, 8- and 16-byte elements;
//  - teams: WORLD, WORLD reversed (start n-1, stride -1), this PE alone (a 1-PE split);
//  - 100 back-to-back rounds of a sequence of collectives (LL and direct, barrier and team_sync checked
//    through a store to the next team PE), each result checked by a kernel on the stream;
//  - a CUDA graph capturing that sequence for all three teams, replayed 50 times with the host
//    changing the data between replays, checked by the graph's kernels and by the host every replay;
//  - bad calls in SHOAL_ERRORS_RETURN mode (non-symmetric or too short or misaligned buffers, bad
//    root, bad team, size overflow) return nonzero and add nothing to a capturing stream;
//  - the blocking host collectives (shoal_float_sum_reduce, ...) on the GPU heap.
// Registered three times: SHOAL_COLL_ALGO unset (auto), =ll and =direct (CMakeLists.txt).
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
#include "gpu_test.hpp"
#include "shoal/shoal.h"

namespace shoal_test {
namespace {

constexpr size_t kGuard = 256;                                // poisoned bytes before and after every dest
constexpr size_t kLargeBytes = size_t{1} << 20;               // "large" of the full matrix (several channels)
constexpr size_t kHugeBytes = size_t{4} << 20;                // 4 MiB per PE, on a subset
constexpr size_t kBufBytes = kHugeBytes + 8192 + 2 * kGuard;  // each of the two symmetric test buffers
constexpr int kBackToBack = 100;
constexpr int kReplays = 50;
constexpr int kSlotRows = 4;  // barrier check: rows of slots, reused every kSlotRows rounds

/// The salt a kernel uses: base, plus a device word when set (a graph's replays change it).
struct salt_src {
  uint32_t base = 0;
  const uint32_t* dyn = nullptr;
  __device__ uint32_t get() const { return base + (dyn != nullptr ? *dyn : 0u); }
};

// ---- kernels ----------------------------------------------------------------------------------

constexpr unsigned kThreads = 256;
unsigned grid_for(size_t count) {
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
const char* move_type_name(int elem) {
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

team_info make_team(shoal_team_t handle, const char* name) {
  team_info t;
  t.handle = handle;
  t.name = name;
  t.me = shoal_team_my_pe(handle);
  t.n = shoal_team_n_pes(handle);
  for (int r = 0; r < t.n; ++r) t.world.push_back(shoal_team_translate_pe(handle, r, SHOAL_TEAM_WORLD));
  if (t.n < 1 || t.me < 0 || t.me >= t.n || t.world[static_cast<size_t>(t.me)] != me()) {
    fail("team %s: my_pe %d of %d PEs does not map back to world PE %d", name, t.me, t.n, me());
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

stream_env& env() {
  static stream_env e = [] {
    stream_env x;
    GT_CUDA(cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking));
    x.src = static_cast<uint8_t*>(shoal_malloc(kBufBytes));
    x.dst = static_cast<uint8_t*>(shoal_malloc(kBufBytes));
    if (x.src == nullptr || x.dst == nullptr) fail("shoal_malloc(%zu) returned NULL", kBufBytes);
    const uint32_t ll = device_handle().coll_ll_bytes;
    x.ll_bytes = ll != 0 ? ll : 16384;
    shoal_team_t reversed = SHOAL_TEAM_INVALID;
    if (shoal_team_split_strided(SHOAL_TEAM_WORLD, npes() - 1, -1, npes(), nullptr, 0, &reversed) != 0)
      fail("split_strided(WORLD, %d, -1, %d) failed", npes() - 1, npes());
    shoal_team_t alone = SHOAL_TEAM_INVALID;
    for (int s = 0; s < npes(); ++s) {
      shoal_team_t t = SHOAL_TEAM_INVALID;
      if (shoal_team_split_strided(SHOAL_TEAM_WORLD, s, 1, 1, nullptr, 0, &t) != 0) fail("split_strided size 1");
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

uint32_t next_salt() {
  static uint32_t salt = 0;
  return ++salt;
}

/// Compares the window [dest - kGuard, dest + num_bytes + kGuard) of device memory with `want` (the
/// num_bytes of the result) between poisoned guards.
void check_window(const std::string& what, const void* dest, const void* want, size_t num_bytes) {
  std::vector<uint8_t> seen(num_bytes + 2 * kGuard), expected(num_bytes + 2 * kGuard, kPoison);
  if (num_bytes > 0) std::memcpy(expected.data() + kGuard, want, num_bytes);
  GT_CUDA(cudaMemcpy(seen.data(), static_cast<const uint8_t*>(dest) - kGuard, seen.size(), cudaMemcpyDeviceToHost));
  check_bytes((what + " (guard, dest, guard)").c_str(), seen.data(), expected.data(), seen.size());
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
bool call_ok(const std::string& what, int rc, bool blocking) {
  if (rc == 0) return true;
  if (blocking && rc == SHOAL_ERR_UNSUPPORTED) {
    fail(
        "[NOT ROUTED YET] %s returned SHOAL_ERR_UNSUPPORTED on the GPU heap (expected: the on-stream path, then a "
        "stream sync)",
        what.c_str());
  } else {
    fail("%s: returned %d", what.c_str(), rc);
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
    fail("%s: test bug: does not fit the buffers", what.c_str());
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
    fail("%s: test bug: does not fit the buffers", what.c_str());
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

void move_case(int kind, int elem, int ti, size_t nelems, int root, bool in_place) {
  move_case_with(
      "on_stream", false,
      [kind, elem](shoal_team_t team, void* d, const void* s, size_t n, int r, cudaStream_t st) {
        return move_on_stream(kind, elem, team, d, s, n, r, st);
      },
      kind, elem, ti, nelems, root, in_place);
}

// ---- the matrix -------------------------------------------------------------------------------

GPU_TEST(reduce_int8) { reduce_matrix<int8_t>(); }
GPU_TEST(reduce_uint8) { reduce_matrix<uint8_t>(); }
GPU_TEST(reduce_int16) { reduce_matrix<int16_t>(); }
GPU_TEST(reduce_int32) { reduce_matrix<int32_t>(); }
GPU_TEST(reduce_uint32) { reduce_matrix<uint32_t>(); }
GPU_TEST(reduce_int64) { reduce_matrix<int64_t>(); }
GPU_TEST(reduce_uint64) { reduce_matrix<uint64_t>(); }
GPU_TEST(reduce_float) { reduce_matrix<float>(); }
GPU_TEST(reduce_double) { reduce_matrix<double>(); }
GPU_TEST(reduce_half) { reduce_matrix<__half>(); }
GPU_TEST(reduce_bfloat16) { reduce_matrix<__nv_bfloat16>(); }

GPU_TEST(broadcast_fcollect_alltoall_mem) {
  stream_env& e = env();
  const size_t b = e.ll_bytes;
  for (int ti = 0; ti < 3; ++ti) {
    const int n = e.team[ti].n;
    for (int kind : {mv_broadcast, mv_fcollect, mv_alltoall}) {
      const size_t per = kind == mv_broadcast ? 1 : static_cast<size_t>(n);  // large: bytes of dest / n
      for (size_t nb : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, b - 1, b, b + 1, kLargeBytes / per + 5,
                        kHugeBytes / per + 5}) {
        if (kind == mv_broadcast) {
          for (int root = 0; root < n; ++root) move_case(kind, 0, ti, nb, root, false);
        } else {
          move_case(kind, 0, ti, nb, 0, false);
        }
      }
    }
    for (size_t nb : {size_t{7}, b, b + 1, kLargeBytes + 5})  // dest == source on every member
      for (int root = 0; root < n; ++root) move_case(mv_broadcast, 0, ti, nb, root, true);
  }
}

GPU_TEST(broadcast_fcollect_alltoall_typed) {
  stream_env& e = env();
  for (int elem : {1, 2, 4, 8, 16})
    for (int ti = 0; ti < 3; ++ti) {
      const size_t n = static_cast<size_t>(e.team[ti].n);
      const size_t b = e.ll_bytes / static_cast<size_t>(elem);
      for (int kind : {mv_broadcast, mv_fcollect, mv_alltoall})
        for (size_t ne :
             {size_t{1}, size_t{7}, size_t{1023}, b, b + 1, kLargeBytes / static_cast<size_t>(elem) / n + 1})
          move_case(kind, elem, ti, ne, static_cast<int>(n) - 1, false);
    }
}

// ---- sequences: back to back and in a CUDA graph ----------------------------------------------

/// One collective of a sequence with its own symmetric buffers (allocated and freed collectively, in
/// the same order on every PE): enqueue() adds fill -> collective -> check kernel to a stream;
/// host_check() compares the last result (and the guard after dest) on the host.
struct item {
  explicit item(std::string name) : name_(std::move(name)), report_(new_device_report()) {}
  virtual ~item() = default;
  item(const item&) = delete;
  item& operator=(const item&) = delete;
  virtual void enqueue(cudaStream_t s, salt_src salt, int root) = 0;
  virtual void host_check(uint32_t salt, const std::string& ctx) = 0;
  /// The check kernels' findings (iteration = the salt of the failing round).
  void check_report(const std::string& ctx) {
    check_device_report((ctx + ": " + name_ + ", checked on the stream").c_str(), report_);
    reset_device_report(report_);
  }
  std::string name_;
  device_report* report_;
};

template <class T>
struct reduce_item final : item {
  reduce_item(const team_info& t, int op, bool scatter, size_t nreduce, bool in_place)
      : item(format("%s<%s> %s x %zu%s on %s", scatter ? "reducescatter" : "reduce", op_name(op), on_stream<T>::kName,
                    nreduce, in_place ? " in place" : "", t.name)),
        t_(t),
        op_(op),
        scatter_(scatter),
        nreduce_(nreduce),
        in_place_(in_place) {
    src_ = static_cast<T*>(shoal_malloc(src_count() * sizeof(T) + kGuard));
    dst_ = in_place ? src_ : static_cast<T*>(shoal_malloc(nreduce * sizeof(T) + kGuard));
    if (src_ == nullptr || dst_ == nullptr) fail("%s: shoal_malloc returned NULL", name_.c_str());
    GT_CUDA(cudaMemset(src_, kPoison, src_count() * sizeof(T) + kGuard));
    if (!in_place) GT_CUDA(cudaMemset(dst_, kPoison, nreduce * sizeof(T) + kGuard));
  }
  ~reduce_item() override {
    if (!in_place_) shoal_free(dst_);
    shoal_free(src_);
  }
  size_t src_count() const { return scatter_ ? nreduce_ * static_cast<size_t>(t_.n) : nreduce_; }
  void enqueue(cudaStream_t s, salt_src salt, int) override {
    fill_values_kernel<T><<<grid_for(src_count()), kThreads, 0, s>>>(src_, src_count(), op_, t_.me, salt);
    const int rc = on_stream<T>::reduce(op_, scatter_, t_.handle, dst_, src_, nreduce_, s);
    if (rc != 0) fail("%s: returned %d", name_.c_str(), rc);
    check_reduce_kernel<T>
        <<<grid_for(nreduce_), kThreads, 0, s>>>(dst_, nreduce_, scatter_, op_, t_.me, t_.n, salt, report_);
  }
  void host_check(uint32_t salt, const std::string& ctx) override {
    const size_t bytes = nreduce_ * sizeof(T);
    std::vector<uint8_t> seen(bytes + kGuard), want(bytes + kGuard, kPoison);
    for (size_t i = 0; i < nreduce_; ++i) {
      const T v = expected_of<T>(op_, scatter_, t_.me, t_.n, salt, nreduce_, i);
      std::memcpy(want.data() + i * sizeof(T), &v, sizeof(T));
    }
    GT_CUDA(cudaMemcpy(seen.data(), dst_, seen.size(), cudaMemcpyDeviceToHost));
    check_bytes((ctx + ": " + name_ + " (dest, guard)").c_str(), seen.data(), want.data(), seen.size());
  }
  const team_info& t_;
  int op_;
  bool scatter_;
  size_t nreduce_;
  bool in_place_;
  T* src_ = nullptr;
  T* dst_ = nullptr;
};

struct move_item final : item {
  move_item(const team_info& t, int kind, size_t nb)
      : item(format("%smem x %zu bytes on %s", move_name(kind), nb, t.name)), t_(t), kind_(kind), nb_(nb) {
    src_ = static_cast<uint8_t*>(shoal_malloc(move_src_bytes(kind, nb, t.n) + kGuard));
    dst_ = static_cast<uint8_t*>(shoal_malloc(move_dst_bytes(kind, nb, t.n) + kGuard));
    if (src_ == nullptr || dst_ == nullptr) fail("%s: shoal_malloc returned NULL", name_.c_str());
    GT_CUDA(cudaMemset(src_, kPoison, move_src_bytes(kind, nb, t.n) + kGuard));
    GT_CUDA(cudaMemset(dst_, kPoison, move_dst_bytes(kind, nb, t.n) + kGuard));
  }
  ~move_item() override {
    shoal_free(dst_);
    shoal_free(src_);
  }
  void enqueue(cudaStream_t s, salt_src salt, int root) override {
    root_ = kind_ == mv_broadcast ? root : 0;
    const size_t sb = move_src_bytes(kind_, nb_, t_.n), db = move_dst_bytes(kind_, nb_, t_.n);
    fill_move_kernel<<<grid_for(sb), kThreads, 0, s>>>(src_, nb_, kind_, t_.me, t_.n, salt);
    const int rc = move_on_stream(kind_, 0, t_.handle, dst_, src_, nb_, root_, s);
    if (rc != 0) fail("%s: returned %d", name_.c_str(), rc);
    check_move_kernel<<<grid_for(db), kThreads, 0, s>>>(dst_, nb_, kind_, t_.me, t_.n, root_, salt, report_);
  }
  void host_check(uint32_t salt, const std::string& ctx) override {
    const size_t db = move_dst_bytes(kind_, nb_, t_.n);
    std::vector<uint8_t> seen(db + kGuard), want(db + kGuard, kPoison);
    for (size_t i = 0; i < db; ++i) want[i] = move_expected(kind_, t_.me, root_, nb_, salt, i);
    GT_CUDA(cudaMemcpy(seen.data(), dst_, seen.size(), cudaMemcpyDeviceToHost));
    check_bytes((ctx + ": " + name_ + format(", root %d (dest, guard)", root_)).c_str(), seen.data(), want.data(),
                seen.size());
  }
  const team_info& t_;
  int kind_;
  size_t nb_;
  int root_ = 0;
  uint8_t* src_ = nullptr;
  uint8_t* dst_ = nullptr;
};

/// barrier_on_stream / team_sync_on_stream: a store into the next team PE's slot before it, a check
/// of the previous team PE's store after it (a barrier that does not wait lets the check run early).
struct barrier_item final : item {
  barrier_item(const team_info& t, bool team_sync)
      : item(format("%s on %s (store before, check after)", team_sync ? "team_sync_on_stream" : "barrier_on_stream",
                    t.name)),
        t_(t),
        team_sync_(team_sync) {
    slots_ = static_cast<uint64_t*>(shoal_calloc(static_cast<size_t>(kSlotRows) * npes(), sizeof(uint64_t)));
    if (slots_ == nullptr) fail("%s: shoal_calloc returned NULL", name_.c_str());
  }
  ~barrier_item() override { shoal_free(slots_); }
  void enqueue(cudaStream_t s, salt_src salt, int) override {
    put_slot_kernel<<<1, 1, 0, s>>>(slots_, npes(), me(), t_.next_world(), salt);
    const int rc = team_sync_ ? shoalx_team_sync_on_stream(t_.handle, s) : shoalx_barrier_on_stream(t_.handle, s);
    if (rc != 0) fail("%s: returned %d", name_.c_str(), rc);
    check_slot_kernel<<<1, 1, 0, s>>>(slots_, npes(), t_.prev_world(), salt, report_);
  }
  void host_check(uint32_t salt, const std::string& ctx) override {
    uint64_t seen = 0;
    GT_CUDA(cudaMemcpy(&seen, &slots_[static_cast<size_t>(salt % kSlotRows) * npes() + t_.prev_world()], sizeof(seen),
                       cudaMemcpyDeviceToHost));
    if (seen != salt)
      fail("%s: %s: slot of PE %d holds %llu, expected %u", ctx.c_str(), name_.c_str(), t_.prev_world(),
           static_cast<unsigned long long>(seen), salt);
  }
  const team_info& t_;
  bool team_sync_;
  uint64_t* slots_ = nullptr;
};

/// LL and direct reduce, in-place reduce, reducescatter, broadcast, fcollect, alltoall, barrier,
/// team_sync on team t (each with its own buffers).
void add_sequence(std::vector<std::unique_ptr<item>>& v, const team_info& t) {
  const size_t b = env().ll_bytes;
  v.push_back(std::make_unique<reduce_item<float>>(t, op_sum, false, 1023, false));
  v.push_back(std::make_unique<reduce_item<int64_t>>(t, op_xor, false, 3 * b / 8 + 5, false));
  v.push_back(std::make_unique<reduce_item<double>>(t, op_min, false, b / 8 + 3, true));
  v.push_back(std::make_unique<reduce_item<__nv_bfloat16>>(t, op_prod, false, 4097, false));
  v.push_back(std::make_unique<reduce_item<__half>>(t, op_sum, true, 777, false));
  v.push_back(std::make_unique<reduce_item<uint8_t>>(t, op_max, true, b + 9, false));
  v.push_back(std::make_unique<move_item>(t, mv_broadcast, 1000));
  v.push_back(std::make_unique<move_item>(t, mv_broadcast, 3 * b + 1));
  v.push_back(std::make_unique<move_item>(t, mv_fcollect, 513));
  v.push_back(std::make_unique<move_item>(t, mv_fcollect, b + 3));
  v.push_back(std::make_unique<move_item>(t, mv_alltoall, 333));
  v.push_back(std::make_unique<move_item>(t, mv_alltoall, b + 1));
  v.push_back(std::make_unique<barrier_item>(t, false));
  v.push_back(std::make_unique<barrier_item>(t, true));
}

GPU_TEST(back_to_back_100_rounds) {
  stream_env& e = env();
  for (int ti = 0; ti < 3; ++ti) {
    const team_info& t = e.team[ti];
    std::vector<std::unique_ptr<item>> items;
    add_sequence(items, t);
    sync_all_pes();
    const uint32_t base = next_salt() * 1000u;
    // No host synchronization between rounds: new data every round, dest reused every round.
    for (int it = 0; it < kBackToBack; ++it)
      for (auto& x : items) x->enqueue(e.s, salt_src{base + static_cast<uint32_t>(it)}, it % t.n);
    GT_CUDA(cudaStreamSynchronize(e.s));
    const std::string ctx = format("%d back-to-back rounds", kBackToBack);
    for (auto& x : items) {
      x->check_report(ctx);
      x->host_check(base + kBackToBack - 1, ctx);
    }
    sync_all_pes();  // every PE done with the buffers before they are freed (collectively)
  }
}

GPU_TEST(cuda_graph_50_replays) {
  stream_env& e = env();
  std::vector<std::unique_ptr<item>> items;
  std::vector<int> root_of;
  for (int ti = 0; ti < 3; ++ti) {  // all three teams' sequences in one graph
    add_sequence(items, e.team[ti]);
    root_of.resize(items.size(), e.team[ti].n - 1);  // broadcast root: fixed at capture
  }
  uint32_t* salt_word = nullptr;
  GT_CUDA(cudaMalloc(&salt_word, sizeof(uint32_t)));
  GT_CUDA(cudaMemset(salt_word, 0, sizeof(uint32_t)));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sync_all_pes();
  cudaGraph_t graph;
  GT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (size_t k = 0; k < items.size(); ++k) items[k]->enqueue(s, salt_src{0, salt_word}, root_of[k]);
  GT_CUDA(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  size_t nodes = 0;
  GT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (me() == 0) std::printf("captured graph: %zu collectives, %zu nodes\n", items.size(), nodes);
  if (nodes < items.size()) fail("the graph has %zu nodes for %zu collectives", nodes, items.size());
  const uint32_t base = next_salt() * 1000u;
  for (int k = 0; k < kReplays; ++k) {
    const uint32_t salt = base + static_cast<uint32_t>(k);
    GT_CUDA(cudaMemcpy(salt_word, &salt, sizeof(salt), cudaMemcpyHostToDevice));  // new data for this replay
    GT_CUDA(cudaGraphLaunch(exec, s));
    GT_CUDA(cudaStreamSynchronize(s));
    const std::string ctx = format("graph replay %d", k);
    for (auto& x : items) x->host_check(salt, ctx);
  }
  for (auto& x : items) x->check_report(format("%d graph replays", kReplays));
  sync_all_pes();
  GT_CUDA(cudaGraphExecDestroy(exec));
  GT_CUDA(cudaGraphDestroy(graph));
  GT_CUDA(cudaStreamDestroy(s));
  GT_CUDA(cudaFree(salt_word));
}

// ---- errors -----------------------------------------------------------------------------------

/// `call(stream)` must fail: return nonzero and add nothing to the stream (checked by capturing it).
template <class F>
void expect_rejected(const std::string& what, F&& call) {
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  GT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const int rc = call(s);
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  if (end != cudaSuccess) {
    fail("%s: the capture broke (%s): the failing call still tried stream work", what.c_str(), cudaGetErrorString(end));
    (void)cudaGetLastError();
  }
  size_t nodes = 0;
  if (graph != nullptr) {
    GT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    GT_CUDA(cudaGraphDestroy(graph));
  }
  if (rc == 0) fail("%s: returned 0, expected a SHOAL_ERR_* code", what.c_str());
  if (nodes != 0) fail("%s: returned %d but enqueued %zu node(s)", what.c_str(), rc, nodes);
  GT_CUDA(cudaStreamDestroy(s));
}

GPU_TEST(errors_return_nonzero_and_enqueue_nothing) {
  stream_env& e = env();
  const int n = npes();
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  float* sym_src = reinterpret_cast<float*>(e.src + kGuard);
  float* sym_dst = reinterpret_cast<float*>(e.dst + kGuard);
  float* local = nullptr;  // device memory outside the symmetric heap
  GT_CUDA(cudaMalloc(&local, 4096 * sizeof(float)));
  constexpr size_t kSmall = 64 * 1024;  // elements of a symmetric block too short for n blocks
  auto* small = static_cast<float*>(shoal_malloc(kSmall * sizeof(float)));
  if (small == nullptr) fail("shoal_malloc returned NULL");
  sync_all_pes();
  // Every PE makes the same bad calls, so none of them waits for a peer.
  expect_rejected("float sum reduce, dest not symmetric (cudaMalloc)", [&](cudaStream_t s) {
    return shoalx_float_sum_reduce_on_stream(SHOAL_TEAM_WORLD, local, sym_src, 1023, s);
  });
  expect_rejected("float sum reduce, source not symmetric (cudaMalloc)", [&](cudaStream_t s) {
    return shoalx_float_sum_reduce_on_stream(SHOAL_TEAM_WORLD, sym_dst, local, 1023, s);
  });
  expect_rejected("float sum reducescatter, source shorter than n_pes blocks", [&](cudaStream_t s) {
    return shoalx_float_sum_reducescatter_on_stream(SHOAL_TEAM_WORLD, sym_dst, small, kSmall, s);
  });
  expect_rejected("fcollectmem, dest shorter than n_pes blocks", [&](cudaStream_t s) {
    return shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, small, sym_src, kSmall * sizeof(float), s);
  });
  expect_rejected("alltoallmem, source shorter than n_pes blocks", [&](cudaStream_t s) {
    return shoalx_alltoallmem_on_stream(SHOAL_TEAM_WORLD, sym_dst, small, kSmall * sizeof(float), s);
  });
  expect_rejected("float sum reduce, dest misaligned by 2 bytes", [&](cudaStream_t s) {
    return shoalx_float_sum_reduce_on_stream(
        SHOAL_TEAM_WORLD, reinterpret_cast<float*>(reinterpret_cast<char*>(sym_dst) + 2), sym_src, 1023, s);
  });
  expect_rejected("double broadcast, source misaligned by 4 bytes", [&](cudaStream_t s) {
    return shoalx_double_broadcast_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<double*>(sym_dst),
                                             reinterpret_cast<const double*>(e.src + kGuard + 4), 99, 0, s);
  });
  for (int root : {-1, n, n + 7}) {
    expect_rejected(format("broadcastmem on WORLD, PE_root %d", root), [&](cudaStream_t s) {
      return shoalx_broadcastmem_on_stream(SHOAL_TEAM_WORLD, sym_dst, sym_src, 100, root, s);
    });
    expect_rejected(format("broadcastmem on WORLD-reversed, PE_root %d", root), [&](cudaStream_t s) {
      return shoalx_broadcastmem_on_stream(e.team[1].handle, sym_dst, sym_src, 1000000, root, s);
    });
  }
  expect_rejected("int broadcast on the 1-PE team, PE_root 1", [&](cudaStream_t s) {
    return shoalx_int_broadcast_on_stream(e.team[2].handle, reinterpret_cast<int*>(sym_dst),
                                          reinterpret_cast<const int*>(sym_src), 10, 1, s);
  });
  for (shoal_team_t bad :
       {SHOAL_TEAM_INVALID, static_cast<shoal_team_t>(-7), static_cast<shoal_team_t>(SHOAL_MAX_TEAMS - 1),
        static_cast<shoal_team_t>(SHOAL_MAX_TEAMS), static_cast<shoal_team_t>(1000)}) {
    expect_rejected(format("float sum reduce on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_float_sum_reduce_on_stream(bad, sym_dst, sym_src, 1023, s); });
    expect_rejected(format("alltoallmem on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_alltoallmem_on_stream(bad, sym_dst, sym_src, 100, s); });
    expect_rejected(format("barrier_on_stream on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_barrier_on_stream(bad, s); });
    expect_rejected(format("team_sync_on_stream on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_team_sync_on_stream(bad, s); });
  }
  expect_rejected("double sum reduce, nreduce * 8 overflows size_t", [&](cudaStream_t s) {
    return shoalx_double_sum_reduce_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<double*>(sym_dst),
                                              reinterpret_cast<const double*>(sym_src), SIZE_MAX / 4, s);
  });
  expect_rejected("fcollectmem, nelems * n_pes overflows size_t", [&](cudaStream_t s) {
    return shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, sym_dst, sym_src, SIZE_MAX / 2 + 3, s);
  });
  shoal_set_error_mode(previous);
  sync_all_pes();
  shoal_free(small);
  GT_CUDA(cudaFree(local));
  // The rejected calls left no trace: the teams' next collectives (LL and direct) still agree.
  const size_t b = e.ll_bytes;
  for (int ti = 0; ti < 3; ++ti) {
    reduce_case<float>(op_sum, false, ti, 1023, false, 0);
    reduce_case<int32_t>(op_xor, false, ti, b / 2 + 1, false, 0);
    move_case(mv_broadcast, 0, ti, 5000, e.team[ti].n - 1, false);
  }
}

/// and/or/xor of floating-point types exist under no C name (the on-stream path rejects them too):
/// the library must not export such symbols. dlsym on libshoal's own handle, with a positive control.
GPU_TEST(no_bitwise_ops_on_floating_types) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&shoalx_int_and_reduce_on_stream), &info) == 0 || info.dli_fname == nullptr) {
    if (me() == 0) std::printf("note: dladdr cannot place shoalx_int_and_reduce_on_stream; check skipped\n");
    return;
  }
  void* lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr || dlsym(lib, "shoalx_int_and_reduce_on_stream") == nullptr) {
    if (me() == 0) std::printf("note: libshoal's symbols are not visible to dlsym (static link?); check skipped\n");
    if (lib != nullptr) dlclose(lib);
    return;
  }
  for (const char* type : {"float", "double", "half", "bfloat16", "longdouble"})
    for (const char* op : {"and", "or", "xor"})
      for (const char* form : {"reduce", "reducescatter"}) {
        const std::string name = format("shoalx_%s_%s_%s_on_stream", type, op, form);
        if (dlsym(lib, name.c_str()) != nullptr)
          fail("libshoal exports %s (bitwise op on a floating type)", name.c_str());
      }
  dlclose(lib);
}

// ---- the blocking host collectives on the GPU heap ----------------------------------------------

/// shoal_<T>_<op>_reduce & co. called from the host on GPU-heap buffers: they are to run the on-stream
/// path and synchronize. SHOAL_ERR_UNSUPPORTED is reported as "[NOT ROUTED YET]".
GPU_TEST(blocking_host_collectives_on_gpu_heap) {
  stream_env& e = env();
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);  // an unsupported call must not stop the job
  const size_t b = e.ll_bytes;
  for (int ti = 0; ti < 2; ++ti) {
    reduce_case_with<float>(
        "shoal_float_sum_reduce", true,
        [](shoal_team_t team, float* d, const float* s, size_t n, cudaStream_t) {
          return shoal_float_sum_reduce(team, d, s, n);
        },
        op_sum, false, ti, 1023, false, 0);
    reduce_case_with<int32_t>(
        "shoal_int32_xor_reduce", true,
        [](shoal_team_t team, int32_t* d, const int32_t* s, size_t n, cudaStream_t) {
          return shoal_int32_xor_reduce(team, d, s, n);
        },
        op_xor, false, ti, b / 2 + 1, false, 0);
    reduce_case_with<float>(
        "shoal_float_min_reduce (in place)", true,
        [](shoal_team_t team, float* d, const float* s, size_t n, cudaStream_t) {
          return shoal_float_min_reduce(team, d, s, n);
        },
        op_min, false, ti, 777, true, 0);
    reduce_case_with<double>(
        "shoal_double_max_reducescatter", true,
        [](shoal_team_t team, double* d, const double* s, size_t n, cudaStream_t) {
          return shoal_double_max_reducescatter(team, d, s, n);
        },
        op_max, true, ti, 333, false, 0);
    reduce_case_with<__half>(
        "shoal_half_sum_reduce", true,
        [](shoal_team_t team, __half* d, const __half* s, size_t n, cudaStream_t) {
          return shoal_half_sum_reduce(team, d, s, n);
        },
        op_sum, false, ti, b + 1, false, 0);
    reduce_case_with<uint8_t>(
        "shoal_uint8_prod_reducescatter", true,
        [](shoal_team_t team, uint8_t* d, const uint8_t* s, size_t n, cudaStream_t) {
          return shoal_uint8_prod_reducescatter(team, d, s, n);
        },
        op_prod, true, ti, b + 5, false, 0);
    const int root = e.team[ti].n - 1;
    move_case_with(
        "shoal_broadcastmem", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int r, cudaStream_t) {
          return shoal_broadcastmem(team, d, s, n, r);
        },
        mv_broadcast, 0, ti, 1000, root, false);
    move_case_with(
        "shoal_int64_broadcast", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int r, cudaStream_t) {
          return shoal_int64_broadcast(team, static_cast<int64_t*>(d), static_cast<const int64_t*>(s), n, r);
        },
        mv_broadcast, 8, ti, b / 8 + 1, 0, false);
    move_case_with(
        "shoal_fcollectmem", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int, cudaStream_t) {
          return shoal_fcollectmem(team, d, s, n);
        },
        mv_fcollect, 0, ti, b + 3, 0, false);
    move_case_with(
        "shoal_alltoallmem", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int, cudaStream_t) {
          return shoal_alltoallmem(team, d, s, n);
        },
        mv_alltoall, 0, ti, 777, 0, false);
    const shoal_team_t team = e.team[ti].handle;
    call_ok(format("shoal_barrier(%s)", e.team[ti].name), shoal_barrier(team), true);
    call_ok(format("shoal_team_sync(%s)", e.team[ti].name), shoal_team_sync(team), true);
  }
  shoal_set_error_mode(previous);
}

}  // namespace
}  // namespace shoal_test
