// Active messages that the owner answers (am_atomics): owner-applied atomics, staged and direct puts,
// settling their answers before fence and quiet; and the policy of which host-heap puts and gets to each
// peer are direct active messages (SHOAL_PROXY_AM_BYTES), from the peer's UCX lanes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "transport/proxy/ucx_engine_state.hpp"

namespace shoal::detail {

namespace {

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

}  // namespace

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

// Which puts and gets to each peer are direct active messages (host heaps; SHOAL_PROXY_AM_BYTES).
// "auto": from 16 KiB where UCX only emulates RMA -- every lane to the peer is TCP (or a CUDA copy
// lane): gets always (with UCX 1.13 its emulated get moved ~1.9 GB/s on loopback against 7.9 direct;
// with 1.22 both move 1.8-2.9 GB/s, varying between launches), puts with UCX's v1 protocols
// only (UCX before 1.16, or UCX_PROTO_ENABLE=n: its RMA put over TCP moved 1.7 GB/s against 7.8
// direct; the v2 protocols put zero-copy at ~5 GB/s, while their active-message rendezvous over TCP
// copies fragments at ~2.6). A size: from that size to every proxy peer; 0: never.
void ucx_engine::state::choose_direct(std::string_view call) {
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
    auto from = [](uint64_t bytes) { return bytes == kNever ? std::string("never") : fmt::format("from {} B", bytes); };
    SHOAL_LOG(info, transport,
              "PE {} -> PE {}: direct puts {}, direct gets {} (SHOAL_PROXY_AM_BYTES={}, UCX {} protocols)", my_pe, pe,
              from(am_put_min[pe]), from(am_get_min[pe]), setting, protocols_v2 ? "v2" : "v1");
  }
}

// Progresses until `request` (a UCX request or status) completes, bounded by SHOAL_WAIT_TIMEOUT.
ucs_status_t ucx_engine::state::wait_for(ucs_status_ptr_t request) {
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
void ucx_engine::state::start_by_owner(in_flight* op, int pe, uint8_t code, uint64_t nbytes, uint64_t offset,
                                       uint64_t swap_in) {
  ucs_status_t st = direct_puts_unsettled ? settle_owner_amos() : UCS_OK;
  if (st == UCS_OK && puts_unfenced) {
    puts_unfenced = false;
    ucp_request_param_t param{};
    st = wait_for(ucp_worker_flush_nbx(worker, &param));
  }
  if (st == UCS_OK) st = am->send(pe, reinterpret_cast<uint64_t>(op), code, nbytes, offset, op->value, swap_in);
  if (st != UCS_OK) complete(op, st);
}

void ucx_engine::state::on_owner_reply(void* ctx, uint64_t token, uint64_t value, int64_t status) {
  auto* op = reinterpret_cast<in_flight*>(token);
  if (!op->data_landed) op->reply = value;
  static_cast<state*>(ctx)->complete(op, status == 0 ? UCS_OK : static_cast<ucs_status_t>(status));
}

// Fence and quiet first wait for every owner-applied AMO's answer (it is then applied).
ucs_status_t ucx_engine::state::settle_owner_amos() {
  ams_unsettled = false;
  direct_puts_unsettled = false;
  return am == nullptr ? UCS_OK : am->drain(timeout);
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
void ucx_engine::state::start_am_put(in_flight* data, in_flight* ack, int pe, uint64_t offset, const void* source,
                                     uint64_t nbytes, bool stage) {
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

}  // namespace shoal::detail
