// The device facade's team collectives inside kernels, written for n PEs (run on 2): shoal_<T>_<op>_reduce
// and _reducescatter (symmetric dest and source; every op, several types incl. half/bfloat16; LL sizes
// and above the LL size), shoal_broadcastmem / fcollectmem / alltoallmem and the typed int / double
// forms (root rotating over every team PE), shoal_barrier / shoal_team_sync, at thread scope (thread 0
// of a block), warp scope (warp 0) and block scope (shoalx_*_warp / _block), on SHOAL_TEAM_WORLD, a
// split (WORLD reversed) and a 1-PE split. Each kernel runs 100 rounds with new data every round,
// checks every round in the kernel against a fold in team order (bitwise, floats included) and the
// host checks the last round and the poisoned guard after dest. A mixed kernel interleaves
// collectives of the three teams in every round. Team handles resolve on the device (team_of).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "coll_test_data.cuh"
#include "facade_api.cuh"
#include "gpu_env.hpp"
#include "handle_api.cuh"

namespace shoal_test {
namespace {

const int kIters = rounds(100);           // kernel argument; fewer in quick mode
constexpr size_t kGuard = 64;             // poisoned bytes after every dest, checked untouched
constexpr unsigned kBlock = 256;          // every kernel runs one block; the scope under test is part of it
constexpr int kSlotRows = 6;              // barrier test: rows of slots, reused every kSlotRows rounds
constexpr size_t kMoveMaxBytes = 140000;  // per PE, for broadcast / fcollect / alltoall

// ---- the facade under test --------------------------------------------------------------------

/// A team as a kernel argument: the facade handle plus what the checks need.
struct team_arg {
  shoal_team_t handle;
  int me;          // this PE's number in the team
  int n;           // team size
  int next_world;  // world PE of team PE me + 1
  int prev_world;  // world PE of team PE me - 1
};

/// True for the threads that make a call of this scope: thread 0, warp 0, or the whole block.
template <class Scope>
__device__ inline bool in_scope() {
  if constexpr (is_thread<Scope>) {
    return threadIdx.x == 0;
  } else if constexpr (is_warp<Scope>) {
    return threadIdx.x < 32;
  } else {
    return true;
  }
}

template <class T, int kOp>
struct facade_reduce;

// One facade type/op: shoal_<P>_reduce / shoal_<P>_reducescatter and the shoalx_ _warp / _block forms.
#define SHOAL_TEST_FACADE_REDUCE(T, ID, P)                                      \
  template <>                                                                   \
  struct facade_reduce<T, ID> {                                                 \
    static constexpr const char* kName = #P;                                    \
    template <class Scope, bool kScatter>                                       \
    static __device__ int call(shoal_team_t team, T* d, const T* s, size_t n) { \
      if constexpr (is_thread<Scope>) {                                         \
        if constexpr (kScatter) {                                               \
          return shoal_##P##_reducescatter(team, d, s, n);                      \
        } else {                                                                \
          return shoal_##P##_reduce(team, d, s, n);                             \
        }                                                                       \
      } else if constexpr (is_warp<Scope>) {                                    \
        if constexpr (kScatter) {                                               \
          return shoalx_##P##_reducescatter_warp(team, d, s, n);                \
        } else {                                                                \
          return shoalx_##P##_reduce_warp(team, d, s, n);                       \
        }                                                                       \
      } else {                                                                  \
        if constexpr (kScatter) {                                               \
          return shoalx_##P##_reducescatter_block(team, d, s, n);               \
        } else {                                                                \
          return shoalx_##P##_reduce_block(team, d, s, n);                      \
        }                                                                       \
      }                                                                         \
    }                                                                           \
  };
SHOAL_TEST_FACADE_REDUCE(int, op_sum, int_sum)
SHOAL_TEST_FACADE_REDUCE(int32_t, op_and, int32_and)
SHOAL_TEST_FACADE_REDUCE(int8_t, op_or, int8_or)
SHOAL_TEST_FACADE_REDUCE(uint8_t, op_prod, uint8_prod)
SHOAL_TEST_FACADE_REDUCE(int16_t, op_min, int16_min)
SHOAL_TEST_FACADE_REDUCE(int64_t, op_max, int64_max)
SHOAL_TEST_FACADE_REDUCE(uint64_t, op_xor, uint64_xor)
SHOAL_TEST_FACADE_REDUCE(long long, op_prod, longlong_prod)
SHOAL_TEST_FACADE_REDUCE(float, op_sum, float_sum)
SHOAL_TEST_FACADE_REDUCE(float, op_min, float_min)
SHOAL_TEST_FACADE_REDUCE(double, op_prod, double_prod)
SHOAL_TEST_FACADE_REDUCE(double, op_max, double_max)
SHOAL_TEST_FACADE_REDUCE(__half, op_sum, half_sum)
SHOAL_TEST_FACADE_REDUCE(__nv_bfloat16, op_max, bfloat16_max)
SHOAL_TEST_FACADE_REDUCE(__nv_bfloat16, op_prod, bfloat16_prod)
#undef SHOAL_TEST_FACADE_REDUCE

/// broadcast / fcollect / alltoall through the facade: kElem 0 the *mem names (bytes), 4 the int
/// names, 8 the double names (nelems in elements).
template <class Scope, int kElem>
__device__ int facade_move(int kind, shoal_team_t team, void* d, const void* s, size_t nelems, int root) {
  if constexpr (kElem == 0) {
    if constexpr (is_thread<Scope>) {
      if (kind == mv_broadcast) return shoal_broadcastmem(team, d, s, nelems, root);
      if (kind == mv_fcollect) return shoal_fcollectmem(team, d, s, nelems);
      return shoal_alltoallmem(team, d, s, nelems);
    } else if constexpr (is_warp<Scope>) {
      if (kind == mv_broadcast) return shoalx_broadcastmem_warp(team, d, s, nelems, root);
      if (kind == mv_fcollect) return shoalx_fcollectmem_warp(team, d, s, nelems);
      return shoalx_alltoallmem_warp(team, d, s, nelems);
    } else {
      if (kind == mv_broadcast) return shoalx_broadcastmem_block(team, d, s, nelems, root);
      if (kind == mv_fcollect) return shoalx_fcollectmem_block(team, d, s, nelems);
      return shoalx_alltoallmem_block(team, d, s, nelems);
    }
  } else if constexpr (kElem == 4) {
    int* dd = static_cast<int*>(d);
    const int* ss = static_cast<const int*>(s);
    if constexpr (is_thread<Scope>) {
      if (kind == mv_broadcast) return shoal_int_broadcast(team, dd, ss, nelems, root);
      if (kind == mv_fcollect) return shoal_int_fcollect(team, dd, ss, nelems);
      return shoal_int_alltoall(team, dd, ss, nelems);
    } else if constexpr (is_warp<Scope>) {
      if (kind == mv_broadcast) return shoalx_int_broadcast_warp(team, dd, ss, nelems, root);
      if (kind == mv_fcollect) return shoalx_int_fcollect_warp(team, dd, ss, nelems);
      return shoalx_int_alltoall_warp(team, dd, ss, nelems);
    } else {
      if (kind == mv_broadcast) return shoalx_int_broadcast_block(team, dd, ss, nelems, root);
      if (kind == mv_fcollect) return shoalx_int_fcollect_block(team, dd, ss, nelems);
      return shoalx_int_alltoall_block(team, dd, ss, nelems);
    }
  } else {
    static_assert(kElem == 8, "kElem: 0 (bytes), 4 (int) or 8 (double)");
    double* dd = static_cast<double*>(d);
    const double* ss = static_cast<const double*>(s);
    if constexpr (is_thread<Scope>) {
      if (kind == mv_broadcast) return shoal_double_broadcast(team, dd, ss, nelems, root);
      if (kind == mv_fcollect) return shoal_double_fcollect(team, dd, ss, nelems);
      return shoal_double_alltoall(team, dd, ss, nelems);
    } else if constexpr (is_warp<Scope>) {
      if (kind == mv_broadcast) return shoalx_double_broadcast_warp(team, dd, ss, nelems, root);
      if (kind == mv_fcollect) return shoalx_double_fcollect_warp(team, dd, ss, nelems);
      return shoalx_double_alltoall_warp(team, dd, ss, nelems);
    } else {
      if (kind == mv_broadcast) return shoalx_double_broadcast_block(team, dd, ss, nelems, root);
      if (kind == mv_fcollect) return shoalx_double_fcollect_block(team, dd, ss, nelems);
      return shoalx_double_alltoall_block(team, dd, ss, nelems);
    }
  }
}

template <class Scope>
__device__ int facade_sync(shoal_team_t team, bool barrier) {
  if constexpr (is_thread<Scope>) {
    return barrier ? shoal_barrier(team) : shoal_team_sync(team);
  } else if constexpr (is_warp<Scope>) {
    return barrier ? shoalx_barrier_warp(team) : shoalx_team_sync_warp(team);
  } else {
    return barrier ? shoalx_barrier_block(team) : shoalx_team_sync_block(team);
  }
}

constexpr unsigned long long kReturnIndex = ~0ull;  // report index of a nonzero return value

// ---- one round of each collective (the whole block calls; the scope's threads make the call) ----

/// Fill source (symmetric) with round `s`'s data, reduce into dest (symmetric, the same every round:
/// the facade's reductions allow it), check every element against the fold.
template <class Scope, class T, int kOp, bool kScatter>
__device__ void reduce_round(const team_arg& t, T* dest, T* source, size_t nreduce, uint32_t s, int it,
                             device_report* report) {
  const size_t src_count = kScatter ? nreduce * static_cast<size_t>(t.n) : nreduce;
  for (size_t i = threadIdx.x; i < src_count; i += blockDim.x) source[i] = value_of<T>(kOp, t.me, s, i);
  __syncthreads();  // the block's writes to source before the scope's call (thread/warp: a part of the block)
  if (in_scope<Scope>()) {
    const int rc = facade_reduce<T, kOp>::template call<Scope, kScatter>(t.handle, dest, source, nreduce);
    if (rc != 0) report_failure(report, it, kReturnIndex, 0, static_cast<unsigned long long>(rc));
  }
  __syncthreads();  // dest complete for the scope, hence for the block
  for (size_t i = threadIdx.x; i < nreduce; i += blockDim.x) {
    const T want = expected_of<T>(kOp, kScatter, t.me, t.n, s, nreduce, i);
    if (bits_of(dest[i]) != bits_of(want)) report_failure(report, it, i, bits_of(want), bits_of(dest[i]));
  }
  __syncthreads();  // every check done before the next round's call writes dest
}

/// Fill source (local) for round s, move into dest (symmetric; callers alternate two dests), check.
template <class Scope, int kElem>
__device__ void move_round(int kind, const team_arg& t, uint8_t* dest, uint8_t* source, size_t nelems, int root,
                           uint32_t s, int it, device_report* report) {
  const size_t nb = nelems * (kElem == 0 ? 1 : kElem);
  const size_t sb = move_src_bytes(kind, nb, t.n), db = move_dst_bytes(kind, nb, t.n);
  for (size_t i = threadIdx.x; i < sb; i += blockDim.x) source[i] = move_source_byte(kind, t.me, nb, s, i);
  __syncthreads();
  if (in_scope<Scope>()) {
    const int rc = facade_move<Scope, kElem>(kind, t.handle, dest, source, nelems, root);
    if (rc != 0) report_failure(report, it, kReturnIndex, 0, static_cast<unsigned long long>(rc));
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < db; i += blockDim.x) {
    const uint8_t want = move_expected(kind, t.me, root, nb, s, i);
    if (dest[i] != want) report_failure(report, it, i, want, dest[i]);
  }
  __syncthreads();
}

/// Store `tag` into this PE's slot of row tag % kSlotRows on the next team PE, barrier / team_sync,
/// then the previous team PE's store must be here.
template <class Scope>
__device__ void sync_round(const team_arg& t, bool barrier, uint64_t* slots, int world_n, int my_world, uint32_t tag,
                           int it, device_report* report) {
  uint64_t* row = slots + static_cast<size_t>(tag % kSlotRows) * world_n;
  if (threadIdx.x == 0) shoal_uint64_p(&row[my_world], tag, t.next_world);
  __syncthreads();
  if (in_scope<Scope>()) {
    const int rc = facade_sync<Scope>(t.handle, barrier);
    if (rc != 0) report_failure(report, it, kReturnIndex, 0, static_cast<unsigned long long>(rc));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint64_t seen = *reinterpret_cast<volatile uint64_t*>(&row[t.prev_world]);
    if (seen != tag) report_failure(report, it, static_cast<unsigned long long>(t.prev_world), tag, seen);
  }
  __syncthreads();
}

// ---- kernels: kIters rounds of one collective ---------------------------------------------------

template <class Scope, class T, int kOp, bool kScatter>
__global__ void reduce_kernel(team_arg t, T* dest, T* source, size_t nreduce, uint32_t salt, int iters,
                              device_report* report) {
  for (int it = 0; it < iters; ++it)
    reduce_round<Scope, T, kOp, kScatter>(t, dest, source, nreduce, salt + static_cast<uint32_t>(it), it, report);
}

template <class Scope, int kElem>
__global__ void move_kernel(int kind, team_arg t, uint8_t* dst0, uint8_t* dst1, uint8_t* source, size_t nelems,
                            uint32_t salt, int iters, device_report* report) {
  for (int it = 0; it < iters; ++it) {
    const int root = kind == mv_broadcast ? it % t.n : 0;  // every team PE is a root
    move_round<Scope, kElem>(kind, t, (it & 1) != 0 ? dst1 : dst0, source, nelems, root,
                             salt + static_cast<uint32_t>(it), it, report);
  }
}

struct three_teams {
  team_arg t[3];
};

/// Round r on team r % 3, barrier on odd rounds, team_sync on even ones.
template <class Scope>
__global__ void sync_kernel(three_teams teams, uint64_t* slots, int world_n, int my_world, uint32_t salt, int rounds,
                            device_report* report) {
  for (int r = 0; r < rounds; ++r)
    sync_round<Scope>(teams.t[r % 3], (r & 1) != 0, slots, world_n, my_world, salt + static_cast<uint32_t>(r), r,
                      report);
}

// ---- host side --------------------------------------------------------------------------------

struct facade_env {
  team_arg team[3];
  const char* name[3] = {"WORLD", "WORLD-reversed (split)", "1-PE (split)"};
  size_t ll_bytes = 16384;
  size_t red_bytes = 0;         // bytes of each reduce buffer
  uint8_t* red_src = nullptr;   // symmetric
  uint8_t* red_dst = nullptr;   // symmetric
  uint8_t* move_dst[2] = {};    // symmetric, kMoveMaxBytes * n + kGuard each
  uint8_t* move_src = nullptr;  // cudaMalloc (the facade's move sources are local)
  uint64_t* slots = nullptr;    // symmetric, kSlotRows * n
  device_report* report = nullptr;
};

team_arg make_team(shoal_team_t handle) {
  team_arg t{};
  t.handle = handle;
  t.me = shoal_team_my_pe(handle);
  t.n = shoal_team_n_pes(handle);
  if (t.n < 1 || t.me < 0 || t.me >= t.n || shoal_team_translate_pe(handle, t.me, SHOAL_TEAM_WORLD) != me()) {
    ADD_FAILURE() << format("team %d: my_pe %d of %d does not map back to world PE %d", handle, t.me, t.n, me());
    t.n = 1, t.me = 0, t.next_world = t.prev_world = me();  // keeps the kernels' indexing in range
    return t;
  }
  t.next_world = shoal_team_translate_pe(handle, (t.me + 1) % t.n, SHOAL_TEAM_WORLD);
  t.prev_world = shoal_team_translate_pe(handle, (t.me + t.n - 1) % t.n, SHOAL_TEAM_WORLD);
  return t;
}

facade_env& env() {
  static facade_env e = [] {
    facade_env x;
    const uint32_t ll = device_handle().coll_ll_bytes;
    x.ll_bytes = ll != 0 ? ll : 16384;
    const size_t n = static_cast<size_t>(npes());
    x.red_bytes = n * (x.ll_bytes + 4096) + kGuard;
    x.red_src = static_cast<uint8_t*>(shoal_malloc(x.red_bytes));
    x.red_dst = static_cast<uint8_t*>(shoal_malloc(x.red_bytes));
    for (uint8_t*& d : x.move_dst) d = static_cast<uint8_t*>(shoal_malloc(n * kMoveMaxBytes + kGuard));
    x.slots = static_cast<uint64_t*>(shoal_calloc(kSlotRows * n, sizeof(uint64_t)));
    if (!x.red_src || !x.red_dst || !x.move_dst[0] || !x.move_dst[1] || !x.slots)
      ADD_FAILURE() << "shoal_malloc returned NULL";
    GT_CUDA(cudaMalloc(&x.move_src, n * kMoveMaxBytes));
    x.report = new_device_report();
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
    x.team[0] = make_team(SHOAL_TEAM_WORLD);
    x.team[1] = make_team(reversed);
    x.team[2] = make_team(alone);
    return x;
  }();
  return e;
}

uint32_t next_salt() {
  static uint32_t salt = 0;
  return (++salt) * 1000u;  // kernels use salt .. salt + rounds - 1
}

/// The last round's dest plus the guard after it, against the host's expectation (want: dest bytes).
void check_dest_and_guard(const std::string& what, const void* dest, const std::vector<uint8_t>& want) {
  std::vector<uint8_t> expected(want);
  expected.resize(want.size() + kGuard, kPoison);
  std::vector<uint8_t> seen(expected.size());
  GT_CUDA(cudaMemcpy(seen.data(), dest, seen.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal((what + ": last round's dest + guard").c_str(), seen.data(), expected.data(), seen.size()));
}

template <class Scope, class T, int kOp, bool kScatter>
void reduce_case(int ti, size_t nreduce) {
  facade_env& e = env();
  const team_arg& t = e.team[ti];
  const uint32_t salt = next_salt();
  const std::string what =
      format("%s%s (%s scope) on %s, nreduce %zu, %d rounds", facade_reduce<T, kOp>::kName,
             kScatter ? "_reducescatter" : "_reduce", scope_name<Scope>, e.name[ti], nreduce, kIters);
  const size_t src_count = kScatter ? nreduce * static_cast<size_t>(t.n) : nreduce;
  if (src_count * sizeof(T) + kGuard > e.red_bytes) {
    ADD_FAILURE() << format("%s: test bug: does not fit the buffers", what.c_str());
    return;
  }
  GT_CUDA(cudaMemset(e.red_dst, kPoison, nreduce * sizeof(T) + kGuard));
  reset_device_report(e.report);
  sync_all_pes();
  reduce_kernel<Scope, T, kOp, kScatter><<<1, kBlock>>>(
      t, reinterpret_cast<T*>(e.red_dst), reinterpret_cast<T*>(e.red_src), nreduce, salt, kIters, e.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), e.report));
  std::vector<uint8_t> want(nreduce * sizeof(T));
  for (size_t i = 0; i < nreduce; ++i) {
    const T v = expected_of<T>(kOp, kScatter, t.me, t.n, salt + kIters - 1, nreduce, i);
    std::memcpy(want.data() + i * sizeof(T), &v, sizeof(T));
  }
  check_dest_and_guard(what, e.red_dst, want);
  sync_all_pes();
}

/// reduce and reducescatter of one type/op on the three teams, element counts 0, odd and LL-sized,
/// and just above the LL size (the direct two-shot path).
template <class Scope, class T, int kOp>
void reduce_all(std::initializer_list<size_t> counts) {
  for (int ti = 0; ti < 3; ++ti)
    for (size_t n : counts) {
      reduce_case<Scope, T, kOp, false>(ti, n);
      reduce_case<Scope, T, kOp, true>(ti, n);
    }
}
template <class T>
size_t above_ll() {
  return env().ll_bytes / sizeof(T) + 5;
}

TEST(coll_facade_gpu, reduce_block) {
  using S = block_scope;
  reduce_all<S, int, op_sum>({0, 37, 1000, above_ll<int>()});
  reduce_all<S, int32_t, op_and>({0, 37, above_ll<int32_t>()});
  reduce_all<S, int8_t, op_or>({0, 37, above_ll<int8_t>()});
  reduce_all<S, uint8_t, op_prod>({0, 37, above_ll<uint8_t>()});
  reduce_all<S, int16_t, op_min>({0, 37, above_ll<int16_t>()});
  reduce_all<S, int64_t, op_max>({0, 37, above_ll<int64_t>()});
  reduce_all<S, uint64_t, op_xor>({0, 37, above_ll<uint64_t>()});
  reduce_all<S, long long, op_prod>({0, 37, above_ll<long long>()});
  reduce_all<S, float, op_sum>({0, 37, 1000, above_ll<float>()});
  reduce_all<S, float, op_min>({0, 37, above_ll<float>()});
  reduce_all<S, double, op_prod>({0, 37, above_ll<double>()});
  reduce_all<S, double, op_max>({0, 37, above_ll<double>()});
  reduce_all<S, __half, op_sum>({0, 37, above_ll<__half>()});
  reduce_all<S, __nv_bfloat16, op_max>({0, 37, above_ll<__nv_bfloat16>()});
  reduce_all<S, __nv_bfloat16, op_prod>({0, 37, above_ll<__nv_bfloat16>()});
}

TEST(coll_facade_gpu, reduce_warp) {
  using S = warp_scope;
  reduce_all<S, int, op_sum>({7, above_ll<int>()});
  reduce_all<S, uint64_t, op_xor>({7, above_ll<uint64_t>()});
  reduce_all<S, float, op_min>({7, above_ll<float>()});
  reduce_all<S, double, op_prod>({7, above_ll<double>()});
  reduce_all<S, __half, op_sum>({7, above_ll<__half>()});
  reduce_all<S, __nv_bfloat16, op_max>({7, above_ll<__nv_bfloat16>()});
}

TEST(coll_facade_gpu, reduce_thread) {
  using S = thread_scope;
  reduce_all<S, int8_t, op_or>({0, 7, above_ll<int8_t>()});
  reduce_all<S, int64_t, op_max>({7, above_ll<int64_t>()});
  reduce_all<S, float, op_sum>({7, above_ll<float>()});
  reduce_all<S, double, op_max>({7, above_ll<double>()});
  reduce_all<S, __nv_bfloat16, op_prod>({7, above_ll<__nv_bfloat16>()});
}

template <class Scope, int kElem>
void move_case(int kind, int ti, size_t nelems) {
  facade_env& e = env();
  const team_arg& t = e.team[ti];
  const uint32_t salt = next_salt();
  const size_t nb = nelems * (kElem == 0 ? 1 : kElem);
  const size_t db = move_dst_bytes(kind, nb, t.n);
  const std::string what =
      format("%s%s (%s scope) on %s, %zu element(s) per PE (%zu bytes), root rotating, %d rounds", move_name(kind),
             kElem == 0 ? "mem" : (kElem == 4 ? " int" : " double"), scope_name<Scope>, e.name[ti], nelems, nb, kIters);
  if (std::max(db, move_src_bytes(kind, nb, t.n)) > static_cast<size_t>(npes()) * kMoveMaxBytes) {
    ADD_FAILURE() << format("%s: test bug: does not fit the buffers", what.c_str());
    return;
  }
  for (uint8_t* d : e.move_dst) GT_CUDA(cudaMemset(d, kPoison, db + kGuard));
  reset_device_report(e.report);
  sync_all_pes();  // every member's dests poisoned before anyone stores into them
  move_kernel<Scope, kElem>
      <<<1, kBlock>>>(kind, t, e.move_dst[0], e.move_dst[1], e.move_src, nelems, salt, kIters, e.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), e.report));
  const int last = kIters - 1;
  const int root = kind == mv_broadcast ? last % t.n : 0;
  std::vector<uint8_t> want(db);
  for (size_t i = 0; i < db; ++i) want[i] = move_expected(kind, t.me, root, nb, salt + last, i);
  check_dest_and_guard(what, e.move_dst[last & 1], want);
  sync_all_pes();
}

