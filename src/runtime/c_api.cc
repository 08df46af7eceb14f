#include "runtime/c_api.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "common/check.hpp"
#include "shoal/detail/device_registry.h"
#include "shoal/shoal.h"
#include "shoal/world.hpp"

namespace shoal::detail::c_api {

namespace {

enum class state { never, live, finalized };

std::mutex g_init_mutex;              // serializes init/finalize
std::unique_ptr<world_impl> g_world;  // the default world
std::atomic<world_impl*> g_current{nullptr};
std::atomic<state> g_state{state::never};
std::atomic<int> g_error_mode{SHOAL_ERRORS_ABORT};

// Per-translation-unit device facades (<shoal/device/facade.cuh>) register an update function at
// static-init time; each is called with the default world's device handle when it appears and
// with an empty handle when it goes away.
using device_update_fn = void (*)(const void* world, size_t bytes);
std::mutex g_facades_mutex;
std::vector<device_update_fn> g_facades;

bool g_published = false;  // a GPU world's handle is in the facades (host-backend worlds are never published)

void publish_device_world(const device_world& w) {
  std::lock_guard lock(g_facades_mutex);
  bool gpu = w.heap_base != nullptr;
  if (!gpu && !g_published) return;  // nothing to set or clear: no CUDA call on GPU-less machines
  for (auto fn : g_facades) fn(&w, sizeof(w));
  g_published = gpu;
}

thread_local int t_last_code = SHOAL_OK;
thread_local std::string t_last_message;

}  // namespace

world_impl& current(const char* call) {
  world_impl* w = g_current.load(std::memory_order_acquire);
  if (w == nullptr) {
    if (g_state.load() == state::finalized)
      SHOAL_THROW(errc::not_initialized, call, "shoal was finalized; no call is allowed after shoal_finalize");
    SHOAL_THROW(errc::not_initialized, call, "shoal is not initialized; call shoal_init first");
  }
  return *w;
}

bool errors_return() noexcept { return g_error_mode.load() == SHOAL_ERRORS_RETURN; }

void record(const shoal::error& e) noexcept {
  t_last_code = static_cast<int>(e.code());
  t_last_message = e.what();
}

void report(const shoal::error& e) noexcept {
  record(e);
  if (g_error_mode.load() == SHOAL_ERRORS_RETURN) return;
  std::fprintf(stderr, "shoal: error: %s\n", e.what());
  std::fflush(nullptr);
  world_impl* w = g_current.load();
  // A PE that left without shoal_finalize with a failure status is why: the job ends with that status.
  const std::optional<int> left_status = left_pe_exit_status(e.message());
  const int status = left_status && *left_status != 0 ? *left_status : 1;
  // A bad argument on one PE leaves its peers waiting for it: stop them all, with this status.
  if (w != nullptr) w->stop_on_error(e.what(), status);
  ::_exit(status);
}

void report_unknown(const char* call, const char* what) noexcept { report(shoal::error(errc::internal, call, what)); }

int status_of(bool ok) noexcept {
  if (ok) return SHOAL_OK;
  const int code = shoal_last_error(nullptr);
  return code != SHOAL_OK ? code : SHOAL_ERR_INTERNAL;
}

namespace {
size_t total_bytes(const char* call, size_t nelems, size_t elem_bytes) {
  size_t total = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(nelems, elem_bytes, &total), call, "nelems={} x {} bytes overflows size_t",
                  nelems, elem_bytes);
  return total;
}
}  // namespace

void put(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
         int pe) noexcept {
  guarded_void(call,
               [&] { current(call).rma().put(call, dest, source, total_bytes(call, nelems, elem_bytes), align, pe); });
}
void get(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
         int pe) noexcept {
  guarded_void(call,
               [&] { current(call).rma().get(call, dest, source, total_bytes(call, nelems, elem_bytes), align, pe); });
}
void put_nbi(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
             int pe) noexcept {
  guarded_void(call, [&] {
    current(call).rma().put(call, dest, source, total_bytes(call, nelems, elem_bytes), align, pe, true);
  });
}
void get_nbi(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
             int pe) noexcept {
  guarded_void(call, [&] {
    current(call).rma().get(call, dest, source, total_bytes(call, nelems, elem_bytes), align, pe, true);
  });
}
void iput(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem_bytes, int pe) noexcept {
  guarded_void(call, [&] { current(call).rma().iput(call, dest, source, dst, sst, nelems, elem_bytes, pe); });
}
void iget(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
          size_t elem_bytes, int pe) noexcept {
  guarded_void(call, [&] { current(call).rma().iget(call, dest, source, dst, sst, nelems, elem_bytes, pe); });
}
void put_signal(const char* call, void* dest, const void* source, size_t nelems, size_t elem_bytes, size_t align,
                uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) noexcept {
  guarded_void(call, [&] {
    current(call).rma().put_signal(call, dest, source, total_bytes(call, nelems, elem_bytes), align, sig_addr, signal,
                                   sig_op, pe);
  });
}
void amo(const char* call, amo_op op, scalar type, void* dest, const void* operand, const void* compare_value,
         void* fetched, int pe) noexcept {
  guarded_void(call, [&] { current(call).rma().atomic(call, op, type, dest, operand, compare_value, fetched, pe); });
}
size_t wait(const char* call, scalar type, void* ivars, size_t nelems, const int* status, size_t* indices, int cmp,
            const void* values, bool vector, world_impl::wait_mode mode, bool test_only) noexcept {
  size_t fallback = mode == world_impl::wait_mode::any ? SIZE_MAX : 0;
  return guarded(
      call,
      [&] {
        return current(call).rma().wait(call, type, ivars, nelems, status, indices, cmp, values, vector, mode,
                                        test_only);
      },
      fallback);
}

