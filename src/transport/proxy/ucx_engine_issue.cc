// One descriptor to UCX requests: RMA and atomics on the peer's rkey, fence and quiet, put-with-signal,
// and the routes to active messages (staged, direct, owner-applied), in the order the ring promises --
// a get or atomic after puts fences (or settles the owner's answers) first.
#include <utility>

#include "transport/proxy/ucx_engine_state.hpp"

namespace shoal::detail {

namespace {

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

// Host heaps: put-with-signal of at most this many bytes travels as one active message.
constexpr uint64_t kPutSignalMessageMax = 8192;

}  // namespace

// Fences after puts (or waits for the answers to put-with-signal messages) before a get or an atomic.
ucs_status_t ucx_engine::state::fence_after_puts() {
  if (ams_unsettled) {  // a put-with-signal message: applied by its owner outside UCX's ordering
    ams_unsettled = false;
    if (ucs_status_t st = settle_owner_amos(); st != UCS_OK) return st;
  }
  if (!puts_unfenced) return UCS_OK;
  puts_unfenced = false;
  return ucp_worker_fence(worker);
}

// UCX's callback when a descriptor's request (start, start_message) completes: under `driving` (inside progress).
void ucx_engine::state::on_complete(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<in_flight*>(user_data);
  --op->owner->requests_in_flight;
  op->owner->complete(op, status);
  ucp_request_free(request);
}

// Issues descriptor `d` (its slot already released unless it waits; a carried put's bytes staged in op) for `op`.
void ucx_engine::state::dispatch(proxy_desc& d, in_flight* op) {
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

}  // namespace shoal::detail
