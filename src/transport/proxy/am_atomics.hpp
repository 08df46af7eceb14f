// AMOs on GPU heap words, applied by the owning PE (UCX's software atomics must not touch device
// memory): the requesting proxy sends an active message to the owner's proxy, which applies the
// atomic there (owner_amo: a one-thread kernel on the owner's GPU) and answers with the old value.
// Puts and gets on GPU heaps travel the same way (staged through host memory at both ends).
// Proxy thread only (both sides run inside ucp_worker_progress of the single-thread worker).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include <ucp/api/ucp.h>

#include "transport/proxy/owner_amo.hpp"

namespace shoal::detail {

class am_atomics {
 public:
  /// Called on the requester when the owner's answer to `token` arrives (status 0: success).
  using done_fn = void (*)(void* ctx, uint64_t token, uint64_t value, int64_t status);

  /// Registers the request and reply handlers on `worker` (its context has UCP_FEATURE_AM). `eps`
  /// (per PE), `bases` (per PE: its heap's address in its own process) and `data_base` (this PE's
  /// shared data segment, for offsets with kDataOffsetBit) stay owned by the engine.
  /// `heap_nbytes`/`data_nbytes` (this PE's registered extents, also the engine's) bound what a message
  /// may touch here: a put, get or atomic outside them is refused with UCS_ERR_INVALID_ADDR, and an
  /// answer that matches no request of this PE is dropped (its destination is always the one asked for).
  am_atomics(ucp_worker_h worker, int my_pe, int device, bool host_heap, const std::vector<ucp_ep_h>& eps,
             const std::vector<uint64_t>& bases, const uint64_t* data_base, const uint64_t* heap_nbytes,
             const uint64_t* data_nbytes, done_fn done, void* ctx);

  /// Sends the ring atomic `code` (proxy_amo) on the nbytes word at heap `offset` of `pe`; `done`
  /// reports the old value later. Non-OK when the send failed at once (no answer will come).
  ucs_status_t send(int pe, uint64_t token, uint8_t code, uint64_t nbytes, uint64_t offset, uint64_t operand,
                    uint64_t swap_in);
  /// Host heaps: put-with-signal as one eager active message, `nbytes` from `source` for `offset` of
  /// `pe` and the signal (ring atomic `code` of `operand` on the 8-byte word at `sig_offset`), which
  /// the owner writes and then applies (a seq_cst atomic, after the data); its answer to `token`
  /// comes through `done` like an atomic's. `header` (kPutSignalHeaderBytes) and `source` must stay
  /// valid until `param`'s send callback (the caller's) reports local completion.
  /// `eager` false (large ones): UCX may send the data by rendezvous; the owner then receives them
  /// straight into place and applies the signal once they landed.
  ucs_status_ptr_t send_put_signal(int pe, uint64_t token, uint8_t code, uint64_t sig_offset, uint64_t operand,
                                   uint64_t offset, const void* source, size_t nbytes, void* header,
                                   ucp_request_param_t& param, bool eager = true);
  static constexpr size_t kPutSignalHeaderBytes = 40;
  /// Staged RMA on GPU heaps (UCX's own RMA would read and write the heap's device memory from its
  /// software protocols over TCP, which crashed on the VMM heap): a put travels as one eager active
  /// message carrying `nbytes` from `staged` (host memory, the caller's copy of the source) for
  /// `offset` of `pe`; the owner copies them into place (owner_amo::copy) and answers `token` through
  /// `done`. `header` (kPutSignalHeaderBytes) and `staged` must stay valid until `param`'s send
  /// callback reports local completion.
  ///
  /// Direct puts (host heaps, `eager` false: large puts, where UCX's active messages outrun its RMA
  /// over TCP): `staged` is the caller's source itself, and UCX may send it by rendezvous, which the
  /// owner receives straight into its heap and answers once the data landed.
  ucs_status_ptr_t send_put(int pe, uint64_t token, uint64_t offset, const void* staged, size_t nbytes, void* header,
                            ucp_request_param_t& param, bool eager = true);
  /// A get: the owner copies nbytes at `offset` of `pe` out and sends them back; this side copies them
  /// to `dest` (host or this PE's GPU memory) and then reports `token` through `done`. `direct` (host
  /// heaps): the owner answers straight from its heap and a large answer lands straight at `dest`.
  ucs_status_t send_get(int pe, uint64_t token, uint64_t offset, uint64_t nbytes, uint64_t dest, bool direct = false);
  /// GPU heaps: the owner's CUDA work in a context of its own (true, the default) or the primary one.
  void use_private_context(bool on) { owner_.use_private_context(on); }
  /// Tests (host heaps): the owner's copies report from the next poll() (owner_amo::defer_host_copies).
  void defer_host_copies(bool on) { owner_.defer_host_copies(on); }
  /// SHOAL_PROXY_STATS: the owner's work counted and timed (owner_amo::count_work, stats).
  void count_work(bool on) { owner_.count_work(on); }
  std::string stats() const { return owner_.stats(); }
  /// GPU heaps: the owner's CUDA waits, bounded and reported (owner_amo::bound_waits).
  void bound_waits(std::chrono::milliseconds timeout) { owner_.bound_waits(my_pe_, timeout); }
  /// GPU heaps: the owner's first-use work done now (owner_amo::prepare); call at init. Empty on success.
  std::string prepare() { return owner_.prepare(); }
  /// This PE's copy engine for staging (the owner_amo's stream): `dest` <- `source`, landed on return.
  std::string copy(void* dest, const void* source, size_t nbytes) { return owner_.copy(dest, source, nbytes); }
  /// Reports the owner's copies that have landed (owner_amo::poll): answers to staged puts and gets, landed gets;
  /// true when any was. Call from the progress loop.
  bool poll() { return owner_.poll(); }
  /// The owner's copies not reported yet.
  size_t copies_pending() const { return owner_.copies_pending(); }
  /// Progresses the worker (and the owner's copies) until every request sent has been answered and every copy
  /// reported, or `timeout` (0: none) passed.
  ucs_status_t drain(std::chrono::milliseconds timeout);
  uint64_t outstanding() const { return awaited_.size(); }

