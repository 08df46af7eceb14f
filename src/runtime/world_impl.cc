#include "runtime/world_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "bootstrap/launch_env.hpp"
#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "heap/cuda_backend.hpp"
#include "runtime/c_api.hpp"
#include "runtime/registry.hpp"
#include "runtime/wait.hpp"
#include "shoal/detail/coll_ws.hpp"
#include "shoal/detail/proxy_ring.hpp"
#include "shoal/device_team.hpp"
#include "shoal/team.h"

namespace shoal::detail {

namespace {

std::vector<extension_spec>& extension_specs() {
  static std::vector<extension_spec> specs;  // filled by static initializers of the layers above
  return specs;
}

std::unique_ptr<chunk_backend> choose_backend(const std::string& requested) {
  std::string name = requested.empty() ? env::get_string("SHOAL_BACKEND") : requested;
  if (name == "auto") name = cuda_usable() ? "cuda" : "host";
  if (name == "host") return make_host_backend();
  if (name == "cuda") return make_cuda_backend("shoal_init");
  SHOAL_THROW(errc::invalid_argument, "shoal_init", "backend '{}' is not one of auto, host, cuda (SHOAL_BACKEND)",
              name);
}

// The status the process exits with, once exit() has begun (-1 before): glibc's on_exit hands it over.
// A world destroyed without finalize at exit then says that its program exited, and with which status,
// instead of naming a shoal_finalize the program never called. Registered at the first world's init,
// so it runs before the destructor of the default world (registered when libshoal was loaded); a
// C++ world destroyed at exit before it ran reports "destroyed ... without finalize" instead.
std::atomic<int> g_exit_status{-1};

void watch_exit_status() {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] { on_exit([](int status, void*) { g_exit_status.store(status & 0xff); }, nullptr); });
#endif
}

// How global_exit's reason begins after "PE <n> ": that one stops every PE whatever the error mode.
constexpr std::string_view global_exit_reason = "called shoal_global_exit(";

// Called on the monitor thread when the job must stop: another PE died or went silent, or some
// PE called global_exit. Nothing can be unwound safely from here, so report and leave -- except
// under SHOAL_ERRORS_RETURN for a failure: then the cause is recorded (job_failure) and every call
// waiting on the job, now or later, fails with errc::peer_failure naming it, so that a Python
// interpreter raises instead of ending.
void stop_process(int status, const std::string& why) {
  if (c_api::errors_return() && why.find(global_exit_reason) == std::string::npos) {
    job_failure::record(why);
    std::string line = fmt::format("shoal: the job failed ({}); calls that need the other PEs fail from now on\n", why);
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    return;
  }
  std::fflush(stdout);
  std::string line = fmt::format("shoal: stopping this PE: {}\n", why);
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(status);
}

bootstrap_options options_for(const init_options& options) {
  bootstrap_options boot;
  if (options.rank >= 0 || options.size >= 0 || !options.unique_id.empty()) {
    SHOAL_CHECK_ARG(options.size >= 1, "shoal_init_attr", "size={} must be at least 1", options.size);
    SHOAL_CHECK_ARG(options.rank >= 0 && options.rank < options.size, "shoal_init_attr",
                    "rank={} is out of range [0, {})", options.rank, options.size);
    SHOAL_CHECK_ARG(!options.unique_id.empty() || options.size == 1, "shoal_init_attr",
                    "unique_id is empty; make one with shoal_get_uniqueid on one PE and pass it to all");
    boot.rank = options.rank;
    boot.size = options.size;
    if (options.unique_id.empty()) {
      boot.uid = unique_id::parse(make_unique_id("127.0.0.1"), "unique_id");
    } else {
      boot.uid = unique_id::parse(options.unique_id, "unique_id");
    }
    if (boot.rank == 0) boot.listen_fd = take_listener(boot.uid);
  } else {
    boot = resolve_bootstrap(detect_launch_env());
  }
  boot.connect_timeout = env::get_ms("SHOAL_BOOTSTRAP_TIMEOUT");
  boot.peer_timeout = env::get_ms("SHOAL_PEER_TIMEOUT");
  boot.collective_timeout = env::get_ms("SHOAL_WAIT_TIMEOUT");  // shoal_init_attr too, as resolve_bootstrap does
  return boot;
}

}  // namespace

