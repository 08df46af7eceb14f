// What the GPU tests share: GoogleTest programs run through shoalrun by tests/mp/mp_main.cc, whose hooks
// (gpu_env.cc) give each PE its GPU or skip (exit 77) where there is none, and finish every PE's GPU work and meet
// at a barrier around each test. Here: the job, CUDA checks (fatal), byte patterns and the checks of data.
// Plain C++ (gpu_env.cc and the .cu tests include it); device helpers are fenced by __CUDACC__.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shoal/device_world.hpp"

namespace shoal_test {

// ---- CUDA errors: always fatal (a failed call or a trapped kernel leaves nothing to test) ----

/// Prints "PE <me> FATAL [<test>] <expr> failed: <error> at <file:line>" and ends the process with status 1
/// (no shoal_finalize: the GPU context may be gone; shoalrun stops the other PEs).
[[noreturn]] void cuda_fail(const char* expr, cudaError_t err, const char* file, int line);
/// cudaGetLastError (launch errors) then cudaDeviceSynchronize (execution errors, a trap) after a kernel.
void launch_check(const char* what, const char* file, int line);

#define GT_CUDA(expr)                                                                        \
  do {                                                                                       \
    cudaError_t gt_err_ = (expr);                                                            \
    if (gt_err_ != cudaSuccess) ::shoal_test::cuda_fail(#expr, gt_err_, __FILE__, __LINE__); \
  } while (0)
#define GT_LAUNCHED(what) ::shoal_test::launch_check(what, __FILE__, __LINE__)

// ---- the job ----

int me();
int npes();
int peer();  ///< the next PE, (me + 1) % npes
/// The default world's device handle (what kernels of the explicit-handle form take by value).
shoal::device_world device_handle();
/// Host barrier over all PEs (shoal_barrier_all) after cudaDeviceSynchronize of this PE's GPU.
void sync_all_pes();
/// SHOAL_GPU_TEST_QUICK=1 (set by scripts/gpu.sh when PEs are time-sliced on one GPU): loops run
/// fewer rounds, because every cross-PE wait then costs a time slice. Same cases, same checks.
bool quick();
/// `full` rounds, or a twentieth of them (at least 2) in quick mode.
int rounds(int full);

/// `fmt` with printf arguments, for failure messages: ADD_FAILURE() << format(...).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// ---- data ----

inline constexpr uint8_t kPoison = 0xA5;  ///< buffers are filled with this before every transfer

/// Byte i of the pattern that PE `pe` writes in case `salt`: never 0 and never the poison byte.
inline uint8_t pattern_byte(int pe, uint32_t salt, size_t i) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ (salt * 40503u) ^ (static_cast<uint32_t>(pe) * 97u);
  x ^= x >> 13;
  uint8_t b = static_cast<uint8_t>(x);
  return b == 0 || b == kPoison ? static_cast<uint8_t>(b + 1) : b;
}
inline std::vector<uint8_t> pattern(int pe, uint32_t salt, size_t num_bytes) {
  std::vector<uint8_t> v(num_bytes);
  for (size_t i = 0; i < num_bytes; ++i) v[i] = pattern_byte(pe, salt, i);
  return v;
}

/// For EXPECT_TRUE: whether num_bytes are equal; on a mismatch the message names `what`, the count of bad bytes and
/// the first few offsets with expected and seen values.
::testing::AssertionResult bytes_equal(const char* what, const void* seen, const void* expected, size_t num_bytes);

// ---- mismatches found by kernels ----

/// Filled by kernels (device memory): how many checks failed and the first failure's details.
struct device_report {
  unsigned long long count;      ///< failed checks
  unsigned long long claimed;    ///< 0 until the first failure claims the details below
  unsigned long long iteration;  ///< first failure: loop iteration (or case number)
  unsigned long long index;      ///< first failure: element / byte / thread index
  unsigned long long expected;   ///< first failure: what should have been seen
  unsigned long long seen;       ///< first failure: what was seen
};
/// A zeroed device_report in device memory (cudaMalloc; freed at exit).
device_report* new_device_report();
/// Zeroes it again.
void reset_device_report(device_report* report);
/// For EXPECT_TRUE: reads the report back; fails when a kernel counted failed checks, saying "<what>: N failed
/// check(s); first at iteration I, index X: expected E, seen S". `count`, if given, receives N.
::testing::AssertionResult device_report_clean(const char* what, const device_report* report,
                                               unsigned long long* count = nullptr);

}  // namespace shoal_test

#if defined(__CUDACC__)
namespace shoal_test {
/// Nanoseconds of the GPU's global timer (for the tests' own bounded spins).
__device__ inline uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/// Counts one failed check; the first one also records where it was and what it saw.
__device__ inline void report_failure(device_report* r, unsigned long long iteration, unsigned long long index,
                                      unsigned long long expected, unsigned long long seen) {
  atomicAdd(&r->count, 1ull);
  if (atomicCAS(&r->claimed, 0ull, 1ull) == 0ull) {
    r->iteration = iteration;
    r->index = index;
    r->expected = expected;
    r->seen = seen;
  }
}
}  // namespace shoal_test
#endif
