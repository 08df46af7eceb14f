// The nanobind module shoal._ep: shoal_ep's normal-mode launches for shoal.ep (python/shoal/ep/).
// Tensors arrive as raw device addresses (tensor.data_ptr()) and the CUDA stream as an integer
// (torch.cuda.Stream.cuda_stream), so no DLPack is involved. Each launch takes a dict of its
// arguments by name (the fields of the shoal_ep::*_args structs); a missing name raises KeyError.
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "shoal/error.hpp"
#include "shoal/world.hpp"
#include "shoal_ep/normal.hpp"

namespace nb = nanobind;

namespace {

void cuda_check(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string("shoal.ep: ") + call + ": " + cudaGetErrorString(rc));
}

cudaStream_t as_stream(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

// One named field of a launch's argument dict.
struct fields {
  const nb::dict& d;
  std::int64_t i(const char* name) const {
    if (!d.contains(name)) throw nb::key_error((std::string("shoal._ep: missing argument ") + name).c_str());
    return nb::cast<std::int64_t>(d[name]);
  }
  template <class T>
  T* p(const char* name) const {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(i(name)));
  }
};

// Each rank's buffer address (0: a proxy peer, reached through shoal's default world) and the
// job-wide `staged` flag of the args dict.
shoal_ep::peers to_peers(const std::vector<std::uintptr_t>& bases, const fields& f, int rank) {
  if (bases.empty() || bases.size() > shoal_ep::kMaxRanks)
    throw std::invalid_argument("shoal._ep: peers: 1 to " + std::to_string(shoal_ep::kMaxRanks) + " buffers");
  if (rank < 0 || static_cast<std::size_t>(rank) >= bases.size() || bases[rank] == 0)
    throw std::invalid_argument("shoal._ep: peers: this rank's own buffer is missing");
  shoal_ep::peers p{};
  p.staged = f.i("staged") != 0;
  bool proxy = false;
  for (std::size_t r = 0; r < bases.size(); ++r) {
    p.base[r] = reinterpret_cast<void*>(bases[r]);
    proxy = proxy || bases[r] == 0;
  }
  if (proxy && !p.staged)
    throw std::invalid_argument("shoal._ep: peers: a proxy peer (address 0) needs a staged buffer (staged=1)");
  p.world = shoal::default_world_device_handle();  // proxy peers' puts, and every kernel's stall report
  return p;
}

void launch_layout(const nb::dict& d, std::uintptr_t stream) {
  const fields f{d};
  shoal_ep::layout_args a{};
  a.topk_idx = f.p<const std::int64_t>("topk_idx");
  a.num_tokens = static_cast<int>(f.i("num_tokens"));
  a.num_topk = static_cast<int>(f.i("num_topk"));
  a.num_experts = static_cast<int>(f.i("num_experts"));
  a.num_ranks = static_cast<int>(f.i("num_ranks"));
  a.num_tokens_per_rank = f.p<int>("num_tokens_per_rank");
  a.num_tokens_per_expert = f.p<int>("num_tokens_per_expert");
  a.is_token_in_rank = f.p<bool>("is_token_in_rank");
  shoal_ep::get_dispatch_layout(a, as_stream(stream));
  cuda_check(cudaGetLastError(), "get_dispatch_layout");
}

void launch_notify(const std::vector<std::uintptr_t>& peers, const nb::dict& d, std::uintptr_t stream) {
  const fields f{d};
  shoal_ep::notify_args a{};
  a.rank = static_cast<int>(f.i("rank"));
  a.p = to_peers(peers, f, a.rank);
  a.num_ranks = static_cast<int>(peers.size());
  a.num_channels = static_cast<int>(f.i("num_channels"));
  a.num_tokens = static_cast<int>(f.i("num_tokens"));
  a.num_local_experts = static_cast<int>(f.i("num_local_experts"));
  a.is_token_in_rank = f.p<const bool>("is_token_in_rank");
  a.num_tokens_per_rank = f.p<const int>("num_tokens_per_rank");
  a.num_tokens_per_expert = f.p<const int>("num_tokens_per_expert");
  a.send_slot = f.p<int>("send_slot");
  a.send_chan_prefix = f.p<int>("send_chan_prefix");
  a.recv_chan_prefix = f.p<int>("recv_chan_prefix");
  a.rank_prefix_matrix = f.p<int>("rank_prefix_matrix");
  a.host_counts = f.p<int>("host_counts");
  a.timeout_ns = static_cast<std::uint64_t>(f.i("timeout_ns"));
  shoal_ep::notify_dispatch(a, as_stream(stream));
  cuda_check(cudaGetLastError(), "notify_dispatch");
}

