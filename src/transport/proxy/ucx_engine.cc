#include "transport/proxy/ucx_engine.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <ucp/api/ucp.h>

#ifdef SHOAL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "bootstrap/launch_env.hpp"
#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "transport/proxy/am_atomics.hpp"
#include "transport/proxy/ring_consumer.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

namespace {

[[noreturn]] void fail_ucx(std::string_view call, std::string_view what, int pe, ucs_status_t status) {
  if (pe >= 0) SHOAL_THROW(errc::system, call, "{} to PE {} failed: {}", what, pe, ucs_status_string(status));
  SHOAL_THROW(errc::system, call, "{} failed: {}", what, ucs_status_string(status));
}

void on_done(void* request, ucs_status_t status, void* user_data) {
  auto* result = static_cast<std::promise<ucs_status_t>*>(user_data);
  result->set_value(status);
  delete result;
  ucp_request_free(request);
}

static_assert(static_cast<int>(ucx_amo::add) == static_cast<int>(proxy_amo::add) &&
              static_cast<int>(ucx_amo::swap) == static_cast<int>(proxy_amo::swap) &&
              static_cast<int>(ucx_amo::cswap) == static_cast<int>(proxy_amo::cswap) &&
              static_cast<int>(ucx_amo::and_) == static_cast<int>(proxy_amo::and_) &&
              static_cast<int>(ucx_amo::or_) == static_cast<int>(proxy_amo::or_) &&
              static_cast<int>(ucx_amo::xor_) == static_cast<int>(proxy_amo::xor_));

ucp_atomic_op_t to_ucp(ucx_amo op) {
  switch (op) {
    case ucx_amo::add:
      return UCP_ATOMIC_OP_ADD;
    case ucx_amo::swap:
      return UCP_ATOMIC_OP_SWAP;
    case ucx_amo::cswap:
      return UCP_ATOMIC_OP_CSWAP;
    case ucx_amo::and_:
      return UCP_ATOMIC_OP_AND;
    case ucx_amo::or_:
      return UCP_ATOMIC_OP_OR;
    case ucx_amo::xor_:
      return UCP_ATOMIC_OP_XOR;
  }
  return UCP_ATOMIC_OP_LAST;
}

// After work the proxy thread polls the idle worker without pause for kSpin, then with a
// sched_yield between rounds up to kSpinYield, then sleeps on the event fds; kSleepMs is the
// longest sleep (a safety net: arming makes the worker's fd report every incoming event), 1 ms
// while UCX requests are in flight. A wake-up from poll() costs tens of microseconds on a virtual
// machine, more than a round trip over TCP, so requests that keep arriving every few tens of
// microseconds are served by a polling thread. While requests are that close together it yields
// only every kYieldEvery-th round (a yield on a core busy with an unrelated thread gives the CPU away
// for a time slice), but it does yield: the thread that sends the next request -- a peer PE's, on
// a machine with fewer cores than polling threads -- may share this core, and a poll that never
// yields keeps it off the core for all of kSpin (a self-sustaining ~270 us per round trip, seen on
// the 2-core VM in about one run in four). Host waits (host_poll, backoff) yield the same way.
constexpr auto kSpin = std::chrono::microseconds(250);
constexpr uint32_t kYieldEvery = 2;
constexpr auto kSpinYield = std::chrono::microseconds(1000);
constexpr int kSleepMs = 100;
constexpr int kSleepInFlightMs = 1;
// While host threads drive the worker themselves (their own requests, or progress from a wait,
// which then polls for progress_hooks::kHotWindow), the proxy thread stays out of their way: it
// naps on the doorbell only, without watching the worker's fd, until their window would end (the
// driven window after the last host drive; at least kDrivenNapMinNs), and looks again. So it wakes
// once per window while they keep driving. The window is kDrivenRecently, or kDrivenRecentlyCrowded on
// a node with fewer cores than two per PE: there each wake-up of a proxy thread takes a core from a
// polling thread. With a wake-up every 50 us (before session 20) the 2-core CI VM lost 4-5 us per
// fetch_add and 4-8 us per put + quiet to them. A longer window only delays the proxy's taking over
// after host threads stop driving (their requests still in flight progress when it does).
constexpr auto kDrivenRecently = progress_hooks::kHotWindow;
constexpr auto kDrivenRecentlyCrowded = std::chrono::microseconds(1000);
constexpr long kDrivenNapMinNs = 50'000;
// With a device-mapped ring (GPU heaps), kernels post without a doorbell: the idle proxy thread
// checks the ring's ticket counter between short sleeps instead (kRingNap; the thread's timer slack
// is lowered so that a nap stays close to it).
constexpr long kRingNapNs = 30'000;
constexpr unsigned long kTimerSlackNs = 5'000;
// Descriptors in the request ring (a power of two).
constexpr uint32_t kRingSlots = 256;
// Bytes of each slot's payload area in a device-mapped ring (1 MiB of pinned memory in all): kernels' puts and
// blocking gets carry their data there (SHOAL_PROXY_PAYLOAD_MAX), so the proxy stages nothing from GPU memory.
constexpr uint32_t kRingPayload = 4096;
// Host heaps: put-with-signal of at most this many bytes travels as one active message.
constexpr uint64_t kPutSignalMessageMax = 8192;
// A run of carried put pieces (kProxyRun) is sent in messages of at most this many bytes: as much as one of the
// owner's asynchronous landing copies takes.
constexpr uint64_t kCarriedRunMessage = owner_amo::kAsyncBytes;
// SHOAL_TEST_PROXY_PAYLOAD=1: host puts of up to this many payload areas are carried (in runs of pieces).
constexpr uint32_t kHostCarriedPieces = 24;

// What `print` (a UCX print call) writes to a FILE, as a string.
template <class Print>
std::string printed(Print&& print) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* stream = ::open_memstream(&buffer, &size);
  if (stream == nullptr) return {};
  print(stream);
  std::fclose(stream);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

// The transports of `ep`'s lanes ("tcp/lo", "rc_mlx5/mlx5_0:1", ...), once each, from
// ucp_ep_print_info's lane lines ("lane[0]:  0:tcp/lo.0 md[0] ...").
std::vector<std::string> lane_transports(ucp_ep_h ep) {
  std::vector<std::string> names;
  const std::string info = printed([&](FILE* stream) { ucp_ep_print_info(ep, stream); });
  for (size_t at = info.find("lane["); at != std::string::npos; at = info.find("lane[", at + 1)) {
    const size_t colon = info.find(':', info.find(']', at));
    const size_t start = info.find_first_not_of(' ', colon + 1);
    if (colon == std::string::npos || start == std::string::npos) break;
    const size_t end = info.find_first_of(" \n", start);
    std::string name = info.substr(start, end - start);
    name = name.substr(name.find(':') + 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// True when the UCX context runs its v2 protocols (UCX_PROTO_ENABLE=y: the default from UCX 1.16).
bool runs_protocols_v2(const ucp_config_t* config) {
  return printed([&](FILE* stream) {
           ucp_config_print(config, stream, nullptr, UCS_CONFIG_PRINT_CONFIG);
         }).find("PROTO_ENABLE=y") != std::string::npos;
}

}  // namespace

struct ucx_engine::state {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int worker_fd = -1;
  int doorbell = -1;
  std::vector<ucp_ep_h> eps;      // per PE; nullptr for self and load/store peers
  std::vector<ucp_rkey_h> rkeys;  // per PE, for the current registration
  std::vector<uint64_t> bases;    // per PE: its heap's address in its own process
  ucp_mem_h memh = nullptr;
  uint64_t heap_base = 0, heap_nbytes = 0;  // this PE's registered heap
  // The shared data segments (global and static variables; register_data): per PE, like the heap's.
  std::vector<ucp_rkey_h> data_rkeys;
  std::vector<uint64_t> data_bases;
  ucp_mem_h data_memh = nullptr;
  uint64_t data_base = 0, data_nbytes = 0;  // this PE's
  bool gpu_heap = false;                    // the heap is CUDA memory (registered as such)
  int cuda_device = -1;                     // GPU heaps: the heap's CUDA device (current while driving)
  bool staged_rma = false;                  // GPU heaps: puts and gets travel as active messages, staged at both ends
  int my_pe = -1;
  std::chrono::milliseconds timeout{0};
  // Puts issued since the last ucp_worker_fence (proxy thread only): a get or an atomic after them
  // fences first, so put-then-signal and put-then-get keep their order on any UCX transport.
  bool puts_unfenced = false;
  // Put-with-signal messages (am_atomics) sent since the last settle: a get or an atomic after them
  // waits for their answers first, as it fences after puts.
  bool ams_unsettled = false;
  // Direct puts (start_am_put) sent since the last settle; see there.
  bool direct_puts_unsettled = false;
  // Host heaps, per PE: puts and gets of at least this many bytes travel as direct active messages,
  // received straight into place (SHOAL_PROXY_AM_BYTES; kNever: never). See choose_direct.
  static constexpr uint64_t kNever = ~uint64_t{0};
  std::vector<uint64_t> am_put_min, am_get_min;
  bool protocols_v2 = true;  // the context's UCX_PROTO_ENABLE

  ucs_status_t fence_after_puts() {
    if (ams_unsettled) {  // a put-with-signal message: applied by its owner outside UCX's ordering
      ams_unsettled = false;
      if (ucs_status_t st = settle_owner_amos(); st != UCS_OK) return st;
    }
    if (!puts_unfenced) return UCS_OK;
    puts_unfenced = false;
    return ucp_worker_fence(worker);
  }

  // The request ring: every put, get, atomic, fence and quiet of this PE, host- or device-initiated,
  // goes through it in ticket order. GPU heaps: pinned, device-mapped host memory (device_ring is
  // its address for kernels); host heaps: plain memory (device_ring nullptr).
  std::unique_ptr<char, decltype(&std::free)> ring_memory{nullptr, &std::free};
  proxy_ring* ring = nullptr;
  proxy_ring* device_ring = nullptr;
  bool ring_pinned = false;
  std::unique_ptr<ring_consumer> consumer;
  // Host producers put (and get, blocking) through the ring's payload areas too, as kernels do on GPU heaps
  // (SHOAL_TEST_PROXY_PAYLOAD=1: the CPU suites' cover of that protocol).
  bool host_payload = false;
  // SHOAL_PROXY_STATS=1: where this PE's drivers spent their time (one driver at a time: the worker's lock), printed
  // by close(). ring: taking and issuing descriptors (a put's staging copy included); progress: ucp_worker_progress
  // (active-message handlers included: the owner's side of puts, gets and atomics); copies: reporting the owner's
  // asynchronous copies; naps: the proxy thread's sleeps.
  struct stats_t {
    bool on = false;
    uint64_t drives = 0, busy_drives = 0, descriptors = 0, naps = 0, run_messages = 0;
    int64_t ring_ns = 0, progress_ns = 0, copies_ns = 0, nap_ns = 0;
  } stats;
  // The first failure of a descriptor nobody waits on: reported by the next quiet.
  ucs_status_t async_error = UCS_OK;
  // GPU heaps: every AMO (signals included) is applied by the owning PE (am_atomics); nullptr for
  // host heaps, whose AMOs are UCX atomics.
  std::unique_ptr<am_atomics> am;
  bool amo_by_owner = false;  // every AMO (signals included) goes to its owner through `am`

  std::mutex mutex;
  std::deque<std::function<void()>> queue;
  std::atomic<bool> stop{false};
  std::thread thread;

  // Who may touch the worker (UCS_THREAD_MODE_SERIALIZED) and consume the ring: the holder of
  // `driving` -- the proxy thread, a host thread driving its own request (call()), or a host thread
  // progressing from a wait (progress_hooks). Taken with try_drive() only, never waited for: a
  // thread that cannot take it knows the holder drains the ring, its descriptor included.
  std::atomic<bool> driving{false};
  // steady_clock nanoseconds of the last drive by a host thread (the proxy thread naps meanwhile),
  // and of the last drive by anyone that moved traffic (a host wait then keeps polling: the answer
  // it waits for may be on its way, and whoever drives puts it into memory).
  std::atomic<int64_t> host_drove_ns{0};
  std::atomic<int64_t> traffic_ns{0};
  // How long after a host thread's last drive the proxy thread stays out of the way (kDrivenRecently, or
  // kDrivenRecentlyCrowded with fewer than two cores per PE on this node).
  int64_t driven_window_ns = std::chrono::nanoseconds(kDrivenRecently).count();
  // UCX requests issued and not completed (under `driving`): the proxy thread sleeps shorter then.
  int64_t requests_in_flight = 0;
  bool hooked = false;  // registered with progress_hooks

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  bool try_lock() {
    return !driving.load(std::memory_order_relaxed) && !driving.exchange(true, std::memory_order_acquire);
  }
  void unlock() { driving.store(false, std::memory_order_release); }
  // Under `driving`: issues every committed descriptor and progresses the worker until it is idle
  // (the proxy thread), or once (`once`: a host thread that polls for an answer or a memory word checks
  // it after each progress call, as ucx_perftest does; over TCP each call is an epoll_wait, and a
  // second one on the way to the check costs ~1 us per hop); true when anything happened.
  bool drive(bool once = false) {
    const int64_t t0 = stats.on ? now_ns() : 0;
    bool any = drain_ring();
    const int64_t t1 = stats.on ? now_ns() : 0;
    while (ucp_worker_progress(worker) != 0) {
      any = true;
      if (once) break;
    }
    const int64_t t2 = stats.on ? now_ns() : 0;
    // The owner's copies that landed: their answers go out. Copies still in flight keep the driver busy (they land
    // within microseconds; a nap would delay their answers).
    if (am != nullptr && (am->poll() || am->copies_pending() > 0)) any = true;
    if (stats.on) {
      ++stats.drives;
      stats.busy_drives += any ? 1 : 0;
      stats.ring_ns += t1 - t0;
      stats.progress_ns += t2 - t1;
      stats.copies_ns += now_ns() - t2;
    }
    return any;
  }
  // drive(once) from a host thread of the program, whose current CUDA device may be another or none: UCX's
  // cuda_copy stages GPU heap data through the calling thread's current context, and with no context
  // (or another device's) it fails or crashes on the heap's VMM memory. The heap's GPU is current for
  // the drive only. (The proxy thread makes it current once, in run().)
  bool drive_on_heap_device() {
#ifdef SHOAL_HAVE_CUDA
    int previous = -1;
    if (cuda_device >= 0 && (cudaGetDevice(&previous) != cudaSuccess || previous != cuda_device)) {
      (void)cudaGetLastError();
      if (cudaSetDevice(cuda_device) == cudaSuccess) {
        const bool any = drive(true);
        if (previous >= 0) cudaSetDevice(previous);
        return any;
      }
    }
#endif
    return drive(true);
  }
  // A host thread's drive: false when another thread holds the worker (it drains the ring too).
  // `progressed` (optional) says whether anything happened. `polling`: the caller polls without
  // pause until its request is answered (call()), so the proxy thread may leave the worker to it;
  // so does a host wait that moved traffic (progress_hook: its backoff then stays in its fast phase).
  // A wait that found nothing pauses between rounds and leaves the proxy thread watching.
  bool try_drive(bool* progressed = nullptr, bool polling = false) {
    if (!try_lock()) return false;
    const bool any = drive_on_heap_device();
    if (polling || any) {
      const int64_t now = now_ns();
      host_drove_ns.store(now, std::memory_order_relaxed);
      if (any) traffic_ns.store(now, std::memory_order_relaxed);
    }
    unlock();
    if (progressed != nullptr) *progressed = any;
    return true;
  }
  // A host wait's progress: true (the wait keeps polling) when it moved traffic, or when anyone did
  // within progress_hooks::kHotWindow.
  static bool progress_hook(void* self) {
    auto* s = static_cast<state*>(self);
    bool progressed = false;
    s->try_drive(&progressed);
    return progressed || now_ns() - s->traffic_ns.load(std::memory_order_relaxed) <
                             std::chrono::nanoseconds(progress_hooks::kHotWindow).count();
  }

  // Stops the proxy thread, then releases the UCX objects on this thread: endpoints still open
  // (close() not reached: an error or an exit without finalize) are closed forcibly, bounded.
  ~state() {
    if (hooked) progress_hooks::remove(this);
    if (thread.joinable()) {
      stop.store(true, std::memory_order_release);
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(doorbell, &one, sizeof(one));
      thread.join();
    }
    for (auto* keys : {&rkeys, &data_rkeys})
      for (ucp_rkey_h& k : *keys)
        if (k != nullptr) ucp_rkey_destroy(k), k = nullptr;
    for (ucp_ep_h& ep : eps) {
      if (ep == nullptr) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &param);
      if (UCS_PTR_IS_PTR(r)) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (ucp_request_check_status(r) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
          ucp_worker_progress(worker);
        ucp_request_free(r);
      }
      ep = nullptr;
    }
    am.reset();
    if (memh != nullptr) ucp_mem_unmap(context, memh);
    if (data_memh != nullptr) ucp_mem_unmap(context, data_memh);
    if (worker != nullptr) ucp_worker_destroy(worker);
    if (context != nullptr) ucp_cleanup(context);
    if (doorbell >= 0) ::close(doorbell);
#ifdef SHOAL_HAVE_CUDA
    if (ring_pinned) cudaFreeHost(ring_memory.release());
#endif
  }

  // Collective: (re-)maps [base, base + nbytes) with UCX as `type` memory into `memh` (nothing when
  // nbytes is 0), then all-gathers every PE's base address and packed rkey through the bootstrap
  // (lengths first, then the rkeys padded to the longest) and unpacks them into `keys`/`bases` (no
  // rkey for a PE that mapped nothing). What was registered before is released first.
  void register_region(bootstrap& boot, void* base, uint64_t nbytes, ucs_memory_type_t type, std::string_view what,
                       std::string_view call, ucp_mem_h& memh_out, uint64_t& base_out, uint64_t& nbytes_out,
                       std::vector<ucp_rkey_h>& keys, std::vector<uint64_t>& bases_out) {
    const int n_pes = boot.size();
    std::vector<char> packed;
    on_thread([&] {
      for (ucp_rkey_h& k : keys)
        if (k != nullptr) ucp_rkey_destroy(k), k = nullptr;
      keys.assign(n_pes, nullptr);
      if (memh_out != nullptr) ucp_mem_unmap(context, memh_out), memh_out = nullptr;
      base_out = reinterpret_cast<uint64_t>(base), nbytes_out = nbytes;
      if (nbytes == 0) return;
      ucp_mem_map_params_t mp{};
      mp.field_mask =
          UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
      mp.address = base;
      mp.length = nbytes;
      mp.memory_type = type;
      ucs_status_t st = ucp_mem_map(context, &mp, &memh_out);
      if (st != UCS_OK) fail_ucx(call, fmt::format("ucp_mem_map of {}", what), -1, st);
      void* rkey = nullptr;
      size_t rkey_nbytes = 0;
      st = ucp_rkey_pack(context, memh_out, &rkey, &rkey_nbytes);
      if (st != UCS_OK) fail_ucx(call, "ucp_rkey_pack", -1, st);
      packed.assign(static_cast<char*>(rkey), static_cast<char*>(rkey) + rkey_nbytes);
      ucp_rkey_buffer_release(rkey);
    });
    uint64_t mine[2] = {reinterpret_cast<uint64_t>(base), packed.size()};
    std::vector<uint64_t> heads(2 * n_pes);
    boot.allgather(mine, heads.data(), sizeof(mine), call);
    uint64_t longest = 1;
    for (int pe = 0; pe < n_pes; ++pe) longest = std::max(longest, heads[2 * pe + 1]);
    packed.resize(longest);
    std::vector<char> all(longest * n_pes);
    boot.allgather(packed.data(), all.data(), longest, call);
    on_thread([&] {
      bases_out.assign(n_pes, 0);
      for (int pe = 0; pe < n_pes; ++pe) {
        bases_out[pe] = heads[2 * pe];
        if (eps[pe] == nullptr || heads[2 * pe + 1] == 0) continue;
        ucs_status_t st = ucp_ep_rkey_unpack(eps[pe], all.data() + pe * longest, &keys[pe]);
        if (st != UCS_OK) fail_ucx(call, fmt::format("ucp_ep_rkey_unpack ({})", what), pe, st);
      }
    });
  }

  // Allocates the zeroed ring; pinned and device-mapped when kernels post into it (`mapped`). Its slots have
  // payload areas where kernels post into it, or host producers use them (host_payload).
  void make_ring(bool mapped, int my_pe) {
    constexpr std::string_view call = "shoal_init";
    const uint32_t payload = mapped || host_payload ? kRingPayload : 0;
    const uint64_t nbytes = proxy_ring::nbytes_for(kRingSlots, payload);
    if (mapped) {
#ifdef SHOAL_HAVE_CUDA
      void* host = nullptr;
      cudaError_t err = cudaHostAlloc(&host, nbytes, cudaHostAllocMapped | cudaHostAllocPortable);
      if (err != cudaSuccess)
        SHOAL_THROW(errc::out_of_memory, call, "PE {}: cudaHostAlloc of the proxy ring ({} bytes) failed: {}", my_pe,
                    nbytes, cudaGetErrorString(err));
      ring_memory.reset(static_cast<char*>(host));
      ring_pinned = true;
      void* device = nullptr;
      err = cudaHostGetDevicePointer(&device, host, 0);
      if (err != cudaSuccess)
        SHOAL_THROW(errc::system, call, "PE {}: cudaHostGetDevicePointer of the proxy ring failed: {}", my_pe,
                    cudaGetErrorString(err));
      device_ring = static_cast<proxy_ring*>(device);
#else
      SHOAL_THROW(errc::unsupported, call, "PE {}: a GPU heap needs a CUDA build", my_pe);
#endif
    } else {
      ring_memory.reset(static_cast<char*>(std::aligned_alloc(64, nbytes)));
      if (ring_memory == nullptr) SHOAL_THROW(errc::out_of_memory, call, "PE {}: no memory for the proxy ring", my_pe);
    }
    std::memset(ring_memory.get(), 0, nbytes);
    ring = reinterpret_cast<proxy_ring*>(ring_memory.get());
    ring->slots = kRingSlots;
    ring->payload = payload;
    consumer = std::make_unique<ring_consumer>(ring);
  }

  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mutex);
      queue.push_back(std::move(task));
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(doorbell, &one, sizeof(one));
  }