namespace {

int init_with(const char* call, const init_options& options) {
  return guarded(
      call,
      [&] {
        std::lock_guard lock(g_init_mutex);
        if (g_state.load() == state::live)
          SHOAL_THROW(errc::invalid_argument, call,
                      "shoal is already initialized (one default world per process; "
                      "use shoal::world for more)");
        g_world = std::make_unique<world_impl>(options);
        g_current.store(g_world.get(), std::memory_order_release);
        g_state.store(state::live);
        publish_device_world(g_world->device_handle());
        return SHOAL_OK;
      },
      -1);
}

int last_code_or(int fallback) { return t_last_code != SHOAL_OK ? t_last_code : fallback; }

}  // namespace

}  // namespace shoal::detail::c_api

namespace capi = shoal::detail::c_api;
using shoal::errc;

// <shoal/world.hpp>: the C++ entry to the default world's device handle (throws, as the C++ API does).
shoal::device_world shoal::default_world_device_handle() {
  return capi::current("shoal::default_world_device_handle").device_handle();
}

extern "C" {

SHOAL_API void shoal_detail_register_device_facade(void (*update)(const void* world, size_t bytes)) {
  if (update == nullptr) return;
  std::lock_guard lock(capi::g_facades_mutex);
  capi::g_facades.push_back(update);
  // A translation unit loaded after init (dlopen) catches up at once.
  auto* w = capi::g_current.load();
  if (w != nullptr && w->device_handle().heap_base != nullptr) update(&w->device_handle(), sizeof(shoal::device_world));
}

void shoal_init(void) { capi::init_with("shoal_init", {}); }

int shoalx_init_status(void) {
  return capi::g_state.load() == capi::state::live ? SHOALX_STATUS_IS_INITIALIZED : SHOALX_STATUS_NOT_INITIALIZED;
}

int shoal_init_thread(int requested, int* provided) {
  int rc = capi::init_with("shoal_init_thread", {});
  if (provided != nullptr) *provided = rc == SHOAL_OK ? SHOAL_THREAD_MULTIPLE : SHOAL_THREAD_SINGLE;
  return rc == SHOAL_OK ? 0 : capi::last_code_or(rc);
}

void shoal_query_thread(int* provided) {
  capi::guarded_void("shoal_query_thread", [&] {
    SHOAL_CHECK_ARG(provided != nullptr, "shoal_query_thread", "provided is null");
    *provided = capi::g_state.load() == capi::state::live ? SHOAL_THREAD_MULTIPLE : SHOAL_THREAD_SINGLE;
  });
}

int shoal_init_attr(const shoal_init_attr_t* attr) {
  const char* call = "shoal_init_attr";
  int rc = capi::guarded(
      call,
      [&] {
        SHOAL_CHECK_ARG(attr != nullptr, call, "attr is null");
        SHOAL_CHECK_ARG(attr->version == SHOAL_INIT_ATTR_VERSION, call, "attr->version={} is not {}", attr->version,
                        SHOAL_INIT_ATTR_VERSION);
        shoal::init_options options;
        options.rank = attr->rank;
        options.size = attr->size;
        options.unique_id = shoal::detail::unique_id::from_bytes(attr->uid.internal, "attr->uid").to_string();
        return capi::init_with(call, options);
      },
      -1);
  return rc == SHOAL_OK ? 0 : capi::last_code_or(SHOAL_ERR_INTERNAL);
}

int shoal_get_uniqueid(shoal_uniqueid_t* uid) {
  const char* call = "shoal_get_uniqueid";
  int rc = capi::guarded(
      call,
      [&] {
        SHOAL_CHECK_ARG(uid != nullptr, call, "uid is null");
        auto id = shoal::detail::unique_id::parse(shoal::make_unique_id(), "shoal_get_uniqueid");
        std::memset(uid->internal, 0, sizeof(uid->internal));
        id.to_bytes(uid->internal);
        return SHOAL_OK;
      },
      -1);
  return rc == SHOAL_OK ? 0 : capi::last_code_or(SHOAL_ERR_INTERNAL);
}

void shoal_finalize(void) {
  capi::guarded_void("shoal_finalize", [] {
    std::lock_guard lock(capi::g_init_mutex);
    capi::current("shoal_finalize");
    capi::g_current.store(nullptr);
    capi::g_state.store(capi::state::finalized);
    capi::publish_device_world(shoal::device_world{});
    auto w = std::move(capi::g_world);
    try {
      w->finalize();
    } catch (const shoal::error& e) {
      // No current world any more for report(): stop the others here, with this PE's reason.
      if (capi::g_error_mode.load() == SHOAL_ERRORS_RETURN) throw;
      std::fprintf(stderr, "shoal: error: %s\n", e.what());
      w->stop_on_error(e.what());
    }
  });
}

void shoal_global_exit(int status) {
  shoal::detail::world_impl* w = capi::g_current.load();
  std::fflush(nullptr);
  if (w != nullptr) w->global_exit(status);
  ::_exit(status);
}

int shoal_my_pe(void) {
  return capi::guarded(
      "shoal_my_pe", [] { return capi::current("shoal_my_pe").my_pe(); }, -1);
}
int shoal_n_pes(void) {
  return capi::guarded(
      "shoal_n_pes", [] { return capi::current("shoal_n_pes").n_pes(); }, -1);
}

const char* shoalx_backend_name(void) {
  shoal::detail::world_impl* w = capi::g_current.load();
  return w != nullptr ? w->backend_name() : "";
}

void shoal_info_get_version(int* major, int* minor) {
  if (major != nullptr) *major = SHOAL_MAJOR_VERSION;
  if (minor != nullptr) *minor = SHOAL_MINOR_VERSION;
}
void shoal_info_get_name(char* name) {
  // Exactly SHOAL_VENDOR_STRING, as OpenSHMEM asks of shmem_info_get_name (shoal::version() has the release).
  if (name != nullptr) std::snprintf(name, SHOAL_MAX_NAME_LEN, "%s", SHOAL_VENDOR_STRING);
}

int shoal_set_error_mode(int mode) {
  if (mode != SHOAL_ERRORS_ABORT && mode != SHOAL_ERRORS_RETURN) {
    capi::report(shoal::error(errc::invalid_argument, "shoal_set_error_mode",
                              fmt::format("mode={} is neither SHOAL_ERRORS_ABORT nor SHOAL_ERRORS_RETURN", mode)));
    return capi::g_error_mode.load();
  }
  return capi::g_error_mode.exchange(mode);
}
int shoal_last_error(const char** message) {
  if (message != nullptr) *message = capi::t_last_message.c_str();
  return capi::t_last_code;
}
void shoal_clear_error(void) {
  capi::t_last_code = SHOAL_OK;
  capi::t_last_message.clear();
}

void* shoal_malloc(size_t num_bytes) {
  const char* call = "shoal_malloc";
  return capi::guarded(
      call, [&] { return capi::current(call).memory().malloc(call, num_bytes, 16, false); }, (void*)nullptr);
}
void* shoal_calloc(size_t count, size_t elem_bytes) {
  const char* call = "shoal_calloc";
  return capi::guarded(
      call,
      [&] { return capi::current(call).memory().malloc(call, capi::total_bytes(call, count, elem_bytes), 16, true); },
      (void*)nullptr);
}
void* shoal_align(size_t alignment, size_t num_bytes) {
  const char* call = "shoal_align";
  return capi::guarded(
      call, [&] { return capi::current(call).memory().malloc(call, num_bytes, alignment, false); }, (void*)nullptr);
}
void* shoal_realloc(void* ptr, size_t num_bytes) {
  const char* call = "shoal_realloc";
  return capi::guarded(
      call, [&] { return capi::current(call).memory().realloc(call, ptr, num_bytes); }, (void*)nullptr);
}
void shoal_free(void* ptr) {
  const char* call = "shoal_free";
  capi::guarded_void(call, [&] { capi::current(call).memory().free(call, ptr); });
}
void* shoal_ptr(const void* dest, int pe) {
  const char* call = "shoal_ptr";
  return capi::guarded(
      call, [&] { return capi::current(call).memory().ptr(dest, pe); }, (void*)nullptr);
}
int shoal_pe_accessible(int pe) {
  const char* call = "shoal_pe_accessible";
  return capi::guarded(call, [&] {
    auto& w = capi::current(call);
    return pe >= 0 && pe < w.n_pes() && w.transport().accessible(pe) ? 1 : 0;
  });
}
int shoal_addr_accessible(const void* addr, int pe) {
  const char* call = "shoal_addr_accessible";
  return capi::guarded(call, [&] {
    auto& w = capi::current(call);
    return w.memory().accessible(addr, pe) ? 1 : 0;  // reachable peer and a live symmetric allocation
  });
}

void shoal_fence(void) {
  capi::guarded_void("shoal_fence", [] { capi::current("shoal_fence").rma().fence("shoal_fence"); });
}
void shoal_quiet(void) {
  capi::guarded_void("shoal_quiet", [] { capi::current("shoal_quiet").rma().quiet("shoal_quiet"); });
}
void shoal_barrier_all(void) {
  capi::guarded_void("shoal_barrier_all",
                     [] { capi::current("shoal_barrier_all").sync().barrier_all("shoal_barrier_all"); });
}
void shoal_sync_all(void) {
  capi::guarded_void("shoal_sync_all", [] { capi::current("shoal_sync_all").sync().sync_all("shoal_sync_all"); });
}

uint64_t shoal_signal_fetch(const uint64_t* sig_addr) {
  const char* call = "shoal_signal_fetch";
  return capi::guarded(
      call, [&] { return capi::current(call).rma().signal_fetch(call, sig_addr); }, uint64_t{0});
}
uint64_t shoal_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  const char* call = "shoal_signal_wait_until";
  return capi::guarded(
      call, [&] { return capi::current(call).rma().signal_wait_until(call, sig_addr, cmp, cmp_value); }, uint64_t{0});
}
void shoalx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  const char* call = "shoalx_signal_op";
  capi::guarded_void(call, [&] { capi::current(call).rma().signal_op(call, sig_addr, signal, sig_op, pe); });
}
void shoalx_signal_counted_reset(uint64_t* sig_addr) {
  const char* call = "shoalx_signal_counted_reset";
  capi::guarded_void(call, [&] {
    auto& world = capi::current(call);
    world.rma().signal_op(call, sig_addr, 0, SHOAL_SIGNAL_SET, world.my_pe());
  });
}

}  // extern "C"

