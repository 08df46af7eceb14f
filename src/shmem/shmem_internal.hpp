// What libshoal_shmem's own collectives share (the legacy active-set ones of shmem_legacy.cc, the typed
// team reductions of shmem_typed.cc): the report of a bad argument, and the reduction operators.
#pragma once

#include <cstdarg>
#include <cstdio>

#include "shmem.h"

namespace shoal_shmem {

/// Reports a bad argument of `call` per shoal's error mode: by default prints "shoal: error: <call>: <what>"
/// and stops every PE; under SHOAL_ERRORS_RETURN returns false without doing anything (shoal_last_error does
/// not see it).
__attribute__((format(printf, 2, 3))) inline bool fail(const char* call, const char* format, ...) {
  int mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);  // the mode, read by a swap and back
  shoal_set_error_mode(mode);
  if (mode == SHOAL_ERRORS_RETURN) return false;
  std::va_list args;
  va_start(args, format);
  std::fprintf(stderr, "shoal: error: %s: ", call);
  std::vfprintf(stderr, format, args);
  std::fprintf(stderr, "\n");
  va_end(args);
  std::fflush(nullptr);
  shoal_global_exit(1);
  return false;
}

struct op_and {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct op_or {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct op_xor {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};
struct op_max {
  template <class T>
  T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};
struct op_min {
  template <class T>
  T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct op_sum {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct op_prod {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};

}  // namespace shoal_shmem