world_impl::world_impl(const init_options& options) {
  log::configure();
  watch_exit_status();
  const bool check_collectives = env::get_bool("SHOAL_CHECK_COLLECTIVES");
  const std::chrono::milliseconds wait_timeout = env::get_ms("SHOAL_WAIT_TIMEOUT");
  auto backend = choose_backend(options.backend);  // before the rendezvous: a bad name fails alone
  // Global and static variables are symmetric on host heaps: share the program's data now, before
  // the bootstrap starts its threads (a global written by another thread during the copy is lost).
  std::string data_why_not;
  bool share_data = env::get_bool("SHOAL_SYMMETRIC_DATA");
  if (!share_data) {
    data_why_not = "SHOAL_SYMMETRIC_DATA=0";
  } else if (!backend->host_accessible()) {
    share_data = false;
    data_why_not = fmt::format(
        "the heap is GPU memory (backend {}) and peers' GPUs cannot reach a process's host globals", backend->name());
  } else {
    share_program_data();
  }

  auto start = std::chrono::steady_clock::now();
  job_failure::reset();
  boot_ = bootstrap::connect(options_for(options), stop_process);
  my_pe_ = boot_->rank();
  n_pes_ = boot_->size();
  log::set_pe(my_pe_);

  uint64_t reserve = options.heap_reserve_bytes != 0 ? options.heap_reserve_bytes : env::get_size("SHOAL_HEAP_RESERVE");
  SHOAL_CHECK_ARG(reserve >= (1u << 20), "shoal_init", "heap reserve of {} bytes is below the 1 MiB minimum", reserve);
  uint64_t chunk = std::max<uint64_t>(env::get_size("SHOAL_HEAP_CHUNK"), backend->granularity());
  node_map nodes = node_map::discover(*boot_);
  discovery found = peer_transport::discover(*boot_, *backend, nodes);
  if (const gpu_sharing share = found.sharing; share.most_pes_per_gpu > 1 && share.fewest_sms > 0)
    coll_channel_limit_ = static_cast<uint32_t>(std::max(1, share.fewest_sms / share.most_pes_per_gpu));
  heap_ = std::make_unique<symmetric_heap>(*boot_, std::move(nodes), std::move(backend), reserve, chunk);
  data_ = std::make_unique<symmetric_data>(*boot_, *heap_, share_data, std::move(data_why_not));
  transport_ = std::make_unique<peer_transport>(*boot_, *heap_, *data_, std::move(found.paths));
  sync_ = std::make_unique<collective_sync>(*boot_, *transport_, check_collectives, wait_timeout);
  memory_ = std::make_unique<symmetric_memory>(*boot_, *heap_, *transport_, *sync_);
  rma_ = std::make_unique<host_rma>(my_pe_, *memory_, *transport_, wait_timeout);
  streams_ = std::make_unique<stream_ops>(*memory_, *transport_, device_);
  std::vector<uint64_t> words = setup_reserved_block();
  for (size_t key = 0; key < words.size(); ++key) extensions_.push_back(extension_specs()[key].make(*this, words[key]));
  boot_->barrier("shoal_init");

  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  SHOAL_LOG(info, init, "PE {}/{} ready in {:.1f} ms: backend {}, heap reserve {} MiB per PE, {} PE(s) on this node",
            my_pe_, n_pes_, ms, heap_->backend().name(), heap_->reserve_bytes() >> 20,
            heap_->nodes().pe_of_local.size());
  for (int pe = 0; pe < n_pes_; ++pe) {
    std::string ucx = transport_->proxy_transports(pe);
    SHOAL_LOG(info, transport, "PE {} -> PE {}: {}{}", my_pe_, pe, to_string(path_to(pe)),
              ucx.empty() ? "" : fmt::format(" (UCX {})", ucx));
  }
}

