// Device signals and synchronization on 2 GPUs, both API forms: put_signal at thread, warp and block
// scope (SET and ADD, blocking and _nbi) with the receiver checking the data in-kernel right after
// its wait (and the host checking it byte for byte after); signal_op/signal_fetch; signal_wait_until
// with every comparison; wait_until/test and their _all/_any/_some (and _vector) forms, with
// status masks; barrier_all/sync_all at thread, warp and block scope, 1000 rounds each, every round
// checking that what the peer wrote before the barrier is seen after it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "facade_api.cuh"
#include "gpu_env.hpp"
#include "handle_api.cuh"

namespace shoal_test {
namespace {

constexpr size_t kMaxBytes = (size_t{1} << 20) + 5;
constexpr size_t kRegion = kMaxBytes + 128;
constexpr size_t kGuard = 32;
constexpr int kMaxGroups = 4;

struct sync_buffers {
  uint8_t* src = nullptr;   // symmetric
  uint8_t* dst = nullptr;   // symmetric
  uint64_t* sig = nullptr;  // symmetric: kMaxGroups signal words
  void* ivars = nullptr;    // symmetric: 16 words of up to 8 bytes for the wait/test family
  void* scratch = nullptr;  // symmetric: barrier slots
  device_report* report = nullptr;
  size_t* indices = nullptr;  // cudaMalloc: results of _some/_any
  int* status = nullptr;      // cudaMalloc: status masks
  void* values = nullptr;     // cudaMalloc: cmp_values of the _vector forms
};

sync_buffers& bufs() {
  static sync_buffers b = [] {
    sync_buffers x;
    x.src = static_cast<uint8_t*>(shoal_malloc(kRegion));
    x.dst = static_cast<uint8_t*>(shoal_malloc(kRegion));
    x.sig = static_cast<uint64_t*>(shoal_malloc(kMaxGroups * sizeof(uint64_t)));
    x.ivars = shoal_malloc(16 * 8);
    x.scratch = shoal_malloc(64);
    if (!x.src || !x.dst || !x.sig || !x.ivars || !x.scratch) ADD_FAILURE() << "shoal_malloc returned NULL";
    x.report = new_device_report();
    GT_CUDA(cudaMalloc(&x.indices, 64 * sizeof(size_t)));
    GT_CUDA(cudaMalloc(&x.status, 16 * sizeof(int)));
    GT_CUDA(cudaMalloc(&x.values, 16 * 8));
    return x;
  }();
  return b;
}

int left() { return (me() + npes() - 1) % npes(); }
uint32_t next_salt() {
  static uint32_t salt = 0;
  return ++salt;
}

/// The signal that group g sends in case `salt`: SET writes this value to its own word; ADD adds
/// it to word 0.
__host__ __device__ uint64_t signal_of(uint32_t salt, size_t g, int sig_op) {
  return sig_op == SHOAL_SIGNAL_SET ? (uint64_t{salt} << 20) + g + 1 : g + 1;
}
constexpr uint64_t kSetInitial = 0xdeadbeefull;  // SET words before the case
constexpr uint64_t kAddInitial = 100;            // the ADD word before the case

/// Sender: group g puts its slice of n bytes with a signal.
template <class Api, class Scope>
__global__ void put_signal_kernel(Api api, uint8_t* dst, const uint8_t* src, size_t n, uint64_t* sig, int sig_op,
                                  uint32_t salt, int pe, bool nbi) {
  size_t g, groups;
  group_of<Scope>(g, groups);
  const size_t lo = n * g / groups, hi = n * (g + 1) / groups;
  uint64_t* word = sig_op == SHOAL_SIGNAL_SET ? sig + g : sig;
  api.template putmem_signal<Scope>(dst + lo, src + lo, hi - lo, word, signal_of(salt, g, sig_op), sig_op, pe, nbi);
}

/// Receiver (one block per sending group): thread 0 waits for the group's signal (SET: its own word
/// equal to its value; ADD: word 0 equal to the full sum), then the whole block checks the slice
/// against the expected bytes (`expected`, in device memory).
template <class Api>
__global__ void receive_kernel(Api api, const uint8_t* dst, const uint8_t* expected, size_t n, uint64_t* sig,
                               int sig_op, uint32_t salt, size_t groups, device_report* report) {
  const size_t g = blockIdx.x;
  const size_t lo = sig_op == SHOAL_SIGNAL_SET ? n * g / groups : 0;
  const size_t hi = sig_op == SHOAL_SIGNAL_SET ? n * (g + 1) / groups : n;
  if (threadIdx.x == 0) {
    uint64_t want = kAddInitial;
    for (size_t k = 0; k < groups; ++k) want += signal_of(salt, k, SHOAL_SIGNAL_ADD);
    uint64_t* word = sig;
    if (sig_op == SHOAL_SIGNAL_SET) word = sig + g, want = signal_of(salt, g, SHOAL_SIGNAL_SET);
    const uint64_t seen = api.signal_wait_until(word, SHOAL_CMP_EQ, want);
    if (seen != want) report_failure(report, g, ~0ull, want, seen);
  }
  __syncthreads();
  for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
    if (dst[i] != expected[i]) report_failure(report, g, i, expected[i], dst[i]);
}

template <class Api, class Scope>
void put_signal_case(Api api, size_t n, size_t dst_off, size_t src_off, int sig_op, bool nbi, uint8_t* expected_dev) {
  sync_buffers& b = bufs();
  const uint32_t salt = next_salt();
  const size_t groups = groups_of<Scope>();
  const std::string what =
      format("%s putmem_signal%s %s-scope %s, %zu bytes, dst_off=%zu src_off=%zu", Api::kName, nbi ? "_nbi" : "",
             scope_name<Scope>, sig_op == SHOAL_SIGNAL_SET ? "SET" : "ADD", n, dst_off, src_off);
  GT_CUDA(cudaMemset(b.dst, kPoison, kRegion));
  std::vector<uint64_t> sig_init(kMaxGroups, sig_op == SHOAL_SIGNAL_SET ? kSetInitial : kAddInitial);
  GT_CUDA(cudaMemcpy(b.sig, sig_init.data(), kMaxGroups * sizeof(uint64_t), cudaMemcpyHostToDevice));
  std::vector<uint8_t> mine = pattern(me(), salt, n), theirs = pattern(left(), salt, n);
  GT_CUDA(cudaMemcpy(b.src + src_off, mine.data(), n, cudaMemcpyHostToDevice));
  GT_CUDA(cudaMemcpy(expected_dev, theirs.data(), n, cudaMemcpyHostToDevice));
  reset_device_report(b.report);
  sync_all_pes();
  put_signal_kernel<Api, Scope><<<grid_of<Scope>(), block_of<Scope>()>>>(api, b.dst + dst_off, b.src + src_off, n,
                                                                         b.sig, sig_op, salt, peer(), nbi);
  GT_LAUNCHED(what.c_str());
  receive_kernel<Api><<<sig_op == SHOAL_SIGNAL_SET ? groups : 1, 256>>>(api, b.dst + dst_off, expected_dev, n, b.sig,
                                                                        sig_op, salt, groups, b.report);
  GT_LAUNCHED((what + " (receiver)").c_str());
  sync_all_pes();
  EXPECT_TRUE(device_report_clean((what + ", checked by the receiver right after its wait").c_str(), b.report));
  // And on the host: poison / data / poison, and the final signal words.
  const size_t span = dst_off + n + kGuard;
  std::vector<uint8_t> seen(span), want(span, kPoison);
  std::memcpy(want.data() + dst_off, theirs.data(), n);
  GT_CUDA(cudaMemcpy(seen.data(), b.dst, span, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bytes_equal(what.c_str(), seen.data(), want.data(), span));
}

template <class Api, class Scope>
void put_signal_scope(Api api, uint8_t* expected_dev) {
  struct shape {
    size_t n, dst_off, src_off;
  };
  // 24, 12 and 3816 bytes: three slices of 8-, 4- and 8-byte-aligned sizes that are not 16-byte multiples (the wide
  // scopes' one-pass small copy: 8-, 4- and 8-byte elements; 1272 bytes is 159 ranks of a 160-thread block).
  // 480 bytes: 16-byte elements of the small copy. 3 x 64 KiB: three 16-byte-aligned slices above its size (the wide
  // scopes' copy_vec16).
  const shape shapes[] = {{1, 0, 0},    {17, 1, 3},  {24, 0, 0},        {12, 4, 4},          {3816, 8, 0},
                          {4095, 5, 5}, {480, 0, 0}, {65536 + 7, 8, 0}, {3 * 65536, 16, 32}, {kMaxBytes, 0, 0}};
  for (int sig_op : {SHOAL_SIGNAL_SET, SHOAL_SIGNAL_ADD})
    for (bool nbi : {false, true})
      for (shape s : shapes) put_signal_case<Api, Scope>(api, s.n, s.dst_off, s.src_off, sig_op, nbi, expected_dev);
}

template <class Api>
void put_signal_all(Api api) {
  uint8_t* expected_dev = nullptr;
  GT_CUDA(cudaMalloc(&expected_dev, kRegion));
  put_signal_scope<Api, thread_scope>(api, expected_dev);
  put_signal_scope<Api, warp_scope>(api, expected_dev);
  put_signal_scope<Api, block_scope>(api, expected_dev);
  if constexpr (Api::kAnyScope) put_signal_scope<Api, warps_scope<2>>(api, expected_dev);  // explicit API only
  GT_CUDA(cudaFree(expected_dev));
}

TEST(sync_gpu, put_signal_handle) { put_signal_all(handle_api{device_handle()}); }
TEST(sync_gpu, put_signal_facade) { put_signal_all(facade_api{}); }

// ---- signal_op, signal_fetch, signal_wait_until with every comparison ----------------------------

/// 256 threads each add t+1 to the peer's word 0 and one thread sets word 1 to `set_value`; then
/// this PE waits for its own words to reach the totals (word 1: the value the left PE sets,
/// `expect_set`) and fetches them.
template <class Api>
__global__ void signal_op_kernel(Api api, uint64_t* sig, uint64_t set_value, uint64_t expect_set, int pe,
                                 uint64_t* out) {
  const unsigned t = threadIdx.x;
  api.signal_op(sig, t + 1, SHOAL_SIGNAL_ADD, pe);
  if (t == 0) api.signal_op(sig + 1, set_value, SHOAL_SIGNAL_SET, pe);
  __syncthreads();
  if (t == 0) {
    const uint64_t total = kAddInitial + blockDim.x * (blockDim.x + 1ull) / 2;
    out[0] = api.signal_wait_until(sig, SHOAL_CMP_EQ, total);
    out[1] = api.signal_fetch(sig);
    out[2] = api.signal_wait_until(sig + 1, SHOAL_CMP_EQ, expect_set);
    out[3] = api.signal_fetch(sig + 1);
  }
}

/// Phase 1 (both PEs): word 2 starts at 50. The peer sets it to `to` while this PE waits with `cmp`
/// against `cmp_value`; returns what the wait saw.
template <class Api>
__global__ void cmp_set_kernel(Api api, uint64_t* sig, uint64_t to, int pe) {
  api.signal_op(sig + 2, to, SHOAL_SIGNAL_SET, pe);
}
template <class Api>
__global__ void cmp_wait_kernel(Api api, uint64_t* sig, int cmp, uint64_t cmp_value, uint64_t* out) {
  out[0] = api.signal_wait_until(sig + 2, cmp, cmp_value);
}

template <class Api>
void signal_ops(Api api) {
  sync_buffers& b = bufs();
  auto* out = reinterpret_cast<uint64_t*>(b.indices);
  const uint64_t set_value = 0x123456789abcull + me();
  std::vector<uint64_t> init = {kAddInitial, kSetInitial, 50, 0};
  GT_CUDA(cudaMemcpy(b.sig, init.data(), 4 * sizeof(uint64_t), cudaMemcpyHostToDevice));
  sync_all_pes();
  signal_op_kernel<Api><<<1, 256>>>(api, b.sig, set_value, 0x123456789abcull + left(), peer(), out);
  GT_LAUNCHED("signal_op_kernel");
  uint64_t seen[4];
  GT_CUDA(cudaMemcpy(seen, out, sizeof(seen), cudaMemcpyDeviceToHost));
  const uint64_t total = kAddInitial + 256ull * 257 / 2, peer_set = 0x123456789abcull + left();
  const uint64_t want[4] = {total, total, peer_set, peer_set};
  const char* names[4] = {"signal_wait_until(ADD word)", "signal_fetch(ADD word)", "signal_wait_until(SET word)",
                          "signal_fetch(SET word)"};
  for (int i = 0; i < 4; ++i)
    if (seen[i] != want[i])
      ADD_FAILURE() << format("%s %s returned %#llx, expected %#llx", Api::kName, names[i],
                              static_cast<unsigned long long>(seen[i]), static_cast<unsigned long long>(want[i]));
  sync_all_pes();

  struct cmp_case {
    int cmp;
    uint64_t cmp_value, to;
    const char* name;
  };
  const cmp_case cases[] = {{SHOAL_CMP_EQ, 77, 77, "EQ 77"}, {SHOAL_CMP_NE, 50, 51, "NE 50"},
                            {SHOAL_CMP_GT, 76, 77, "GT 76"}, {SHOAL_CMP_GE, 77, 77, "GE 77"},
                            {SHOAL_CMP_LT, 50, 10, "LT 50"}, {SHOAL_CMP_LE, 10, 10, "LE 10"}};
  for (const cmp_case& c : cases) {
    const uint64_t start = 50;
    GT_CUDA(cudaMemcpy(b.sig + 2, &start, sizeof(start), cudaMemcpyHostToDevice));
    sync_all_pes();
    // Wait first (on a second stream), then the set: the waiter must see the change from the peer.
    cudaStream_t waiter;
    GT_CUDA(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
    cmp_wait_kernel<Api><<<1, 1, 0, waiter>>>(api, b.sig, c.cmp, c.cmp_value, out);
    GT_CUDA(cudaGetLastError());
    cmp_set_kernel<Api><<<1, 1>>>(api, b.sig, c.to, peer());
    GT_LAUNCHED(format("%s signal_wait_until %s (setter)", Api::kName, c.name).c_str());
    GT_CUDA(cudaStreamSynchronize(waiter));
    GT_CUDA(cudaStreamDestroy(waiter));
    GT_LAUNCHED(format("%s signal_wait_until %s (waiter)", Api::kName, c.name).c_str());
    uint64_t got = 0;
    GT_CUDA(cudaMemcpy(&got, out, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != c.to)
      ADD_FAILURE() << format("%s signal_wait_until(%s) returned %llu, expected the peer's %llu", Api::kName, c.name,
                              static_cast<unsigned long long>(got), static_cast<unsigned long long>(c.to));
    sync_all_pes();
  }
}

TEST(sync_gpu, signal_op_fetch_wait_handle) { signal_ops(handle_api{device_handle()}); }
TEST(sync_gpu, signal_op_fetch_wait_facade) { signal_ops(facade_api{}); }

// ---- wait_until / test and the _all/_any/_some (+_vector) family --------------------------------

constexpr size_t kIvars = 8;
constexpr size_t kSkipped = 2;  // status[2] = 1: never set by the peer, must be ignored

/// Results of one receiver run, in order (see ivar_receiver).
enum result_slot : int {
  kTestBefore,           // test(ivars[0]) before anything was sent: 0
  kTestAllBefore,        // test_all: 0
  kTestAnyBefore,        // test_any: SIZE_MAX
  kTestSomeBefore,       // test_some: 0
  kWaitUntil,            // wait_until(ivars[5], EQ, v5): v5
  kWaitAny,              // wait_until_any (status: all but 1 and 6 skipped): 1 or 6
  kWaitSome,             // wait_until_some (same status): count >= 1, indices in {1, 6}
  kWaitAll,              // wait_until_all with status[kSkipped] = 1 (returns)
  kWaitAllVector,        // wait_until_all_vector: every value its own
  kWaitAnyVector,        // wait_until_any_vector: an index whose value matches
  kWaitSomeVector,       // wait_until_some_vector: count
  kTestAllAfter,         // test_all (status skip): 1
  kTestAnyAfter,         // test_any: an unskipped index
  kTestSomeAfter,        // test_some: kIvars - 1
  kTestAllVectorAfter,   // test_all_vector: 1
  kTestAnyVectorAfter,   // test_any_vector
  kTestSomeVectorAfter,  // test_some_vector: kIvars - 1
  kTestAfter,            // test(ivars[0], EQ, v0): 1
  kNumSlots
};

/// The value the peer gives ivars[i].
template <class T>
__host__ __device__ T ivar_value(size_t i) {
  return static_cast<T>(1000 + 7 * i);
}

/// Phase "before" (nothing sent yet): the tests must say "not yet".
template <class Api, class T>
__global__ void ivar_before_kernel(Api api, T* ivars, const int* status, size_t* indices, long long* out) {
  out[kTestBefore] = api.test(ivars, SHOAL_CMP_EQ, ivar_value<T>(0));
  out[kTestAllBefore] = api.test_all(ivars, kIvars, status, SHOAL_CMP_EQ, ivar_value<T>(0));
  out[kTestAnyBefore] = static_cast<long long>(api.test_any(ivars, kIvars, status, SHOAL_CMP_GE, T(1000)));
  out[kTestSomeBefore] = static_cast<long long>(api.test_some(ivars, kIvars, indices, status, SHOAL_CMP_GE, T(1000)));
}

/// The peer: p's ivars[i] = ivar_value(i) for every i except kSkipped, in the order 5, then 1 and
/// 6, then the rest (each after a fence, so a waiter may see them arrive in that order).
template <class Api, class T>
__global__ void ivar_sender_kernel(Api api, T* ivars, int pe) {
  api.p(ivars + 5, ivar_value<T>(5), pe);
  api.fence();
  api.p(ivars + 1, ivar_value<T>(1), pe);
  api.p(ivars + 6, ivar_value<T>(6), pe);
  api.fence();
  for (size_t i = 0; i < kIvars; ++i)
    if (i != kSkipped && i != 5 && i != 1 && i != 6) api.p(ivars + i, ivar_value<T>(i), pe);
  api.quiet();
}

/// Waits, in order; `status_16` holds two masks: [0, 8) skips kSkipped only; [8, 16) skips all but
/// 1 and 6. `values` holds ivar_value(i) per i (the _vector forms' cmp_values).
template <class Api, class T>
__global__ void ivar_wait_kernel(Api api, T* ivars, const int* status_16, T* values, size_t* indices, long long* out) {
  const int* skip_one = status_16;
  const int* only_1_6 = status_16 + kIvars;
  out[kWaitUntil] = static_cast<long long>(api.wait_until(ivars + 5, SHOAL_CMP_EQ, ivar_value<T>(5)));
  out[kWaitAny] = static_cast<long long>(api.wait_until_any(ivars, kIvars, only_1_6, SHOAL_CMP_GE, T(1000)));
  const size_t some = api.wait_until_some(ivars, kIvars, indices, only_1_6, SHOAL_CMP_GE, T(1000));
  out[kWaitSome] = static_cast<long long>(some);
  for (size_t k = 0; k < some; ++k) indices[32 + k] = indices[k];  // kept for the host
  api.wait_until_all(ivars, kIvars, skip_one, SHOAL_CMP_GE, T(1000));
  out[kWaitAll] = 1;
  api.wait_until_all_vector(ivars, kIvars, skip_one, SHOAL_CMP_EQ, values);
  out[kWaitAllVector] = 1;
  out[kWaitAnyVector] =
      static_cast<long long>(api.wait_until_any_vector(ivars, kIvars, skip_one, SHOAL_CMP_EQ, values));
  out[kWaitSomeVector] =
      static_cast<long long>(api.wait_until_some_vector(ivars, kIvars, indices, skip_one, SHOAL_CMP_EQ, values));
  out[kTestAllAfter] = api.test_all(ivars, kIvars, skip_one, SHOAL_CMP_GE, T(1000));
  out[kTestAnyAfter] = static_cast<long long>(api.test_any(ivars, kIvars, skip_one, SHOAL_CMP_GE, T(1000)));
  out[kTestSomeAfter] = static_cast<long long>(api.test_some(ivars, kIvars, indices, skip_one, SHOAL_CMP_GE, T(1000)));
  out[kTestAllVectorAfter] = api.test_all_vector(ivars, kIvars, skip_one, SHOAL_CMP_EQ, values);
  out[kTestAnyVectorAfter] = static_cast<long long>(api.test_any_vector(ivars, kIvars, skip_one, SHOAL_CMP_EQ, values));
  out[kTestSomeVectorAfter] =
      static_cast<long long>(api.test_some_vector(ivars, kIvars, indices, skip_one, SHOAL_CMP_EQ, values));
  out[kTestAfter] = api.test(ivars, SHOAL_CMP_EQ, ivar_value<T>(0));
}

template <class Api, class T>
void ivar_case(Api api, const char* type_name) {
  sync_buffers& b = bufs();
  T* ivars = static_cast<T*>(b.ivars);
  long long* results = nullptr;
  GT_CUDA(cudaMalloc(&results, kNumSlots * sizeof(long long)));
  std::vector<T> init(kIvars, T(3));  // below every cmp value, never the poison
  GT_CUDA(cudaMemcpy(ivars, init.data(), kIvars * sizeof(T), cudaMemcpyHostToDevice));
  int status[2 * kIvars];
  for (size_t i = 0; i < kIvars; ++i) {
    status[i] = i == kSkipped ? 1 : 0;
    status[kIvars + i] = i == 1 || i == 6 ? 0 : 1;
  }
  GT_CUDA(cudaMemcpy(b.status, status, sizeof(status), cudaMemcpyHostToDevice));
  std::vector<T> values(kIvars);
  for (size_t i = 0; i < kIvars; ++i) values[i] = ivar_value<T>(i);
  GT_CUDA(cudaMemcpy(b.values, values.data(), kIvars * sizeof(T), cudaMemcpyHostToDevice));
  GT_CUDA(cudaMemset(results, 0xff, kNumSlots * sizeof(long long)));
  GT_CUDA(cudaMemset(b.indices, 0xff, 64 * sizeof(size_t)));
  sync_all_pes();
  const std::string what = format("%s %s wait/test family", Api::kName, type_name);
  ivar_before_kernel<Api, T><<<1, 1>>>(api, ivars, b.status, b.indices, results);
  GT_LAUNCHED((what + " (before)").c_str());
  sync_all_pes();  // both PEs tested "before" prior to any sending
  cudaStream_t waiter;
  GT_CUDA(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
  ivar_wait_kernel<Api, T><<<1, 1, 0, waiter>>>(api, ivars, b.status, static_cast<T*>(b.values), b.indices, results);
  GT_CUDA(cudaGetLastError());
  ivar_sender_kernel<Api, T><<<1, 1>>>(api, ivars, peer());
  GT_LAUNCHED((what + " (sender)").c_str());
  GT_CUDA(cudaStreamSynchronize(waiter));
  GT_CUDA(cudaStreamDestroy(waiter));
  GT_LAUNCHED((what + " (waiter)").c_str());
  sync_all_pes();

  long long r[kNumSlots];
  size_t idx[64];
  GT_CUDA(cudaMemcpy(r, results, sizeof(r), cudaMemcpyDeviceToHost));
  GT_CUDA(cudaMemcpy(idx, b.indices, sizeof(idx), cudaMemcpyDeviceToHost));
  GT_CUDA(cudaFree(results));
  const long long none = static_cast<long long>(SIZE_MAX);
  auto expect = [&](int slot, long long want, const char* call) {
    if (r[slot] != want)
      ADD_FAILURE() << format("%s: %s returned %lld, expected %lld", what.c_str(), call, r[slot], want);
  };
  auto expect_in = [&](int slot, std::set<long long> allowed, const char* call) {
    if (allowed.count(r[slot]) == 0)
      ADD_FAILURE() << format("%s: %s returned %lld, not an allowed index", what.c_str(), call, r[slot]);
  };
  expect(kTestBefore, 0, "test before any p");
  expect(kTestAllBefore, 0, "test_all before any p");
  expect(kTestAnyBefore, none, "test_any before any p");
  expect(kTestSomeBefore, 0, "test_some before any p");
  expect(kWaitUntil, static_cast<long long>(ivar_value<T>(5)), "wait_until(ivars[5], EQ)");
  expect_in(kWaitAny, {1, 6}, "wait_until_any (status: only 1 and 6)");
  if (r[kWaitSome] < 1 || r[kWaitSome] > 2) {
    ADD_FAILURE() << format("%s: wait_until_some (status: only 1 and 6) returned count %lld, expected 1 or 2",
                            what.c_str(), r[kWaitSome]);
  } else {
    for (long long k = 0; k < r[kWaitSome]; ++k)
      if (idx[32 + k] != 1 && idx[32 + k] != 6)
        ADD_FAILURE() << format("%s: wait_until_some reported index %zu, which its status mask skips", what.c_str(),
                                idx[32 + k]);
  }
  expect(kWaitAll, 1, "wait_until_all (returned)");
  expect(kWaitAllVector, 1, "wait_until_all_vector (returned)");
  std::set<long long> unskipped;
  for (size_t i = 0; i < kIvars; ++i)
    if (i != kSkipped) unskipped.insert(static_cast<long long>(i));
  expect_in(kWaitAnyVector, unskipped, "wait_until_any_vector");
  // wait_until_all_vector returned before: every unskipped element already matches.
  expect(kWaitSomeVector, kIvars - 1, "wait_until_some_vector after wait_until_all_vector");
  expect(kTestAllAfter, 1, "test_all after every p");
  expect_in(kTestAnyAfter, unskipped, "test_any after every p");
  expect(kTestSomeAfter, kIvars - 1, "test_some after every p");
  expect(kTestAllVectorAfter, 1, "test_all_vector after every p");
  expect_in(kTestAnyVectorAfter, unskipped, "test_any_vector after every p");
  expect(kTestSomeVectorAfter, kIvars - 1, "test_some_vector after every p");
  // The last _some call's indices: exactly the unskipped ones, each once.
  std::set<size_t> got(idx, idx + std::min<size_t>(kIvars - 1, 32));
  std::set<size_t> want_idx;
  for (long long i : unskipped) want_idx.insert(static_cast<size_t>(i));
  if (r[kTestSomeVectorAfter] == static_cast<long long>(kIvars - 1) && got != want_idx)
    ADD_FAILURE() << format("%s: test_some_vector's indices are not exactly the %zu unskipped elements", what.c_str(),
                            kIvars - 1);
  expect(kTestAfter, 1, "test(ivars[0], EQ) after every p");
  std::vector<T> final_values(kIvars);
  GT_CUDA(cudaMemcpy(final_values.data(), ivars, kIvars * sizeof(T), cudaMemcpyDeviceToHost));
  if (final_values[kSkipped] != T(3))
    ADD_FAILURE() << format("%s: ivars[%zu] (never sent) changed to %lld", what.c_str(), kSkipped,
                            static_cast<long long>(final_values[kSkipped]));
}

template <class Api>
void ivar_all(Api api) {
  ivar_case<Api, int>(api, "int");
  ivar_case<Api, long long>(api, "longlong");
  ivar_case<Api, uint64_t>(api, "uint64");
}

TEST(sync_gpu, wait_test_family_handle) { ivar_all(handle_api{device_handle()}); }
TEST(sync_gpu, wait_test_family_facade) { ivar_all(facade_api{}); }

// ---- barrier_all / sync_all, 1000 rounds per scope ----------------------------------------------

constexpr int kRounds = 1000;

/// Round i: one thread of the scope writes i+1 to slot[i % 2] on the peer (barrier: a weak putmem;
/// sync: p + quiet), the scope calls the barrier, then ANOTHER thread of the scope reads its own
/// slot[i % 2], which must hold the peer's i+1. Slot i % 2 is written again only in round i+2,
/// after the peer has passed barrier i+1, which needs this PE to have finished round i.
template <class Api, class Scope, bool kSync>
__global__ void barrier_kernel(Api api, uint64_t* slots, int pe, device_report* report) {
  unsigned writer = 0, reader = 0;
  if constexpr (is_warp<Scope>) reader = 5;
  if constexpr (!is_thread<Scope> && !is_warp<Scope>) reader = blockDim.x - 1;
  const unsigned rank = threadIdx.x;
  for (int i = 0; i < kRounds; ++i) {
    const uint64_t value = static_cast<uint64_t>(i) + 1;
    if (rank == writer) {
      if constexpr (kSync) {
        api.p(slots + (i % 2), value, pe);
        api.quiet();
      } else {
        api.template putmem<thread_scope>(slots + (i % 2), &value, sizeof(value), pe, false);
      }
    }
    if constexpr (kSync) {
      api.template sync_all<Scope>();
    } else {
      api.template barrier_all<Scope>();
    }
    if (rank == reader) {
      const uint64_t seen = *static_cast<volatile uint64_t*>(slots + (i % 2));
      if (seen != value) report_failure(report, i, i % 2, value, seen);
    }
  }
}

template <class Api, class Scope, bool kSync>
void barrier_case(Api api) {
  sync_buffers& b = bufs();
  auto* slots = static_cast<uint64_t*>(b.scratch);
  GT_CUDA(cudaMemset(slots, 0, 2 * sizeof(uint64_t)));
  reset_device_report(b.report);
  sync_all_pes();
  const unsigned threads = is_thread<Scope> ? 1 : (is_warp<Scope> ? 32 : 256);
  const std::string what = format("%s %s%s x %d rounds (%u threads)", Api::kName, kSync ? "sync_all" : "barrier_all",
                                  is_thread<Scope> ? "" : (is_warp<Scope> ? "_warp" : "_block"), kRounds, threads);
  barrier_kernel<Api, Scope, kSync><<<1, threads>>>(api, slots, peer(), b.report);
  GT_LAUNCHED(what.c_str());
  EXPECT_TRUE(device_report_clean(what.c_str(), b.report));
  sync_all_pes();
}

template <class Api>
void barrier_all_scopes(Api api) {
  barrier_case<Api, thread_scope, false>(api);
  barrier_case<Api, warp_scope, false>(api);
  barrier_case<Api, block_scope, false>(api);
  barrier_case<Api, thread_scope, true>(api);
  barrier_case<Api, warp_scope, true>(api);
  barrier_case<Api, block_scope, true>(api);
}

TEST(sync_gpu, barrier_sync_all_handle) { barrier_all_scopes(handle_api{device_handle()}); }
TEST(sync_gpu, barrier_sync_all_facade) { barrier_all_scopes(facade_api{}); }

// ---- the barrier's protocol and what it leaves in its words ---------------------------------------

/// The device barrier counts signals (red.add) in a job of load/store peers and writes epochs in one with proxy peers
/// (kFlagBarrierEpochs: the proxy variant, SHOAL_GPU_TEST_PROXY=1). After 1000 more barriers, with every PE past
/// them, its words hold what the protocol leaves: each round's count consumed to 0 (a lost or doubled signal, or a
/// consume without its signal, leaves another value), or each round's word at this PE's epoch, which every PE has
/// reached alike.
TEST(sync_gpu, barrier_words_after_barriers) {
  const shoal::device_world w = device_handle();
  const bool epochs = (w.flags & shoal::detail::kFlagBarrierEpochs) != 0;
  const char* variant = std::getenv("SHOAL_GPU_TEST_PROXY");
  const bool proxy = variant != nullptr && *variant != '\0' && *variant != '0';
  if (epochs != proxy)
    ADD_FAILURE() << format("device_world::flags: epoch barriers %s in the %s variant", epochs ? "on" : "off",
                            proxy ? "proxy" : "load/store");
  barrier_case<handle_api, thread_scope, false>(handle_api{w});
  sync_all_pes();
  shoal::detail::device_sync words{};
  GT_CUDA(cudaMemcpy(&words, w.heap_base + w.sync_offset, sizeof words, cudaMemcpyDeviceToHost));
  int rounds = 0;
  for (int step = 1; step < npes(); step <<= 1) ++rounds;
  if (epochs && words.barrier_epoch < static_cast<uint64_t>(kRounds))
    ADD_FAILURE() << format("barrier_epoch %llu after %d barriers",
                            static_cast<unsigned long long>(words.barrier_epoch), kRounds);
  if (!epochs && words.barrier_epoch != 0)
    ADD_FAILURE() << format("barrier_epoch %llu in a job that counts",
                            static_cast<unsigned long long>(words.barrier_epoch));
  for (int r = 0; r < rounds; ++r) {
    const uint64_t expected = epochs ? words.barrier_epoch : 0;
    if (words.barrier_round[r] != expected)
      ADD_FAILURE() << format("barrier_round[%d] = %lld after the barriers, expected %llu", r,
                              static_cast<long long>(words.barrier_round[r]),
                              static_cast<unsigned long long>(expected));
  }
  sync_all_pes();
}

}  // namespace
}  // namespace shoal_test
