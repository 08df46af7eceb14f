// The UCX engine's state (ucx_engine::state), shared by the files that implement it: the worker's
// holder and the proxy thread (ucx_engine_worker.cc), the request ring's protocol (ucx_engine_ring.cc),
// issuing descriptors to UCX (ucx_engine_issue.cc), active messages to the owner and which puts and gets
// take them (ucx_engine_messages.cc), memory registration and rkeys (ucx_engine_keys.cc), and setup and
// the public calls (ucx_engine.cc). Private to src/transport/proxy/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <ucp/api/ucp.h>

#include "common/progress.hpp"
#include "shoal/detail/proxy_ring.hpp"
#include "transport/proxy/am_atomics.hpp"
#include "transport/proxy/ring_consumer.hpp"
#include "transport/proxy/ucx_engine.hpp"

namespace shoal::detail {

/// Throws errc::system naming `call`, `what`, the PE (when >= 0) and UCX's words for `status`.
[[noreturn]] void fail_ucx(std::string_view call, std::string_view what, int pe, ucs_status_t status);
/// The transports of `ep`'s lanes ("tcp/lo", "rc_mlx5/mlx5_0:1", ...), once each (ucx_engine_messages.cc).
std::vector<std::string> lane_transports(ucp_ep_h ep);
/// True when a UCX context read with `config` runs its v2 protocols (ucx_engine_messages.cc).
bool runs_protocols_v2(const ucp_config_t* config);

struct ucx_engine::state {
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
  static constexpr auto kSpin = std::chrono::microseconds(250);
  static constexpr uint32_t kYieldEvery = 2;
  static constexpr auto kSpinYield = std::chrono::microseconds(1000);
  static constexpr int kSleepMs = 100;
  static constexpr int kSleepInFlightMs = 1;
  // While host threads drive the worker themselves (their own requests, or progress from a wait,
  // which then polls for progress_hooks::kHotWindow), the proxy thread stays out of their way: it
  // naps on the doorbell only, without watching the worker's fd, until their window would end (the
  // driven window after the last host drive; at least kDrivenNapMinNs), and looks again. So it wakes
  // once per window while they keep driving. The window is kDrivenRecently, or kDrivenRecentlyCrowded on
  // a node with fewer cores than two per PE: there each wake-up of a proxy thread takes a core from a
  // polling thread. A proxy thread that woke every 50 us cost the 2-core CI VM 4-5 us per fetch_add
  // and 4-8 us per put + quiet. A longer window only delays the proxy's taking over after host threads
  // stop driving (their requests still in flight progress when it does).
  static constexpr auto kDrivenRecently = progress_hooks::kHotWindow;
  static constexpr auto kDrivenRecentlyCrowded = std::chrono::microseconds(1000);
  static constexpr long kDrivenNapMinNs = 50'000;
  // With a device-mapped ring (GPU heaps), kernels post without a doorbell: the idle proxy thread
  // checks the ring's ticket counter between short sleeps instead (kRingNap; the thread's timer slack
  // is lowered so that a nap stays close to it).
  static constexpr long kRingNapNs = 30'000;
  static constexpr unsigned long kTimerSlackNs = 5'000;

  // UCX objects and what registration and setup found. Written by the constructor and, for the keys
  // and registrations, by the proxy thread's tasks (register_region, connect, close); read by whoever
  // holds the worker.
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int worker_fd = -1;
  // eventfd: written by any thread that posts a task (post) or stops the proxy thread; read by its naps.
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
  // Puts issued since the last ucp_worker_fence (under `driving`): a get or an atomic after them
  // fences first, so put-then-signal and put-then-get keep their order on any UCX transport.
  bool puts_unfenced = false;
  // Put-with-signal messages (am_atomics) sent since the last settle (under `driving`): a get or an
  // atomic after them waits for their answers first, as it fences after puts.
  bool ams_unsettled = false;
  // Direct puts (start_am_put) sent since the last settle (under `driving`); see there.
  bool direct_puts_unsettled = false;
  // Host heaps, per PE: puts and gets of at least this many bytes travel as direct active messages,
  // received straight into place (SHOAL_PROXY_AM_BYTES; kNever: never). Written once, at connect
  // (choose_direct); read by dispatch.
  static constexpr uint64_t kNever = ~uint64_t{0};
  std::vector<uint64_t> am_put_min, am_get_min;
  bool protocols_v2 = true;  // the context's UCX_PROTO_ENABLE

  // The request ring: every put, get, atomic, fence and quiet of this PE, host- or device-initiated,
  // goes through it in ticket order. GPU heaps: pinned, device-mapped host memory (device_ring is
  // its address for kernels); host heaps: plain memory (device_ring nullptr). Producers (host calls
  // and kernels) write slots and the counters of proxy_ring.hpp; `consumer` (under `driving`) takes
  // and answers them.
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
  // asynchronous copies; naps: the proxy thread's sleeps. Written under `driving` (naps: by the proxy thread).
  struct stats_t {
    bool on = false;
    uint64_t drives = 0, busy_drives = 0, descriptors = 0, naps = 0, run_messages = 0;
    int64_t ring_ns = 0, progress_ns = 0, copies_ns = 0, nap_ns = 0;
  } stats;
  // The first failure of a descriptor nobody waits on (under `driving`): reported by the next quiet.
  ucs_status_t async_error = UCS_OK;
  // GPU heaps: every AMO (signals included) is applied by the owning PE (am_atomics); nullptr for
  // host heaps, whose AMOs are UCX atomics.
  std::unique_ptr<am_atomics> am;
  bool amo_by_owner = false;  // every AMO (signals included) goes to its owner through `am`