std::vector<uint64_t> world_impl::setup_reserved_block() {
  // Allocated first, so it sits at offset 0 on every PE. Host heaps: sync_area, then each extension's
  // words (64-byte aligned). GPU heaps: device_sync, the local-index table, the per-PE path table, the
  // direct run's offset table, the device team table, the collective workspace (include/shoal/detail/coll_ws.hpp), then
  // each extension's words.
  const bool gpu = !transport_->direct();
  const auto n_local = static_cast<int32_t>(heap_->nodes().pe_of_local.size());
  const auto ll_bytes = static_cast<uint32_t>(coll_ws::round_up(env::get_size("SHOAL_COLL_LL_BYTES"), 8));
  const auto channels = static_cast<uint32_t>(env::get_int("SHOAL_COLL_CHANNELS"));
  SHOAL_CHECK_ARG(ll_bytes <= (1u << 20), "shoal_init", "SHOAL_COLL_LL_BYTES={} is above the 1 MiB maximum", ll_bytes);
  SHOAL_CHECK_ARG(channels >= 1 && channels <= 1024, "shoal_init", "SHOAL_COLL_CHANNELS={} is not in 1..1024",
                  channels);
  const uint64_t table_offset = coll_ws::round_up(sizeof(device_sync), 256);
  const uint64_t paths_offset = coll_ws::round_up(table_offset + sizeof(int32_t) * n_pes_, 256);
  const uint64_t offsets_offset = coll_ws::round_up(paths_offset + sizeof(peer_path) * n_pes_, 256);
  const uint64_t teams_offset = coll_ws::round_up(offsets_offset + sizeof(uint64_t) * n_pes_, 256);
  const uint64_t coll_offset = coll_ws::round_up(teams_offset + sizeof(device_team) * SHOAL_MAX_TEAMS, 256);
  // Each extension's words (64-byte aligned) follow: after sync_area on host heaps, after the
  // collective workspace on GPU heaps (GPU memory there, which extensions reach through the transport).
  std::vector<uint64_t> words(extension_specs().size(), 0);
  // Worlds with proxy peers also get the proxy slots (the device collectives' proxy path).
  const int32_t proxy_pes = gpu && transport_->device_ring() != nullptr ? n_pes_ : 0;
  uint64_t bytes = gpu ? coll_offset + coll_ws::total_bytes(n_local, channels, ll_bytes, proxy_pes) : sizeof(sync_area);
  for (size_t key = 0; key < words.size(); ++key) {
    if (extension_specs()[key].host_words_nbytes == 0) continue;
    words[key] = coll_ws::round_up(bytes, 64);
    bytes = words[key] + extension_specs()[key].host_words_nbytes;
  }
  char* block = memory_->reserve_block(bytes);

  device_.my_pe = my_pe_;
  device_.n_pes = n_pes_;
  if (!gpu) {
    sync_->set_area(reinterpret_cast<sync_area*>(block));
    return words;
  }
  device_.heap_base = heap_->base();
  device_.region = heap_->heap_of_local(0);
  device_.stride = heap_->stride();
  device_.sync_offset = 0;
  device_.wait_timeout_ns = static_cast<uint64_t>(sync_->wait_timeout().count()) * 1'000'000;
  device_.teams = reinterpret_cast<const device_team*>(block + teams_offset);
  device_.max_teams = SHOAL_MAX_TEAMS;
  device_.n_local = n_local;
  device_.coll_offset = coll_offset;
  device_.coll_channels = channels;
  if (coll_channel_limit_ != 0 && coll_channel_limit_ < channels)
    SHOAL_LOG(info, coll,
              "PEs share a GPU: an on-stream collective uses at most {} of SHOAL_COLL_CHANNELS={} channels, "
              "so that every PE's CTAs fit on the GPU at once",
              coll_channel_limit_, channels);
  device_.coll_ll_bytes = ll_bytes;
  device_.proxy_ring = transport_->device_ring();  // nullptr unless some peer is a proxy peer
  if (device_report_box* box = transport_->ops().report_box_host(); box != nullptr) {
    device_.report_box = transport_->ops().report_box_device();
    reports_ = std::make_unique<device_report_watch>(box);
  }
  const proxy_ring_shape ring_shape = transport_->device_ring_shape();
  device_.proxy_slots = ring_shape.slots;
  device_.proxy_payload = ring_shape.payload;
  device_.proxy_payload_max =
      ring_shape.payload == 0 ? 0 : static_cast<uint32_t>(env::get_size("SHOAL_PROXY_PAYLOAD_MAX"));
  const std::string algo = env::get_string("SHOAL_COLL_ALGO");
  SHOAL_CHECK_ARG(algo == "auto" || algo == "ll" || algo == "direct" || algo == "ce", "shoal_init",
                  "SHOAL_COLL_ALGO={} is not auto, ll, direct or ce", algo);
  if (algo == "direct") device_.flags |= 1u;  // device/coll.cuh kFlagCollDirect
  // Device barriers: epochs when some PE has a proxy peer (its signals travel as p), counts otherwise. Every
  // PE decides the same, since a PE signals others in the protocol their waits expect.
  if (transport_->job_has_proxy()) device_.flags |= kFlagBarrierEpochs;
  // The identity table (nullptr) when every PE is local with local index == pe; else a real one.
  std::vector<int32_t> local(n_pes_);
  bool identity = true;
  for (int pe = 0; pe < n_pes_; ++pe) {
    local[pe] = transport_->reachable(pe) ? heap_->nodes().local_of_pe[pe] : -1;
    identity &= local[pe] == pe;
  }
  const direct_run run = longest_direct_run(local.data(), n_pes_);
  device_.direct_first = run.first;
  device_.direct_count = run.count;
  device_.direct_local = run.local;
  if (run.count > 0) {
    std::vector<uint64_t> offsets(static_cast<size_t>(run.count));
    direct_offsets(run, reinterpret_cast<uint64_t>(device_.region), device_.stride,
                   reinterpret_cast<uint64_t>(device_.heap_base), offsets.data());
    char* table = block + offsets_offset;
    transport_->ops().copy(table, offsets.data(), sizeof(uint64_t) * offsets.size());
    device_.direct_offset = reinterpret_cast<const uint64_t*>(table);
  }
  if (!identity) {
    char* table = block + table_offset;
    transport_->ops().copy(table, local.data(), sizeof(int32_t) * n_pes_);
    device_.local_of_pe = reinterpret_cast<const int32_t*>(table);
  }
  // The path table stays nullptr when every PE is load/store-reachable (no extra load in kernels).
  std::vector<peer_path> paths = transport_->device_table();
  if (!paths.empty()) {
    char* table = block + paths_offset;
    transport_->ops().copy(table, paths.data(), sizeof(peer_path) * n_pes_);
    device_.path_of_pe = reinterpret_cast<const peer_path*>(table);
  }
  return words;
}

