#include "transport/proxy/am_atomics.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/check.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

namespace {

enum : unsigned {
  kAmRequest = 0x5301,
  kAmReply = 0x5302,
  kAmPutSignal = 0x5303,
  kAmPut = 0x5304,
  kAmGet = 0x5305,
  kAmGetReply = 0x5306
};

// A get's answer: the token and destination echoed, the status; the data follow as the payload.
struct get_reply {
  uint64_t token, dest;
  int64_t status;
};

// A message's fixed header as T; false (the message is dropped) when its size is not T's.
template <class T>
bool read_header(const void* header, size_t header_nbytes, T* out) {
  if (header_nbytes != sizeof(T)) return false;
  std::memcpy(out, header, sizeof(T));
  return true;
}

// The owner's work for PE `from` failed: says so, and gives the status its answer carries.
int64_t owner_failed(int my_pe, const char* what, int from, const std::string& err) {
  std::fprintf(stderr, "shoal: PE %d: %s from PE %d on this PE's heap failed: %s\n", my_pe, what, from, err.c_str());
  return UCS_ERR_IO_ERROR;
}

void free_buffer(void* request, ucs_status_t, void* buffer) {
  delete[] static_cast<char*>(buffer);
  ucp_request_free(request);
}

void free_message(void* request, ucs_status_t, void* message) {
  delete[] static_cast<char*>(message);
  ucp_request_free(request);
}

// A rendezvous message's payload, being received straight into its destination.
struct landing {
  am_atomics* self;
  int from;
  uint64_t token, dest;
  bool signal = false;  // a put-with-signal: its signal's ring atomic (proxy_amo), word and operand
  uint8_t code = 0;
  uint64_t sig_offset = 0, operand = 0;
};

// Receives a rendezvous message's `length` bytes straight into `dest`; `landed` runs once they are there
// (or failed), at once when UCX completes the receive immediately, and owns `ctx`.
void receive_into(ucp_worker_h worker, void* data, void* dest, size_t length, landing* ctx,
                  ucp_am_recv_data_nbx_callback_t landed) {
  ucp_request_param_t recv{};
  recv.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  recv.cb.recv_am = landed;
  recv.user_data = ctx;
  ucs_status_ptr_t req = ucp_am_recv_data_nbx(worker, data, dest, length, &recv);
  if (!UCS_PTR_IS_PTR(req)) landed(nullptr, UCS_PTR_STATUS(req), length, ctx);
}

}  // namespace

am_atomics::am_atomics(ucp_worker_h worker, int my_pe, int device, bool host_heap, const std::vector<ucp_ep_h>& eps,
                       const std::vector<uint64_t>& bases, const uint64_t* data_base, const uint64_t* heap_nbytes,
                       const uint64_t* data_nbytes, done_fn done, void* ctx)
    : worker_(worker),
      my_pe_(my_pe),
      eps_(eps),
      bases_(bases),
      data_base_(data_base),
      heap_nbytes_(heap_nbytes),
      data_nbytes_(data_nbytes),
      done_(done),
      ctx_(ctx),
      owner_(device, host_heap),
      host_heap_(host_heap) {
  // SHOAL_TEST_PROXY_RNDV=1: UCX picks eager or rendezvous for every direct message (the tests pair it
  // with UCX_RNDV_THRESH=1, so that small messages take the rendezvous protocol too).
  if (const char* rndv = std::getenv("SHOAL_TEST_PROXY_RNDV"); rndv != nullptr && std::strcmp(rndv, "1") == 0)
    rendezvous_min_ = 0;
  for (auto [id, cb] :
       {std::pair{kAmRequest, &on_request}, std::pair{kAmReply, &on_reply}, std::pair{kAmPutSignal, &on_put_signal},
        std::pair{kAmPut, &on_put}, std::pair{kAmGet, &on_get}, std::pair{kAmGetReply, &on_get_reply}}) {
    ucp_am_handler_param_t param{};
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id = id;
    param.cb = cb;
    param.arg = this;
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker_, &param);
    if (st != UCS_OK)
      SHOAL_THROW(errc::system, "shoal_init", "PE {}: ucp_worker_set_am_recv_handler failed: {}", my_pe,
                  ucs_status_string(st));
  }
}