  // Runs `task` on the proxy thread and waits for it (exceptions travel back).
  void on_thread(const std::function<void()>& task) {
    std::promise<void> done;
    auto result = done.get_future();
    post([&] {
      try {
        task();
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
    result.get();
  }

  // Issues one UCX request on the proxy thread and waits for its completion.
  void issue(std::string_view call, std::string_view what, int pe,
             std::function<ucs_status_ptr_t(ucp_request_param_t&)> start) {
    auto* result = new std::promise<ucs_status_t>;
    auto status = result->get_future();
    post([result, start = std::move(start)] {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      param.cb.send = on_done;
      param.user_data = result;
      ucs_status_ptr_t request = start(param);
      if (!UCS_PTR_IS_PTR(request)) {
        result->set_value(UCS_PTR_STATUS(request));
        delete result;
      }
    });
    if (timeout.count() > 0 && status.wait_for(timeout) != std::future_status::ready) {
      if (pe >= 0)
        SHOAL_THROW(errc::timeout, call, "{} to PE {} did not complete within {} ms (SHOAL_WAIT_TIMEOUT)", what, pe,
                    timeout.count());
      SHOAL_THROW(errc::timeout, call, "{} did not complete within {} ms (SHOAL_WAIT_TIMEOUT)", what, timeout.count());
    }
    ucs_status_t st = status.get();
    if (st != UCS_OK) fail_ucx(call, what, pe, st);
  }

  void drain() {
    std::deque<std::function<void()>> tasks;
    {
      std::lock_guard lock(mutex);
      tasks.swap(queue);
    }
    for (auto& task : tasks) task();
  }

  bool queue_empty() {
    std::lock_guard lock(mutex);
    return queue.empty();
  }

  // One descriptor in flight in UCX: what its completion answers, and the buffers UCX reads from or
  // writes into until then (the ring slot itself is reused as soon as it is copied out).
  struct in_flight {
    state* owner;
    uint64_t ticket;
    bool wait;
    uint64_t value;                                               // p's source, or the atomic's operand
    uint64_t reply;                                               // g's destination, or the atomic's reply buffer
    uint64_t header[am_atomics::kPutSignalHeaderBytes / 8] = {};  // a put-with-signal message's header
    std::unique_ptr<char[]> staged = nullptr;                     // a staged put's host copy of its source
    bool data_landed = false;  // a staged get: the answer wrote the data (g: into reply); keep them
    bool quiet = false;        // a quiet: its success raises the ring's quiet_done (ring_quiet_shared)
  };

  // Takes every committed descriptor and issues it; true when there was any.
  bool drain_ring() {
    if (consumer == nullptr) return false;
    bool any = false;
    proxy_desc d;
    uint64_t ticket;
    while (consumer->take(&d, &ticket)) {
      execute(d, ticket);
      any = true;
      ++stats.descriptors;
    }
    consumer->reclaim();
    return any;
  }

  // Completion of one descriptor's UCX request (or of one that completed at once).
  void complete(in_flight* op, ucs_status_t st) {
    if (op->quiet && st == UCS_OK) consumer->answered_quiet(op->ticket);
    if (op->wait)
      consumer->reply(op->ticket, op->reply, st == UCS_OK ? 0 : static_cast<int64_t>(st));
    else if (st != UCS_OK && async_error == UCS_OK)
      async_error = st;
    delete op;
  }
  static void on_complete(void* request, ucs_status_t status, void* user_data) {
    auto* op = static_cast<in_flight*>(user_data);
    --op->owner->requests_in_flight;
    op->owner->complete(op, status);
    ucp_request_free(request);
  }
  // A put's source or a get's destination: when it lies in this PE's registered heap, hand UCX the
  // heap's memory handle and type (GPU heaps are VMM allocations, which UCX's own detection may take
  // for host memory); other buffers (p/g values, user buffers) are left to UCX's detection.
  void describe_local(ucp_request_param_t& param, uint64_t local, uint64_t nbytes) const {
    if (data_memh != nullptr && local >= data_base && local - data_base <= data_nbytes &&
        nbytes <= data_nbytes - (local - data_base)) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
      param.memh = data_memh;
      param.memory_type = UCS_MEMORY_TYPE_HOST;
      return;
    }
    if (memh == nullptr || local < heap_base || local - heap_base > heap_nbytes ||
        nbytes > heap_nbytes - (local - heap_base))
      return;
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memh = memh;
    param.memory_type = gpu_heap ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  }

  // Starts one UCX request for `op`; its completion (now or later) answers the descriptor.
  template <class Start>
  void start(in_flight* op, Start&& begin) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = on_complete;
    param.user_data = op;
    ucs_status_ptr_t request = begin(param);
    if (UCS_PTR_IS_PTR(request))
      ++requests_in_flight;
    else
      complete(op, UCS_PTR_STATUS(request));
  }

  // Which puts and gets to each peer are direct active messages (host heaps; SHOAL_PROXY_AM_BYTES).
  // "auto": from 16 KiB where UCX only emulates RMA -- every lane to the peer is TCP (or a CUDA copy
  // lane): gets always (with UCX 1.13 its emulated get moved ~1.9 GB/s on loopback against 7.9 direct;
  // with 1.22 both move 1.8-2.9 GB/s, varying between launches), puts with UCX's v1 protocols
  // only (UCX before 1.16, or UCX_PROTO_ENABLE=n: its RMA put over TCP moved 1.7 GB/s against 7.8
  // direct; the v2 protocols put zero-copy at ~5 GB/s, while their active-message rendezvous over TCP
  // copies fragments at ~2.6). A size: from that size to every proxy peer; 0: never.
  void choose_direct(std::string_view call) {
    am_put_min.assign(eps.size(), kNever);
    am_get_min.assign(eps.size(), kNever);
    const std::string setting = env::get_string("SHOAL_PROXY_AM_BYTES");
    std::optional<uint64_t> fixed;
    if (setting != "auto") {
      fixed = env::parse_size(setting);
      if (!fixed)
        SHOAL_THROW(errc::invalid_argument, call,
                    "SHOAL_PROXY_AM_BYTES='{}' is neither 'auto' nor a size (bytes, with K/M/G suffixes)", setting);
    }
    constexpr uint64_t kAutoMin = uint64_t{16} << 10;
    for (size_t pe = 0; pe < eps.size(); ++pe) {
      if (eps[pe] == nullptr) continue;
      if (fixed) {
        if (*fixed != 0) am_put_min[pe] = am_get_min[pe] = *fixed;
        continue;
      }
      bool tcp = false, other = false;
      for (const std::string& lane : lane_transports(eps[pe])) {
        if (lane.starts_with("tcp/"))
          tcp = true;
        else if (!lane.starts_with("cuda_copy/") && !lane.starts_with("rocm_copy/"))
          other = true;
      }
      if (!tcp || other) continue;
      am_get_min[pe] = kAutoMin;
      if (!protocols_v2) am_put_min[pe] = kAutoMin;
    }
    for (size_t pe = 0; pe < eps.size(); ++pe) {
      if (eps[pe] == nullptr) continue;
      auto from = [](uint64_t bytes) {
        return bytes == kNever ? std::string("never") : fmt::format("from {} B", bytes);
      };
      SHOAL_LOG(info, transport,
                "PE {} -> PE {}: direct puts {}, direct gets {} (SHOAL_PROXY_AM_BYTES={}, UCX {} protocols)", my_pe, pe,
                from(am_put_min[pe]), from(am_get_min[pe]), setting, protocols_v2 ? "v2" : "v1");
    }
  }

  // Progresses until `request` (a UCX request or status) completes, bounded by SHOAL_WAIT_TIMEOUT.
  ucs_status_t wait_for(ucs_status_ptr_t request) {
    if (!UCS_PTR_IS_PTR(request)) return UCS_PTR_STATUS(request);
    const auto end = std::chrono::steady_clock::now() + timeout;
    ucs_status_t st;
    while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS) {
      ucp_worker_progress(worker);
      if (timeout.count() > 0 && std::chrono::steady_clock::now() > end) {
        st = UCS_ERR_TIMED_OUT;
        break;
      }
    }
    ucp_request_free(request);
    return st;
  }
  // Sends an AMO to its owner (GPU heaps). Earlier puts are flushed (complete at the target) first:
  // the owner applies the atomic outside UCX's ordering, so a fence would not order them.
  void start_by_owner(in_flight* op, int pe, uint8_t code, uint64_t nbytes, uint64_t offset, uint64_t swap_in) {
    ucs_status_t st = direct_puts_unsettled ? settle_owner_amos() : UCS_OK;
    if (st == UCS_OK && puts_unfenced) {
      puts_unfenced = false;
      ucp_request_param_t param{};
      st = wait_for(ucp_worker_flush_nbx(worker, &param));
    }
    if (st == UCS_OK) st = am->send(pe, reinterpret_cast<uint64_t>(op), code, nbytes, offset, op->value, swap_in);
    if (st != UCS_OK) complete(op, st);
  }
  static void on_owner_reply(void* ctx, uint64_t token, uint64_t value, int64_t status) {
    auto* op = reinterpret_cast<in_flight*>(token);
    if (!op->data_landed) op->reply = value;
    static_cast<state*>(ctx)->complete(op, status == 0 ? UCS_OK : static_cast<ucs_status_t>(status));
  }
  // Fence and quiet first wait for every owner-applied AMO's answer (it is then applied).
  ucs_status_t settle_owner_amos() {
    ams_unsettled = false;
    direct_puts_unsettled = false;
    return am == nullptr ? UCS_OK : am->drain(timeout);
  }

