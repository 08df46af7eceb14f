// The C API's boundary: the generated typed functions (host_api_gen.cc) and the hand-written entry points (c_api.cc:
// the default world's init and finalize, the error mode, allocation, the untyped calls, status names, buffer
// registration; init_mpi.cc, loaded_modules.cc, stream_api.cc) land here. Each converts shoal::error into the C
// error contract (abort the job, or record and return, per shoal_set_error_mode) at this boundary only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/world_impl.hpp"
#include "transport/scalar.hpp"

namespace shoal::detail::c_api {

/// The default world, or throws errc::not_initialized naming `call`.
world_impl& current(const char* call);
/// Reports `e` per the error mode: records it for shoal_last_error(); in abort mode also prints
/// it and stops the job.
void report(const shoal::error& e) noexcept;
/// Records `e` for shoal_last_error() only, in every error mode: for the outcomes the specification
/// answers with a nonzero return rather than an error (a refused team split).
void record(const shoal::error& e) noexcept;
/// True under SHOAL_ERRORS_RETURN (shoal_set_error_mode).
bool errors_return() noexcept;
/// Same for any other exception escaping an entry point (bad_alloc…).
void report_unknown(const char* call, const char* what) noexcept;

/// Runs f() on behalf of C entry point `call`; on failure reports and returns `fallback`.
template <class F, class R = decltype(std::declval<F>()())>
R guarded(const char* call, F&& f, R fallback = R()) noexcept {
  try {
    return f();
  } catch (const shoal::error& e) {
    report(e);
  } catch (const std::exception& e) {
    report_unknown(call, e.what());
  }
  return fallback;
}
/// For C entry points that return a status: SHOAL_OK when `ok`, else the code of the error the failed
/// call just recorded (SHOAL_ERR_INTERNAL if none was).
int status_of(bool ok) noexcept;
template <class F>
void guarded_void(const char* call, F&& f) noexcept {
  guarded(
      call,
      [&] {
        f();
        return 0;
      },
      0);
}

void put(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
         int pe) noexcept;
void get(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
         int pe) noexcept;
/// The _nbi forms: completion at the next quiet.
void put_nbi(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
             int pe) noexcept;
void get_nbi(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
             int pe) noexcept;
void iput(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem_bytes, int pe) noexcept;
void iget(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem_bytes, int pe) noexcept;
void put_signal(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
                uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) noexcept;
void amo(const char* call, amo_op op, scalar type, void* dest, const void* operand, const void* compare_value,
         void* fetched, int pe) noexcept;
size_t wait(const char* call, scalar type, void* ivars, size_t nelems, const int* status, size_t* indices, int cmp,
            const void* values, bool vector, world_impl::wait_mode mode, bool test_only) noexcept;

// The generic on-stream calls of the generated typed *_on_stream functions (src/runtime/stream_api.cc).
// `stream` is a cudaStream_t.
void put_on_stream(const char* call, void* dest, const void* source, size_t nbytes, int pe, void* stream) noexcept;
void get_on_stream(const char* call, void* dest, const void* source, size_t nbytes, int pe, void* stream) noexcept;
void iput_on_stream(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                    size_t elem_bytes, int pe, void* stream) noexcept;
void iget_on_stream(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                    size_t elem_bytes, int pe, void* stream) noexcept;
/// `value`: value_bytes (1, 2, 4 or 8) in host memory.
void p_on_stream(const char* call, void* dest, const void* value, size_t value_bytes, int pe, void* stream) noexcept;
void g_on_stream(const char* call, void* value, const void* source, size_t value_bytes, int pe, void* stream) noexcept;
/// Data, then the signal, in stream order.
void put_signal_on_stream(const char* call, void* dest, const void* source, size_t nbytes, uint64_t* sig_addr,
                          uint64_t signal, int sig_op, int pe, void* stream) noexcept;
/// Holds the stream until each of nelems words of `type` at ivars whose status entry is 0 (status may be null)
/// compares true with values[0] (or values[i] when `vector`). status and values are read now.
void wait_until_on_stream(const char* call, scalar type, void* ivars, size_t nelems, const int* status, int cmp,
                          const void* values, bool vector, void* stream) noexcept;

}  // namespace shoal::detail::c_api