// A copy of `message` travels as the AM header (freed when the send completes).
ucs_status_t am_atomics::post(ucp_ep_h ep, unsigned id, const void* message, size_t nbytes) {
  if (ep == nullptr) return UCS_ERR_UNREACHABLE;
  auto* copy = new char[nbytes];
  std::memcpy(copy, message, nbytes);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = free_message;
  param.user_data = copy;
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, copy, nbytes, nullptr, 0, &param);
  if (UCS_PTR_IS_PTR(r)) return UCS_OK;
  delete[] copy;
  return UCS_PTR_STATUS(r);
}

ucs_status_t am_atomics::send(int pe, uint64_t token, uint8_t code, uint64_t nbytes, uint64_t offset, uint64_t operand,
                              uint64_t swap_in) {
  const request m{token, my_pe_, code, static_cast<uint8_t>(nbytes), {}, offset, operand, swap_in};
  ucs_status_t st = post(eps_[pe], kAmRequest, &m, sizeof(m));
  if (st == UCS_OK) awaited_.emplace(token, get_landing{});
  return st;
}

ucs_status_ptr_t am_atomics::send_put_signal(int pe, uint64_t token, uint8_t code, uint64_t sig_offset,
                                             uint64_t operand, uint64_t offset, const void* source, size_t nbytes,
                                             void* header, ucp_request_param_t& param, bool eager) {
  static_assert(sizeof(request) == kPutSignalHeaderBytes);
  if (eps_[pe] == nullptr) return UCS_STATUS_PTR(UCS_ERR_UNREACHABLE);
  // The request's fields: offset = the signal word, swap_in = where the data go.
  const request m{token, my_pe_, code, 8, {}, sig_offset, operand, offset};
  std::memcpy(header, &m, sizeof(m));
  if (eager || nbytes < rendezvous_min_) {  // the data arrive with the message, so the handler applies both
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags |= UCP_AM_SEND_FLAG_EAGER;
  }
  ucs_status_ptr_t r = ucp_am_send_nbx(eps_[pe], kAmPutSignal, header, sizeof(m), source, nbytes, &param);
  if (!UCS_PTR_IS_ERR(r)) awaited_.emplace(token, get_landing{});
  return r;
}

ucs_status_ptr_t am_atomics::send_put(int pe, uint64_t token, uint64_t offset, const void* staged, size_t nbytes,
                                      void* header, ucp_request_param_t& param, bool eager) {
  if (eps_[pe] == nullptr) return UCS_STATUS_PTR(UCS_ERR_UNREACHABLE);
  const request m{token, my_pe_, 0, 0, {}, offset, nbytes, 0};
  std::memcpy(header, &m, sizeof(m));
  if (eager || nbytes < rendezvous_min_) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags |= UCP_AM_SEND_FLAG_EAGER;  // the data arrive with the message (any size: fragments)
  }
  ucs_status_ptr_t r = ucp_am_send_nbx(eps_[pe], kAmPut, header, sizeof(m), staged, nbytes, &param);
  if (!UCS_PTR_IS_ERR(r)) awaited_.emplace(token, get_landing{});
  return r;
}

ucs_status_t am_atomics::send_get(int pe, uint64_t token, uint64_t offset, uint64_t nbytes, uint64_t dest,
                                  bool direct) {
  const request m{token, my_pe_, direct ? kGetDirect : uint8_t{0}, 0, {}, offset, nbytes, dest};
  ucs_status_t st = post(eps_[pe], kAmGet, &m, sizeof(m));
  if (st == UCS_OK) awaited_.emplace(token, get_landing{true, dest, nbytes});
  return st;
}

ucs_status_t am_atomics::drain(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!awaited_.empty() || owner_.copies_pending() > 0) {
    ucp_worker_progress(worker_);
    owner_.poll();
    if (timeout.count() > 0 && std::chrono::steady_clock::now() > end) return UCS_ERR_TIMED_OUT;
  }
  return UCS_OK;
}

bool am_atomics::in_place(uint64_t offset, uint64_t nbytes) const {
  const bool data = (offset & kDataOffsetBit) != 0;
  const uint64_t at = offset & ~kDataOffsetBit, size = data ? *data_nbytes_ : *heap_nbytes_;
  return at <= size && nbytes <= size - at;
}

std::optional<am_atomics::get_landing> am_atomics::answered(uint64_t token, const char* what) {
  auto it = awaited_.find(token);
  if (it == awaited_.end()) {
    std::fprintf(stderr, "shoal: PE %d: dropped %s that answers no request of this PE\n", my_pe_, what);
    return std::nullopt;
  }
  const get_landing landing = it->second;
  awaited_.erase(it);
  return landing;
}

