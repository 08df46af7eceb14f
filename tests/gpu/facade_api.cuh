// The facade test: facade_api runs the GPU tests' bodies (templated on <Api, Scope>) through the
// generated shoal_*/shoalx_* names, picking the name of each scope (thread: shoal_<op>, warp and block:
// shoalx_<op>_warp/_block; the facade has no warps<N> names, so facade_api::kAnyScope is false). A
// missing or misnamed facade function fails to compile here; a wrong one fails the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "handle_api.cuh"
#include "shoal/shoal.h"

namespace shoal_test {

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
