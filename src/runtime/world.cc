#include <cstdio>
#include <map>
#include <mutex>

#include "common/check.hpp"
#include "runtime/registry.hpp"
#include "runtime/world_impl.hpp"

namespace shoal {

namespace {
std::mutex g_listeners_mutex;
std::map<std::array<uint8_t, 16>, int> g_listeners;  // secret -> listening fd
}  // namespace

namespace detail {
int take_listener(const unique_id& uid) {
  std::lock_guard lock(g_listeners_mutex);
  auto it = g_listeners.find(uid.secret);
  if (it == g_listeners.end()) return -1;
  int fd = it->second;
  g_listeners.erase(it);
  return fd;
}
}  // namespace detail

std::string make_unique_id(const std::string& bind_host) {
  sockaddr_storage addr{};
  int fd = detail::open_listener(bind_host, 0, &addr);
  auto uid = detail::unique_id::generate(addr);
  std::lock_guard lock(g_listeners_mutex);
  g_listeners[uid.secret] = fd;
  return uid.to_string();
}

const char* version() noexcept {
#define SHOAL_STR2(x) #x
#define SHOAL_STR(x) SHOAL_STR2(x)
  return SHOAL_STR(SHOAL_VERSION_MAJOR) "." SHOAL_STR(SHOAL_VERSION_MINOR) "." SHOAL_STR(SHOAL_VERSION_PATCH);
}

const char* to_string(peer_path path) noexcept {
  switch (path) {
    case peer_path::self:
      return "self";
    case peer_path::shared_memory:
      return "shared memory (host)";
    case peer_path::p2p_nvlink:
      return "p2p (NVLink)";
    case peer_path::p2p_pcie:
      return "p2p (PCIe)";
    case peer_path::proxy:
      return "proxy";
    case peer_path::none:
      return "none";
  }
  return "?";
}

world::world(const init_options& options) : impl_(std::make_unique<detail::world_impl>(options)) {}
world::~world() = default;
world::world(world&&) noexcept = default;
world& world::operator=(world&&) noexcept = default;

namespace {
detail::world_impl& live(const std::unique_ptr<detail::world_impl>& impl, const char* call) {
  if (!impl || impl->finalized())
    SHOAL_THROW(errc::not_initialized, call, "this world has been finalized (or moved from)");
  return *impl;
}
}  // namespace

void world::finalize() { live(impl_, "shoal::world::finalize").finalize(); }
int world::my_pe() const { return live(impl_, "shoal::world::my_pe").my_pe(); }
int world::n_pes() const { return live(impl_, "shoal::world::n_pes").n_pes(); }
const char* world::backend_name() const { return live(impl_, "shoal::world::backend_name").backend_name(); }
peer_path world::path_to(int pe) const { return live(impl_, "shoal::world::path_to").path_to(pe); }
std::string world::proxy_transports(int pe) const {
  detail::world_impl& w = live(impl_, "shoal::world::proxy_transports");
  SHOAL_CHECK_ARG(pe >= 0 && pe < w.n_pes(), "shoal::world::proxy_transports", "pe={} is not in 0..{}", pe,
                  w.n_pes() - 1);
  return w.transport().proxy_transports(pe);
}
uint64_t world::heap_reserve_bytes() const {
  return live(impl_, "shoal::world::heap_reserve_bytes").heap().reserve_bytes();
}
uint64_t world::heap_mapped_bytes() const {
  return live(impl_, "shoal::world::heap_mapped_bytes").heap().mapped_bytes();
}
uint64_t world::heap_in_use_bytes() const { return live(impl_, "shoal::world::heap_in_use_bytes").heap_in_use_bytes(); }

void* world::malloc(size_t num_bytes) {
  const char* call = "shoal::world::malloc";
  return live(impl_, call).memory().malloc(call, num_bytes, 16, false);
}
void* world::calloc(size_t count, size_t elem_bytes) {
  const char* call = "shoal::world::calloc";
  size_t total = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(count, elem_bytes, &total), call, "count={} x elem_bytes={} overflows", count,
                  elem_bytes);
  return live(impl_, call).memory().malloc(call, total, 16, true);
}
void* world::align(size_t alignment, size_t num_bytes) {
  const char* call = "shoal::world::align";
  return live(impl_, call).memory().malloc(call, num_bytes, alignment, false);
}
void* world::realloc(void* ptr, size_t num_bytes) {
  const char* call = "shoal::world::realloc";
  return live(impl_, call).memory().realloc(call, ptr, num_bytes);
}
void world::free(void* ptr) {
  const char* call = "shoal::world::free";
  live(impl_, call).memory().free(call, ptr);
}
void* world::ptr(const void* addr, int pe) const { return live(impl_, "shoal::world::ptr").memory().ptr(addr, pe); }
bool world::pe_accessible(int pe) const {
  auto& w = live(impl_, "shoal::world::pe_accessible");
  return pe >= 0 && pe < w.n_pes() && w.transport().accessible(pe);
}
bool world::addr_accessible(const void* addr, int pe) const {
  auto& w = live(impl_, "shoal::world::addr_accessible");
  return w.memory().accessible(addr, pe);  // reachable peer (any path) and a live symmetric allocation
}

