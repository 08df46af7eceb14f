// The nanobind module shoal._ep: the EP layer's launches for shoal.ep (python/shoal/ep/), both modes
// (normal mode here, low-latency mode in ep_low_latency.cc). Tensors arrive as raw device addresses
// (tensor.data_ptr()) and the CUDA stream as an integer (torch.cuda.Stream.cuda_stream), so no DLPack is
// involved. Every launch takes typed keyword arguments named like the fields of shoal::ep's *_args
// structs. shoal::error becomes ValueError (invalid_argument), TimeoutError (timeout) or RuntimeError.
#include "ep_module.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <shoal/ep/normal.hpp>
#include <shoal/error.hpp>
#include <shoal/world.hpp>

namespace nb = nanobind;
using namespace nb::literals;
namespace ep = shoal::ep;

namespace {

template <class T>
T* as(std::uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}
void* as_stream(std::uintptr_t s) { return reinterpret_cast<void*>(s); }

// Each rank's buffer address (0: a proxy peer, reached through shoal's default world) and the job-wide
// `staged` flag.
ep::peers to_peers(const std::vector<std::uintptr_t>& bases, bool staged, int rank) {
  if (bases.empty() || bases.size() > ep::kMaxRanks)
    throw std::invalid_argument("shoal._ep: peers: 1 to " + std::to_string(ep::kMaxRanks) + " buffers");
  if (rank < 0 || static_cast<std::size_t>(rank) >= bases.size() || bases[rank] == 0)
    throw std::invalid_argument("shoal._ep: peers: this rank's own buffer is missing");
  ep::peers p{};
  p.staged = staged;
  bool proxy = false;
  for (std::size_t r = 0; r < bases.size(); ++r) {
    p.base[r] = reinterpret_cast<void*>(bases[r]);
    proxy = proxy || bases[r] == 0;
  }
  if (proxy && !staged)
    throw std::invalid_argument("shoal._ep: peers: a proxy peer (address 0) needs a staged buffer (staged=True)");
  p.world = shoal::default_world_device_handle();  // proxy peers' puts, and every kernel's stall report
  return p;
}

// The handle's matrices and the tuning both launches share (shoal::ep::channel_args).
void fill_channel(ep::channel_args& a, const std::vector<std::uintptr_t>& peers, bool staged, int rank,
                  int num_channels, int num_tokens, int num_recv, int num_topk, std::size_t buffer_nbytes,
                  std::uintptr_t send_slot, std::uintptr_t send_chan_prefix, std::uintptr_t recv_chan_prefix,
                  std::uintptr_t rank_prefix_matrix, int tokens_per_signal, std::uint64_t timeout_ns, bool raw_copy,
                  const ep::switches& sw) {
  a.rank = rank;
  a.p = to_peers(peers, staged, rank);
  a.num_ranks = static_cast<int>(peers.size());
  a.num_channels = num_channels;
  a.num_tokens = num_tokens;
  a.num_recv = num_recv;
  a.num_topk = num_topk;
  a.buffer_nbytes = buffer_nbytes;
  a.send_slot = as<const int>(send_slot);
  a.send_chan_prefix = as<const int>(send_chan_prefix);
  a.recv_chan_prefix = as<const int>(recv_chan_prefix);
  a.rank_prefix_matrix = as<const int>(rank_prefix_matrix);
  a.tokens_per_signal = tokens_per_signal;
  a.timeout_ns = timeout_ns;
  a.raw_copy = raw_copy;
  a.sw = sw;
}

void launch_layout(std::uintptr_t topk_idx, int num_tokens, int num_topk, int num_experts, int num_ranks,
                   std::uintptr_t num_tokens_per_rank, std::uintptr_t num_tokens_per_expert,
                   std::uintptr_t is_token_in_rank, std::uintptr_t stream) {
  ep::layout_args a{};
  a.topk_idx = as<const std::int64_t>(topk_idx);
  a.num_tokens = num_tokens;
  a.num_topk = num_topk;
  a.num_experts = num_experts;
  a.num_ranks = num_ranks;
  a.num_tokens_per_rank = as<int>(num_tokens_per_rank);
  a.num_tokens_per_expert = as<int>(num_tokens_per_expert);
  a.is_token_in_rank = as<bool>(is_token_in_rank);
  ep::get_dispatch_layout(a, as_stream(stream));
}

void launch_notify(const std::vector<std::uintptr_t>& peers, bool staged, int rank, int num_channels, int num_tokens,
                   int num_local_experts, std::uintptr_t is_token_in_rank, std::uintptr_t num_tokens_per_rank,
                   std::uintptr_t num_tokens_per_expert, std::uintptr_t send_slot, std::uintptr_t send_chan_prefix,
                   std::uintptr_t recv_chan_prefix, std::uintptr_t rank_prefix_matrix, std::uintptr_t host_counts,
                   std::uint64_t timeout_ns, std::uintptr_t stream) {
  ep::notify_args a{};
  a.rank = rank;
  a.p = to_peers(peers, staged, rank);
  a.num_ranks = static_cast<int>(peers.size());
  a.num_channels = num_channels;
  a.num_tokens = num_tokens;
  a.num_local_experts = num_local_experts;
  a.is_token_in_rank = as<const bool>(is_token_in_rank);
  a.num_tokens_per_rank = as<const int>(num_tokens_per_rank);
  a.num_tokens_per_expert = as<const int>(num_tokens_per_expert);
  a.send_slot = as<int>(send_slot);
  a.send_chan_prefix = as<int>(send_chan_prefix);
  a.recv_chan_prefix = as<int>(recv_chan_prefix);
  a.rank_prefix_matrix = as<int>(rank_prefix_matrix);
  a.host_counts = as<int>(host_counts);
  a.timeout_ns = timeout_ns;
  ep::notify_dispatch(a, as_stream(stream));
}

void launch_dispatch(const std::vector<std::uintptr_t>& peers, bool staged, int rank, int num_channels, int num_tokens,
                     int num_recv, int num_local_experts, std::size_t buffer_nbytes, std::size_t hidden_nbytes,
                     int num_scales, std::int64_t scale_token_stride, std::int64_t scale_hidden_stride, int num_topk,
                     std::uintptr_t x, std::uintptr_t x_scales, std::uintptr_t topk_idx, std::uintptr_t topk_weights,
                     std::uintptr_t send_slot, std::uintptr_t send_chan_prefix, std::uintptr_t recv_chan_prefix,
                     std::uintptr_t rank_prefix_matrix, std::uintptr_t recv_x, std::uintptr_t recv_x_scales,
                     std::uintptr_t recv_topk_idx, std::uintptr_t recv_topk_weights, std::uintptr_t recv_src_idx,
                     int tokens_per_signal, std::uint64_t timeout_ns, bool raw_copy, const ep::switches& sw,
                     std::uintptr_t stream) {
  ep::dispatch_args a{};
  fill_channel(a, peers, staged, rank, num_channels, num_tokens, num_recv, num_topk, buffer_nbytes, send_slot,
               send_chan_prefix, recv_chan_prefix, rank_prefix_matrix, tokens_per_signal, timeout_ns, raw_copy, sw);
  a.num_local_experts = num_local_experts;
  a.hidden_nbytes = hidden_nbytes;
  a.num_scales = num_scales;
  a.scale_token_stride = scale_token_stride;
  a.scale_hidden_stride = scale_hidden_stride;
  a.x = as<const void>(x);
  a.x_scales = as<const std::uint32_t>(x_scales);
  a.topk_idx = as<const std::int64_t>(topk_idx);
  a.topk_weights = as<const float>(topk_weights);
  a.recv_x = as<void>(recv_x);
  a.recv_x_scales = as<std::uint32_t>(recv_x_scales);
  a.recv_topk_idx = as<std::int64_t>(recv_topk_idx);
  a.recv_topk_weights = as<float>(recv_topk_weights);
  a.recv_src_idx = as<int>(recv_src_idx);
  ep::dispatch(a, as_stream(stream));
}

void launch_combine(const std::vector<std::uintptr_t>& peers, bool staged, int rank, int num_channels, int num_tokens,
                    int num_recv, int hidden, int num_topk, std::size_t buffer_nbytes, std::uintptr_t x,
                    std::uintptr_t topk_weights, std::uintptr_t bias0, std::uintptr_t bias1, std::uintptr_t send_slot,
                    std::uintptr_t send_chan_prefix, std::uintptr_t recv_chan_prefix, std::uintptr_t rank_prefix_matrix,
                    std::uintptr_t combined_x, std::uintptr_t combined_topk_weights, int tokens_per_signal,
                    std::uint64_t timeout_ns, bool raw_copy, const ep::switches& sw, std::uintptr_t stream) {
  ep::combine_args a{};
  fill_channel(a, peers, staged, rank, num_channels, num_tokens, num_recv, num_topk, buffer_nbytes, send_slot,
               send_chan_prefix, recv_chan_prefix, rank_prefix_matrix, tokens_per_signal, timeout_ns, raw_copy, sw);
  a.hidden = hidden;
  a.x = as<const void>(x);
  a.topk_weights = as<const float>(topk_weights);
  a.bias0 = as<const void>(bias0);
  a.bias1 = as<const void>(bias1);
  a.combined_x = as<void>(combined_x);
  a.combined_topk_weights = as<float>(combined_topk_weights);
  ep::combine(a, as_stream(stream));
}

// Waits (GIL released) until notify has published its counts: [received tokens, most tokens one rank sends
// one rank (job-wide), tokens per local expert...].
std::vector<int> wait_counts(std::uintptr_t host, std::uintptr_t device, int num_local_experts, double timeout_s) {
  std::vector<int> out(2 + num_local_experts);
  nb::gil_scoped_release unlocked;
  ep::wait_counts({as<void>(host), as<void>(device)}, num_local_experts, timeout_s, out.data());
  return out;
}

}  // namespace