  // Where `offset` of `pe` lives for UCX: its heap, or with kDataOffsetBit its data segment (a null
  // rkey when that PE registered none).
  struct remote_word {
    uint64_t address;
    ucp_rkey_h rkey;
  };
  remote_word remote_of(int pe, uint64_t offset) const {
    if ((offset & kDataOffsetBit) != 0) return {data_bases[pe] + (offset & ~kDataOffsetBit), data_rkeys[pe]};
    return {bases[pe] + offset, rkeys[pe]};
  }

  // A put as an active message that the owner puts into place; `data` (the descriptor's own in_flight
  // when it waits) completes when the message has left (its source is reusable), `ack` (not waiting)
  // at the owner's answer, which fence and quiet wait for (ams_unsettled).
  // - Staged (GPU heaps, `stage`): the source is first copied to host memory here, and the message is
  //   eager. Active messages to one PE are delivered in order, so a later staged get or owner-applied
  //   atomic to that PE sees the put without a flush.
  // - Direct (host heaps, puts of at least am_put_min): the source itself, by rendezvous when UCX picks
  //   it (the owner's UCX pulls the data straight into its heap). A rendezvous message's data may land
  //   after a later message is handled, so direct_puts_unsettled makes the next put-with-signal
  //   message or owner-applied atomic wait for the answers first.
  //   A source already in host memory that `data` owns (data->staged: a put carried in its slot's payload area)
  //   is sent as it is.
  void start_am_put(in_flight* data, in_flight* ack, int pe, uint64_t offset, const void* source, uint64_t nbytes,
                    bool stage) {
    if (stage && source != nullptr && source == data->staged.get()) {
      // copied out of the slot's payload area by execute(): host memory already
    } else if (stage) {
      data->staged.reset(new char[nbytes > 0 ? nbytes : 1]);
      if (const std::string err = am->copy(data->staged.get(), source, nbytes); !err.empty()) {
        std::fprintf(stderr, "shoal: PE %d: staging a put to PE %d failed: %s\n", my_pe, pe, err.c_str());
        complete(data, UCS_ERR_IO_ERROR);
        return complete(ack, UCS_ERR_IO_ERROR);
      }
      source = data->staged.get();
    } else {
      direct_puts_unsettled = true;
    }
    start_message(data, ack, [&](ucp_request_param_t& param) {
      return am->send_put(pe, reinterpret_cast<uint64_t>(ack), offset, source, nbytes, data->header, param, stage);
    });
  }