int64_t am_atomics::refused(const char* what, int from, uint64_t offset, uint64_t nbytes) const {
  std::fprintf(stderr, "shoal: PE %d: refused %s from PE %d: %llu bytes at offset 0x%llx are outside this PE's %s\n",
               my_pe_, what, from, static_cast<unsigned long long>(nbytes),
               static_cast<unsigned long long>(offset & ~kDataOffsetBit),
               (offset & kDataOffsetBit) != 0 ? "data segment" : "heap");
  return UCS_ERR_INVALID_ADDR;
}

uint64_t am_atomics::local_address(uint64_t offset) const {
  return (offset & kDataOffsetBit) != 0 ? *data_base_ + (offset & ~kDataOffsetBit) : bases_[my_pe_] + offset;
}

void am_atomics::answer(int to, const reply& r) {
  ucs_status_t st = post(to >= 0 && to < static_cast<int>(eps_.size()) ? eps_[to] : nullptr, kAmReply, &r, sizeof(r));
  if (st != UCS_OK)
    std::fprintf(stderr, "shoal: PE %d: answering an atomic of PE %d failed: %s\n", my_pe_, to, ucs_status_string(st));
}

// The owner's side of put-with-signal (host heaps): the data, then the signal, then the answer.
ucs_status_t am_atomics::on_put_signal(void* arg, const void* header, size_t header_nbytes, void* data, size_t length,
                                       const ucp_am_recv_param_t* param) {
  auto* self = static_cast<am_atomics*>(arg);
  request m;
  if (!read_header(header, header_nbytes, &m)) return UCS_OK;
  reply r{m.token, 0, 0};
  if (!self->in_place(m.swap_in, length) || !self->in_place(m.offset, 8)) {
    r.status = self->refused("a put-with-signal", m.from, self->in_place(m.offset, 8) ? m.swap_in : m.offset,
                             self->in_place(m.offset, 8) ? length : 8);
    self->answer(m.from, r);
    return UCS_OK;  // a rendezvous's data are dropped
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 && self->host_heap_) {
    // A large one (host heaps): the data straight into place, then the signal, then the answer.
    receive_into(self->worker_, data, reinterpret_cast<void*>(self->local_address(m.swap_in)), length,
                 new landing{self, m.from, m.token, 0, true, m.code, m.offset, m.operand}, &on_put_landed);
    return UCS_OK;
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) {
    r.status = UCS_ERR_UNSUPPORTED;  // GPU heaps send eager only: never expected
  } else {
    if (length > 0) std::memcpy(reinterpret_cast<void*>(self->local_address(m.swap_in)), data, length);
    const std::string err =
        self->owner_.apply(m.code, 8, reinterpret_cast<void*>(self->local_address(m.offset)), m.operand, 0, &r.value);
    if (!err.empty()) r.status = UCS_ERR_IO_ERROR;
  }
  self->answer(m.from, r);
  return UCS_OK;
}

// The owner's side of a staged put: the data into place, then the answer.
ucs_status_t am_atomics::on_put(void* arg, const void* header, size_t header_nbytes, void* data, size_t length,
                                const ucp_am_recv_param_t* param) {
  auto* self = static_cast<am_atomics*>(arg);
  request m;
  if (!read_header(header, header_nbytes, &m)) return UCS_OK;
  reply r{m.token, 0, 0};
  if (!self->in_place(m.offset, length)) {
    r.status = self->refused("a put", m.from, m.offset, length);
    self->answer(m.from, r);
    return UCS_OK;  // a rendezvous's data are dropped
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 && self->host_heap_ && length == m.operand) {
    // A direct put (host heaps): UCX moves the data straight into place; answered once they landed.
    receive_into(self->worker_, data, reinterpret_cast<void*>(self->local_address(m.offset)), length,
                 new landing{self, m.from, m.token, 0}, &on_put_landed);
    return UCS_OK;
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || length != m.operand) {
    r.status = UCS_ERR_UNSUPPORTED;  // staged puts are sent eager and whole: never expected
    self->answer(m.from, r);
    return UCS_OK;
  }
  // Answered once the data have landed (a copy on the owner's stream, many in flight; later copies and atomics of
  // this owner run behind it).
  const int from = m.from;
  self->owner_.copy_in(
      reinterpret_cast<void*>(self->local_address(m.offset)), data, length,
      [self, from, r](const std::string& err) mutable {
        if (!err.empty()) r.status = owner_failed(self->my_pe_, "a put", from, err);
        self->answer(from, r);
      },
      (m.offset & kDataOffsetBit) == 0);  // the heap (a data-segment offset is host memory: asked)
  return UCS_OK;
}

