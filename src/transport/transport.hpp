// The transport layer: how bytes and atomics reach PE p. Each peer's path (shoal::peer_path) is
// chosen once at init and stored here, once; host-issued operations are addressed by (PE, heap
// offset) and dispatched through the path_ops of that peer's path; an offset with kDataOffsetBit is
// in the program's data segment instead (global and static variables, heap/data_segment.hpp).
// Load/store paths (self, shared memory, NVLink/PCIe P2P) go through the peer's memory mapped into
// this process; the proxy path (a PE on another node) is the slot the scale-out transport fills.
// Below the runtime: includes only common, bootstrap and heap headers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/data_segment.hpp"
#include "heap/symmetric_heap.hpp"
#include "shoal/device_world.hpp"
#include "transport/memory_ops.hpp"
#include "transport/scalar.hpp"

namespace shoal::detail {

class proxy_ops;
struct proxy_ring;
struct proxy_ring_shape;

/// Set in an offset that is not a heap offset but an offset in the program's data segment (a global
/// or static variable): symmetric_memory::check_rma makes such offsets, peer_transport routes them to
/// the peer's data segment. Heap offsets stay below 2^46 (symmetric_heap's largest reservation).
inline constexpr uint64_t kDataOffsetBit = uint64_t{1} << 63;

/// The host-side operations of one kind of path. `offset` is a heap offset (validated by the
/// caller), or a data-segment offset with kDataOffsetBit for the path that takes those (today only
/// load/store: peer_transport::data_path); `call` names the public call in errors.
class path_ops {
 public:
  virtual ~path_ops() = default;
  /// The address of heap offset `offset` of `pe` in this process; throws when the path has none.
  virtual char* address(std::string_view call, int pe, uint64_t offset) = 0;
  virtual void put(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) = 0;
  virtual void get(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) = 0;
  /// Non-blocking forms: `source` must stay unchanged, and `dest` is defined, only after the next
  /// quiet. Paths that complete at once use the blocking forms.
  virtual void put_nbi(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) {
    put(call, pe, offset, source, nbytes);
  }
  virtual void get_nbi(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) {
    get(call, dest, pe, offset, nbytes);
  }
  /// nelems elements of elem_bytes; strides in elements (>= 1).
  virtual void iput(std::string_view call, int pe, uint64_t offset, const void* source, ptrdiff_t dest_stride,
                    ptrdiff_t source_stride, size_t nelems, size_t elem_bytes) = 0;
  virtual void iget(std::string_view call, void* dest, int pe, uint64_t offset, ptrdiff_t dest_stride,
                    ptrdiff_t source_stride, size_t nelems, size_t elem_bytes) = 0;
  /// Atomic `op` on a value of `type` (host_atomic's value conventions).
  virtual void atomic(std::string_view call, int pe, uint64_t offset, amo_op op, scalar type, const void* operand,
                      const void* compare_value, void* fetched) = 0;
  /// Completes every operation issued through this path.
  virtual void quiet() = 0;
};

/// One PE's GPU as the job sees it: its node (the node's lowest PE), its PCI bus id and its SM count (0: no GPU).
struct gpu_identity {
  char pci_bus_id[32] = {};
  int32_t node = 0;
  int32_t sms = 0;
};

/// What PEs that share a GPU must agree on: the most PEs of the job on one GPU (same node, same bus id) and the
/// fewest SMs of any PE's GPU (0 when no PE has one). The same on every PE, from every PE's gpu_identity.
struct gpu_sharing {
  int most_pes_per_gpu = 1;
  int fewest_sms = 0;
};
gpu_sharing sharing_of(const std::vector<gpu_identity>& every_pe);

/// What peer_transport::discover finds: the path to every PE, and gpu_sharing.
struct discovery {
  std::vector<peer_path> paths;
  gpu_sharing sharing;
};

class peer_transport {
 public:
  /// Collective over every PE (all-gathers each PE's gpu_identity): the path from `my_pe` to every PE, and how the
  /// job's PEs share GPUs. Throws errc::unsupported naming shoal_init when a same-node GPU cannot be reached by P2P.
  static discovery discover(bootstrap& boot, const chunk_backend& backend, const node_map& nodes);

  /// Collective. `paths`: from discover(); `heap`, `data` (global and static variables; may be
  /// disabled) and `boot` outlive this object. Host heaps use plain loads/stores, GPU heaps copies
  /// and one-thread atomic kernels (memory_ops); when any PE has a proxy peer, every PE starts the
  /// proxy engine (throws errc::unsupported without UCX).
  peer_transport(bootstrap& boot, symmetric_heap& heap, const symmetric_data& data, std::vector<peer_path> paths);
  ~peer_transport();

