// The UCX engine's setup and public calls: the context, worker and proxy thread, the worker addresses
// exchange and the endpoints (constructor), and each public call as a descriptor in the request ring.
// The engine's parts live beside it (ucx_engine_state.hpp names them).
#include "transport/proxy/ucx_engine.hpp"

#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <ucp/api/ucp.h>

#ifdef SHOAL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "bootstrap/launch_env.hpp"
#include "common/check.hpp"
#include "common/env.hpp"
#include "transport/proxy/ucx_engine_state.hpp"

namespace shoal::detail {

[[noreturn]] void fail_ucx(std::string_view call, std::string_view what, int pe, ucs_status_t status) {
  if (pe >= 0) SHOAL_THROW(errc::system, call, "{} to PE {} failed: {}", what, pe, ucs_status_string(status));
  SHOAL_THROW(errc::system, call, "{} failed: {}", what, ucs_status_string(status));
}

// The ring's AMO codes are the engine's (ucx_engine::atomic puts one into a descriptor as it is).
static_assert(static_cast<int>(ucx_amo::add) == static_cast<int>(proxy_amo::add) &&
              static_cast<int>(ucx_amo::swap) == static_cast<int>(proxy_amo::swap) &&
              static_cast<int>(ucx_amo::cswap) == static_cast<int>(proxy_amo::cswap) &&
              static_cast<int>(ucx_amo::and_) == static_cast<int>(proxy_amo::and_) &&
              static_cast<int>(ucx_amo::or_) == static_cast<int>(proxy_amo::or_) &&
              static_cast<int>(ucx_amo::xor_) == static_cast<int>(proxy_amo::xor_));

ucx_engine::ucx_engine(bootstrap& boot, const std::vector<int>& peers, bool gpu_heap)
    : s_(std::make_unique<state>()), boot_(boot) {
  constexpr std::string_view call = "shoal_init";
  const int n_pes = boot.size();
  s_->timeout = env::get_ms("SHOAL_WAIT_TIMEOUT");
  // Fewer than two cores per PE on this node (the launcher's local size): the proxy thread stays away longer.
  if (const int local = detect_launch_env().local_size; local > 0) {
    const unsigned cores = std::thread::hardware_concurrency();
    if (cores > 0 && cores < 2u * static_cast<unsigned>(local))
      s_->driven_window_ns = std::chrono::nanoseconds(state::kDrivenRecentlyCrowded).count();
  }
  s_->eps.assign(n_pes, nullptr);
  s_->rkeys.assign(n_pes, nullptr);
  s_->bases.assign(n_pes, 0);

  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) fail_ucx(call, "ucp_config_read", -1, st);
  s_->protocols_v2 = runs_protocols_v2(config);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP | UCP_FEATURE_AM;
  st = ucp_init(&params, config, &s_->context);
  ucp_config_release(config);
  if (st != UCS_OK) fail_ucx(call, "ucp_init", -1, st);

  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  st = ucp_context_query(s_->context, &attr);
  if (st != UCS_OK) fail_ucx(call, "ucp_context_query", -1, st);
  if (gpu_heap && (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) == 0)
    SHOAL_THROW(errc::unsupported, call,
                "PE {}: its heap is GPU memory, which the proxy transport reaches only through a CUDA-capable UCX, "
                "and the UCX in use (version {}) has no CUDA support; use a UCX built with CUDA (e.g. the "
                "libucx-cu13 wheel, scripts/ucx_wheel.sh) or SHOAL_BACKEND=host",
                boot.rank(), ucp_get_version_string());
  s_->gpu_heap = gpu_heap;

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // one thread at a time: state::driving
  st = ucp_worker_create(s_->context, &wparams, &s_->worker);
  if (st != UCS_OK) fail_ucx(call, "ucp_worker_create", -1, st);
  st = ucp_worker_get_efd(s_->worker, &s_->worker_fd);
  if (st != UCS_OK) fail_ucx(call, "ucp_worker_get_efd", -1, st);
  s_->doorbell = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s_->doorbell < 0) SHOAL_THROW(errc::system, call, "eventfd failed: {}", std::strerror(errno));

  // Worker addresses: all-gather the lengths, then the addresses padded to the longest.
  ucp_address_t* address = nullptr;
  size_t address_nbytes = 0;
  st = ucp_worker_get_address(s_->worker, &address, &address_nbytes);
  if (st != UCS_OK) fail_ucx(call, "ucp_worker_get_address", -1, st);
  std::vector<uint64_t> lengths(n_pes);
  uint64_t mine = address_nbytes;
  boot.allgather(&mine, lengths.data(), sizeof(mine), call);
  uint64_t longest = 0;
  for (uint64_t l : lengths) longest = std::max(longest, l);
  std::vector<char> padded(longest), all(longest * n_pes);
  std::memcpy(padded.data(), address, address_nbytes);
  ucp_worker_release_address(s_->worker, address);
  boot.allgather(padded.data(), all.data(), longest, call);

  s_->my_pe = boot.rank();
  s_->stats.on = env::get_bool("SHOAL_PROXY_STATS");
  const char* payload_test = std::getenv("SHOAL_TEST_PROXY_PAYLOAD");
  s_->host_payload = payload_test != nullptr && std::strcmp(payload_test, "1") == 0;
  s_->make_ring(gpu_heap, boot.rank());
  // GPU heaps: AMOs applied by the owner. SHOAL_TEST_PROXY_AMO_BY_OWNER=1 takes that route on host
  // heaps too (CPU atomics at the owner), so the CPU suites exercise the protocol.
  const char* by_owner_test = std::getenv("SHOAL_TEST_PROXY_AMO_BY_OWNER");
  if (gpu_heap || (by_owner_test != nullptr && std::strcmp(by_owner_test, "1") == 0)) {
    s_->amo_by_owner = true;
  }
  // Owner-applied AMOs, and put-with-signal as one message on host heaps (active messages).
  {
    int device = 0;
#ifdef SHOAL_HAVE_CUDA
    if (gpu_heap) cudaGetDevice(&device);
#endif
    if (gpu_heap) s_->cuda_device = device;
    // GPU heaps: puts and gets staged through active messages (UCX's software RMA over TCP would touch
    // the VMM heap's device memory itself). SHOAL_TEST_PROXY_STAGED=1 takes that route on host heaps
    // (memcpy at both ends), so the CPU suites exercise the protocol.
    const char* staged_test = std::getenv("SHOAL_TEST_PROXY_STAGED");
    const bool staged_on_host = staged_test != nullptr && std::strcmp(staged_test, "1") == 0;
    s_->staged_rma = gpu_heap || staged_on_host;
    if (staged_on_host) s_->amo_by_owner = true;
    s_->am =
        std::make_unique<am_atomics>(s_->worker, boot.rank(), device, !gpu_heap, s_->eps, s_->bases, &s_->data_base,
                                     &s_->heap_nbytes, &s_->data_nbytes, &state::on_owner_reply, s_.get());
    const std::string context = env::get_string("SHOAL_PROXY_CUDA_CONTEXT");
    if (context != "private" && context != "primary")
      SHOAL_THROW(errc::invalid_argument, call, "SHOAL_PROXY_CUDA_CONTEXT='{}' is neither 'private' nor 'primary'",
                  context);
    s_->am->use_private_context(context == "private");
    s_->am->bound_waits(s_->timeout);
    // SHOAL_TEST_PROXY_DEFER_COPIES=1 (host heaps): the owner's copies answer from the progress loop, as GPU heaps'
    // asynchronous copies do, so the CPU suites run those paths.
    const char* defer_test = std::getenv("SHOAL_TEST_PROXY_DEFER_COPIES");
    if (!gpu_heap && defer_test != nullptr && std::strcmp(defer_test, "1") == 0) s_->am->defer_host_copies(true);
    s_->am->count_work(s_->stats.on);
    // Now, not at the first atomic from a peer: that one may come while a kernel here spins on the very
    // word it sets, and the atomic kernel's first launch (its lazy load) would wait for that kernel.
    if (const std::string err = s_->am->prepare(); !err.empty())
      SHOAL_THROW(errc::system, call, "PE {}: preparing the owner-applied atomics on its GPU failed: {}", boot.rank(),
                  err);
  }
  s_->thread = std::thread([s = s_.get()] { s->run(); });
  s_->hooked = progress_hooks::add(&state::progress_hook, s_.get());
  s_->on_thread([&] {
    for (int pe : peers) {
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
      ep.address = reinterpret_cast<const ucp_address_t*>(all.data() + pe * longest);
      ucs_status_t est = ucp_ep_create(s_->worker, &ep, &s_->eps[pe]);
      if (est != UCS_OK) fail_ucx(call, "ucp_ep_create", pe, est);
    }
    s_->choose_direct(call);
  });
}

