// shoal._core: the thin nanobind layer under shoal.core. Byte-level calls on addresses (uintptr_t);
// shoal/core.py checks arrays (dtype, shape, symmetric) and turns them into these arguments.
// Every call runs with SHOAL_ERRORS_RETURN and raises shoal._core.ShoalError (a RuntimeError) with
// the library's message, which names the call and the argument.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstring>
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
// A CUDA stream handle passed as an integer (0: the legacy default stream).
CUstream_st* as_stream(std::uintptr_t handle) { return reinterpret_cast<CUstream_st*>(handle); }

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

// A typed reduction as one signature; stream 0 with on_stream false is the blocking host call.
using reduce_fn = int (*)(shoal_team_t, void*, const void*, std::size_t, bool on_stream, std::uintptr_t stream);

template <typename T, int (*F)(shoal_team_t, T*, const T*, std::size_t),
          int (*S)(shoal_team_t, T*, const T*, std::size_t, CUstream_st*)>
int typed_reduce(shoal_team_t team, void* dest, const void* source, std::size_t nreduce, bool on_stream,
                 std::uintptr_t stream) {
  if (on_stream) {
    return S(team, static_cast<T*>(dest), static_cast<const T*>(source), nreduce, as_stream(stream));
  }
  return F(team, static_cast<T*>(dest), static_cast<const T*>(source), nreduce);
}

// (numpy dtype name, op) -> the typed shoal_<T>_<op>_reduce entry point and its on-stream form.
const std::map<std::pair<std::string, std::string>, reduce_fn>& reduce_table() {
  static const std::map<std::pair<std::string, std::string>, reduce_fn> table = [] {
    std::map<std::pair<std::string, std::string>, reduce_fn> t;
#define SHOAL_PY_OP(np_name, c_type, c_name, op) \
  t[{np_name, #op}] = &typed_reduce<c_type, &shoal_##c_name##_##op##_reduce, &shoalx_##c_name##_##op##_reduce_on_stream>
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
  m.def(
      "get_uniqueid",
      [] {
        shoal_uniqueid_t uid{};
        blocking("shoal_get_uniqueid", [&] { return shoal_get_uniqueid(&uid); });
        return nb::bytes(reinterpret_cast<const char*>(uid.internal), sizeof(uid.internal));
      },
      "A rendezvous id (SHOAL_UNIQUEID_BYTES bytes) made on the PE that will be rank 0.");
  m.def("uniqueid_nbytes", [] { return static_cast<std::size_t>(SHOAL_UNIQUEID_BYTES); });
  m.def(
      "init_attr",
      [](int rank, int size, const nb::bytes& uid) {
        if (uid.size() != SHOAL_UNIQUEID_BYTES) {
          throw shoal_call_error("shoal.core.init: uid has " + std::to_string(uid.size()) + " bytes, not " +
                                 std::to_string(SHOAL_UNIQUEID_BYTES) + " (make it with shoal.core.get_unique_id)");
        }
        shoal_init_attr_t attr{};
        attr.version = SHOAL_INIT_ATTR_VERSION;
        attr.rank = rank;
        attr.size = size;
        std::memcpy(attr.uid.internal, uid.c_str(), SHOAL_UNIQUEID_BYTES);
        blocking("shoal_init_attr", [&] { return shoal_init_attr(&attr); });
      },
      "Joins the job given explicitly: rank of size, rendezvous uid (from get_uniqueid on rank 0).");
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
  // A uint8 torch tensor of nbytes at addr (zero-copy through DLPack) on CUDA device `device` (-1: CPU).
  // `owner` is kept referenced until torch releases the tensor and every view of it.
  m.def("view_tensor", [](std::uintptr_t addr, std::size_t nbytes, int device, nb::handle owner) {
    std::size_t shape[1] = {nbytes};
    const int type = device >= 0 ? nb::device::cuda::value : nb::device::cpu::value;
    return nb::ndarray<nb::pytorch, std::uint8_t, nb::ndim<1>>(
        as_ptr(addr), 1, shape, owner, nullptr, nb::dtype<std::uint8_t>(), type, device < 0 ? 0 : device);
  });

  m.def("putmem", [](std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int pe) {
    blocking("shoal_putmem", [&] { shoal_putmem(as_ptr(dest), as_ptr(source), nbytes, pe); });
  });
  m.def("getmem", [](std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int pe) {
    blocking("shoal_getmem", [&] { shoal_getmem(as_ptr(dest), as_ptr(source), nbytes, pe); });
  });
  m.def("putmem_on_stream",
        [](std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int pe, std::uintptr_t stream) {
          blocking("shoalx_putmem_on_stream",
                   [&] { shoalx_putmem_on_stream(as_ptr(dest), as_ptr(source), nbytes, pe, as_stream(stream)); });
        });
  m.def("getmem_on_stream",
        [](std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int pe, std::uintptr_t stream) {
          blocking("shoalx_getmem_on_stream",
                   [&] { shoalx_getmem_on_stream(as_ptr(dest), as_ptr(source), nbytes, pe, as_stream(stream)); });
        });
  m.def("quiet_on_stream", [](std::uintptr_t stream) {
    blocking("shoalx_quiet_on_stream", [&] { shoalx_quiet_on_stream(as_stream(stream)); });
  });
  m.def("barrier_all_on_stream", [](std::uintptr_t stream) {
    blocking("shoalx_barrier_all_on_stream", [&] { shoalx_barrier_all_on_stream(as_stream(stream)); });
  });
  m.def("barrier_on_stream", [](int team, std::uintptr_t stream) {
    blocking("shoalx_barrier_on_stream", [&] { return shoalx_barrier_on_stream(team, as_stream(stream)); });
  });
  m.def("team_sync_on_stream", [](int team, std::uintptr_t stream) {
    blocking("shoalx_team_sync_on_stream", [&] { return shoalx_team_sync_on_stream(team, as_stream(stream)); });
  });
  m.def("broadcastmem_on_stream",
        [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, int root, std::uintptr_t stream) {
          blocking("shoalx_broadcastmem_on_stream", [&] {
            return shoalx_broadcastmem_on_stream(team, as_ptr(dest), as_ptr(source), nbytes, root, as_stream(stream));
          });
        });
  m.def("fcollectmem_on_stream",
        [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, std::uintptr_t stream) {
          blocking("shoalx_fcollectmem_on_stream", [&] {
            return shoalx_fcollectmem_on_stream(team, as_ptr(dest), as_ptr(source), nbytes, as_stream(stream));
          });
        });
  m.def("alltoallmem_on_stream",
        [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nbytes, std::uintptr_t stream) {
          blocking("shoalx_alltoallmem_on_stream", [&] {
            return shoalx_alltoallmem_on_stream(team, as_ptr(dest), as_ptr(source), nbytes, as_stream(stream));
          });
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
  // stream < 0: the blocking host call; else the on-stream form on that stream handle.
  m.def("reduce", [](int team, std::uintptr_t dest, std::uintptr_t source, std::size_t nreduce,
                     const std::string& dtype, const std::string& op, std::intptr_t stream) {
    const auto it = reduce_table().find({dtype, op});
    if (it == reduce_table().end()) {
      throw shoal_call_error("shoal.core.reduce: no " + op + " reduction for dtype " + dtype);
    }
    const reduce_fn fn = it->second;
    blocking("shoal_reduce", [&] {
      return fn(team, as_ptr(dest), as_ptr(source), nreduce, stream >= 0, static_cast<std::uintptr_t>(stream));
    });
  });
}