void world::put(void* dest, const void* source, size_t num_bytes, int pe) {
  const char* call = "shoal::world::put";
  live(impl_, call).rma().put(call, dest, source, num_bytes, 1, pe);
}
void world::get(void* dest, const void* source, size_t num_bytes, int pe) {
  const char* call = "shoal::world::get";
  live(impl_, call).rma().get(call, dest, source, num_bytes, 1, pe);
}
void world::put_nbi(void* dest, const void* source, size_t num_bytes, int pe) {
  const char* call = "shoal::world::put_nbi";
  live(impl_, call).rma().put(call, dest, source, num_bytes, 1, pe);
}
void world::get_nbi(void* dest, const void* source, size_t num_bytes, int pe) {
  const char* call = "shoal::world::get_nbi";
  live(impl_, call).rma().get(call, dest, source, num_bytes, 1, pe);
}
void world::iput(void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride, size_t num_elems,
                 size_t elem_bytes, int pe) {
  live(impl_, "shoal::world::iput")
      .rma()
      .iput("shoal::world::iput", dest, source, dest_stride, source_stride, num_elems, elem_bytes, pe);
}
void world::iget(void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride, size_t num_elems,
                 size_t elem_bytes, int pe) {
  live(impl_, "shoal::world::iget")
      .rma()
      .iget("shoal::world::iget", dest, source, dest_stride, source_stride, num_elems, elem_bytes, pe);
}
void world::put_signal(void* dest, const void* source, size_t num_bytes, uint64_t* sig_addr, uint64_t signal,
                       int sig_op, int pe) {
  live(impl_, "shoal::world::put_signal")
      .rma()
      .put_signal("shoal::world::put_signal", dest, source, num_bytes, 1, sig_addr, signal, sig_op, pe);
}
void world::signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  const char* call = "shoal::world::signal_op";
  live(impl_, call).rma().signal_op(call, sig_addr, signal, sig_op, pe);
}
uint64_t world::signal_fetch(const uint64_t* sig_addr) {
  const char* call = "shoal::world::signal_fetch";
  return live(impl_, call).rma().signal_fetch(call, sig_addr);
}
uint64_t world::signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t value) {
  const char* call = "shoal::world::signal_wait_until";
  return live(impl_, call).rma().signal_wait_until(call, sig_addr, cmp, value);
}
device_world world::device_handle() const { return live(impl_, "shoal::world::device_handle").device_handle(); }
void world::fence() {
  const char* call = "shoal::world::fence";
  live(impl_, call).rma().fence(call);
}
void world::quiet() {
  const char* call = "shoal::world::quiet";
  live(impl_, call).rma().quiet(call);
}
void world::barrier_all() {
  const char* call = "shoal::world::barrier_all";
  live(impl_, call).sync().barrier_all(call);
}
void world::sync_all() {
  const char* call = "shoal::world::sync_all";
  live(impl_, call).sync().sync_all(call);
}
void world::global_exit(int status) { live(impl_, "shoal::world::global_exit").global_exit(status); }

}  // namespace shoal