// The fields dispatch_args and combine_args share.
template <class Args>
void fill_channel_args(Args& a, const std::vector<std::uintptr_t>& peers, const fields& f) {
  a.rank = static_cast<int>(f.i("rank"));
  a.p = to_peers(peers, f, a.rank);
  a.num_ranks = static_cast<int>(peers.size());
  a.num_channels = static_cast<int>(f.i("num_channels"));
  a.num_tokens = static_cast<int>(f.i("num_tokens"));
  a.num_recv = static_cast<int>(f.i("num_recv"));
  a.buffer_nbytes = static_cast<std::size_t>(f.i("buffer_nbytes"));
  a.num_topk = static_cast<int>(f.i("num_topk"));
  a.x = f.p<const void>("x");
  a.topk_weights = f.p<const float>("topk_weights");
  a.send_slot = f.p<const int>("send_slot");
  a.send_chan_prefix = f.p<const int>("send_chan_prefix");
  a.recv_chan_prefix = f.p<const int>("recv_chan_prefix");
  a.rank_prefix_matrix = f.p<const int>("rank_prefix_matrix");
  a.num_warps = static_cast<int>(f.i("num_warps"));
  a.tokens_per_signal = static_cast<int>(f.i("tokens_per_signal"));
  a.timeout_ns = static_cast<std::uint64_t>(f.i("timeout_ns"));
}

void launch_dispatch(const std::vector<std::uintptr_t>& peers, const nb::dict& d, std::uintptr_t stream) {
  const fields f{d};
  shoal_ep::dispatch_args a{};
  fill_channel_args(a, peers, f);
  a.num_local_experts = static_cast<int>(f.i("num_local_experts"));
  a.hidden_nbytes = static_cast<std::size_t>(f.i("hidden_nbytes"));
  a.num_scales = static_cast<int>(f.i("num_scales"));
  a.x_scales = f.p<const float>("x_scales");
  a.topk_idx = f.p<const std::int64_t>("topk_idx");
  a.recv_x = f.p<void>("recv_x");
  a.recv_x_scales = f.p<float>("recv_x_scales");
  a.recv_topk_idx = f.p<std::int64_t>("recv_topk_idx");
  a.recv_topk_weights = f.p<float>("recv_topk_weights");
  a.recv_src_idx = f.p<int>("recv_src_idx");
  shoal_ep::dispatch(a, as_stream(stream));
  cuda_check(cudaGetLastError(), "dispatch");
}

void launch_combine(const std::vector<std::uintptr_t>& peers, const nb::dict& d, std::uintptr_t stream) {
  const fields f{d};
  shoal_ep::combine_args a{};
  fill_channel_args(a, peers, f);
  a.hidden = static_cast<int>(f.i("hidden"));
  a.bias0 = f.p<const void>("bias0");
  a.bias1 = f.p<const void>("bias1");
  a.combined_x = f.p<void>("combined_x");
  a.combined_topk_weights = f.p<float>("combined_topk_weights");
  shoal_ep::combine(a, as_stream(stream));
  cuda_check(cudaGetLastError(), "combine");
}