world_impl::~world_impl() {
  if (!finalized_) {
    // Left without shoal_finalize (exit, return from main) or destroyed without finalize: the finalize
    // runs under a call name that says so (left_without_finalize_call), which a peer's mismatch names.
    const int exit_status = g_exit_status.load();
    const std::string call = left_without_finalize_call(exit_status);
    try {
      finalize(call);
    } catch (const std::exception& e) {
      // After a recorded job failure (SHOAL_ERRORS_RETURN) the process outlives the job on purpose:
      // the failure was reported already, and the exit status is the program's.
      if (job_failure::cause() != nullptr) return;
      // The implicit finalize failed, e.g. because a peer is in another collective (the error, named after
      // `call`, says what this PE did and where the others were): say so to every PE rather than leave them
      // waiting. A program that exits with a failure status keeps it.
      std::fprintf(stderr, "shoal: error: %s\n", e.what());
      stop_on_error(e.what(), exit_status > 0 ? exit_status : 1);
    }
  }
}

void world_impl::finalize(std::string_view call) {
  if (finalized_) return;
  std::lock_guard lock(sync_->mutex());  // sync_ stays until the destructor (this lock is its mutex)
  finalized_ = true;
  if (reports_) reports_->look();  // a kernel that failed: its report before the finalize barrier's errors
  sync_->finalize_barrier(call);
  transport_->close(call);
  extensions_.clear();
  streams_.reset();
  rma_.reset();
  memory_.reset();
  reports_.reset();  // a last look while the box (transport_'s memory ops) still exists
  transport_.reset();
  data_.reset();  // drops the peers' copies; the program's own data stays shared (data_segment.hpp)
  heap_.reset();
  boot_->finalize();
}

void world_impl::global_exit(int status) {
  if (reports_) reports_->look();
  std::fflush(nullptr);
  boot_->abort_job(status, fmt::format("PE {} {}{})", my_pe_, global_exit_reason, status));
  ::_exit(status);
}

void world_impl::stop_on_error(const std::string& what, int status) {
  if (reports_) reports_->look();  // the kernel's own report, when a failed kernel is why
  std::fflush(nullptr);
  boot_->abort_job(status, fmt::format("PE {} stopped: {}", my_pe_, what));
  ::_exit(status);
}

size_t register_world_extension(const extension_spec& spec) {
  extension_specs().push_back(spec);
  return extension_specs().size() - 1;
}

}  // namespace shoal::detail
