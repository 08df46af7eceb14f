// The explicit device API as the GPU tests call it: handle_api forwards to shoal::device::* with an
// explicit device_world (passed to kernels by value) and the scope object (shoal::thread, warp, block,
// warps<N>) as the first argument, so a test body templated on <Api, Scope> runs the same code at every
// scope; plus the tests' launch shapes per scope. The facade side of the same bodies is facade_api.cuh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shoal/device/device.cuh"
#include "shoal/shoal.h"

namespace shoal_test {

namespace sd = shoal::device;
using shoal::block_scope;
using shoal::thread_scope;
using shoal::warp_scope;
using shoal::warps_scope;

template <class Scope>
inline constexpr bool is_thread = std::is_same_v<Scope, thread_scope>;
template <class Scope>
inline constexpr bool is_warp = std::is_same_v<Scope, warp_scope>;
template <class Scope>
inline constexpr bool is_block = std::is_same_v<Scope, block_scope>;
/// N of shoal::warps_scope<N> (0 for the other scopes).
template <class Scope>
inline constexpr unsigned warps_of = 0;
template <int N>
inline constexpr unsigned warps_of<warps_scope<N>> = N;
template <class Scope>
inline constexpr const char* scope_name = is_thread<Scope>  ? "thread"
                                          : is_warp<Scope>  ? "warp"
                                          : is_block<Scope> ? "block"
                                                            : "warps<N>";

// ---- launch shapes: three groups of each scope, each moving its own slice ----------------------

template <class Scope>
dim3 grid_of() {
  return is_block<Scope> ? dim3(3) : dim3(1);
}
template <class Scope>
dim3 block_of() {
  if constexpr (warps_of<Scope> != 0) return dim3(3 * 32 * warps_of<Scope>);  // three groups
  return is_thread<Scope> ? dim3(3) : (is_warp<Scope> ? dim3(96) : dim3(160));
}
/// The number of groups of a launch of grid_of<Scope>() x block_of<Scope>() (host side).
template <class Scope>
size_t groups_of() {
  if constexpr (is_thread<Scope>) return block_of<Scope>().x;
  if constexpr (is_warp<Scope>) return block_of<Scope>().x / 32;
  if constexpr (warps_of<Scope> != 0) return block_of<Scope>().x / (32 * warps_of<Scope>);
  return grid_of<Scope>().x;
}
/// This thread's group (the thread, its warp, its group of warps or its block) and the number of groups.
template <class Scope>
__device__ void group_of(size_t& group, size_t& groups) {
  if constexpr (is_thread<Scope>) {
    group = threadIdx.x, groups = blockDim.x;
  } else if constexpr (is_warp<Scope>) {
    group = threadIdx.x / 32, groups = blockDim.x / 32;
  } else if constexpr (warps_of<Scope> != 0) {
    group = threadIdx.x / (32 * warps_of<Scope>), groups = blockDim.x / (32 * warps_of<Scope>);
  } else {
    group = blockIdx.x, groups = gridDim.x;
  }
}

// ---- the explicit handle ----------------------------------------------------------------------

struct handle_api {
  shoal::device_world w;
  static constexpr const char* kName = "handle";
  static constexpr bool kAnyScope = true;  ///< takes warps<N> too

  __device__ int my_pe() const { return w.my_pe; }
  __device__ int n_pes() const { return w.n_pes; }
  template <class T>
  __device__ T* ptr(T* p, int pe) const {
    return sd::ptr(w, p, pe);
  }

  template <class Scope>
  __device__ void putmem(void* d, const void* s, size_t n, int pe, bool nbi) const {
    nbi ? sd::putmem_nbi(Scope{}, w, d, s, n, pe) : sd::putmem(Scope{}, w, d, s, n, pe);
  }
  template <class Scope>
  __device__ void getmem(void* d, const void* s, size_t n, int pe, bool nbi) const {
    nbi ? sd::getmem_nbi(Scope{}, w, d, s, n, pe) : sd::getmem(Scope{}, w, d, s, n, pe);
  }
  template <class Scope, class T>
  __device__ void put(T* d, const T* s, size_t n, int pe, bool nbi) const {
    nbi ? sd::put_nbi(Scope{}, w, d, s, n, pe) : sd::put(Scope{}, w, d, s, n, pe);
  }
  template <class Scope, class T>
  __device__ void get(T* d, const T* s, size_t n, int pe, bool nbi) const {
    nbi ? sd::get_nbi(Scope{}, w, d, s, n, pe) : sd::get(Scope{}, w, d, s, n, pe);
  }
  template <class T>
  __device__ void p(T* d, T v, int pe) const {
    sd::p(w, d, v, pe);
  }
  template <class T>
  __device__ T g(const T* s, int pe) const {
    return sd::g(w, s, pe);
  }
  template <class Scope, class T>
  __device__ void iput(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) const {
    sd::iput(Scope{}, w, d, s, dst, sst, n, pe);
  }
  template <class Scope, class T>
  __device__ void iget(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) const {
    sd::iget(Scope{}, w, d, s, dst, sst, n, pe);
  }

  __device__ void quiet() const { sd::quiet(w); }
  __device__ void fence() const { sd::fence(w); }
  template <class Scope>
  __device__ void barrier_all() const {
    sd::barrier_all(Scope{}, w);
  }
  template <class Scope>
  __device__ void sync_all() const {
    sd::sync_all(Scope{}, w);
  }

