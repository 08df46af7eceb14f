// The world: composes the parts of the runtime, each with one job, over the lower layers (bootstrap,
// symmetric heap, transport), and runs init and finalize. The C++ `shoal::world` and the C API (c_api.hpp,
// with its generated typed entry points) call the parts with the public call's name, so every error names
// the call the user made:
//   memory()  — collective allocation and the symmetric-range checks (runtime/memory.hpp)
//   rma()     — host RMA, atomics, signals, waits over the transport (runtime/rma.hpp)
//   sync()    — the collective lock, posted word, agreement and world barrier (runtime/sync.hpp)
//   streams() — the *_on_stream family (runtime/stream_ops.hpp)
// Layers above (team, coll) keep their per-world state as extensions (runtime/extension.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/data_segment.hpp"
#include "heap/symmetric_heap.hpp"
#include "runtime/device_reports.hpp"
#include "runtime/extension.hpp"
#include "runtime/memory.hpp"
#include "runtime/rma.hpp"
#include "runtime/stream_ops.hpp"
#include "runtime/sync.hpp"
#include "shoal/device_world.hpp"
#include "shoal/world.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

class world_impl {
 public:
  explicit world_impl(const init_options& options);
  ~world_impl();

  /// Collective. `call` names it in errors and mismatch reports: shoal_finalize, or the finalize a world
  /// runs when destroyed without one (left_without_finalize_call).
  void finalize(std::string_view call = "shoal_finalize");
  bool finalized() const { return finalized_; }

  int my_pe() const { return my_pe_; }
  int n_pes() const { return n_pes_; }
  const char* backend_name() const { return heap_->backend().name(); }
  peer_path path_to(int pe) const { return transport_->path_to(pe); }
  symmetric_heap& heap() { return *heap_; }
  /// The program's global and static variables as symmetric data (maybe disabled: why_not()).
  symmetric_data& data() { return *data_; }
  /// The handle kernels receive (valid for GPU heaps; for the host backend only my_pe/n_pes are set).
  const device_world& device_handle() const { return device_; }
  uint64_t heap_in_use_bytes() const { return memory_->in_use_bytes(); }
  /// The most CTAs (channels) one on-stream collective may use so that the CTAs of every PE sharing a GPU are
  /// resident together (each waits for the same channel of every member): the fewest SMs of the job's GPUs over the
  /// most PEs on one GPU, one CTA an SM. 0: no two PEs share a GPU, no limit. The same on every PE.
  uint32_t coll_channel_limit() const { return coll_channel_limit_; }

  /// How bytes and atomics reach each PE (the per-peer path table and its operations).
  peer_transport& transport() { return *transport_; }
  symmetric_memory& memory() { return *memory_; }
  host_rma& rma() { return *rma_; }
  collective_sync& sync() { return *sync_; }
  /// The job's bootstrap (for exchanges among some PEs only: bootstrap::allgather_among).
  bootstrap& boot() { return *boot_; }
  stream_ops& streams() { return *streams_; }
  /// The instance of extension `key` (register_world_extension) this world made at init.
  world_extension& extension(size_t key) { return *extensions_.at(key); }

  using wait_mode = host_rma::wait_mode;  // the generated facade's name for it

  [[noreturn]] void global_exit(int status);
  /// This PE stops on an error: every PE reports "PE <me> stopped: <what>", all exit with `status`.
  [[noreturn]] void stop_on_error(const std::string& what, int status = 1);

 private:
  /// Shoal's reserved block at heap offset 0: host sync words and the extensions' words (host
  /// backend) or the device sync words, PE tables and collective workspace (GPU backends). Returns
  /// each extension's host words offset (0 on GPU heaps).
  std::vector<uint64_t> setup_reserved_block();

  int my_pe_ = -1;
  int n_pes_ = 0;
  bool finalized_ = false;
  std::unique_ptr<bootstrap> boot_;
  std::unique_ptr<symmetric_heap> heap_;
  std::unique_ptr<symmetric_data> data_;          // after heap_ (uses its fd exchange), before transport_
  std::unique_ptr<peer_transport> transport_;     // the path to every PE, and how host operations take it
  std::unique_ptr<device_report_watch> reports_;  // GPU heaps: prints kernels' failure reports (box in transport_)
  std::unique_ptr<collective_sync> sync_;
  std::unique_ptr<symmetric_memory> memory_;
  std::unique_ptr<host_rma> rma_;
  std::unique_ptr<stream_ops> streams_;
  device_world device_;
  uint32_t coll_channel_limit_ = 0;
  std::vector<std::unique_ptr<world_extension>> extensions_;  // by key
};

}  // namespace shoal::detail