// Everything is released by ~state (also when the constructor failed half-way).
ucx_engine::~ucx_engine() = default;

void ucx_engine::register_heap(char* base, uint64_t nbytes, std::string_view call) {
  flush(call);
  s_->register_region(boot_, base, nbytes, s_->gpu_heap ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST,
                      "the symmetric heap", call, s_->memh, s_->heap_base, s_->heap_nbytes, s_->rkeys, s_->bases);
}

void ucx_engine::register_data(const void* base, uint64_t nbytes, std::string_view call) {
  s_->register_region(boot_, const_cast<void*>(base), nbytes, UCS_MEMORY_TYPE_HOST,
                      "the data segment (global and static variables)", call, s_->data_memh, s_->data_base,
                      s_->data_nbytes, s_->data_rkeys, s_->data_bases);
}

namespace {
proxy_desc rma_desc(proxy_op op, int pe, uint64_t offset, const void* local, size_t nbytes) {
  proxy_desc d{};
  d.op = op, d.pe = pe, d.offset = offset, d.local = reinterpret_cast<uint64_t>(local), d.nbytes = nbytes;
  return d;
}
}  // namespace

void ucx_engine::put(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) {
  if (s_->carried_put(nbytes))
    return s_->post_carried(call, "ucp_put_nbx", rma_desc(proxy_op::put, pe, offset, nullptr, nbytes), source);
  s_->call(call, "ucp_put_nbx", rma_desc(proxy_op::put, pe, offset, source, nbytes));
}