  // Sends one active message that the owner answers: `data` completes when the send does (its buffers
  // are reusable), `ack` at the owner's answer (fence and quiet wait for it: ams_unsettled), or both at
  // once when the send fails.
  template <class Send>
  void start_message(in_flight* data, in_flight* ack, Send&& send) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = on_complete;
    param.user_data = data;
    ucs_status_ptr_t request = send(param);
    if (UCS_PTR_IS_PTR(request)) {
      ++requests_in_flight;
    } else {
      complete(data, UCS_PTR_STATUS(request));
      if (UCS_PTR_IS_ERR(request)) complete(ack, UCS_PTR_STATUS(request));  // no answer will come
    }
    ams_unsettled = true;
  }

  // A run of carried put pieces (kProxyRun) being gathered into messages of at most kCarriedRunMessage bytes: the
  // pieces come at consecutive tickets (the producer reserved them together), so nothing else is taken between
  // them; a descriptor that does not continue the run sends what was gathered first (a producer not of this
  // library's making: still correct, only not gathered).
  struct carried_run {
    int pe = -1;
    uint64_t next = 0;           // heap offset the next piece must start at
    uint64_t left = 0;           // bytes of the run not taken yet (0: no run)
    in_flight* op = nullptr;     // the message being gathered (its staged bytes), or none yet
    uint64_t offset = 0;         // its heap offset
    uint64_t size = 0, got = 0;  // its bytes, and how many of them arrived
  } gathering;

  // Sends the run's message gathered so far (if any) as one staged put.
  void send_run_message() {
    in_flight* op = std::exchange(gathering.op, nullptr);
    if (op == nullptr) return;
    proxy_desc d{};
    d.op = proxy_op::put, d.pe = gathering.pe, d.offset = gathering.offset, d.nbytes = gathering.got;
    d.local = reinterpret_cast<uint64_t>(op->staged.get());
    ++stats.run_messages;
    dispatch(d, op);
  }

  // Takes the carried put piece `d` (ticket) into the run when it starts or continues one; false when it does
  // neither (a run in progress is then sent as far as it got and ended).
  bool gather(const proxy_desc& d, uint64_t ticket) {
    const bool piece =
        d.op == proxy_op::put && (d.flags & ~kProxyRun) == kProxyPayload && d.nbytes > 0 && d.nbytes <= ring->payload;
    if (gathering.left > 0 && !(piece && (d.flags & kProxyRun) == 0 && d.pe == gathering.pe &&
                                d.offset == gathering.next && d.nbytes <= gathering.left)) {
      send_run_message();
      gathering.left = 0;
    }
    if (gathering.left == 0) {
      if (!piece || (d.flags & kProxyRun) == 0 || d.spare <= d.nbytes) return false;
      gathering.pe = d.pe, gathering.next = d.offset, gathering.left = d.spare;
    }
    if (gathering.op != nullptr && gathering.got + d.nbytes > gathering.size) send_run_message();
    if (gathering.op == nullptr) {
      gathering.size = std::max<uint64_t>(std::min<uint64_t>(gathering.left, kCarriedRunMessage), d.nbytes);
      gathering.op = new in_flight{this, ticket, false, 0, 0};
      gathering.op->staged.reset(new char[gathering.size]);
      gathering.offset = gathering.next, gathering.got = 0;
    }
    std::memcpy(gathering.op->staged.get() + gathering.got, ring->payload_of(ticket), d.nbytes);
    consumer->finish(ticket);
    gathering.got += d.nbytes, gathering.next += d.nbytes, gathering.left -= d.nbytes;
    if (gathering.got == gathering.size || gathering.left == 0) send_run_message();
    return true;
  }

  // Issues descriptor `ticket` (gathered into a run when it is a piece of one; else copied out of its slot, which
  // non-waiting ones free at once). A put carried in the slot's payload area (kProxyPayload) is copied out with it,
  // into host memory its in_flight owns; a get carried there (waiting) lands in the payload area, which its producer
  // reads before it acknowledges.
  void execute(const proxy_desc& slot_copy, uint64_t ticket) {
    if (gather(slot_copy, ticket)) return;
    proxy_desc d = slot_copy;
    const bool wait = (d.flags & kProxyWait) != 0;
    auto* op = new in_flight{this, ticket, wait, d.operand, d.compare};
    if ((d.flags & kProxyPayload) != 0) {
      const bool carries = d.op == proxy_op::put || d.op == proxy_op::put_signal || d.op == proxy_op::get;
      if (!carries || d.nbytes > ring->payload || (d.op == proxy_op::get && !wait)) {
        if (!wait) consumer->finish(ticket);
        return complete(op, UCS_ERR_INVALID_PARAM);  // not a producer of this library's making
      }
      if (d.op == proxy_op::get) {
        d.local = reinterpret_cast<uint64_t>(ring->payload_of(ticket));
      } else {
        op->staged.reset(new char[d.nbytes > 0 ? d.nbytes : 1]);
        std::memcpy(op->staged.get(), ring->payload_of(ticket), d.nbytes);
        d.local = reinterpret_cast<uint64_t>(op->staged.get());
      }
    }
    if (!wait) consumer->finish(ticket);
    dispatch(d, op);
  }

  // Issues descriptor `d` (its slot already released unless it waits; a carried put's bytes staged in op) for `op`.
  void dispatch(proxy_desc& d, in_flight* op) {
    const uint64_t ticket = op->ticket;
    const bool wait = op->wait;
    const int pe = d.pe;
    const remote_word target = pe >= 0 ? remote_of(pe, d.offset) : remote_word{0, nullptr};
    const uint64_t remote = target.address;
    if (pe >= 0 && target.rkey == nullptr) return complete(op, UCS_ERR_INVALID_ADDR);
    if (staged_rma && (d.op == proxy_op::put || d.op == proxy_op::p)) {
      auto* ack = new in_flight{this, ticket, false, 0, 0};
      const void* from = d.op == proxy_op::p ? static_cast<const void*>(&op->value) : reinterpret_cast<void*>(d.local);
      return start_am_put(op, ack, pe, d.offset, from, d.nbytes, true);
    }
    if (staged_rma && (d.op == proxy_op::get || d.op == proxy_op::g)) {
      // The owner's answer carries the data; they land at the destination before op completes.
      const uint64_t to = d.op == proxy_op::g ? reinterpret_cast<uint64_t>(&op->reply) : d.local;
      op->data_landed = true;
      if (ucs_status_t st = am->send_get(pe, reinterpret_cast<uint64_t>(op), d.offset, d.nbytes, to); st != UCS_OK)
        complete(op, st);
      return;
    }
    if (!staged_rma && d.op == proxy_op::put && d.nbytes >= am_put_min[pe]) {
      auto* ack = new in_flight{this, ticket, false, 0, 0};
      return start_am_put(op, ack, pe, d.offset, reinterpret_cast<const void*>(d.local), d.nbytes, false);
    }
    if (!staged_rma && d.op == proxy_op::get && d.nbytes >= am_get_min[pe]) {
      // Ordered after earlier puts like an RMA get; the answer lands at the destination, then op completes.
      op->data_landed = true;
      ucs_status_t st = fence_after_puts();
      if (st == UCS_OK) st = am->send_get(pe, reinterpret_cast<uint64_t>(op), d.offset, d.nbytes, d.local, true);
      if (st != UCS_OK) complete(op, st);
      return;
    }
    switch (d.op) {
      case proxy_op::put:
      case proxy_op::p:
        puts_unfenced = true;
        start(op, [&](ucp_request_param_t& param) {
          const void* from =
              d.op == proxy_op::p ? static_cast<const void*>(&op->value) : reinterpret_cast<void*>(d.local);
          if (d.op == proxy_op::put) describe_local(param, d.local, d.nbytes);
          return ucp_put_nbx(eps[pe], from, d.nbytes, remote, target.rkey, &param);
        });
        return;
      case proxy_op::get:
      case proxy_op::g:
        start(op, [&](ucp_request_param_t& param) {
          if (ucs_status_t st = fence_after_puts(); st != UCS_OK) return UCS_STATUS_PTR(st);
          void* to = d.op == proxy_op::g ? static_cast<void*>(&op->reply) : reinterpret_cast<void*>(d.local);
          if (d.op == proxy_op::get) describe_local(param, d.local, d.nbytes);
          return ucp_get_nbx(eps[pe], to, d.nbytes, remote, target.rkey, &param);
        });
        return;
      case proxy_op::amo:
        if (amo_by_owner) return start_by_owner(op, pe, d.amo, d.nbytes, d.offset, d.compare);
        start(op, [&](ucp_request_param_t& param) {
          if (ucs_status_t st = fence_after_puts(); st != UCS_OK) return UCS_STATUS_PTR(st);
          param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
          param.datatype = ucp_dt_make_contig(d.nbytes);
          param.reply_buffer = &op->reply;  // cswap: holds the new value in (descriptor's compare)
          return ucp_atomic_op_nbx(eps[pe], to_ucp(static_cast<ucx_amo>(d.amo)), &op->value, 1, remote, target.rkey,
                                   &param);
        });
        return;
      case proxy_op::fence:
        start(op, [&](ucp_request_param_t&) {
          puts_unfenced = false;
          if (ucs_status_t st = settle_owner_amos(); st != UCS_OK) return UCS_STATUS_PTR(st);
          return UCS_STATUS_PTR(ucp_worker_fence(worker));
        });
        return;
      case proxy_op::quiet:
        op->quiet = true;
        start(op, [&](ucp_request_param_t& param) {
          puts_unfenced = false;
          if (ucs_status_t st = settle_owner_amos(); st != UCS_OK) return UCS_STATUS_PTR(st);
          if (async_error != UCS_OK) return UCS_STATUS_PTR(std::exchange(async_error, UCS_OK));
          return ucp_worker_flush_nbx(worker, &param);
        });
        return;
      case proxy_op::put_signal: {  // put, fence, then the 8-byte signal update (ucx_amo add or swap)
        // A waiting producer is answered by the put's local completion (its source may be reused);
        // the signal completes in the background, like an nbi operation (fence and quiet wait).
        auto* data = new in_flight{this, ticket, wait, 0, 0};
        data->staged = std::move(op->staged);  // a carried source: kept until the data's send completes
        op->wait = false;
        const bool eager_message = d.nbytes <= kPutSignalMessageMax;
        if (!gpu_heap && !amo_by_owner && !puts_unfenced && (eager_message || d.nbytes >= am_put_min[pe])) {
          if (direct_puts_unsettled) {  // earlier direct puts land first (one of them may be a rendezvous)
            if (ucs_status_t st = settle_owner_amos(); st != UCS_OK) {
              complete(data, st);
              return complete(op, st);
            }
          }
          // Host heaps: one active message carries data and signal; the owner writes both and answers
          // op (fence and quiet wait for that answer); data completes when sent. Up to 8 KiB it is
          // eager; a larger one is a direct put (start_am_put) whose owner applies the signal once the
          // data landed.
          if (!eager_message) direct_puts_unsettled = true;
          start_message(data, op, [&](ucp_request_param_t& param) {
            return am->send_put_signal(pe, reinterpret_cast<uint64_t>(op), d.amo, d.compare, d.operand, d.offset,
                                       reinterpret_cast<const void*>(d.local), d.nbytes, data->header, param,
                                       eager_message);
          });
          return;
        }
        if (staged_rma) {  // data and then signal as active messages, delivered in order at the owner
          auto* ack = new in_flight{this, ticket, false, 0, 0};
          start_am_put(data, ack, pe, d.offset, reinterpret_cast<const void*>(d.local), d.nbytes, true);
          return start_by_owner(op, pe, d.amo, 8, d.compare, 0);
        }
        if (d.nbytes == 0) {
          complete(data, UCS_OK);
        } else {
          start(data, [&](ucp_request_param_t& param) {
            describe_local(param, d.local, d.nbytes);
            return ucp_put_nbx(eps[pe], reinterpret_cast<void*>(d.local), d.nbytes, remote, target.rkey, &param);
          });
        }
        if (amo_by_owner) {  // the data complete at the target, then the owner applies the signal
          puts_unfenced = true;
          return start_by_owner(op, pe, d.amo, 8, d.compare, 0);
        }
        start(op, [&](ucp_request_param_t& param) {
          if (ucs_status_t st = ucp_worker_fence(worker); st != UCS_OK) return UCS_STATUS_PTR(st);
          puts_unfenced = false;
          param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
          param.datatype = ucp_dt_make_contig(8);
          param.reply_buffer = &op->reply;
          const remote_word signal = remote_of(pe, d.compare);
          if (signal.rkey == nullptr) return UCS_STATUS_PTR(UCS_ERR_INVALID_ADDR);
          return ucp_atomic_op_nbx(eps[pe], to_ucp(static_cast<ucx_amo>(d.amo)), &op->value, 1, signal.address,
                                   signal.rkey, &param);
        });
        return;
      }
    }
    complete(op, UCS_ERR_UNSUPPORTED);
  }

  // Posts `d` as a waiting descriptor from a host thread and returns the reply; throws on a UCX
  // failure or when no credit or reply comes within SHOAL_WAIT_TIMEOUT. The caller drives the
  // worker itself whenever no other thread holds it (issuing its descriptor, and progressing until
  // the answer arrives: no hand-off to the proxy thread and back); otherwise the holder drains the
  // ring, this descriptor included, and the caller polls for its turn.
  uint64_t call(std::string_view call_name, std::string_view what, proxy_desc d) {
    d.flags |= kProxyWait;
    host_poll poll(*this);
    const uint64_t ticket = ring_post(ring, d, poll);
    uint64_t reply = 0;
    int64_t status = 0;
    if (ticket == ~uint64_t{0} || !ring_wait(ring, ticket, &reply, &status, poll))
      timed_out(call_name, what, d.pe, "did not complete");
    if (status != 0) fail_ucx(call_name, what, d.pe, static_cast<ucs_status_t>(status));
    return reply;
  }

  // Posts `d` as a non-waiting descriptor (nbi: its completion is the next quiet's business) and
  // issues it at once when the worker is free.
  void post_nbi(std::string_view call_name, std::string_view what, proxy_desc d) {
    host_poll poll(*this);
    if (ring_post(ring, d, poll) == ~uint64_t{0}) timed_out(call_name, what, d.pe, "found no ring slot");
    try_drive();
  }

  // A put or put-with-signal (`tail`: its last piece) whose bytes travel in the ring's payload areas (host_payload:
  // what a kernel's put does, device_proxy.cuh proxy_put_carried), in pieces of one area each at consecutive
  // tickets, the first of each reservation marked as a run (kProxyRun), committed kCarriedCommitPieces at a time:
  // written between the reservation and the commit, so the call returns once posted.
  void post_carried(std::string_view call_name, std::string_view what, proxy_desc tail, const void* source) {
    host_poll poll(*this);
    const uint64_t payload = ring->payload, nbytes = tail.nbytes;
    const uint64_t batch = std::max<uint64_t>(ring->slots / 4, 1);
    uint64_t ticket = 0, reserved = 0;  // the next reserved ticket, and how many are left
    uint64_t filled = 0;                // pieces filled and not committed yet
    for (uint64_t at = 0; at < nbytes; ++ticket, --reserved) {
      const uint64_t piece = std::min(nbytes - at, payload);
      uint64_t run = 0;
      if (reserved == 0) {
        reserved = std::min((nbytes - at + payload - 1) / payload, batch);
        ticket = ring_reserve(ring, poll, ring_direct{}, reserved);
        if (ticket == ~uint64_t{0}) timed_out(call_name, what, tail.pe, "found no ring slot");
        run = carried_run_bytes(at, nbytes, reserved, payload, tail.op == proxy_op::put);
      }
      std::memcpy(ring->payload_of(ticket), static_cast<const char*>(source) + at, piece);
      proxy_desc d = tail;
      if (at + piece != nbytes) d = proxy_desc{}, d.op = proxy_op::put, d.pe = tail.pe;
      d.flags = run > 0 ? kProxyPayload | kProxyRun : kProxyPayload;
      d.spare = run, d.offset = tail.offset + at, d.local = 0, d.nbytes = piece;
      ring_fill(ring, ticket, d);
      at += piece;
      if (++filled == kCarriedCommitPieces || reserved == 1) {  // committed in groups, as kernels do
        std::atomic_thread_fence(std::memory_order_release);
        for (uint64_t t = ticket + 1 - filled; t <= ticket; ++t) ring_publish(ring, t);
        filled = 0;
      }
    }
    try_drive();
  }

  // A blocking get whose bytes land in its slot's payload area (host_payload: what a kernel's blocking get does):
  // read out before the acknowledgement frees the slot.
  void get_carried(std::string_view call_name, std::string_view what, proxy_desc d, void* dest) {
    d.flags = kProxyWait | kProxyPayload;
    d.local = 0;
    host_poll poll(*this);
    const uint64_t ticket = ring_post(ring, d, poll);
    uint64_t reply = 0;
    int64_t status = 0;
    if (ticket == ~uint64_t{0} || !ring_wait(ring, ticket, &reply, &status, poll, ring_direct{}, false))
      timed_out(call_name, what, d.pe, "did not complete");
    if (status == 0) std::memcpy(dest, ring->payload_of(ticket), d.nbytes);
    ring_ack(ring, ticket);
    if (status != 0) fail_ucx(call_name, what, d.pe, static_cast<ucs_status_t>(status));
  }

  // True when a host put (or put-with-signal) of nbytes takes the payload route (host_payload): up to
  // kHostCarriedPieces areas, so that runs of pieces are covered too.
  bool carried_put(size_t nbytes) const {
    return host_payload && nbytes > 0 && nbytes <= uint64_t{kHostCarriedPieces} * ring->payload;
  }
  // The same for a blocking get: up to one area.
  bool carried_get(size_t nbytes) const { return host_payload && nbytes > 0 && nbytes <= ring->payload; }

  // A host thread's poll while it waits on the ring (for a credit, or for its answer): drives the
  // worker when it is free, at full speed while that moves things; after 512 idle polls yields,
  // after 4096 sleeps 20 us per poll, so a caller waiting on a slow peer does not keep a core busy.
  // True (the wait ends) past SHOAL_WAIT_TIMEOUT.
  struct host_poll {
    explicit host_poll(state& owner)
        : s(owner),
          end(owner.timeout.count() > 0 ? std::chrono::steady_clock::now() + owner.timeout
                                        : std::chrono::steady_clock::time_point::max()) {}
    bool operator()() {
      bool progressed = false;
      s.try_drive(&progressed, idle < 512);
      if (progressed) {
        idle = 0;
      } else if (++idle >= 4096) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      } else if (idle >= 512 || idle % kYieldEvery == 0) {
        std::this_thread::yield();
      }
      return (idle & 63) == 0 && std::chrono::steady_clock::now() > end;
    }
    state& s;
    std::chrono::steady_clock::time_point end;
    uint32_t idle = 0;
  };
  [[noreturn]] void timed_out(std::string_view call_name, std::string_view what, int pe, std::string_view how) const {
    if (pe >= 0)
      SHOAL_THROW(errc::timeout, call_name, "{} to PE {} {} within {} ms (SHOAL_WAIT_TIMEOUT)", what, pe, how,
                  timeout.count());
    SHOAL_THROW(errc::timeout, call_name, "{} {} within {} ms (SHOAL_WAIT_TIMEOUT)", what, how, timeout.count());
  }

  // How long the proxy thread naps while host threads drive: until the driven window after their last drive ends
  // (when it would take over), at least kDrivenNapMinNs.
  long driven_nap_ns() const {
    const int64_t left = host_drove_ns.load(std::memory_order_relaxed) + driven_window_ns - now_ns();
    return static_cast<long>(std::clamp<int64_t>(left, kDrivenNapMinNs, driven_window_ns));
  }

  // Sleeps on the doorbell (and the worker's fd when `watch_worker`) for at most `nap_ns`, or until
  // a kernel reserves a ticket when the ring is device-mapped.
  void nap(bool watch_worker, long nap_ns) {
    const int64_t t0 = stats.on ? now_ns() : 0;
    nap_for(watch_worker, nap_ns);
    if (stats.on) ++stats.naps, stats.nap_ns += now_ns() - t0;
  }
  void nap_for(bool watch_worker, long nap_ns) {
    pollfd fds[2] = {{doorbell, POLLIN, 0}, {worker_fd, POLLIN, 0}};
    const nfds_t n = watch_worker ? 2 : 1;
    if (device_ring == nullptr) {
      const timespec span{nap_ns / 1'000'000'000, nap_ns % 1'000'000'000};
      ::ppoll(fds, n, &span, nullptr);
    } else {
      // Kernels ring no doorbell: nap in short steps until an fd fires or a ticket is reserved (a
      // descriptor on its way; the drain waits for its commit).
      const timespec step{0, std::min(kRingNapNs, nap_ns)};
      for (long slept = 0; slept < nap_ns && !consumer->pending() && !stop.load(std::memory_order_acquire);
           slept += kRingNapNs)
        if (::ppoll(fds, n, &step, nullptr) != 0) break;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(doorbell, &count, sizeof(count));
    }
  }

  // A proxy with work outstanding and no progress for 5 s says once (and again every 30 s) what it holds:
  // the ring's counters and what is in flight, so that a stuck job shows where it waits. Progress is a
  // change of those counters (a busy worker that completes nothing is no progress).
  std::chrono::steady_clock::time_point last_progress{}, last_report{};
  uint64_t last_seen[5] = {};
  uint64_t calls_since_progress = 0;
  void report_if_stuck(std::chrono::steady_clock::time_point now) {
    const uint64_t awaited = am != nullptr ? am->outstanding() : 0;
    const uint64_t reserved = consumer != nullptr ? ring_atomic::load_acquire(&ring->reserved) : 0;
    const uint64_t seen[5] = {reserved, consumer != nullptr ? consumer->head() : 0,
                              consumer != nullptr ? consumer->released() : 0, static_cast<uint64_t>(requests_in_flight),
                              awaited};
    const bool outstanding = seen[0] != seen[2] || requests_in_flight != 0 || awaited != 0;
    if (!outstanding || !std::equal(seen, seen + 5, last_seen)) {
      std::copy(seen, seen + 5, last_seen);
      last_progress = now;
      calls_since_progress = 0;
      return;
    }
    ++calls_since_progress;
    if (now - last_progress < std::chrono::seconds(5) || now - last_report < std::chrono::seconds(30)) return;
    last_report = now;
    const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_progress).count();
    std::fprintf(stderr,
                 "shoal: PE %d: proxy: no progress for %lld ms (%llu loop turns): ring reserved %llu, taken %llu, "
                 "credits back to %llu; UCX requests in flight %lld, owner answers awaited %llu\n",
                 my_pe, static_cast<long long>(idle), static_cast<unsigned long long>(calls_since_progress),
                 static_cast<unsigned long long>(seen[0]), static_cast<unsigned long long>(seen[1]),
                 static_cast<unsigned long long>(seen[2]), static_cast<long long>(requests_in_flight),
                 static_cast<unsigned long long>(awaited));
  }

  // The proxy thread: runs posted tasks, drains the ring and progresses the worker while nobody
  // else does, spins briefly after work, then sleeps on the worker's fd and the doorbell. While
  // host threads drive the worker themselves it naps on the doorbell only.
  void run() {
    if (device_ring != nullptr) ::prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);
