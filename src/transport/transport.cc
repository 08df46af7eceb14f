#include "transport/transport.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/ranges.h>

#include "common/check.hpp"
#include "common/env.hpp"
#include "heap/cuda_backend.hpp"
#include "transport/proxy/proxy_path.hpp"

namespace shoal::detail {

namespace {

// Where a load/store path finds offset `offset` of PE `pe`: in its heap mapped here.
struct heap_region {
  const symmetric_heap& heap;
  char* at(int pe, uint64_t offset) const { return heap.heap_of(pe) + offset; }
};
// ... or in its data segment mapped here (offsets carry kDataOffsetBit).
struct data_region {
  const symmetric_data& data;
  char* at(int pe, uint64_t offset) const { return data.data_of(pe) + (offset & ~kDataOffsetBit); }
};

// self, shared memory, NVLink/PCIe P2P: the peer's memory is mapped here; reach it through memory_ops.
template <typename Region>
class load_store_path final : public path_ops {
 public:
  load_store_path(Region region, memory_ops& ops) : region_(region), ops_(ops) {}

  char* address(std::string_view, int pe, uint64_t offset) override { return region_.at(pe, offset); }
  void put(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) override {
    ops_.copy(address(call, pe, offset), source, nbytes);
  }
  void get(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) override {
    ops_.copy(dest, address(call, pe, offset), nbytes);
  }
  void iput(std::string_view call, int pe, uint64_t offset, const void* source, ptrdiff_t dest_stride,
            ptrdiff_t source_stride, size_t nelems, size_t elem_bytes) override {
    strided(address(call, pe, offset), source, dest_stride, source_stride, nelems, elem_bytes);
  }
  void iget(std::string_view call, void* dest, int pe, uint64_t offset, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t nelems, size_t elem_bytes) override {
    strided(dest, address(call, pe, offset), dest_stride, source_stride, nelems, elem_bytes);
  }
  void atomic(std::string_view call, int pe, uint64_t offset, amo_op op, scalar type, const void* operand,
              const void* compare_value, void* fetched) override {
    ops_.atomic(op, type, address(call, pe, offset), operand, compare_value, fetched);
  }
  void quiet() override { ops_.quiet(); }

 private:
  void strided(void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride, size_t nelems,
               size_t elem_bytes) {
    auto* to = static_cast<char*>(dest);
    auto* from = static_cast<const char*>(source);
    for (size_t i = 0; i < nelems; ++i)
      ops_.copy(to + i * dest_stride * elem_bytes, from + i * source_stride * elem_bytes, elem_bytes);
  }

  Region region_;
  memory_ops& ops_;
};

// A path that cannot be taken: every operation throws errc::unsupported naming the call and the PE.
class unbuilt_path final : public path_ops {
 public:
  explicit unbuilt_path(const char* why) : why_(why) {}

  char* address(std::string_view call, int pe, uint64_t) override { fail(call, pe); }
  void put(std::string_view call, int pe, uint64_t, const void*, size_t) override { fail(call, pe); }
  void get(std::string_view call, void*, int pe, uint64_t, size_t) override { fail(call, pe); }
  void iput(std::string_view call, int pe, uint64_t, const void*, ptrdiff_t, ptrdiff_t, size_t, size_t) override {
    fail(call, pe);
  }
  void iget(std::string_view call, void*, int pe, uint64_t, ptrdiff_t, ptrdiff_t, size_t, size_t) override {
    fail(call, pe);
  }
  void atomic(std::string_view call, int pe, uint64_t, amo_op, scalar, const void*, const void*, void*) override {
    fail(call, pe);
  }
  void quiet() override {}

