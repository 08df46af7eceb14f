// shoal._core: the thin nanobind layer under shoal.core. Byte-level calls on addresses (uintptr_t);
// shoal/core.py checks arrays (dtype, shape, symmetric) and turns them into these arguments.
// Every call runs with SHOAL_ERRORS_RETURN and raises shoal._core.ShoalError (a RuntimeError) with
// the library's message, which names the call and the argument.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "shoal/shoal.h"

namespace nb = nanobind;

namespace {

// The C++ side of ShoalError: nanobind maps it to the Python type registered in the module.
struct shoal_call_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Raises when the last library call recorded an error (or returned nonzero).
void check(const char* call, int rc = 0) {
  const char* message = nullptr;
  const int code = shoal_last_error(&message);
  if (code == SHOAL_OK && rc == 0) {
    return;
  }
  std::string text = (message != nullptr && *message != '\0') ? message : std::string(call) + ": failed";
  shoal_clear_error();
  throw shoal_call_error(text + " (code " + std::to_string(code != SHOAL_OK ? code : rc) + ")");
}

void* as_ptr(std::uintptr_t addr) { return reinterpret_cast<void*>(addr); }

// Release the GIL around calls that wait on other PEs, so other Python threads keep running.
template <typename F>
auto blocking(const char* call, F&& f) {
  shoal_clear_error();
  int rc = 0;
  {
    nb::gil_scoped_release release;
    if constexpr (std::is_same_v<decltype(f()), void>) {
      f();
    } else {
      rc = static_cast<int>(f());
    }
  }
  check(call, rc);
}

using reduce_fn = int (*)(shoal_team_t, void*, const void*, std::size_t);

template <typename T, int (*F)(shoal_team_t, T*, const T*, std::size_t)>
int typed_reduce(shoal_team_t team, void* dest, const void* source, std::size_t nreduce) {
  return F(team, static_cast<T*>(dest), static_cast<const T*>(source), nreduce);
}

// (numpy dtype name, op) -> the typed shoal_<T>_<op>_reduce entry point.
const std::map<std::pair<std::string, std::string>, reduce_fn>& reduce_table() {
  static const std::map<std::pair<std::string, std::string>, reduce_fn> table = [] {
    std::map<std::pair<std::string, std::string>, reduce_fn> t;
#define SHOAL_PY_OP(np_name, c_type, c_name, op) \
  t[{np_name, #op}] = &typed_reduce<c_type, &shoal_##c_name##_##op##_reduce>
#define SHOAL_PY_ARITH(np_name, c_type, c_name) \
  SHOAL_PY_OP(np_name, c_type, c_name, sum);    \
  SHOAL_PY_OP(np_name, c_type, c_name, prod);   \
  SHOAL_PY_OP(np_name, c_type, c_name, min);    \
  SHOAL_PY_OP(np_name, c_type, c_name, max)
#define SHOAL_PY_BITWISE(np_name, c_type, c_name) \
  SHOAL_PY_OP(np_name, c_type, c_name, and);      \
  SHOAL_PY_OP(np_name, c_type, c_name, or);       \
  SHOAL_PY_OP(np_name, c_type, c_name, xor)
#define SHOAL_PY_INTEGER(np_name, c_type, c_name) \
  SHOAL_PY_ARITH(np_name, c_type, c_name);        \
  SHOAL_PY_BITWISE(np_name, c_type, c_name)
    SHOAL_PY_INTEGER("int8", int8_t, int8);
    SHOAL_PY_INTEGER("int16", int16_t, int16);
    SHOAL_PY_INTEGER("int32", int32_t, int32);
    SHOAL_PY_INTEGER("int64", int64_t, int64);
    SHOAL_PY_INTEGER("uint8", uint8_t, uint8);
    SHOAL_PY_INTEGER("uint16", uint16_t, uint16);
    SHOAL_PY_INTEGER("uint32", uint32_t, uint32);
    SHOAL_PY_INTEGER("uint64", uint64_t, uint64);
    SHOAL_PY_ARITH("float16", shoal_half_t, half);
    SHOAL_PY_ARITH("float32", float, float);
    SHOAL_PY_ARITH("float64", double, double);
    SHOAL_PY_ARITH("bfloat16", shoal_bfloat16_t, bfloat16);
#undef SHOAL_PY_INTEGER
#undef SHOAL_PY_BITWISE
#undef SHOAL_PY_ARITH
#undef SHOAL_PY_OP
    return t;
  }();
  return table;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "shoal's C API under shoal.core (byte-level, addresses as integers). Use shoal.core instead.";
  nb::exception<shoal_call_error>(m, "ShoalError", PyExc_RuntimeError);

  m.def(
      "set_return_mode", [] { shoal_set_error_mode(SHOAL_ERRORS_RETURN); },
      "Makes every later library error return (and raise here) instead of stopping the job.");
  m.def(
      "init", [] { blocking("shoal_init", [] { shoal_init(); }); },
      "Joins the job described by the launcher's environment (shoalrun, mpirun, srun, torchrun).");
  m.def("finalize", [] { blocking("shoal_finalize", [] { shoal_finalize(); }); });
  m.def("my_pe", [] {
    shoal_clear_error();
    const int pe = shoal_my_pe();
    check("shoal_my_pe");
    return pe;
  });
  m.def("n_pes", [] {
    shoal_clear_error();
    const int n = shoal_n_pes();
    check("shoal_n_pes");
    return n;
  });
  m.def("backend_name", [] { return std::string(shoalx_backend_name()); });

  m.def("malloc", [](std::size_t nbytes) {
    std::uintptr_t addr = 0;
    blocking("shoal_malloc", [&] { addr = reinterpret_cast<std::uintptr_t>(shoal_malloc(nbytes)); });
    if (addr == 0) {
      throw shoal_call_error("shoal_malloc: returned NULL for nbytes=" + std::to_string(nbytes));
    }
    return addr;
  });
  m.def("free", [](std::uintptr_t addr) { blocking("shoal_free", [&] { shoal_free(as_ptr(addr)); }); });
  m.def("ptr", [](std::uintptr_t addr, int pe) {
    shoal_clear_error();
    auto* p = shoal_ptr(as_ptr(addr), pe);
    check("shoal_ptr");
    return reinterpret_cast<std::uintptr_t>(p);
  });
  // A writable uint8 numpy view of nbytes at addr; shoal.core reinterprets and reshapes it.
  // The memory belongs to the symmetric heap: the view must not outlive free_array.
  m.def(
      "view",
      [](std::uintptr_t addr, std::size_t nbytes) {
        std::size_t shape[1] = {nbytes};
        return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(as_ptr(addr), 1, shape, nb::handle());
      },
      nb::rv_policy::reference);

  m.def("putmem", [](std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int pe) {
    blocking("shoal_putmem", [&] { shoal_putmem(as_ptr(dest), as_ptr(source), nbytes, pe); });
  });
  m.def("getmem", [](std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int pe) {
    blocking("shoal_getmem", [&] { shoal_getmem(as_ptr(dest), as_ptr(source), nbytes, pe); });
  });
  m.def("quiet", [] { blocking("shoal_quiet", [] { shoal_quiet(); }); });
  m.def("barrier_all", [] { blocking("shoal_barrier_all", [] { shoal_barrier_all(); }); });
  m.def("sync_all", [] { blocking("shoal_sync_all", [] { shoal_sync_all(); }); });
  m.def("barrier", [](int team) { blocking("shoal_barrier", [&] { return shoal_barrier(team); }); });
  m.def("team_sync", [](int team) { blocking("shoal_team_sync", [&] { return shoal_team_sync(team); }); });

  m.def("team_my_pe", [](int team) {
    shoal_clear_error();
    const int pe = shoal_team_my_pe(team);
    check("shoal_team_my_pe");
    return pe;
  });
  m.def("team_n_pes", [](int team) {
    shoal_clear_error();
    const int n = shoal_team_n_pes(team);
    check("shoal_team_n_pes");
    return n;
  });
  m.def("team_translate_pe", [](int src_team, int src_pe, int dest_team) {
    shoal_clear_error();
    const int pe = shoal_team_translate_pe(src_team, src_pe, dest_team);
    check("shoal_team_translate_pe");
    return pe;
  });
  m.def("team_split_strided", [](int parent, int start, int stride, int size) {
    shoal_team_t team = SHOAL_TEAM_INVALID;
    blocking("shoal_team_split_strided",
             [&] { return shoal_team_split_strided(parent, start, stride, size, nullptr, 0, &team); });
    return static_cast<int>(team);
  });
  m.def("team_destroy", [](int team) { blocking("shoal_team_destroy", [&] { shoal_team_destroy(team); }); });

  m.def("broadcastmem", [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int root) {
    blocking("shoal_broadcastmem",
             [&] { return shoal_broadcastmem(team, as_ptr(dest), as_ptr(source), nbytes, root); });
  });
  m.def("fcollectmem", [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes) {
    blocking("shoal_fcollectmem", [&] { return shoal_fcollectmem(team, as_ptr(dest), as_ptr(source), nbytes); });
  });
  m.def("alltoallmem", [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes) {
    blocking("shoal_alltoallmem", [&] { return shoal_alltoallmem(team, as_ptr(dest), as_ptr(source), nbytes); });
  });
  m.def("reduce_ops", [](const std::string& dtype) {
    nb::list ops;
    for (const auto& [key, fn] : reduce_table()) {
      if (key.first == dtype) {
        ops.append(key.second);
      }
    }
    return ops;
  });
  m.def("reduce", [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nreduce,
                     const std::string& dtype, const std::string& op) {
    const auto it = reduce_table().find({dtype, op});
    if (it == reduce_table().end()) {
      throw shoal_call_error("shoal.core.reduce: no " + op + " reduction for dtype " + dtype);
    }
    const reduce_fn fn = it->second;
    blocking("shoal_reduce", [&] { return fn(team, as_ptr(dest), as_ptr(source), nreduce); });
  });
}