template <class Scope, int kElem>
void move_all(std::initializer_list<size_t> counts) {
  for (int ti = 0; ti < 3; ++ti)
    for (int kind : {mv_broadcast, mv_fcollect, mv_alltoall})
      for (size_t n : counts) move_case<Scope, kElem>(kind, ti, n);
}

TEST(coll_facade_gpu, broadcast_fcollect_alltoall_block) {
  move_all<block_scope, 0>({0, 1, 37, 1000, 70001});
  move_all<block_scope, 4>({0, 9, 1000, 17001});
  move_all<block_scope, 8>({9, 17001});
}

TEST(coll_facade_gpu, broadcast_fcollect_alltoall_thread_warp) {
  move_all<warp_scope, 0>({37, 70001});
  move_all<warp_scope, 8>({9});
  move_all<thread_scope, 0>({0, 37, 70001});
  move_all<thread_scope, 4>({1000});
}

template <class Scope>
void sync_case(int rounds) {
  facade_env& e = env();
  const std::string what =
      format("shoal_barrier / shoal_team_sync (%s scope) over 3 teams, %d rounds", scope_name<Scope>, rounds);
  GT_CUDA(cudaMemset(e.slots, 0, kSlotRows * static_cast<size_t>(npes()) * sizeof(uint64_t)));
  reset_device_report(e.report);
  sync_all_pes();
  three_teams teams{{e.team[0], e.team[1], e.team[2]}};
  sync_kernel<Scope><<<1, kBlock>>>(teams, e.slots, npes(), me(), next_salt(), rounds, e.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), e.report));
  sync_all_pes();
}