#ifdef SHOAL_HAVE_CUDA
    // GPU heaps: the heap's GPU stays current on this thread (UCX's cuda_copy stages the heap's data
    // through the current context; with none it crashed on the VMM heap).
    if (cuda_device >= 0) (void)cudaSetDevice(cuda_device);
#endif
    auto last_work = std::chrono::steady_clock::now();
    uint32_t spins = 0;
    while (!stop.load(std::memory_order_acquire)) {
      if (!try_lock()) {  // a host thread drives
        nap(false, driven_nap_ns());
        continue;
      }
      drain();
      const bool busy = drive();
      const auto now = std::chrono::steady_clock::now();
      report_if_stuck(now);
      if (busy || !queue_empty()) {
        last_work = now;
        if (busy) traffic_ns.store(now_ns(), std::memory_order_relaxed);
        unlock();
        continue;
      }
      const bool host_drives = now_ns() - host_drove_ns.load(std::memory_order_relaxed) < driven_window_ns;
      if (host_drives) {
        unlock();
        nap(false, driven_nap_ns());
        continue;
      }
      if (now - last_work < kSpinYield) {
        unlock();
        if (now - last_work >= kSpin || (++spins % kYieldEvery) == 0) std::this_thread::yield();
        continue;
      }
      if (ucp_worker_arm(worker) == UCS_ERR_BUSY) {
        unlock();
        continue;
      }
      const long sleep_ns = (requests_in_flight > 0 ? kSleepInFlightMs : kSleepMs) * 1'000'000L;
      unlock();
      nap(true, sleep_ns);
      last_work = std::chrono::steady_clock::now() - kSpinYield;  // a wake-up with nothing to do sleeps again
    }
    while (!try_lock()) std::this_thread::yield();
    drain();
    unlock();
  }
};

ucx_engine::ucx_engine(bootstrap& boot, const std::vector<int>& peers, bool gpu_heap)
    : s_(std::make_unique<state>()), boot_(boot) {
  constexpr std::string_view call = "shoal_init";
  const int n_pes = boot.size();
  s_->timeout = env::get_ms("SHOAL_WAIT_TIMEOUT");
  // Fewer than two cores per PE on this node (the launcher's local size): the proxy thread stays away longer.
  if (const int local = detect_launch_env().local_size; local > 0) {
    const unsigned cores = std::thread::hardware_concurrency();
    if (cores > 0 && cores < 2u * static_cast<unsigned>(local))
      s_->driven_window_ns = std::chrono::nanoseconds(kDrivenRecentlyCrowded).count();
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
