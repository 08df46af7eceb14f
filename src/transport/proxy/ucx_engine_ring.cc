// The request ring's protocol at the engine, both ends: the host producers' calls (post a descriptor,
// wait for its credit and answer while driving the worker), and the consumer's side under the worker's
// lock -- take committed descriptors in ticket order, gather carried runs, hand each to dispatch, answer.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <utility>

#ifdef SHOAL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "common/check.hpp"
#include "transport/proxy/ucx_engine_state.hpp"

namespace shoal::detail {

namespace {

// Descriptors in the request ring (a power of two).
constexpr uint32_t kRingSlots = 256;
// Bytes of each slot's payload area in a device-mapped ring (1 MiB of pinned memory in all): kernels' puts and
// blocking gets carry their data there (SHOAL_PROXY_PAYLOAD_MAX), so the proxy stages nothing from GPU memory.
constexpr uint32_t kRingPayload = 4096;
// A run of carried put pieces (kProxyRun) is sent in messages of at most this many bytes: as much as one of the
// owner's asynchronous landing copies takes.
constexpr uint64_t kCarriedRunMessage = owner_amo::kAsyncBytes;
// SHOAL_TEST_PROXY_PAYLOAD=1: host puts of up to this many payload areas are carried (in runs of pieces).
constexpr uint32_t kHostCarriedPieces = 24;

}  // namespace

// Allocates the zeroed ring; pinned and device-mapped when kernels post into it (`mapped`). Its slots have
// payload areas where kernels post into it, or host producers use them (host_payload).
void ucx_engine::state::make_ring(bool mapped, int my_pe) {
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

// --- the producers' side: host threads (kernels post the same way, device_proxy.cuh) ---------------------------------
// A host call posts its descriptor and waits for a credit and for its answer, driving the worker itself whenever
// no other thread holds it.

// A host thread's poll while it waits on the ring (for a credit, or for its answer): drives the
// worker when it is free, at full speed while that moves things; after 512 idle polls yields,
// after 4096 sleeps 20 us per poll, so a caller waiting on a slow peer does not keep a core busy.
// True (the wait ends) past SHOAL_WAIT_TIMEOUT.
struct ucx_engine::state::host_poll {
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

void ucx_engine::state::timed_out(std::string_view call_name, std::string_view what, int pe,
                                  std::string_view how) const {
  if (pe >= 0)
    SHOAL_THROW(errc::timeout, call_name, "{} to PE {} {} within {} ms (SHOAL_WAIT_TIMEOUT)", what, pe, how,
                timeout.count());
  SHOAL_THROW(errc::timeout, call_name, "{} {} within {} ms (SHOAL_WAIT_TIMEOUT)", what, how, timeout.count());
}

// True when a host put (or put-with-signal) of nbytes takes the payload route (host_payload): up to
// kHostCarriedPieces areas, so that runs of pieces are covered too.
bool ucx_engine::state::carried_put(size_t nbytes) const {
  return host_payload && nbytes > 0 && nbytes <= uint64_t{kHostCarriedPieces} * ring->payload;
}

// The same for a blocking get: up to one area.
bool ucx_engine::state::carried_get(size_t nbytes) const {
  return host_payload && nbytes > 0 && nbytes <= ring->payload;
}

// Posts `d` as a waiting descriptor from a host thread and returns the reply; throws on a UCX
// failure or when no credit or reply comes within SHOAL_WAIT_TIMEOUT. The caller drives the
// worker itself whenever no other thread holds it (issuing its descriptor, and progressing until
// the answer arrives: no hand-off to the proxy thread and back); otherwise the holder drains the
// ring, this descriptor included, and the caller polls for its turn.
uint64_t ucx_engine::state::call(std::string_view call_name, std::string_view what, proxy_desc d) {
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
void ucx_engine::state::post_nbi(std::string_view call_name, std::string_view what, proxy_desc d) {
  host_poll poll(*this);
  if (ring_post(ring, d, poll) == ~uint64_t{0}) timed_out(call_name, what, d.pe, "found no ring slot");
  try_drive();
}

// A put or put-with-signal (`tail`: its last piece) whose bytes travel in the ring's payload areas (host_payload:
// what a kernel's put does, device_proxy.cuh proxy_put_carried), in pieces of one area each at consecutive
// tickets, the first of each reservation marked as a run (kProxyRun), committed kCarriedCommitPieces at a time:
// written between the reservation and the commit, so the call returns once posted.
void ucx_engine::state::post_carried(std::string_view call_name, std::string_view what, proxy_desc tail,
                                     const void* source) {
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
void ucx_engine::state::get_carried(std::string_view call_name, std::string_view what, proxy_desc d, void* dest) {
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

// --- the consumer's side, under `driving` ----------------------------------------------------------------------------
// Descriptors are taken in ticket order, carried runs gathered, and each one issued (dispatch,
// ucx_engine_issue.cc) and answered when its UCX request -- or the owner's answer -- completes it.

// Takes every committed descriptor and issues it; true when there was any.
bool ucx_engine::state::drain_ring() {
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

// Issues descriptor `ticket` (gathered into a run when it is a piece of one; else copied out of its slot, which
// non-waiting ones free at once). A put carried in the slot's payload area (kProxyPayload) is copied out with it,
// into host memory its in_flight owns; a get carried there (waiting) lands in the payload area, which its producer
// reads before it acknowledges.
void ucx_engine::state::execute(const proxy_desc& slot_copy, uint64_t ticket) {
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

// Takes the carried put piece `d` (ticket) into the run when it starts or continues one; false when it does
// neither (a run in progress is then sent as far as it got and ended).
bool ucx_engine::state::gather(const proxy_desc& d, uint64_t ticket) {
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

// Sends the run's message gathered so far (if any) as one staged put.
void ucx_engine::state::send_run_message() {
  in_flight* op = std::exchange(gathering.op, nullptr);
  if (op == nullptr) return;
  proxy_desc d{};
  d.op = proxy_op::put, d.pe = gathering.pe, d.offset = gathering.offset, d.nbytes = gathering.got;
  d.local = reinterpret_cast<uint64_t>(op->staged.get());
  ++stats.run_messages;
  dispatch(d, op);
}

// Completion of one descriptor's UCX request (or of one that completed at once).
void ucx_engine::state::complete(in_flight* op, ucs_status_t st) {
  if (op->quiet && st == UCS_OK) consumer->answered_quiet(op->ticket);
  if (op->wait)
    consumer->reply(op->ticket, op->reply, st == UCS_OK ? 0 : static_cast<int64_t>(st));
  else if (st != UCS_OK && async_error == UCS_OK)
    async_error = st;
  delete op;
}

}  // namespace shoal::detail