TEST(coll_facade_gpu, barrier_team_sync_all_scopes) {
  sync_case<block_scope>(600);
  sync_case<warp_scope>(300);
  sync_case<thread_scope>(300);
}

// ---- a mixed kernel: the three teams' collectives interleaved in every round ----------------------

struct mixed_bufs {
  float* r_src;  // symmetric: LL float sum reduce on WORLD
  float* r_dst;
  int64_t* s_src;  // symmetric: direct int64 max reducescatter on WORLD-reversed
  int64_t* s_dst;
  uint8_t* m_dst[2];  // symmetric: broadcast on WORLD-reversed, fcollect on the 1-PE team, alltoall on WORLD
  uint8_t* m_src;     // local
  uint64_t* slots;    // symmetric: barrier on WORLD
  size_t r_n, s_n;
  device_report* reports[6];
};

__global__ void mixed_kernel(three_teams teams, mixed_bufs b, int world_n, int my_world, uint32_t salt, int iters) {
  const team_arg& world = teams.t[0];
  const team_arg& reversed = teams.t[1];
  const team_arg& alone = teams.t[2];
  for (int it = 0; it < iters; ++it) {
    const uint32_t s = salt + static_cast<uint32_t>(it);
    uint8_t* m_dst = b.m_dst[it & 1];
    reduce_round<block_scope, float, op_sum, false>(world, b.r_dst, b.r_src, b.r_n, s, it, b.reports[0]);
    move_round<thread_scope, 0>(mv_broadcast, reversed, m_dst, b.m_src, 333, it % reversed.n, s, it, b.reports[1]);
    reduce_round<warp_scope, int64_t, op_max, true>(reversed, b.s_dst, b.s_src, b.s_n, s, it, b.reports[2]);
    move_round<block_scope, 4>(mv_fcollect, alone, m_dst, b.m_src, 100, 0, s, it, b.reports[3]);
    sync_round<block_scope>(world, true, b.slots, world_n, my_world, s, it, b.reports[4]);
    move_round<warp_scope, 0>(mv_alltoall, world, m_dst, b.m_src, 1001, 0, s, it, b.reports[5]);
  }
}