  // signals
  template <class Scope>
  __device__ void putmem_signal(void* d, const void* s, size_t n, uint64_t* sig, uint64_t signal, int sig_op, int pe,
                                bool nbi) const {
    nbi ? sd::putmem_signal_nbi(Scope{}, w, d, s, n, sig, signal, sig_op, pe)
        : sd::putmem_signal(Scope{}, w, d, s, n, sig, signal, sig_op, pe);
  }
  __device__ void signal_op(uint64_t* sig, uint64_t signal, int sig_op, int pe) const {
    sd::signal_op(w, sig, signal, sig_op, pe);
  }
  __device__ uint64_t signal_fetch(const uint64_t* sig) const { return sd::signal_fetch(w, sig); }
  __device__ uint64_t signal_wait_until(uint64_t* sig, int cmp, uint64_t value) const {
    return sd::signal_wait_until(w, sig, cmp, value);
  }

  // point-to-point synchronization (T: the types the test instantiates)
  template <class T>
  __device__ T wait_until(T* ivar, int cmp, T value) const {
    return sd::wait_until(w, ivar, cmp, value);
  }
  template <class T>
  __device__ int test(T* ivar, int cmp, T value) const {
    return sd::test(w, ivar, cmp, value);
  }
  template <class T>
  __device__ void wait_until_all(T* ivars, size_t n, const int* status, int cmp, T value) const {
    sd::wait_until_all(w, ivars, n, status, cmp, value);
  }
  template <class T>
  __device__ size_t wait_until_any(T* ivars, size_t n, const int* status, int cmp, T value) const {
    return sd::wait_until_any(w, ivars, n, status, cmp, value);
  }
  template <class T>
  __device__ size_t wait_until_some(T* ivars, size_t n, size_t* indices, const int* status, int cmp, T value) const {
    return sd::wait_until_some(w, ivars, n, indices, status, cmp, value);
  }
  template <class T>
  __device__ void wait_until_all_vector(T* ivars, size_t n, const int* status, int cmp, T* values) const {
    sd::wait_until_all_vector(w, ivars, n, status, cmp, values);
  }
  template <class T>
  __device__ size_t wait_until_any_vector(T* ivars, size_t n, const int* status, int cmp, T* values) const {
    return sd::wait_until_any_vector(w, ivars, n, status, cmp, values);
  }
  template <class T>
  __device__ size_t wait_until_some_vector(T* ivars, size_t n, size_t* indices, const int* status, int cmp,
                                           T* values) const {
    return sd::wait_until_some_vector(w, ivars, n, indices, status, cmp, values);
  }
  template <class T>
  __device__ int test_all(T* ivars, size_t n, const int* status, int cmp, T value) const {
    return sd::test_all(w, ivars, n, status, cmp, value);
  }
  template <class T>
  __device__ size_t test_any(T* ivars, size_t n, const int* status, int cmp, T value) const {
    return sd::test_any(w, ivars, n, status, cmp, value);
  }
  template <class T>
  __device__ size_t test_some(T* ivars, size_t n, size_t* indices, const int* status, int cmp, T value) const {
    return sd::test_some(w, ivars, n, indices, status, cmp, value);
  }
  template <class T>
  __device__ int test_all_vector(T* ivars, size_t n, const int* status, int cmp, T* values) const {
    return sd::test_all_vector(w, ivars, n, status, cmp, values);
  }
  template <class T>
  __device__ size_t test_any_vector(T* ivars, size_t n, const int* status, int cmp, T* values) const {
    return sd::test_any_vector(w, ivars, n, status, cmp, values);
  }
  template <class T>
  __device__ size_t test_some_vector(T* ivars, size_t n, size_t* indices, const int* status, int cmp, T* values) const {
    return sd::test_some_vector(w, ivars, n, indices, status, cmp, values);
  }

  // atomics
  template <class T>
  __device__ T atomic_fetch(const T* s, int pe) const {
    return sd::atomic_fetch(w, s, pe);
  }
  template <class T>
  __device__ void atomic_set(T* d, T v, int pe) const {
    sd::atomic_set(w, d, v, pe);
  }
  template <class T>
  __device__ T atomic_swap(T* d, T v, int pe) const {
    return sd::atomic_swap(w, d, v, pe);
  }
  template <class T>
  __device__ T atomic_compare_swap(T* d, T cond, T v, int pe) const {
    return sd::atomic_compare_swap(w, d, cond, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_add(T* d, T v, int pe) const {
    return sd::atomic_fetch_add(w, d, v, pe);
  }
  template <class T>
  __device__ void atomic_add(T* d, T v, int pe) const {
    sd::atomic_add(w, d, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_inc(T* d, int pe) const {
    return sd::atomic_fetch_inc(w, d, pe);
  }
  template <class T>
  __device__ void atomic_inc(T* d, int pe) const {
    sd::atomic_inc(w, d, pe);
  }
  template <class T>
  __device__ T atomic_fetch_and(T* d, T v, int pe) const {
    return sd::atomic_fetch_and(w, d, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_or(T* d, T v, int pe) const {
    return sd::atomic_fetch_or(w, d, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_xor(T* d, T v, int pe) const {
    return sd::atomic_fetch_xor(w, d, v, pe);
  }
  template <class T>
  __device__ void atomic_and(T* d, T v, int pe) const {
    sd::atomic_and(w, d, v, pe);
  }
  template <class T>
  __device__ void atomic_or(T* d, T v, int pe) const {
    sd::atomic_or(w, d, v, pe);
  }
  template <class T>
  __device__ void atomic_xor(T* d, T v, int pe) const {
    sd::atomic_xor(w, d, v, pe);
  }
};

}  // namespace shoal_test