 private:
  [[noreturn]] void fail(std::string_view call, int pe) const {
    SHOAL_THROW(errc::unsupported, call, "PE {} {}", pe, why_);
  }
  const char* why_;
};

}  // namespace

gpu_sharing sharing_of(const std::vector<gpu_identity>& every_pe) {
  gpu_sharing out;
  for (const gpu_identity& a : every_pe) {
    if (a.sms <= 0) continue;
    int same = 0;
    for (const gpu_identity& b : every_pe)
      same += b.sms > 0 && b.node == a.node && std::strncmp(a.pci_bus_id, b.pci_bus_id, sizeof(a.pci_bus_id)) == 0;
    out.most_pes_per_gpu = std::max(out.most_pes_per_gpu, same);
    out.fewest_sms = out.fewest_sms == 0 ? a.sms : std::min(out.fewest_sms, a.sms);
  }
  return out;
}

discovery peer_transport::discover(bootstrap& boot, const chunk_backend& backend, const node_map& nodes) {
  const int my_pe = boot.rank();
  const int n_pes = boot.size();
  std::vector<peer_path> paths(n_pes, peer_path::none);
  const cuda_backend_info* gpu = cuda_info(backend);
  // Every PE's GPU by PCI bus id (ordinals differ between processes under CUDA_VISIBLE_DEVICES), with its node and
  // SM count for gpu_sharing.
  gpu_identity mine;
  if (gpu != nullptr) {
    std::snprintf(mine.pci_bus_id, sizeof(mine.pci_bus_id), "%s", gpu->pci_bus_id().c_str());
    mine.sms = gpu->multiprocessor_count();
  }
  mine.node = nodes.pe_of_local.empty() ? my_pe : nodes.pe_of_local.front();
  std::vector<gpu_identity> all(static_cast<size_t>(n_pes));
  boot.allgather(&mine, all.data(), sizeof(gpu_identity), "shoal_init");
  std::vector<int> unreachable;
  const bool disable_p2p = env::get_bool("SHOAL_DISABLE_P2P");
  for (int pe = 0; pe < n_pes; ++pe) {
    if (pe == my_pe) {
      paths[pe] = peer_path::self;
    } else if (nodes.local_of_pe[pe] < 0 || disable_p2p) {
      paths[pe] = peer_path::proxy;  // another node, or forced: the UCX proxy
    } else if (gpu == nullptr) {
      paths[pe] = peer_path::shared_memory;
    } else {
      int peer_dev = cuda_device_of_pci_bus_id(std::string(all[pe].pci_bus_id));
      cuda_peer_link link = peer_dev < 0 ? cuda_peer_link{} : cuda_peer_link_between(gpu->device_ordinal(), peer_dev);
      // NVLink carries every CUDA atomic natively; PCIe P2P usually does not.
      if (peer_dev == gpu->device_ordinal())
        paths[pe] = peer_path::p2p_nvlink;
      else if (link.access)
        paths[pe] = link.native_atomics ? peer_path::p2p_nvlink : peer_path::p2p_pcie;
      else
        unreachable.push_back(pe);
    }
  }
  if (!unreachable.empty())
    SHOAL_THROW(errc::unsupported, "shoal_init",
                "PE {} cannot reach the GPU of same-node PE(s) {} by P2P (is that GPU hidden by "
                "CUDA_VISIBLE_DEVICES, or without peer access?); shoal needs P2P between the GPUs of one node",
                my_pe, fmt::join(unreachable, ", "));
  return {std::move(paths), sharing_of(all)};
}

peer_transport::peer_transport(bootstrap& boot, symmetric_heap& heap, const symmetric_data& data,
                               std::vector<peer_path> paths)
    : heap_(heap),
      data_(data),
      paths_(std::move(paths)),
      ops_(heap.backend().host_accessible() ? make_host_memory_ops() : make_cuda_memory_ops()) {
  for (peer_path p : {peer_path::self, peer_path::shared_memory, peer_path::p2p_nvlink, peer_path::p2p_pcie})
    by_kind_[static_cast<size_t>(p)] = std::make_unique<load_store_path<heap_region>>(heap_region{heap_}, *ops_);
  // Only host heaps share the data segment (symmetric_data is disabled otherwise): plain loads/stores.
  data_ops_ = std::make_unique<load_store_path<data_region>>(data_region{data_}, *ops_);
  by_kind_[static_cast<size_t>(peer_path::none)] = std::make_unique<unbuilt_path>("cannot be reached from this PE");
  for (peer_path p : paths_) all_load_store_ &= is_load_store(p);
  // Starting the engine is collective: every PE starts it when any PE has a proxy peer.
  bool mine = false;
  for (peer_path p : paths_) mine |= p == peer_path::proxy;
  std::vector<char> all(paths_.size());
  boot.allgather(&mine, all.data(), 1, "shoal_init");
  bool any = false;
  for (char c : all) any |= c != 0;
  if (any) {
    auto proxy = make_proxy_path(boot, heap_, paths_, data_.local_span());
    proxy_ = proxy.get();
    by_kind_[static_cast<size_t>(peer_path::proxy)] = std::move(proxy);
  } else {
    by_kind_[static_cast<size_t>(peer_path::proxy)] = std::make_unique<unbuilt_path>("has no proxy engine");
  }
}

path_ops& peer_transport::data_path(std::string_view call, int pe) const {
  const peer_path p = paths_[pe];
  if (is_load_store(p) && data_.data_of(pe) != nullptr) return *data_ops_;
  if (p == peer_path::proxy) return path(pe);  // the engine registered every PE's data segment
  if (!is_load_store(p)) return path(pe);      // none: its path's own error
  SHOAL_THROW(errc::internal, call, "PE {}'s data segment is not mapped in this process", pe);
}

void peer_transport::heap_grown(std::string_view call) {
  if (proxy_ != nullptr) proxy_->heap_grown(call);
}

void peer_transport::close(std::string_view call) {
  if (proxy_ != nullptr) proxy_->close(call);
}

proxy_ring* peer_transport::device_ring() const {
  if (proxy_ == nullptr) return nullptr;
  for (peer_path p : paths_)
    if (p == peer_path::proxy) return proxy_->device_ring();
  return nullptr;
}

proxy_ring_shape peer_transport::device_ring_shape() const {
  if (device_ring() == nullptr) return {};
  return proxy_->device_ring_shape();
}

std::string peer_transport::proxy_transports(int pe) {
  if (proxy_ == nullptr || paths_[pe] != peer_path::proxy) return {};
  return proxy_->describe(pe);
}

peer_transport::~peer_transport() = default;

void peer_transport::put_signal(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes,
                                uint64_t sig_offset, uint64_t signal, bool add) {
  if (paths_[pe] == peer_path::proxy && proxy_ != nullptr) {
    proxy_->put_signal(call, pe, offset, source, nbytes, sig_offset, signal, add);
    return;
  }
  if (nbytes > 0) put(call, pe, offset, source, nbytes);
  // The signal update is sequentially consistent, so it is ordered after the data above.
  atomic(call, pe, sig_offset, add ? amo_op::add : amo_op::set, scalar_of<uint64_t>(), &signal, nullptr, nullptr);
}

void peer_transport::quiet() {
  // The load/store paths share one memory_ops: quiet it once, then every other path in use.
  ops_->quiet();
  if (proxy_ != nullptr) proxy_->quiet();
}

std::vector<peer_path> peer_transport::device_table() const {
  if (all_load_store_) return {};
  return paths_;
}

}  // namespace shoal::detail