  // Tasks for the proxy thread (connect, registration, close): any thread appends under `mutex` and
  // rings the doorbell; the proxy thread runs them. `stop`: set by ~state, read by the proxy thread.
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
  // it waits for may be on its way, and whoever drives puts it into memory). Written by drivers,
  // read by the proxy thread and by host waits (progress_hook).
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

  // ucx_engine_worker.cc: the worker's holder, the proxy thread and its tasks.
  bool drive(bool once = false);
  bool drive_on_heap_device();
  bool try_drive(bool* progressed = nullptr, bool polling = false);
  static bool progress_hook(void* self);
  ~state();
  void post(std::function<void()> task);
  void on_thread(const std::function<void()>& task);
  void issue(std::string_view call, std::string_view what, int pe,
             std::function<ucs_status_ptr_t(ucp_request_param_t&)> start);
  void drain();
  bool queue_empty();
  long driven_nap_ns() const;
  void nap(bool watch_worker, long nap_ns);
  void nap_for(bool watch_worker, long nap_ns);
  void report_if_stuck(std::chrono::steady_clock::time_point now);
  void run();

  // ucx_engine_keys.cc: registration, rkeys and where an address lies for UCX.
  void register_region(bootstrap& boot, void* base, uint64_t nbytes, ucs_memory_type_t type, std::string_view what,
                       std::string_view call, ucp_mem_h& memh_out, uint64_t& base_out, uint64_t& nbytes_out,
                       std::vector<ucp_rkey_h>& keys, std::vector<uint64_t>& bases_out);
  void describe_local(ucp_request_param_t& param, uint64_t local, uint64_t nbytes) const;
  // Where `offset` of `pe` lives for UCX: its heap, or with kDataOffsetBit its data segment (a null
  // rkey when that PE registered none).
  struct remote_word {
    uint64_t address;
    ucp_rkey_h rkey;
  };
  remote_word remote_of(int pe, uint64_t offset) const;

  // One descriptor in flight in UCX: what its completion answers, and the buffers UCX reads from or
  // writes into until then (the ring slot itself is reused as soon as it is copied out). Created and
  // deleted (by complete) under `driving`.
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

  // ucx_engine_ring.cc: the ring protocol, both ends -- taking descriptors in ticket order, gathering
  // carried runs, answering (complete), and the host producers' calls.
  void make_ring(bool mapped, int my_pe);
  bool drain_ring();
  void complete(in_flight* op, ucs_status_t st);
  // A run of carried put pieces (kProxyRun) being gathered into messages of at most kCarriedRunMessage bytes: the
  // pieces come at consecutive tickets (the producer reserved them together), so nothing else is taken between
  // them; a descriptor that does not continue the run sends what was gathered first (a producer not of this
  // library's making: still correct, only not gathered). Under `driving`.
  struct carried_run {
    int pe = -1;
    uint64_t next = 0;           // heap offset the next piece must start at
    uint64_t left = 0;           // bytes of the run not taken yet (0: no run)
    in_flight* op = nullptr;     // the message being gathered (its staged bytes), or none yet
    uint64_t offset = 0;         // its heap offset
    uint64_t size = 0, got = 0;  // its bytes, and how many of them arrived
  } gathering;
  void send_run_message();
  bool gather(const proxy_desc& d, uint64_t ticket);
  void execute(const proxy_desc& slot_copy, uint64_t ticket);
  uint64_t call(std::string_view call_name, std::string_view what, proxy_desc d);
  void post_nbi(std::string_view call_name, std::string_view what, proxy_desc d);
  void post_carried(std::string_view call_name, std::string_view what, proxy_desc tail, const void* source);
  void get_carried(std::string_view call_name, std::string_view what, proxy_desc d, void* dest);
  bool carried_put(size_t nbytes) const;
  bool carried_get(size_t nbytes) const;
  struct host_poll;
  [[noreturn]] void timed_out(std::string_view call_name, std::string_view what, int pe, std::string_view how) const;

  // ucx_engine_issue.cc: one descriptor to UCX requests, in the ordering the ring promises.
  void dispatch(proxy_desc& d, in_flight* op);
  ucs_status_t fence_after_puts();
  static void on_complete(void* request, ucs_status_t status, void* user_data);
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

  // ucx_engine_messages.cc: active messages that the owner answers, and which puts and gets take them.
  void choose_direct(std::string_view call);
  ucs_status_t wait_for(ucs_status_ptr_t request);
  void start_by_owner(in_flight* op, int pe, uint8_t code, uint64_t nbytes, uint64_t offset, uint64_t swap_in);
  static void on_owner_reply(void* ctx, uint64_t token, uint64_t value, int64_t status);
  ucs_status_t settle_owner_amos();
  void start_am_put(in_flight* data, in_flight* ack, int pe, uint64_t offset, const void* source, uint64_t nbytes,
                    bool stage);
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

  // The stuck-proxy report's memory (report_if_stuck; proxy thread only).
  std::chrono::steady_clock::time_point last_progress{}, last_report{};
  uint64_t last_seen[5] = {};
  uint64_t calls_since_progress = 0;
};

}  // namespace shoal::detail