namespace {
std::mutex g_buffers_mutex;
std::map<uintptr_t, size_t> g_buffers;  // registered local ranges: start -> nbytes
}  // namespace

extern "C" {

const char* shoalx_status_string(int code) {
  static constexpr std::array<const char*, 11> names = {
      "SHOAL_OK",           "SHOAL_ERR_INVALID_ARGUMENT", "SHOAL_ERR_NOT_INITIALIZED", "SHOAL_ERR_OUT_OF_MEMORY",
      "SHOAL_ERR_MISMATCH", "SHOAL_ERR_TIMEOUT",          "SHOAL_ERR_PEER_FAILURE",    "SHOAL_ERR_SYSTEM",
      "SHOAL_ERR_CUDA",     "SHOAL_ERR_UNSUPPORTED",      "SHOAL_ERR_INTERNAL"};
  return code >= 0 && code < int(names.size()) ? names[size_t(code)] : "unknown";
}

int shoalx_buffer_register(void* addr, size_t nbytes) {
  const char* call = "shoalx_buffer_register";
  return capi::guarded(
      call,
      [&] {
        (void)capi::current(call);
        SHOAL_CHECK_ARG(addr != nullptr && nbytes > 0, call, "addr={} nbytes={}: not a buffer", addr, nbytes);
        const auto start = reinterpret_cast<uintptr_t>(addr);
        std::lock_guard lock(g_buffers_mutex);
        auto next = g_buffers.lower_bound(start);
        SHOAL_CHECK_ARG(next == g_buffers.end() || next->first >= start + nbytes, call,
                        "[{}, +{}) overlaps a registered buffer", addr, nbytes);
        SHOAL_CHECK_ARG(next == g_buffers.begin() || std::prev(next)->first + std::prev(next)->second <= start, call,
                        "[{}, +{}) overlaps a registered buffer", addr, nbytes);
        g_buffers.emplace(start, nbytes);
        return int(SHOAL_OK);
      },
      int(SHOAL_ERR_INTERNAL));
}

int shoalx_buffer_unregister(void* addr) {
  const char* call = "shoalx_buffer_unregister";
  return capi::guarded(
      call,
      [&] {
        std::lock_guard lock(g_buffers_mutex);
        SHOAL_CHECK_ARG(g_buffers.erase(reinterpret_cast<uintptr_t>(addr)) == 1, call,
                        "addr={} is not the start of a registered buffer", addr);
        return int(SHOAL_OK);
      },
      int(SHOAL_ERR_INTERNAL));
}

void shoalx_buffer_unregister_all(void) {
  std::lock_guard lock(g_buffers_mutex);
  g_buffers.clear();
}

}  // extern "C"
