// The UCX worker's holder and the proxy thread: the try-lock that lets one thread at a time drive the
// worker (drain the ring, progress UCX), the host threads' drives and the progress hook of host waits,
// and the proxy thread itself -- its task queue, its loop, its naps and its report when stuck.
#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <utility>

#ifdef SHOAL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "common/check.hpp"
#include "transport/proxy/ucx_engine_state.hpp"

namespace shoal::detail {

namespace {

void on_done(void* request, ucs_status_t status, void* user_data) {
  auto* result = static_cast<std::promise<ucs_status_t>*>(user_data);
  result->set_value(status);
  delete result;
  ucp_request_free(request);
}

}  // namespace

// Under `driving`: issues every committed descriptor and progresses the worker until it is idle
// (the proxy thread), or once (`once`: a host thread that polls for an answer or a memory word checks
// it after each progress call, as ucx_perftest does; over TCP each call is an epoll_wait, and a
// second one on the way to the check costs ~1 us per hop); true when anything happened.
bool ucx_engine::state::drive(bool once) {
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
bool ucx_engine::state::drive_on_heap_device() {
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
bool ucx_engine::state::try_drive(bool* progressed, bool polling) {
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
bool ucx_engine::state::progress_hook(void* self) {
  auto* s = static_cast<state*>(self);
  bool progressed = false;
  s->try_drive(&progressed);
  return progressed || now_ns() - s->traffic_ns.load(std::memory_order_relaxed) <
                           std::chrono::nanoseconds(progress_hooks::kHotWindow).count();
}

// Stops the proxy thread, then releases the UCX objects on this thread: endpoints still open
// (close() not reached: an error or an exit without finalize) are closed forcibly, bounded.
ucx_engine::state::~state() {
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

void ucx_engine::state::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex);
    queue.push_back(std::move(task));
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(doorbell, &one, sizeof(one));
}

// Runs `task` on the proxy thread and waits for it (exceptions travel back).
void ucx_engine::state::on_thread(const std::function<void()>& task) {
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
void ucx_engine::state::issue(std::string_view call, std::string_view what, int pe,
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

void ucx_engine::state::drain() {
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(mutex);
    tasks.swap(queue);
  }
  for (auto& task : tasks) task();
}

bool ucx_engine::state::queue_empty() {
  std::lock_guard lock(mutex);
  return queue.empty();
}

// How long the proxy thread naps while host threads drive: until the driven window after their last drive ends
// (when it would take over), at least kDrivenNapMinNs.
long ucx_engine::state::driven_nap_ns() const {
  const int64_t left = host_drove_ns.load(std::memory_order_relaxed) + driven_window_ns - now_ns();
  return static_cast<long>(std::clamp<int64_t>(left, kDrivenNapMinNs, driven_window_ns));
}

// Sleeps on the doorbell (and the worker's fd when `watch_worker`) for at most `nap_ns`, or until
// a kernel reserves a ticket when the ring is device-mapped.
void ucx_engine::state::nap(bool watch_worker, long nap_ns) {
  const int64_t t0 = stats.on ? now_ns() : 0;
  nap_for(watch_worker, nap_ns);
  if (stats.on) ++stats.naps, stats.nap_ns += now_ns() - t0;
}

void ucx_engine::state::nap_for(bool watch_worker, long nap_ns) {
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
void ucx_engine::state::report_if_stuck(std::chrono::steady_clock::time_point now) {
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
void ucx_engine::state::run() {
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

}  // namespace shoal::detail