  int n_pes() const { return static_cast<int>(paths_.size()); }
  peer_path path_to(int pe) const { return paths_[pe]; }
  /// True when `pe`'s path is implemented in this build (today: the load/store paths).
  bool reachable(int pe) const { return is_load_store(paths_[pe]); }
  /// True when host RMA and AMOs reach `pe` in this job (load/store, or the proxy engine runs).
  bool accessible(int pe) const { return reachable(pe) || (paths_[pe] == peer_path::proxy && proxy_ != nullptr); }
  /// True when every PE is reached by load/store.
  bool all_load_store() const { return all_load_store_; }
  /// True when some PE of the job has a proxy peer (then every PE runs the proxy engine): the same answer on
  /// every PE, so device protocols that must agree across PEs choose by it (device_world::flags).
  bool job_has_proxy() const { return proxy_ != nullptr; }
  /// Collective, after every heap growth: the proxy re-registers the heap and exchanges keys.
  void heap_grown(std::string_view call);
  /// Collective (shoal_finalize): completes and closes the proxy's connections; no-op without one.
  void close(std::string_view call);
  /// The proxy's request ring as kernels see it when this PE has a proxy peer and a GPU heap, else
  /// nullptr (device_world::proxy_ring).
  proxy_ring* device_ring() const;
  /// That ring's slots and payload bytes per slot (zeros without one).
  proxy_ring_shape device_ring_shape() const;
  /// The engine's transports towards `pe` when it is a proxy peer, else empty.
  std::string proxy_transports(int pe);
  /// PE's heap in this process when its path is load/store, else nullptr.
  char* base_of(int pe) const { return reachable(pe) ? heap_.heap_of(pe) : nullptr; }

  /// This PE's data segment, and the peers' copies mapped here (global and static variables).
  const symmetric_data& data() const { return data_; }
  /// `pe`'s copy of the data segment in this process when its path is load/store, else nullptr.
  char* data_of(int pe) const { return reachable(pe) ? data_.data_of(pe) : nullptr; }

  // `offset`: a heap offset, or a data-segment offset with kDataOffsetBit (see path()).
  char* address(std::string_view call, int pe, uint64_t offset) {
    return path(call, pe, offset).address(call, pe, offset);
  }
  void put(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) {
    path(call, pe, offset).put(call, pe, offset, source, nbytes);
  }
  void get(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) {
    path(call, pe, offset).get(call, dest, pe, offset, nbytes);
  }
  void put_nbi(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes) {
    path(call, pe, offset).put_nbi(call, pe, offset, source, nbytes);
  }
  void get_nbi(std::string_view call, void* dest, int pe, uint64_t offset, size_t nbytes) {
    path(call, pe, offset).get_nbi(call, dest, pe, offset, nbytes);
  }
  void iput(std::string_view call, int pe, uint64_t offset, const void* source, ptrdiff_t dest_stride,
            ptrdiff_t source_stride, size_t nelems, size_t elem_bytes) {
    path(call, pe, offset).iput(call, pe, offset, source, dest_stride, source_stride, nelems, elem_bytes);
  }
  void iget(std::string_view call, void* dest, int pe, uint64_t offset, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t nelems, size_t elem_bytes) {
    path(call, pe, offset).iget(call, dest, pe, offset, dest_stride, source_stride, nelems, elem_bytes);
  }
  void atomic(std::string_view call, int pe, uint64_t offset, amo_op op, scalar type, const void* operand,
              const void* compare_value, void* fetched) {
    path(call, pe, offset).atomic(call, pe, offset, op, type, operand, compare_value, fetched);
  }
  /// Put-with-signal: the put (nbytes may be 0), then the signal update (`add`, else set) on the
  /// 8-byte word at `sig_offset`, ordered after it; one descriptor on the proxy path.
  void put_signal(std::string_view call, int pe, uint64_t offset, const void* source, size_t nbytes,
                  uint64_t sig_offset, uint64_t signal, bool add);
  /// Completes every operation issued through every path (fence and quiet: host calls complete in order).
  void quiet();

  /// The memory operations of this world's heap memory (local words, copies between mapped
  /// addresses): host loads/stores, or CUDA copies and kernels for GPU heaps.
  memory_ops& ops() { return *ops_; }
  /// False for GPU heaps (the CPU cannot load/store them directly).
  bool direct() const { return ops_->direct(); }
  /// The table kernels get as device_world::path_of_pe (n_pes entries); empty when every PE is
  /// load/store-reachable (kernels then use the nullptr fast path).
  std::vector<peer_path> device_table() const;

 private:
  path_ops& path(int pe) const { return *by_kind_[static_cast<size_t>(paths_[pe])]; }
  // Heap offsets take the peer's path; data-segment offsets (rare) go through data_path.
  path_ops& path(std::string_view call, int pe, uint64_t offset) const {
    if ((offset & kDataOffsetBit) != 0) [[unlikely]]
      return data_path(call, pe);
    return path(pe);
  }
  // The path of a data-segment offset to `pe`: load/store through the peer's mapped copy; throws
  // errc::unsupported for other paths (the proxy does not carry the data segment yet).
  path_ops& data_path(std::string_view call, int pe) const;

  symmetric_heap& heap_;
  const symmetric_data& data_;
  std::unique_ptr<path_ops> data_ops_;  // load/store into peers' data segments
  std::vector<peer_path> paths_;        // per PE, chosen once by discover()
  bool all_load_store_ = true;
  std::unique_ptr<memory_ops> ops_;
  std::array<std::unique_ptr<path_ops>, 6> by_kind_;  // indexed by peer_path
  proxy_ops* proxy_ = nullptr;                        // by_kind_[proxy] when the engine runs
};

}  // namespace shoal::detail