// Waits (GIL released) until the notify kernel has published its counts in mapped host memory (ready
// word 1), clears the ready word for the next call and returns [received tokens, tokens per local expert...].
std::vector<int> wait_counts(std::uintptr_t host, int num_local_experts, double timeout_s) {
  auto* counts = reinterpret_cast<volatile int*>(host);
  {
    nb::gil_scoped_release unlocked;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (std::uint64_t spins = 0; counts[0] == 0; ++spins) {
      if ((spins & 1023) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          nb::gil_scoped_acquire locked;
          throw std::runtime_error("shoal.ep: dispatch: the receive counts did not arrive within " +
                                   std::to_string(timeout_s) + " s (a peer is not dispatching, or a kernel failed)");
        }
        if (cudaPeekAtLastError() != cudaSuccess) break;
        std::this_thread::yield();
      }
    }
  }
  cuda_check(cudaPeekAtLastError(), "dispatch (waiting for the receive counts)");
  std::atomic_thread_fence(std::memory_order_acquire);
  std::vector<int> out(1 + num_local_experts);
  for (int i = 0; i <= num_local_experts; ++i) out[i] = counts[1 + i];
  counts[0] = 0;
  return out;
}

}  // namespace

NB_MODULE(_ep, m) {
  m.doc() = "shoal_ep's normal-mode kernels (addresses as integers). Use shoal.ep.Buffer instead.";
  m.attr("max_ranks") = shoal_ep::kMaxRanks;
  m.attr("max_channels") = shoal_ep::kMaxChannels;
  m.attr("max_local_experts") = shoal_ep::kMaxLocalExperts;
  m.attr("control_nbytes") = shoal_ep::kControlNbytes;
  m.def("dispatch_slot_nbytes", &shoal_ep::dispatch_slot_nbytes, nb::arg("hidden_nbytes"), nb::arg("num_scales"),
        nb::arg("num_topk"));
  m.def("combine_slot_nbytes", &shoal_ep::combine_slot_nbytes, nb::arg("hidden"), nb::arg("num_topk"));
  m.def("num_slabs", &shoal_ep::num_slabs, nb::arg("num_ranks"), nb::arg("staged"));
  m.def("slot_capacity", &shoal_ep::slot_capacity, nb::arg("buffer_nbytes"), nb::arg("num_ranks"),
        nb::arg("slot_nbytes"), nb::arg("staged"));
  m.def(
      "zero",
      [](std::uintptr_t addr, std::size_t nbytes) {
        cuda_check(cudaMemset(reinterpret_cast<void*>(addr), 0, nbytes), "cudaMemset");
        cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      },
      "Zeroes nbytes of device memory at addr and waits for the device.");
  m.def(
      "host_alloc",
      [](std::size_t nbytes) {
        void* host = nullptr;
        void* dev = nullptr;
        cuda_check(cudaHostAlloc(&host, nbytes, cudaHostAllocMapped), "cudaHostAlloc");
        std::memset(host, 0, nbytes);
        cuda_check(cudaHostGetDevicePointer(&dev, host, 0), "cudaHostGetDevicePointer");
        return std::make_pair(reinterpret_cast<std::uintptr_t>(host), reinterpret_cast<std::uintptr_t>(dev));
      },
      "Mapped pinned host memory, zeroed: (host address, device address).");
  m.def("host_free",
        [](std::uintptr_t host) { cuda_check(cudaFreeHost(reinterpret_cast<void*>(host)), "cudaFreeHost"); });
  m.def(
      "load_kernels", [] { cuda_check(shoal_ep::load_kernels(), "loading the normal-mode kernels"); },
      "Loads every normal-mode kernel on the current device now (not at its first launch).");
  m.def("wait_counts", &wait_counts, nb::arg("host"), nb::arg("num_local_experts"), nb::arg("timeout_s"));
  m.def("get_dispatch_layout", &launch_layout, nb::arg("args"), nb::arg("stream"));
  m.def("notify_dispatch", &launch_notify, nb::arg("peers"), nb::arg("args"), nb::arg("stream"));
  m.def("dispatch", &launch_dispatch, nb::arg("peers"), nb::arg("args"), nb::arg("stream"));
  m.def("combine", &launch_combine, nb::arg("peers"), nb::arg("args"), nb::arg("stream"));
}
