// shoal._ep's low-latency functions (ll_*): the nanobind layer under shoal.ep._low_latency (the kernels of
// ep/low_latency). Everything arrives as integers: device pointers from tensor.data_ptr() and the CUDA
// stream handle; python/shoal/ep/_low_latency.py checks tensors before calling. shoal::error becomes a
// Python exception through the module's translator (ep_module.cc).
#include <cstdint>

#include <shoal/ep/low_latency.hpp>
#include <shoal/error.hpp>

#include "ep_module.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace ll = shoal::ep::ll;

namespace {

template <class T>
T* as(std::uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}
void* as_stream(std::uintptr_t stream) { return reinterpret_cast<void*>(stream); }

// The fields both argument structs share.
template <class Args>
void set_common(Args& a, std::uintptr_t buffer, int half, std::uintptr_t topk_idx, int num_tokens, int num_topk,
                std::uintptr_t wait_stats, int recv_blocks) {
  a.buffer = as<char>(buffer);
  a.half = half;
  a.topk_idx = as<const int64_t>(topk_idx);
  a.num_tokens = num_tokens;
  a.num_topk = num_topk;
  a.wait_recv_cost_stats = as<int64_t>(wait_stats);
  a.recv_blocks = recv_blocks;
}

struct shapes {
  int max_tokens, hidden, num_ranks, num_experts;
  ll::layout get() const { return ll::make_layout(max_tokens, hidden, num_ranks, num_experts); }
};

}  // namespace

void shoal_python::register_low_latency(nb::module_& m) {
  m.def(
      "ll_layout",
      [](int max_tokens, int hidden, int num_ranks, int num_experts) {
        const ll::layout l = shapes{max_tokens, hidden, num_ranks, num_experts}.get();
        nb::dict d;
        d["total_nbytes"] = l.total_nbytes;
        d["half_nbytes"] = l.half_nbytes;
        d["workspace_nbytes"] = ll::workspace_nbytes(num_experts);
        d["combine_send"] = l.combine_send;
        d["msg_nbytes"] = l.msg_nbytes;
        return d;
      },
      nb::arg("max_tokens"), nb::arg("hidden"), nb::arg("num_ranks"), nb::arg("num_experts"),
      "Byte sizes and offsets of the symmetric buffer for these shapes (ValueError on bad shapes).");

  m.def("ll_load_kernels", &ll::load_kernels,
        "Loads both low-latency kernels on the current device now (not lazily at their first launch).");

  m.def(
      "ll_world",
      [] {
        const shoal::device_world w = ll::default_world();
        return nb::make_tuple(w.my_pe, w.n_pes);
      },
      "(my_pe, n_pes) of the default world the kernels use (RuntimeError before init).");

  m.def(
      "ll_dispatch",
      [](bool send, bool recv, std::uintptr_t buffer, int half, int max_tokens, int hidden, int num_ranks,
         int num_experts, std::uintptr_t x, std::uintptr_t topk_idx, int num_tokens, int num_topk, bool fp8,
         bool round_scale, bool ue8m0, std::uintptr_t recv_x, std::uintptr_t recv_scales, std::uintptr_t src_info,
         std::uintptr_t layout_range, std::uintptr_t recv_count, std::uintptr_t cumulative_stats,
         std::uintptr_t wait_stats, std::uintptr_t stream, int recv_blocks, bool raw_copy) {
        const ll::layout lay = shapes{max_tokens, hidden, num_ranks, num_experts}.get();
        const shoal::device_world w = ll::default_world();
        ll::dispatch_args a;
        a.raw_copy = raw_copy;
        set_common(a, buffer, half, topk_idx, num_tokens, num_topk, wait_stats, recv_blocks);
        a.x = as<const void>(x);
        a.fp8 = fp8;
        a.round_scale = round_scale;
        a.ue8m0 = ue8m0;
        a.recv_x = as<void>(recv_x);
        a.recv_scales = as<void>(recv_scales);
        a.recv_src_info = as<int32_t>(src_info);
        a.layout_range = as<int64_t>(layout_range);
        a.recv_count = as<int32_t>(recv_count);
        a.cumulative_recv_stats = as<int32_t>(cumulative_stats);
        ll::dispatch(lay, w, a, send, recv, as_stream(stream));
      },
      "Launches the send and/or receive half of a low-latency dispatch on `stream` (one kernel; pointers as ints).");

  m.def(
      "ll_combine",
      [](bool send, bool recv, std::uintptr_t buffer, int half, int max_tokens, int hidden, int num_ranks,
         int num_experts, std::uintptr_t x, std::uintptr_t src_info, std::uintptr_t layout_range,
         std::uintptr_t topk_idx, std::uintptr_t topk_weights, int num_tokens, int num_topk, std::uintptr_t out,
         std::uintptr_t wait_stats, std::uintptr_t stream, int recv_blocks, bool raw_copy) {
        const ll::layout lay = shapes{max_tokens, hidden, num_ranks, num_experts}.get();
        const shoal::device_world w = ll::default_world();
        ll::combine_args a;
        a.raw_copy = raw_copy;
        set_common(a, buffer, half, topk_idx, num_tokens, num_topk, wait_stats, recv_blocks);
        a.x = as<const void>(x);
        a.src_info = as<const int32_t>(src_info);
        a.layout_range = as<const int64_t>(layout_range);
        a.topk_weights = as<const float>(topk_weights);
        a.out = as<void>(out);
        ll::combine(lay, w, a, send, recv, as_stream(stream));
      },
      "Launches the send and/or receive half of a low-latency combine on `stream` (one kernel; pointers as ints).");
}