// A direct put's data are in place (or failed): a put-with-signal's signal, then the answer.
void am_atomics::on_put_landed(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* ctx = static_cast<landing*>(user_data);
  reply r{ctx->token, 0, 0};
  if (status != UCS_OK) {
    r.status = owner_failed(ctx->self->my_pe_, "a put", ctx->from, ucs_status_string(status));
  } else if (ctx->signal) {
    const std::string err = ctx->self->owner_.apply(
        ctx->code, 8, reinterpret_cast<void*>(ctx->self->local_address(ctx->sig_offset)), ctx->operand, 0, &r.value);
    if (!err.empty()) r.status = owner_failed(ctx->self->my_pe_, "a put-with-signal's signal", ctx->from, err);
  }
  ctx->self->answer(ctx->from, r);
  delete ctx;
  if (request != nullptr) ucp_request_free(request);
}

// The owner's side of a staged get: the bytes out of place, back to the requester with its token.
ucs_status_t am_atomics::on_get(void* arg, const void* header, size_t header_nbytes, void*, size_t,
                                const ucp_am_recv_param_t*) {
  auto* self = static_cast<am_atomics*>(arg);
  request m;
  if (!read_header(header, header_nbytes, &m)) return UCS_OK;
  const bool inside = self->in_place(m.offset, m.operand);
  const size_t nbytes = inside ? m.operand : 0;
  const auto* source = reinterpret_cast<const char*>(self->local_address(m.offset));
  // Host heaps answer straight from the heap (rendezvous for large answers: the requester's UCX pulls
  // them into place); GPU heaps copy the bytes out (on the owner's stream, many in flight) and answer with a copy
  // behind the answer's header.
  if (!inside) {
    self->answer_get(m, self->refused("a get", m.from, m.offset, m.operand), nullptr, 0, false);
  } else if (self->host_heap_ && m.code == kGetDirect) {
    self->answer_get(m, 0, source, nbytes, true);
  } else {
    self->owner_.copy_out(source, nbytes, [self, m, nbytes](const std::string& err, const char* bytes) {
      if (!err.empty()) return self->answer_get(m, owner_failed(self->my_pe_, "a get", m.from, err), nullptr, 0, false);
      self->answer_get(m, 0, bytes, nbytes, false);
    });
  }
  return UCS_OK;
}

// A get's answer: the header, then nbytes from `bytes` (direct: sent from there, which stays valid; else copied
// behind the header).
void am_atomics::answer_get(const request& m, int64_t status, const char* bytes, size_t nbytes, bool direct) {
  auto* buffer = new char[sizeof(get_reply) + (direct || status != 0 ? 0 : nbytes)];
  get_reply r{m.token, m.swap_in, status};
  const char* source = bytes;
  if (!direct && status == 0 && nbytes > 0) {
    std::memcpy(buffer + sizeof(get_reply), bytes, nbytes);
    source = buffer + sizeof(get_reply);
  }
  if (status != 0) nbytes = 0;
  std::memcpy(buffer, &r, sizeof(r));
  ucp_ep_h ep = m.from >= 0 && m.from < static_cast<int>(eps_.size()) ? eps_[m.from] : nullptr;
  ucs_status_ptr_t sent = UCS_STATUS_PTR(UCS_ERR_UNREACHABLE);
  if (ep != nullptr) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = free_buffer;
    param.user_data = buffer;
    if (!direct || nbytes < rendezvous_min_) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_AM_SEND_FLAG_EAGER;
    }
    sent = ucp_am_send_nbx(ep, kAmGetReply, buffer, sizeof(r), source, nbytes, &param);
  }
  if (!UCS_PTR_IS_PTR(sent)) {
    delete[] buffer;
    if (UCS_PTR_IS_ERR(sent))
      std::fprintf(stderr, "shoal: PE %d: answering a get of PE %d failed: %s\n", my_pe_, m.from,
                   ucs_status_string(UCS_PTR_STATUS(sent)));
  }
}