NB_MODULE(_ep, m) {
  m.doc() = "shoal.ep's kernels, both modes (addresses as integers). Use shoal.ep.Buffer instead.";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const shoal::error& e) {
      PyObject* type = e.code() == shoal::errc::invalid_argument ? PyExc_ValueError
                       : e.code() == shoal::errc::timeout        ? PyExc_TimeoutError
                                                                 : PyExc_RuntimeError;
      PyErr_SetString(type, e.what());
    }
  });
  m.attr("max_ranks") = ep::kMaxRanks;
  m.attr("max_channels") = ep::kMaxChannels;
  m.attr("max_local_experts") = ep::kMaxLocalExperts;
  m.attr("control_nbytes") = ep::kControlNbytes;
  m.def("dispatch_slot_nbytes", &ep::dispatch_slot_nbytes, "hidden_nbytes"_a, "num_scales"_a, "num_topk"_a);
  m.def("combine_slot_nbytes", &ep::combine_slot_nbytes, "hidden"_a, "num_topk"_a);
  m.def("num_slabs", &ep::num_slabs, "num_ranks"_a, "staged"_a);
  m.def("slot_capacity", &ep::slot_capacity, "buffer_nbytes"_a, "num_ranks"_a, "slot_nbytes"_a, "staged"_a);
  m.def(
      "zero", [](std::uintptr_t addr, std::size_t nbytes) { ep::zero_device(as<void>(addr), nbytes); }, "addr"_a,
      "nbytes"_a, "Zeroes nbytes of device memory at addr and waits for the device.");
  m.def(
      "host_alloc",
      [](std::size_t nbytes) {
        const ep::host_block h = ep::host_alloc(nbytes);
        return nb::make_tuple(reinterpret_cast<std::uintptr_t>(h.host), reinterpret_cast<std::uintptr_t>(h.device));
      },
      "nbytes"_a, "Mapped pinned host memory, zeroed: (host address, device address).");
  m.def(
      "host_free", [](std::uintptr_t host) { ep::host_free(as<void>(host)); }, "host"_a);
  nb::class_<ep::switches>(m, "Switches", "The normal mode's switches of one call (docs/ep.md, \"Switches\").")
      .def(nb::init<>())
      .def_rw("l2_discard", &ep::switches::l2_discard)
      .def_rw("self_direct", &ep::switches::self_direct)
      .def_rw("interleave", &ep::switches::interleave)
      .def("__repr__", [](const ep::switches& s) {
        return std::string("Switches(l2_discard=") + (s.l2_discard ? "True" : "False") +
               ", self_direct=" + (s.self_direct ? "True" : "False") +
               ", interleave=" + (s.interleave ? "True" : "False") + ")";
      });
  m.def(
      "switches_from_env", &ep::switches_from_env,
      "SHOAL_EP_L2_DISCARD, SHOAL_EP_SELF_DIRECT, SHOAL_EP_INTERLEAVE as set now (ValueError on a value but 0 or 1).");
  m.def("load_kernels", &ep::load_kernels, "Loads every normal-mode kernel on the current device now.");
  m.def("wait_counts", &wait_counts, "host"_a, "device"_a, "num_local_experts"_a, "timeout_s"_a);
  m.def("get_dispatch_layout", &launch_layout, nb::kw_only(), "topk_idx"_a, "num_tokens"_a, "num_topk"_a,
        "num_experts"_a, "num_ranks"_a, "num_tokens_per_rank"_a, "num_tokens_per_expert"_a, "is_token_in_rank"_a,
        "stream"_a);
  m.def("notify_dispatch", &launch_notify, nb::kw_only(), "peers"_a, "staged"_a, "rank"_a, "num_channels"_a,
        "num_tokens"_a, "num_local_experts"_a, "is_token_in_rank"_a, "num_tokens_per_rank"_a, "num_tokens_per_expert"_a,
        "send_slot"_a, "send_chan_prefix"_a, "recv_chan_prefix"_a, "rank_prefix_matrix"_a, "host_counts"_a,
        "timeout_ns"_a, "stream"_a);
  m.def("dispatch", &launch_dispatch, nb::kw_only(), "peers"_a, "staged"_a, "rank"_a, "num_channels"_a, "num_tokens"_a,
        "num_recv"_a, "num_local_experts"_a, "buffer_nbytes"_a, "hidden_nbytes"_a, "num_scales"_a,
        "scale_token_stride"_a, "scale_hidden_stride"_a, "num_topk"_a, "x"_a, "x_scales"_a, "topk_idx"_a,
        "topk_weights"_a, "send_slot"_a, "send_chan_prefix"_a, "recv_chan_prefix"_a, "rank_prefix_matrix"_a, "recv_x"_a,
        "recv_x_scales"_a, "recv_topk_idx"_a, "recv_topk_weights"_a, "recv_src_idx"_a, "tokens_per_signal"_a,
        "timeout_ns"_a, "raw_copy"_a, "switches"_a, "stream"_a);
  m.def("combine", &launch_combine, nb::kw_only(), "peers"_a, "staged"_a, "rank"_a, "num_channels"_a, "num_tokens"_a,
        "num_recv"_a, "hidden"_a, "num_topk"_a, "buffer_nbytes"_a, "x"_a, "topk_weights"_a, "bias0"_a, "bias1"_a,
        "send_slot"_a, "send_chan_prefix"_a, "recv_chan_prefix"_a, "rank_prefix_matrix"_a, "combined_x"_a,
        "combined_topk_weights"_a, "tokens_per_signal"_a, "timeout_ns"_a, "raw_copy"_a, "switches"_a, "stream"_a);
  shoal_python::register_low_latency(m);
}
