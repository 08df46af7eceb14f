// The two forms of the device API behind one interface, so that every test body runs against both:
// handle_api calls shoal::device::* with an explicit device_world (passed to kernels by value) and the
// scope object (shoal::thread, warp, block, warps<N>) as the first argument; facade_api calls the
// generated shoal_*/shoalx_* facade (per-translation-unit __constant__ state), picking the name of
// the scope (thread, warp and block only: the facade has no warps<N> names), which checks that the
// generated names exist and work.
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

// ---- the facade -----------------------------------------------------------------------------------

namespace facade_detail {

/// The typed facade functions of one element type, picked by scope; specialized per type below.
template <class T>
struct typed;

// One specialization per tested type: the facade's names are spelled out (TYPE is the OpenSHMEM
// type name), so a missing or misnamed function fails to compile here.
#define SHOAL_TEST_FACADE_RMA(T, TYPE)                                                              \
  template <>                                                                                       \
  struct typed<T> {                                                                                 \
    template <class Scope>                                                                          \
    static __device__ void put(T* d, const T* s, size_t n, int pe, bool nbi) {                      \
      if constexpr (is_thread<Scope>) {                                                             \
        nbi ? shoal_##TYPE##_put_nbi(d, s, n, pe) : shoal_##TYPE##_put(d, s, n, pe);                \
      } else if constexpr (is_warp<Scope>) {                                                        \
        nbi ? shoalx_##TYPE##_put_nbi_warp(d, s, n, pe) : shoalx_##TYPE##_put_warp(d, s, n, pe);    \
      } else {                                                                                      \
        nbi ? shoalx_##TYPE##_put_nbi_block(d, s, n, pe) : shoalx_##TYPE##_put_block(d, s, n, pe);  \
      }                                                                                             \
    }                                                                                               \
    template <class Scope>                                                                          \
    static __device__ void get(T* d, const T* s, size_t n, int pe, bool nbi) {                      \
      if constexpr (is_thread<Scope>) {                                                             \
        nbi ? shoal_##TYPE##_get_nbi(d, s, n, pe) : shoal_##TYPE##_get(d, s, n, pe);                \
      } else if constexpr (is_warp<Scope>) {                                                        \
        nbi ? shoalx_##TYPE##_get_nbi_warp(d, s, n, pe) : shoalx_##TYPE##_get_warp(d, s, n, pe);    \
      } else {                                                                                      \
        nbi ? shoalx_##TYPE##_get_nbi_block(d, s, n, pe) : shoalx_##TYPE##_get_block(d, s, n, pe);  \
      }                                                                                             \
    }                                                                                               \
    static __device__ void p(T* d, T v, int pe) { shoal_##TYPE##_p(d, v, pe); }                     \
    static __device__ T g(const T* s, int pe) { return shoal_##TYPE##_g(s, pe); }                   \
    template <class Scope>                                                                          \
    static __device__ void iput(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
      if constexpr (is_thread<Scope>) {                                                             \
        shoal_##TYPE##_iput(d, s, dst, sst, n, pe);                                                 \
      } else if constexpr (is_warp<Scope>) {                                                        \
        shoalx_##TYPE##_iput_warp(d, s, dst, sst, n, pe);                                           \
      } else {                                                                                      \
        shoalx_##TYPE##_iput_block(d, s, dst, sst, n, pe);                                          \
      }                                                                                             \
    }                                                                                               \
    template <class Scope>                                                                          \
    static __device__ void iget(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
      if constexpr (is_thread<Scope>) {                                                             \
        shoal_##TYPE##_iget(d, s, dst, sst, n, pe);                                                 \
      } else if constexpr (is_warp<Scope>) {                                                        \
        shoalx_##TYPE##_iget_warp(d, s, dst, sst, n, pe);                                           \
      } else {                                                                                      \
        shoalx_##TYPE##_iget_block(d, s, dst, sst, n, pe);                                          \
      }                                                                                             \
    }                                                                                               \
  };

SHOAL_TEST_FACADE_RMA(char, char)
SHOAL_TEST_FACADE_RMA(short, short)
SHOAL_TEST_FACADE_RMA(int, int)
SHOAL_TEST_FACADE_RMA(long long, longlong)
SHOAL_TEST_FACADE_RMA(uint64_t, uint64)
SHOAL_TEST_FACADE_RMA(float, float)
SHOAL_TEST_FACADE_RMA(double, double)
#undef SHOAL_TEST_FACADE_RMA

/// The facade's atomics of one type (the full set for integers; fetch/set/swap/add/fetch_add for
/// float and double; the bitwise ones only where OpenSHMEM defines them).
template <class T>
struct amo;

#define SHOAL_TEST_FACADE_AMO_COMMON(T, TYPE)                                                            \
  static __device__ T fetch(const T* s, int pe) { return shoal_##TYPE##_atomic_fetch(s, pe); }           \
  static __device__ void set(T* d, T v, int pe) { shoal_##TYPE##_atomic_set(d, v, pe); }                 \
  static __device__ T swap(T* d, T v, int pe) { return shoal_##TYPE##_atomic_swap(d, v, pe); }           \
  static __device__ T fetch_add(T* d, T v, int pe) { return shoal_##TYPE##_atomic_fetch_add(d, v, pe); } \
  static __device__ void add(T* d, T v, int pe) { shoal_##TYPE##_atomic_add(d, v, pe); }
#define SHOAL_TEST_FACADE_AMO_INT(T, TYPE)                                                                             \
  static __device__ T compare_swap(T* d, T c, T v, int pe) { return shoal_##TYPE##_atomic_compare_swap(d, c, v, pe); } \
  static __device__ T fetch_inc(T* d, int pe) { return shoal_##TYPE##_atomic_fetch_inc(d, pe); }                       \
  static __device__ void inc(T* d, int pe) { shoal_##TYPE##_atomic_inc(d, pe); }
#define SHOAL_TEST_FACADE_AMO_BITS(T, TYPE)                                                              \
  static __device__ T fetch_and(T* d, T v, int pe) { return shoal_##TYPE##_atomic_fetch_and(d, v, pe); } \
  static __device__ T fetch_or(T* d, T v, int pe) { return shoal_##TYPE##_atomic_fetch_or(d, v, pe); }   \
  static __device__ T fetch_xor(T* d, T v, int pe) { return shoal_##TYPE##_atomic_fetch_xor(d, v, pe); } \
  static __device__ void and_(T* d, T v, int pe) { shoal_##TYPE##_atomic_and(d, v, pe); }                \
  static __device__ void or_(T* d, T v, int pe) { shoal_##TYPE##_atomic_or(d, v, pe); }                  \
  static __device__ void xor_(T* d, T v, int pe) { shoal_##TYPE##_atomic_xor(d, v, pe); }

template <>
struct amo<int> {
  SHOAL_TEST_FACADE_AMO_COMMON(int, int)
  SHOAL_TEST_FACADE_AMO_INT(int, int)
};
template <>
struct amo<long long> {
  SHOAL_TEST_FACADE_AMO_COMMON(long long, longlong)
  SHOAL_TEST_FACADE_AMO_INT(long long, longlong)
};
template <>
struct amo<unsigned int> {
  SHOAL_TEST_FACADE_AMO_COMMON(unsigned int, uint)
  SHOAL_TEST_FACADE_AMO_INT(unsigned int, uint)
  SHOAL_TEST_FACADE_AMO_BITS(unsigned int, uint)
};
template <>
struct amo<unsigned long long> {
  SHOAL_TEST_FACADE_AMO_COMMON(unsigned long long, ulonglong)
  SHOAL_TEST_FACADE_AMO_INT(unsigned long long, ulonglong)
  SHOAL_TEST_FACADE_AMO_BITS(unsigned long long, ulonglong)
};
template <>
struct amo<uint64_t> {
  SHOAL_TEST_FACADE_AMO_COMMON(uint64_t, uint64)
  SHOAL_TEST_FACADE_AMO_INT(uint64_t, uint64)
  SHOAL_TEST_FACADE_AMO_BITS(uint64_t, uint64)
};
template <>
struct amo<float> {
  SHOAL_TEST_FACADE_AMO_COMMON(float, float)
};
template <>
struct amo<double> {
  SHOAL_TEST_FACADE_AMO_COMMON(double, double)
};
#undef SHOAL_TEST_FACADE_AMO_COMMON
#undef SHOAL_TEST_FACADE_AMO_INT
#undef SHOAL_TEST_FACADE_AMO_BITS

/// The facade's point-to-point waits of one ivar type.
template <class T>
struct waits;

#define SHOAL_TEST_FACADE_WAITS(T, TYPE)                                                                          \
  template <>                                                                                                     \
  struct waits<T> {                                                                                               \
    /* OpenSHMEM's wait_until returns nothing: report the value read after it (acquired by it) */                 \
    static __device__ T wait_until(T* v, int cmp, T x) {                                                          \
      shoal_##TYPE##_wait_until(v, cmp, x);                                                                       \
      return *static_cast<volatile T*>(v);                                                                        \
    }                                                                                                             \
    static __device__ int test(T* v, int cmp, T x) { return shoal_##TYPE##_test(v, cmp, x); }                     \
    static __device__ void wait_until_all(T* v, size_t n, const int* st, int cmp, T x) {                          \
      shoal_##TYPE##_wait_until_all(v, n, st, cmp, x);                                                            \
    }                                                                                                             \
    static __device__ size_t wait_until_any(T* v, size_t n, const int* st, int cmp, T x) {                        \
      return shoal_##TYPE##_wait_until_any(v, n, st, cmp, x);                                                     \
    }                                                                                                             \
    static __device__ size_t wait_until_some(T* v, size_t n, size_t* idx, const int* st, int cmp, T x) {          \
      return shoal_##TYPE##_wait_until_some(v, n, idx, st, cmp, x);                                               \
    }                                                                                                             \
    static __device__ void wait_until_all_vector(T* v, size_t n, const int* st, int cmp, T* xs) {                 \
      shoal_##TYPE##_wait_until_all_vector(v, n, st, cmp, xs);                                                    \
    }                                                                                                             \
    static __device__ size_t wait_until_any_vector(T* v, size_t n, const int* st, int cmp, T* xs) {               \
      return shoal_##TYPE##_wait_until_any_vector(v, n, st, cmp, xs);                                             \
    }                                                                                                             \
    static __device__ size_t wait_until_some_vector(T* v, size_t n, size_t* idx, const int* st, int cmp, T* xs) { \
      return shoal_##TYPE##_wait_until_some_vector(v, n, idx, st, cmp, xs);                                       \
    }                                                                                                             \
    static __device__ int test_all(T* v, size_t n, const int* st, int cmp, T x) {                                 \
      return shoal_##TYPE##_test_all(v, n, st, cmp, x);                                                           \
    }                                                                                                             \
    static __device__ size_t test_any(T* v, size_t n, const int* st, int cmp, T x) {                              \
      return shoal_##TYPE##_test_any(v, n, st, cmp, x);                                                           \
    }                                                                                                             \
    static __device__ size_t test_some(T* v, size_t n, size_t* idx, const int* st, int cmp, T x) {                \
      return shoal_##TYPE##_test_some(v, n, idx, st, cmp, x);                                                     \
    }                                                                                                             \
    static __device__ int test_all_vector(T* v, size_t n, const int* st, int cmp, T* xs) {                        \
      return shoal_##TYPE##_test_all_vector(v, n, st, cmp, xs);                                                   \
    }                                                                                                             \
    static __device__ size_t test_any_vector(T* v, size_t n, const int* st, int cmp, T* xs) {                     \
      return shoal_##TYPE##_test_any_vector(v, n, st, cmp, xs);                                                   \
    }                                                                                                             \
    static __device__ size_t test_some_vector(T* v, size_t n, size_t* idx, const int* st, int cmp, T* xs) {       \
      return shoal_##TYPE##_test_some_vector(v, n, idx, st, cmp, xs);                                             \
    }                                                                                                             \
  };

SHOAL_TEST_FACADE_WAITS(int, int)
SHOAL_TEST_FACADE_WAITS(long long, longlong)
SHOAL_TEST_FACADE_WAITS(uint64_t, uint64)
#undef SHOAL_TEST_FACADE_WAITS

}  // namespace facade_detail

struct facade_api {
  static constexpr const char* kName = "facade";
  static constexpr bool kAnyScope = false;  ///< thread, warp and block names only

  __device__ int my_pe() const { return shoal_my_pe(); }
  __device__ int n_pes() const { return shoal_n_pes(); }
  template <class T>
  __device__ T* ptr(T* p, int pe) const {
    return static_cast<T*>(shoal_ptr(p, pe));
  }

  template <class Scope>
  __device__ void putmem(void* d, const void* s, size_t n, int pe, bool nbi) const {
    if constexpr (is_thread<Scope>) {
      nbi ? shoal_putmem_nbi(d, s, n, pe) : shoal_putmem(d, s, n, pe);
    } else if constexpr (is_warp<Scope>) {
      nbi ? shoalx_putmem_nbi_warp(d, s, n, pe) : shoalx_putmem_warp(d, s, n, pe);
    } else {
      nbi ? shoalx_putmem_nbi_block(d, s, n, pe) : shoalx_putmem_block(d, s, n, pe);
    }
  }
  template <class Scope>
  __device__ void getmem(void* d, const void* s, size_t n, int pe, bool nbi) const {
    if constexpr (is_thread<Scope>) {
      nbi ? shoal_getmem_nbi(d, s, n, pe) : shoal_getmem(d, s, n, pe);
    } else if constexpr (is_warp<Scope>) {
      nbi ? shoalx_getmem_nbi_warp(d, s, n, pe) : shoalx_getmem_warp(d, s, n, pe);
    } else {
      nbi ? shoalx_getmem_nbi_block(d, s, n, pe) : shoalx_getmem_block(d, s, n, pe);
    }
  }
  template <class Scope, class T>
  __device__ void put(T* d, const T* s, size_t n, int pe, bool nbi) const {
    facade_detail::typed<T>::template put<Scope>(d, s, n, pe, nbi);
  }
  template <class Scope, class T>
  __device__ void get(T* d, const T* s, size_t n, int pe, bool nbi) const {
    facade_detail::typed<T>::template get<Scope>(d, s, n, pe, nbi);
  }
  template <class T>
  __device__ void p(T* d, T v, int pe) const {
    facade_detail::typed<T>::p(d, v, pe);
  }
  template <class T>
  __device__ T g(const T* s, int pe) const {
    return facade_detail::typed<T>::g(s, pe);
  }
  template <class Scope, class T>
  __device__ void iput(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) const {
    facade_detail::typed<T>::template iput<Scope>(d, s, dst, sst, n, pe);
  }
  template <class Scope, class T>
  __device__ void iget(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) const {
    facade_detail::typed<T>::template iget<Scope>(d, s, dst, sst, n, pe);
  }

  __device__ void quiet() const { shoal_quiet(); }
  __device__ void fence() const { shoal_fence(); }
  template <class Scope>
  __device__ void barrier_all() const {
    if constexpr (is_thread<Scope>) {
      shoal_barrier_all();
    } else if constexpr (is_warp<Scope>) {
      shoalx_barrier_all_warp();
    } else {
      shoalx_barrier_all_block();
    }
  }
  template <class Scope>
  __device__ void sync_all() const {
    if constexpr (is_thread<Scope>) {
      shoal_sync_all();
    } else if constexpr (is_warp<Scope>) {
      shoalx_sync_all_warp();
    } else {
      shoalx_sync_all_block();
    }
  }

  template <class Scope>
  __device__ void putmem_signal(void* d, const void* s, size_t n, uint64_t* sig, uint64_t signal, int sig_op, int pe,
                                bool nbi) const {
    if constexpr (is_thread<Scope>) {
      nbi ? shoal_putmem_signal_nbi(d, s, n, sig, signal, sig_op, pe)
          : shoal_putmem_signal(d, s, n, sig, signal, sig_op, pe);
    } else if constexpr (is_warp<Scope>) {
      nbi ? shoalx_putmem_signal_nbi_warp(d, s, n, sig, signal, sig_op, pe)
          : shoalx_putmem_signal_warp(d, s, n, sig, signal, sig_op, pe);
    } else {
      nbi ? shoalx_putmem_signal_nbi_block(d, s, n, sig, signal, sig_op, pe)
          : shoalx_putmem_signal_block(d, s, n, sig, signal, sig_op, pe);
    }
  }
  __device__ void signal_op(uint64_t* sig, uint64_t signal, int sig_op, int pe) const {
    shoalx_signal_op(sig, signal, sig_op, pe);
  }
  __device__ uint64_t signal_fetch(const uint64_t* sig) const { return shoal_signal_fetch(sig); }
  __device__ uint64_t signal_wait_until(uint64_t* sig, int cmp, uint64_t value) const {
    return shoal_signal_wait_until(sig, cmp, value);
  }

  template <class T>
  __device__ T wait_until(T* v, int cmp, T x) const {
    return facade_detail::waits<T>::wait_until(v, cmp, x);
  }
  template <class T>
  __device__ int test(T* v, int cmp, T x) const {
    return facade_detail::waits<T>::test(v, cmp, x);
  }
  template <class T>
  __device__ void wait_until_all(T* v, size_t n, const int* st, int cmp, T x) const {
    facade_detail::waits<T>::wait_until_all(v, n, st, cmp, x);
  }
  template <class T>
  __device__ size_t wait_until_any(T* v, size_t n, const int* st, int cmp, T x) const {
    return facade_detail::waits<T>::wait_until_any(v, n, st, cmp, x);
  }
  template <class T>
  __device__ size_t wait_until_some(T* v, size_t n, size_t* idx, const int* st, int cmp, T x) const {
    return facade_detail::waits<T>::wait_until_some(v, n, idx, st, cmp, x);
  }
  template <class T>
  __device__ void wait_until_all_vector(T* v, size_t n, const int* st, int cmp, T* xs) const {
    facade_detail::waits<T>::wait_until_all_vector(v, n, st, cmp, xs);
  }
  template <class T>
  __device__ size_t wait_until_any_vector(T* v, size_t n, const int* st, int cmp, T* xs) const {
    return facade_detail::waits<T>::wait_until_any_vector(v, n, st, cmp, xs);
  }
  template <class T>
  __device__ size_t wait_until_some_vector(T* v, size_t n, size_t* idx, const int* st, int cmp, T* xs) const {
    return facade_detail::waits<T>::wait_until_some_vector(v, n, idx, st, cmp, xs);
  }
  template <class T>
  __device__ int test_all(T* v, size_t n, const int* st, int cmp, T x) const {
    return facade_detail::waits<T>::test_all(v, n, st, cmp, x);
  }
  template <class T>
  __device__ size_t test_any(T* v, size_t n, const int* st, int cmp, T x) const {
    return facade_detail::waits<T>::test_any(v, n, st, cmp, x);
  }
  template <class T>
  __device__ size_t test_some(T* v, size_t n, size_t* idx, const int* st, int cmp, T x) const {
    return facade_detail::waits<T>::test_some(v, n, idx, st, cmp, x);
  }
  template <class T>
  __device__ int test_all_vector(T* v, size_t n, const int* st, int cmp, T* xs) const {
    return facade_detail::waits<T>::test_all_vector(v, n, st, cmp, xs);
  }
  template <class T>
  __device__ size_t test_any_vector(T* v, size_t n, const int* st, int cmp, T* xs) const {
    return facade_detail::waits<T>::test_any_vector(v, n, st, cmp, xs);
  }
  template <class T>
  __device__ size_t test_some_vector(T* v, size_t n, size_t* idx, const int* st, int cmp, T* xs) const {
    return facade_detail::waits<T>::test_some_vector(v, n, idx, st, cmp, xs);
  }

  template <class T>
  __device__ T atomic_fetch(const T* s, int pe) const {
    return facade_detail::amo<T>::fetch(s, pe);
  }
  template <class T>
  __device__ void atomic_set(T* d, T v, int pe) const {
    facade_detail::amo<T>::set(d, v, pe);
  }
  template <class T>
  __device__ T atomic_swap(T* d, T v, int pe) const {
    return facade_detail::amo<T>::swap(d, v, pe);
  }
  template <class T>
  __device__ T atomic_compare_swap(T* d, T c, T v, int pe) const {
    return facade_detail::amo<T>::compare_swap(d, c, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_add(T* d, T v, int pe) const {
    return facade_detail::amo<T>::fetch_add(d, v, pe);
  }
  template <class T>
  __device__ void atomic_add(T* d, T v, int pe) const {
    facade_detail::amo<T>::add(d, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_inc(T* d, int pe) const {
    return facade_detail::amo<T>::fetch_inc(d, pe);
  }
  template <class T>
  __device__ void atomic_inc(T* d, int pe) const {
    facade_detail::amo<T>::inc(d, pe);
  }
  template <class T>
  __device__ T atomic_fetch_and(T* d, T v, int pe) const {
    return facade_detail::amo<T>::fetch_and(d, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_or(T* d, T v, int pe) const {
    return facade_detail::amo<T>::fetch_or(d, v, pe);
  }
  template <class T>
  __device__ T atomic_fetch_xor(T* d, T v, int pe) const {
    return facade_detail::amo<T>::fetch_xor(d, v, pe);
  }
  template <class T>
  __device__ void atomic_and(T* d, T v, int pe) const {
    facade_detail::amo<T>::and_(d, v, pe);
  }
  template <class T>
  __device__ void atomic_or(T* d, T v, int pe) const {
    facade_detail::amo<T>::or_(d, v, pe);
  }
  template <class T>
  __device__ void atomic_xor(T* d, T v, int pe) const {
    facade_detail::amo<T>::xor_(d, v, pe);
  }
};

}  // namespace shoal_test