// The requester's side of a staged get: the bytes to their destination, then the caller is told.
ucs_status_t am_atomics::on_get_reply(void* arg, const void* header, size_t header_nbytes, void* data, size_t length,
                                      const ucp_am_recv_param_t* param) {
  auto* self = static_cast<am_atomics*>(arg);
  get_reply r;
  if (!read_header(header, header_nbytes, &r)) return UCS_OK;
  // The destination is the one this PE asked for (the token's), never the one the answer names, and
  // an answer brings at most the bytes asked for.
  const auto asked = self->awaited_.find(r.token);
  if (asked == self->awaited_.end() || !asked->second.get || length > asked->second.nbytes) {
    std::fprintf(stderr, "shoal: PE %d: dropped a get's answer that matches no get of this PE\n", self->my_pe_);
    return UCS_OK;
  }
  r.dest = asked->second.dest;
  if (r.status == 0 && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 && self->host_heap_) {
    // A direct get's large answer: UCX moves it straight to the destination; reported once landed.
    receive_into(self->worker_, data, reinterpret_cast<void*>(r.dest), length, new landing{self, -1, r.token, r.dest},
                 &on_get_landed);
    return UCS_OK;
  }
  if (r.status == 0 && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) r.status = UCS_ERR_UNSUPPORTED;
  if (r.status == 0 && length > 0) {
    // Reported once the data have landed (a copy into GPU memory runs on this PE's stream, many in flight); the
    // get stays awaited until then, so drain() and the quiets behind it wait for it.
    const uint64_t token = r.token;
    // A destination in this PE's heap is GPU memory: no pointer query for it (one CUDA call less per get).
    const uint64_t base = self->bases_[self->my_pe_];
    const bool in_heap =
        r.dest >= base && r.dest - base < *self->heap_nbytes_ && length <= *self->heap_nbytes_ - (r.dest - base);
    self->owner_.copy_in(
        reinterpret_cast<void*>(r.dest), data, length,
        [self, token](const std::string& err) {
          int64_t status = 0;
          if (!err.empty()) {
            std::fprintf(stderr, "shoal: PE %d: landing a get's data failed: %s\n", self->my_pe_, err.c_str());
            status = UCS_ERR_IO_ERROR;
          }
          self->awaited_.erase(token);
          self->done_(self->ctx_, token, 0, status);
        },
        in_heap);
    return UCS_OK;
  }
  self->awaited_.erase(asked);
  self->done_(self->ctx_, r.token, 0, r.status);
  return UCS_OK;
}

// A direct get's answer has landed at its destination (or failed): the caller is told.
void am_atomics::on_get_landed(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* ctx = static_cast<landing*>(user_data);
  am_atomics* self = ctx->self;
  if (status != UCS_OK)
    std::fprintf(stderr, "shoal: PE %d: landing a get's data failed: %s\n", self->my_pe_, ucs_status_string(status));
  self->awaited_.erase(ctx->token);
  self->done_(self->ctx_, ctx->token, 0, status == UCS_OK ? 0 : static_cast<int64_t>(status));
  delete ctx;
  if (request != nullptr) ucp_request_free(request);
}

// The owner's side: apply on this PE's GPU heap, answer the requester.
ucs_status_t am_atomics::on_request(void* arg, const void* header, size_t header_nbytes, void*, size_t,
                                    const ucp_am_recv_param_t*) {
  auto* self = static_cast<am_atomics*>(arg);
  request m;
  if (!read_header(header, header_nbytes, &m)) return UCS_OK;
  reply r{m.token, 0, 0};
  if ((m.nbytes != 4 && m.nbytes != 8) || !self->in_place(m.offset, m.nbytes)) {
    r.status = self->refused("an atomic", m.from, m.offset, m.nbytes);
  } else {
    const std::string err = self->owner_.apply(m.code, m.nbytes, reinterpret_cast<void*>(self->local_address(m.offset)),
                                               m.operand, m.swap_in, &r.value);
    if (!err.empty()) r.status = owner_failed(self->my_pe_, "an atomic", m.from, err);
  }
  self->answer(m.from, r);
  return UCS_OK;
}

// The requester's side: the old value is back.
ucs_status_t am_atomics::on_reply(void* arg, const void* header, size_t header_nbytes, void*, size_t,
                                  const ucp_am_recv_param_t*) {
  auto* self = static_cast<am_atomics*>(arg);
  reply r;
  if (!read_header(header, header_nbytes, &r)) return UCS_OK;
  if (!self->answered(r.token, "an answer")) return UCS_OK;
  self->done_(self->ctx_, r.token, r.value, r.status);
  return UCS_OK;
}

}  // namespace shoal::detail