 private:
  struct request {
    uint64_t token;
    int32_t from;
    uint8_t code;
    uint8_t nbytes;
    uint8_t pad[2];
    uint64_t offset, operand, swap_in;
  };
  struct reply {
    uint64_t token, value;
    int64_t status;
  };
  static ucs_status_t on_request(void* arg, const void* header, size_t header_nbytes, void*, size_t,
                                 const ucp_am_recv_param_t*);
  static ucs_status_t on_reply(void* arg, const void* header, size_t header_nbytes, void*, size_t,
                               const ucp_am_recv_param_t*);
  static ucs_status_t on_put(void* arg, const void* header, size_t header_nbytes, void* data, size_t length,
                             const ucp_am_recv_param_t* param);
  static ucs_status_t on_get(void* arg, const void* header, size_t header_nbytes, void*, size_t,
                             const ucp_am_recv_param_t*);
  static ucs_status_t on_get_reply(void* arg, const void* header, size_t header_nbytes, void* data, size_t length,
                                   const ucp_am_recv_param_t* param);
  static void on_put_landed(void* request, ucs_status_t status, size_t length, void* user_data);
  static void on_get_landed(void* request, ucs_status_t status, size_t length, void* user_data);
  static constexpr uint8_t kGetDirect = 1;  // a get request's code: answer straight from the heap
  static ucs_status_t on_put_signal(void* arg, const void* header, size_t header_nbytes, void* data, size_t length,
                                    const ucp_am_recv_param_t* param);
  // A get's destination here and the bytes it asked for (`get` false: another request).
  struct get_landing {
    bool get = false;
    uint64_t dest = 0, nbytes = 0;
  };
  // This PE's address of heap or data-segment `offset` (kDataOffsetBit).
  uint64_t local_address(uint64_t offset) const;
  // True when [offset, offset + nbytes) lies inside this PE's registered heap or data segment.
  bool in_place(uint64_t offset, uint64_t nbytes) const;
  // The awaited request `token` answers, removed from awaited_; nullopt (and a message naming `what`)
  // when this PE awaits no such answer.
  std::optional<get_landing> answered(uint64_t token, const char* what);
  // Says that `what` from PE `from` reached outside this PE's heap or data segment; the answer's status.
  int64_t refused(const char* what, int from, uint64_t offset, uint64_t nbytes) const;
  void answer(int to, const reply& r);
  void answer_get(const request& m, int64_t status, const char* bytes, size_t nbytes, bool direct);
  ucs_status_t post(ucp_ep_h ep, unsigned id, const void* message, size_t nbytes);

  ucp_worker_h worker_;
  int my_pe_;
  const std::vector<ucp_ep_h>& eps_;
  const std::vector<uint64_t>& bases_;
  const uint64_t* data_base_;
  const uint64_t* heap_nbytes_;
  const uint64_t* data_nbytes_;
  done_fn done_;
  void* ctx_;
  owner_amo owner_;
  bool host_heap_;
  // Direct messages smaller than this are sent eager even where UCX would pick rendezvous: over TCP
  // on loopback eager moved 32-128 KiB puts at 1.5-2x the rate, rendezvous won from 256 KiB.
  size_t rendezvous_min_ = size_t{256} << 10;
  // Requests sent and not yet answered, by token (their in_flight's address, unique while awaited).
  std::unordered_map<uint64_t, get_landing> awaited_;
};

}  // namespace shoal::detail