TEST(coll_facade_gpu, mixed_teams_and_scopes_in_one_kernel) {
  facade_env& e = env();
  const size_t n = static_cast<size_t>(npes());
  mixed_bufs b{};
  b.r_n = 1000;
  b.s_n = e.ll_bytes / sizeof(int64_t) + 3;
  b.r_src = static_cast<float*>(shoal_malloc(b.r_n * sizeof(float)));
  b.r_dst = static_cast<float*>(shoal_malloc(b.r_n * sizeof(float) + kGuard));
  b.s_src = static_cast<int64_t*>(shoal_malloc(n * b.s_n * sizeof(int64_t)));
  b.s_dst = static_cast<int64_t*>(shoal_malloc(b.s_n * sizeof(int64_t) + kGuard));
  b.m_dst[0] = e.move_dst[0];
  b.m_dst[1] = e.move_dst[1];
  b.m_src = e.move_src;
  b.slots = static_cast<uint64_t*>(shoal_calloc(kSlotRows * n, sizeof(uint64_t)));
  if (!b.r_src || !b.r_dst || !b.s_src || !b.s_dst || !b.slots) ADD_FAILURE() << "shoal_malloc returned NULL";
  GT_CUDA(cudaMemset(b.r_dst, kPoison, b.r_n * sizeof(float) + kGuard));
  GT_CUDA(cudaMemset(b.s_dst, kPoison, b.s_n * sizeof(int64_t) + kGuard));
  const char* names[6] = {"float_sum_reduce (block) on WORLD",
                          "broadcastmem (thread) on WORLD-reversed",
                          "int64_max_reducescatter (warp) on WORLD-reversed",
                          "int_fcollect (block) on 1-PE",
                          "shoal_barrier (block) on WORLD",
                          "alltoallmem (warp) on WORLD"};
  for (device_report*& r : b.reports) r = new_device_report();
  const uint32_t salt = next_salt();
  sync_all_pes();
  three_teams teams{{e.team[0], e.team[1], e.team[2]}};
  mixed_kernel<<<1, kBlock>>>(teams, b, npes(), me(), salt, kIters);
  GT_LAUNCHED("mixed kernel");
  for (int k = 0; k < 6; ++k)
    EXPECT_TRUE(device_report_clean(format("mixed kernel, %d rounds: %s", kIters, names[k]).c_str(), b.reports[k]));
  const uint32_t last = salt + kIters - 1;
  std::vector<uint8_t> want(b.r_n * sizeof(float));
  for (size_t i = 0; i < b.r_n; ++i) {
    const float v = expected_of<float>(op_sum, false, e.team[0].me, e.team[0].n, last, b.r_n, i);
    std::memcpy(want.data() + i * sizeof(float), &v, sizeof(float));
  }
  check_dest_and_guard("mixed kernel: float_sum_reduce on WORLD", b.r_dst, want);
  want.assign(b.s_n * sizeof(int64_t), 0);
  for (size_t i = 0; i < b.s_n; ++i) {
    const int64_t v = expected_of<int64_t>(op_max, true, e.team[1].me, e.team[1].n, last, b.s_n, i);
    std::memcpy(want.data() + i * sizeof(int64_t), &v, sizeof(int64_t));
  }
  check_dest_and_guard("mixed kernel: int64_max_reducescatter on WORLD-reversed", b.s_dst, want);
  sync_all_pes();
  shoal_free(b.slots);
  shoal_free(b.s_dst);
  shoal_free(b.s_src);
  shoal_free(b.r_dst);
  shoal_free(b.r_src);
}

}  // namespace
}  // namespace shoal_test