void ucx_engine::get(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) {
  if (s_->carried_get(nbytes))
    return s_->get_carried(call, "ucp_get_nbx", rma_desc(proxy_op::get, pe, offset, nullptr, nbytes), dest);
  s_->call(call, "ucp_get_nbx", rma_desc(proxy_op::get, pe, offset, dest, nbytes));
}

void ucx_engine::put_nbi(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) {
  if (s_->carried_put(nbytes))
    return s_->post_carried(call, "ucp_put_nbx", rma_desc(proxy_op::put, pe, offset, nullptr, nbytes), source);
  s_->post_nbi(call, "ucp_put_nbx", rma_desc(proxy_op::put, pe, offset, source, nbytes));
}

void ucx_engine::get_nbi(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) {
  s_->post_nbi(call, "ucp_get_nbx", rma_desc(proxy_op::get, pe, offset, dest, nbytes));
}

void ucx_engine::atomic(std::string_view call, int pe, uint64_t offset, ucx_amo op, size_t nbytes, const void* value,
                        void* reply) {
  proxy_desc d{};
  d.op = proxy_op::amo, d.amo = static_cast<uint8_t>(op), d.pe = pe, d.offset = offset, d.nbytes = nbytes;
  std::memcpy(&d.operand, value, nbytes);
  if (reply != nullptr) std::memcpy(&d.compare, reply, nbytes);  // cswap's new value (UCP's convention)
  const uint64_t fetched = s_->call(call, "ucp_atomic_op_nbx", d);
  if (reply != nullptr) std::memcpy(reply, &fetched, nbytes);
}

void ucx_engine::put_signal(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes,
                            uint64_t sig_offset, uint64_t signal, ucx_amo op) {
  proxy_desc d{};
  d.op = proxy_op::put_signal, d.amo = static_cast<uint8_t>(op), d.pe = pe, d.offset = offset;
  d.local = reinterpret_cast<uint64_t>(source), d.nbytes = nbytes, d.operand = signal, d.compare = sig_offset;
  if (s_->carried_put(nbytes)) return s_->post_carried(call, "ucp_put_nbx + signal", d, source);
  s_->call(call, "ucp_put_nbx + signal", d);
}

void ucx_engine::flush(std::string_view call) {
  proxy_desc d{};
  d.op = proxy_op::quiet, d.pe = -1;
  s_->call(call, "ucp_worker_flush_nbx", d);
}

void ucx_engine::close(std::string_view call) {
  flush(call);
  if (s_->stats.on) {
    const auto& st = s_->stats;
    const auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
    std::fprintf(
        stderr,
        "shoal: PE %d: proxy stats: %llu descriptors (%llu messages gathered from carried runs); %llu drives (%llu "
        "busy): ring %.1f ms, UCX progress %.1f ms, copy reports %.1f ms; %llu naps %.1f ms%s\n",
        boot_.rank(), static_cast<unsigned long long>(st.descriptors), static_cast<unsigned long long>(st.run_messages),
        static_cast<unsigned long long>(st.drives), static_cast<unsigned long long>(st.busy_drives), ms(st.ring_ns),
        ms(st.progress_ns), ms(st.copies_ns), static_cast<unsigned long long>(st.naps), ms(st.nap_ns),
        s_->am != nullptr ? s_->am->stats().c_str() : "");
  }
  for (int pe = 0; pe < boot_.size(); ++pe) {
    if (s_->eps[pe] == nullptr) continue;
    s_->issue(call, "ucp_ep_close_nbx", pe, [s = s_.get(), pe](ucp_request_param_t& param) {
      ucp_ep_h ep = s->eps[pe];
      s->eps[pe] = nullptr;
      return ucp_ep_close_nbx(ep, &param);
    });
  }
  boot_.barrier(call);
}

proxy_ring* ucx_engine::device_ring() const { return s_->device_ring; }

proxy_ring_shape ucx_engine::device_ring_shape() const {
  if (s_->device_ring == nullptr) return {};
  return {s_->ring->slots, s_->ring->payload};
}

std::string ucx_engine::transports(int pe) {
  std::string text;
  s_->on_thread([&] {
    if (s_->eps[pe] == nullptr) return;
    for (const std::string& name : lane_transports(s_->eps[pe])) text += (text.empty() ? "" : ",") + name;
  });
  return text;
}

}  // namespace shoal::detail
