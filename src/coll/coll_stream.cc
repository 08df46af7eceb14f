// The on-stream team collectives (coll.hpp): validated on the host like the blocking calls, then
// work on the caller's stream (coll_kernels.cu), so they order with the caller's work and can be
// captured in a CUDA graph. Algorithm per call (choose()), at the crossovers the study measured per
// collective and PE count (common/tuning.hpp; the user's SHOAL_COLL_* variables win): LL for small
// messages that fit the LL slots (one CTA, no barrier); ce for large broadcast/fcollect/alltoall
// messages (a barrier kernel, copy-engine copies on side streams forked from and joined back to the
// caller's stream, a barrier kernel); direct otherwise (a channel per CTA, one per so many bytes moved,
// each with a team barrier before and after); or as SHOAL_COLL_ALGO says. A team with a proxy member (another node,
// SHOAL_DISABLE_P2P=1) always takes proxy: one CTA on the device API's proxy path (routed puts through the proxy ring,
// team barriers). The choice is logged (SHOAL_DEBUG=trace, subsystem coll).
//
// The members' arguments are not compared for on-stream calls (that would cost a host round trip
// per call and cannot be captured): members that disagree meet in the device waits, which report and
// trap after SHOAL_WAIT_TIMEOUT instead of hanging. The blocking host collectives on GPU heaps run
// here too (blocking = true) when their team is strided and every member load/store-reachable
// (runs_on_gpu_kernels; the others run coll.cc's host protocol): they first exchange every member's
// arguments or local error by an LL fcollect (agree_posts) and fail alike on every member before
// any data moves.
#include <algorithm>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coll/coll.hpp"
#include "coll/coll_run.hpp"
#include "coll/coll_world.hpp"
#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "common/tuning.hpp"
#include "runtime/c_api.hpp"
#include "runtime/wait.hpp"
#include "shoal/shoal.h"

#ifdef SHOAL_HAVE_CUDA
#include "coll/coll_kernels.hpp"
#include "common/cuda_check.hpp"
#endif

namespace shoal::detail::coll {
namespace {

[[maybe_unused]] size_t checked_bytes(const char* call, const char* what, size_t nelems, size_t elem_bytes) {
  size_t total = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(nelems, elem_bytes, &total), call, "{}={} x {} bytes overflows size_t", what,
                  nelems, elem_bytes);
  return total;
}

#ifdef SHOAL_HAVE_CUDA

/// The validated context of one on-stream call: the world (GPU heap), the team's device handle, and whether a
/// member is a proxy peer (then the call runs the proxy algorithm: one CTA on the device API's proxy path).
struct stream_call {
  const char* call;
  coll_world w;
  device_team team;
  bool proxy = false;
  stream_call(const char* c, shoal_team_t handle) : call(c), w(coll_world::current(c)), team(make_team(c, w, handle)) {
    for (int r = 0; r < team.n_pes; ++r) proxy |= w.transport().path_to(team.world_pe(r)) == peer_path::proxy;
  }

  static device_team make_team(const char* call, coll_world& w, shoal_team_t handle) {
    if (w.transport().direct())
      SHOAL_THROW(errc::unsupported, call,
                  "on-stream collectives need GPU symmetric memory (backend cuda); this world's backend is {}",
                  w.backend_name());
    device_team t = w.teams().device_handle(call, handle);  // throws for INVALID / destroyed / not a member
    // Every member must be load/store-reachable from this GPU or a proxy peer (the proxy algorithm). Only the
    // transport's host-side table is read: device_world::local_of_pe is device memory (a host load of it faults).
    for (int r = 0; r < t.n_pes; ++r) {
      const int pe = t.world_pe(r);
      SHOAL_CHECK_ARG(w.transport().reachable(pe) || w.transport().path_to(pe) == peer_path::proxy,
                      std::string_view(call),
                      "team={}: member {} (PE {}) is reachable from this GPU neither by load/store nor through the "
                      "proxy transport",
                      handle, r, pe);
    }
    return t;
  }
  void symmetric(const char* arg, const void* p, size_t bytes, size_t align) const {
    if (bytes > 0) w.heap_offset(call, arg, p, bytes, align);
  }
};

/// What a member of a blocking collective on a GPU heap contributes to the agreement: its call and
/// arguments (heap offsets), or its local error. Exchanged by an LL fcollect before any data moves.
struct gpu_post {
  int32_t kind = 0;  // 1 sync, 2 broadcast, 3 fcollect, 4 alltoall, 5 reduce, 6 reducescatter, 7 collect
  int32_t type = 0;  // scalar kind << 8 | bytes (reductions), element bytes otherwise
  int32_t op = 0;
  int32_t root = 0;
  uint64_t nelems = 0;
  int64_t dest_off = -1;
  int64_t src_off = -1;
  int32_t err = 0;  // the SHOAL_ERR_* code of this member's local error, 0 if none
  int32_t pad = 0;
};

const char* kind_name(int32_t kind) {
  static const char* const names[] = {"?",        "team_sync", "broadcast",     "fcollect",
                                      "alltoall", "reduce",    "reducescatter", "collect"};
  return kind >= 0 && kind <= 7 ? names[kind] : "?";
}

/// Host-side resources of the GPU collectives, one set per CUDA device of this process (a process
/// may hold worlds on several GPUs): the agreement's post buffer, and the copy-engine algorithm's side
/// streams and events (forked from and joined back to the caller's stream, which also works while it
/// is being captured into a graph). Each set is used under its own mutex.
struct device_resources {
  static constexpr int kSides = 4;
  std::mutex mutex;
  gpu_post* posts = nullptr;  // cudaMalloc: the agreement's fcollect buffer
  size_t posts_n = 0;
  bool streams_made = false;
  cudaStream_t side[kSides] = {};
  cudaEvent_t fork = nullptr;
  cudaEvent_t join[kSides] = {};
};

/// The resources of the current device (made on first use, kept for the process).
device_resources& resources(const char* call) {
  static std::mutex table_mutex;
  static std::map<int, std::unique_ptr<device_resources>> table;
  int device = -1;
  SHOAL_CUDA_CHECK(cudaGetDevice(&device), call);
  std::lock_guard lock(table_mutex);
  std::unique_ptr<device_resources>& r = table[device];
  if (!r) r = std::make_unique<device_resources>();
  return *r;
}

/// Every member's post (LL fcollect through the device's post buffer), in team order.
/// Waits for the legacy stream's work, polled rather than cudaStreamSynchronize: after a dead peer
/// (job_failure, SHOAL_ERRORS_RETURN) the wait ends with errc::peer_failure at once instead of lasting
/// until the kernel's device timeout.
cudaError_t wait_legacy_stream(const char* call) {
  backoff pause(std::chrono::milliseconds(0), call);
  cudaError_t status = cudaStreamQuery(nullptr);
  for (; status == cudaErrorNotReady; status = cudaStreamQuery(nullptr)) pause.pause();
  return status;
}

std::vector<gpu_post> exchange_posts(const stream_call& c, const gpu_post& mine) {
  SHOAL_CHECK_ARG(c.w.device_handle().coll_ll_bytes >= sizeof(gpu_post), c.call,
                  "SHOAL_COLL_LL_BYTES={} is below the {} bytes a blocking collective's agreement needs",
                  c.w.device_handle().coll_ll_bytes, sizeof(gpu_post));
  const auto n = static_cast<size_t>(c.team.n_pes);
  device_resources& r = resources(c.call);
  std::lock_guard lock(r.mutex);
  if (r.posts_n < n + 1) {
    if (r.posts != nullptr) cudaFree(r.posts);
    r.posts = nullptr;
    r.posts_n = 0;
    SHOAL_CUDA_CHECK(cudaMalloc(&r.posts, (n + 1) * sizeof(gpu_post)), c.call);
    r.posts_n = n + 1;
  }
  std::vector<gpu_post> all(n);
  launch_config cfg;
  cfg.how = algo::ll;
  cfg.threads = 32;
  cudaError_t err = cudaMemcpy(r.posts + n, &mine, sizeof mine, cudaMemcpyHostToDevice);
  if (err == cudaSuccess)
    err = launch_move(c.w.device_handle(), c.team, move::fcollect, r.posts, r.posts + n, sizeof mine, 0, cfg);
  if (err == cudaSuccess) err = wait_legacy_stream(c.call);  // the peers' posts, or peer_failure
  if (err == cudaSuccess) err = cudaMemcpy(all.data(), r.posts, n * sizeof(gpu_post), cudaMemcpyDeviceToHost);
  SHOAL_CUDA_CHECK(err, c.call);
  return all;
}

/// The agreement of a blocking call: runs `validate` (which throws shoal::error on bad input) with
/// its error caught into mine.err, exchanges every member's post, then throws this PE's own error,
/// or the first failing member's, so that every member fails alike before any data moves. Returns
/// every member's post, in team order.
template <class F>
std::vector<gpu_post> agree_posts(const stream_call& c, gpu_post mine, F&& validate) {
  std::exception_ptr local;
  try {
    validate();
  } catch (const shoal::error& e) {
    local = std::current_exception();
    mine.err = static_cast<int32_t>(e.code());
  }
  const std::vector<gpu_post> all = exchange_posts(c, mine);
  if (local) std::rethrow_exception(local);
  for (int j = 0; j < c.team.n_pes; ++j) {
    if (all[j].err != 0)
      SHOAL_THROW(static_cast<errc>(all[j].err), c.call,
                  "team PE {} (PE {}) called this collective with invalid arguments (its error code {}; see its "
                  "message); no data moved",
                  j, c.team.world_pe(j), all[j].err);
  }
  return all;
}

/// Runs `validate`. Blocking calls (agree) also agree on the call (agree_posts) and fail with
/// mismatch when the members' calls differ; on-stream calls just let a local error through.
template <class F>
void validate_call(const stream_call& c, const gpu_post& mine, bool agree, F&& validate) {
  if (!agree || !c.w.check_collectives() || c.team.n_pes == 1) {
    validate();
    return;
  }
  const std::vector<gpu_post> all = agree_posts(c, mine, validate);
  for (int j = 0; j < c.team.n_pes; ++j) {
    const gpu_post& o = all[j];
    const bool same_nelems = mine.kind == 7 || o.nelems == mine.nelems;
    const bool same_dest = mine.kind == 7 || o.dest_off == mine.dest_off;
    if (o.kind != mine.kind || o.type != mine.type || o.op != mine.op || o.root != mine.root || !same_nelems ||
        !same_dest || o.src_off != mine.src_off) {
      SHOAL_THROW(errc::mismatch, c.call,
                  "team PE {} (PE {}) made a different call: {} (type {:#x}, op {}, root {}, nelems {}, dest=heap+{}, "
                  "source=heap+{}) while this PE made {} (type {:#x}, op {}, root {}, nelems {}, dest=heap+{}, "
                  "source=heap+{}); no data moved",
                  j, c.team.world_pe(j), kind_name(o.kind), o.type, o.op, o.root, o.nelems, o.dest_off, o.src_off,
                  kind_name(mine.kind), mine.type, mine.op, mine.root, mine.nelems, mine.dest_off, mine.src_off);
    }
  }
}

int64_t offset_or_none(const stream_call& c, const void* p) { return p == nullptr ? -1 : c.w.offset_of(p); }

/// This PE's post for a call of `kind` (see gpu_post) with these arguments.
gpu_post post_of(const stream_call& c, int32_t kind, int32_t type, int32_t op, int32_t root, uint64_t nelems,
                 const void* dest, const void* source) {
  gpu_post post;
  post.kind = kind;
  post.type = type;
  post.op = op;
  post.root = root;
  post.nelems = nelems;
  post.dest_off = offset_or_none(c, dest);
  post.src_off = offset_or_none(c, source);
  return post;
}

/// A 1-PE team's collective: dest = source in stream order (nothing when they are one buffer).
void copy_alone(const stream_call& c, void* dest, const void* source, size_t bytes, void* stream) {
  if (dest != source)
    SHOAL_CUDA_CHECK(cudaMemcpyAsync(dest, source, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)),
                     c.call);
}

/// The algorithm and channels for a call moving `bytes` per member message (largest message) and
/// `total` bytes in all through this PE.
void check_launch(const char* call, cudaError_t err) { SHOAL_CUDA_CHECK(err, call); }

launch_config choose(const stream_call& c, tuning::coll_kind kind, size_t message_bytes, size_t total, void* stream,
                     bool can_ce) {
  const device_world& dw = c.w.device_handle();
  static const std::string forced = env::get_string("SHOAL_COLL_ALGO");
  // The measured defaults for this collective and team size (src/common/tuning_gen.hpp); a variable the user sets
  // wins. LL never goes past the slot size (SHOAL_COLL_LL_BYTES, which also sizes the workspace).
  const tuning::coll_row& t = tuning::coll_default(kind, c.team.n_pes);
  static const bool ll_set = env::raw("SHOAL_COLL_LL_BYTES").has_value();
  static const bool ce_set = env::raw("SHOAL_COLL_CE_BYTES").has_value();
  static const bool channel_set = env::raw("SHOAL_COLL_CHANNEL_BYTES").has_value();
  static const uint64_t ce_env = env::get_size("SHOAL_COLL_CE_BYTES");
  static const uint64_t channel_env = env::get_size("SHOAL_COLL_CHANNEL_BYTES");
  const uint64_t ce_bytes = ce_set ? ce_env : t.ce_min_bytes;
  const uint64_t ll_max = ll_set ? dw.coll_ll_bytes : std::min<uint64_t>(dw.coll_ll_bytes, t.ll_max_bytes);
  const uint64_t bytes_per_channel = channel_set ? channel_env : t.bytes_per_channel;
  SHOAL_CHECK_ARG(forced == "auto" || forced == "ll" || forced == "direct" || forced == "ce", c.call,
                  "SHOAL_COLL_ALGO={} is not auto, ll, direct or ce", forced);
  const bool fits = message_bytes <= dw.coll_ll_bytes;  // a slot holds it (what a forced ll needs)
  launch_config cfg;
  cfg.stream = static_cast<cudaStream_t>(stream);
  if (c.proxy) {  // a proxy member: the only algorithm that reaches it (SHOAL_COLL_ALGO does not apply)
    cfg.how = algo::proxy;
  } else if (forced == "ll" && fits) {
    cfg.how = algo::ll;
  } else if (forced == "direct") {
    cfg.how = algo::direct;
  } else if (forced == "ce" && can_ce) {
    cfg.how = algo::ce;
  } else if (forced == "auto" && can_ce && ce_bytes > 0 && message_bytes >= ce_bytes) {
    cfg.how = algo::ce;
  } else {
    cfg.how = message_bytes <= ll_max ? algo::ll : algo::direct;
  }
  static const int64_t threads = env::get_int("SHOAL_COLL_THREADS");
  SHOAL_CHECK_ARG(threads >= 32 && threads <= kMaxThreads && threads % 32 == 0, c.call,
                  "SHOAL_COLL_THREADS={} is not a multiple of 32 in 32..{} (the kernels are built for at most {} "
                  "threads)",
                  threads, kMaxThreads, kMaxThreads);
  cfg.threads = static_cast<uint32_t>(threads);
  if (cfg.how == algo::ll) {  // one line (8 bytes) per thread and peer is plenty for small messages
    const size_t lines = (message_bytes + 7) / 8;
    cfg.threads = static_cast<uint32_t>(std::clamp<size_t>((lines + 31) / 32 * 32, 32, cfg.threads));
  }
  // One CTA for ll, ce and proxy; direct takes one per bytes_per_channel moved, up to SHOAL_COLL_CHANNELS, and with
  // PEs sharing a GPU up to what lets every PE's CTAs be resident together (the same limit on every PE).
  const uint32_t most = c.w.channel_limit() != 0 ? std::min(dw.coll_channels, c.w.channel_limit()) : dw.coll_channels;
  cfg.channels = cfg.how != algo::direct
                     ? 1
                     : static_cast<uint32_t>(std::clamp<size_t>((total + bytes_per_channel - 1) / bytes_per_channel, 1,
                                                                std::max<uint32_t>(most, 1)));
  SHOAL_LOG(trace, coll, "{}: {} bytes per message, {} in all: algorithm {}, {} channel(s) x {} threads (defaults: {})",
            c.call, message_bytes, total, to_string(cfg.how), cfg.channels, cfg.threads, tuning::source_machine());
  return cfg;
}

/// The copy-engine form of broadcast / fcollect / alltoall: team barrier, every copy this PE pushes
/// (remote ones spread over the side streams, the local one on the caller's stream), team barrier.
void enqueue_move_ce(const stream_call& c, move how, void* dest, const void* source, size_t bytes, int root,
                     cudaStream_t stream) {
  device_resources& ce = resources(c.call);
  std::lock_guard lock(ce.mutex);
  if (!ce.streams_made) {
    for (int k = 0; k < device_resources::kSides; ++k) {
      SHOAL_CUDA_CHECK(cudaStreamCreateWithFlags(&ce.side[k], cudaStreamNonBlocking), c.call);
      SHOAL_CUDA_CHECK(cudaEventCreateWithFlags(&ce.join[k], cudaEventDisableTiming), c.call);
    }
    SHOAL_CUDA_CHECK(cudaEventCreateWithFlags(&ce.fork, cudaEventDisableTiming), c.call);
    ce.streams_made = true;
  }
  const device_world& dw = c.w.device_handle();
  const int n = c.team.n_pes;
  const int me = c.team.my_pe_in_team;
  check_launch(c.call, launch_team_sync(dw, c.team, stream));  // sources ready, dests free
  SHOAL_CUDA_CHECK(cudaEventRecord(ce.fork, stream), c.call);
  int used = 0;
  for (int k = 1; k <= n; ++k) {
    const int j = (me + k) % n;
    const char* from;
    char* to;
    if (how == move::broadcast) {
      if (me != root) break;
      from = static_cast<const char*>(source);
      to = static_cast<char*>(dest);
    } else if (how == move::fcollect) {
      from = static_cast<const char*>(source);
      to = static_cast<char*>(dest) + static_cast<size_t>(me) * bytes;
    } else {
      from = static_cast<const char*>(source) + static_cast<size_t>(j) * bytes;
      to = static_cast<char*>(dest) + static_cast<size_t>(me) * bytes;
    }
    if (j == me) {
      if (to != from) SHOAL_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream), c.call);
      continue;
    }
    const int side = used % device_resources::kSides;
    if (used < device_resources::kSides) SHOAL_CUDA_CHECK(cudaStreamWaitEvent(ce.side[side], ce.fork, 0), c.call);
    char* remote = c.w.transport().address(c.call, c.team.world_pe(j), c.w.offset_of(to));
    SHOAL_CUDA_CHECK(cudaMemcpyAsync(remote, from, bytes, cudaMemcpyDefault, ce.side[side]), c.call);
    ++used;
  }
  for (int k = 0; k < std::min(used, device_resources::kSides); ++k) {
    SHOAL_CUDA_CHECK(cudaEventRecord(ce.join[k], ce.side[k]), c.call);
    SHOAL_CUDA_CHECK(cudaStreamWaitEvent(stream, ce.join[k], 0), c.call);
  }
  check_launch(c.call, launch_team_sync(dw, c.team, stream));  // every copy into every dest is done
}

#endif  // SHOAL_HAVE_CUDA

#ifndef SHOAL_HAVE_CUDA
[[noreturn]] void no_cuda(const char* call) {
  SHOAL_THROW(errc::unsupported, call, "this libshoal was built without CUDA: no on-stream collectives");
}
#endif

}  // namespace

int sync_on_stream(const char* call, shoal_team_t team, bool quiet, void* stream, bool blocking) noexcept {
  return run(call, [&] {
#ifdef SHOAL_HAVE_CUDA
    stream_call c(call, team);
    validate_call(c, post_of(c, 1, 0, 0, 0, 0, nullptr, nullptr), blocking, [] {});
    // quiet: the barrier's fence.acq_rel.sys completes this GPU's earlier stores at system scope,
    // and host-issued RMA on GPU heaps completes before its call returns (cuda_memory_ops), so
    // nothing else is pending.
    (void)quiet;
    if (c.team.n_pes > 1)
      check_launch(call, launch_team_sync(c.w.device_handle(), c.team, static_cast<cudaStream_t>(stream)));
#else
    (void)team, (void)quiet, (void)stream, (void)blocking;
    no_cuda(call);
#endif
  });
}

namespace {
int move_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                   size_t elem_bytes, int root, void* stream, int kind, bool blocking) noexcept {
  return run(call, [&] {
#ifdef SHOAL_HAVE_CUDA
    stream_call c(call, team);
    const int n = c.team.n_pes;
    const auto how = static_cast<move>(kind);
    size_t bytes = 0;
    size_t total = 0;
    const gpu_post post = post_of(c, 2 + kind, static_cast<int32_t>(elem_bytes), 0, how == move::broadcast ? root : 0,
                                  nelems, dest, source);
    validate_call(c, post, blocking, [&] {
      bytes = checked_bytes(call, "nelems", nelems, elem_bytes);
      if (how == move::broadcast) {
        SHOAL_CHECK_ARG(root >= 0 && root < n, call, "PE_root={} is out of range [0, {}) of team={}", root, n, team);
        c.symmetric("dest", dest, bytes, elem_bytes);
        c.symmetric("source", source, bytes, elem_bytes);
        total = bytes * static_cast<size_t>(n - 1);
      } else {
        total = checked_bytes(call, "nelems * n_pes(team)", bytes, static_cast<size_t>(n));
        c.symmetric("dest", dest, total, elem_bytes);
        c.symmetric("source", source, how == move::alltoall ? total : bytes, elem_bytes);
      }
    });
    if (bytes == 0) return;
    if (n == 1) {
      copy_alone(c, dest, source, bytes, stream);
      return;
    }
    const tuning::coll_kind tuned = how == move::broadcast  ? tuning::coll_kind::broadcast
                                    : how == move::fcollect ? tuning::coll_kind::fcollect
                                                            : tuning::coll_kind::alltoall;
    const launch_config cfg = choose(c, tuned, bytes, total, stream, true);
    if (cfg.how == algo::ce) {
      enqueue_move_ce(c, how, dest, source, bytes, root, static_cast<cudaStream_t>(stream));
      return;
    }
    check_launch(call, launch_move(c.w.device_handle(), c.team, how, dest, source, bytes, root, cfg));
#else
    (void)team, (void)dest, (void)source, (void)nelems, (void)elem_bytes, (void)root, (void)stream, (void)kind;
    (void)blocking;
    no_cuda(call);
#endif
  });
}

int reduce_common(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
                  reduce_op op, void* stream, bool scatter, bool blocking) noexcept {
  return run(call, [&] {
#ifdef SHOAL_HAVE_CUDA
    stream_call c(call, team);
    const int n = c.team.n_pes;
    size_t bytes = 0;
    size_t src_bytes = 0;
    const gpu_post post = post_of(c, scatter ? 6 : 5, static_cast<int32_t>(type.kind) << 8 | type.bytes,
                                  static_cast<int32_t>(op), 0, nreduce, dest, source);
    validate_call(c, post, blocking, [&] {
      const bool floating = type.kind == scalar_kind::floating || type.kind == scalar_kind::bfloat;
      SHOAL_CHECK_ARG(!(floating && (op == reduce_op::and_ || op == reduce_op::or_ || op == reduce_op::xor_)), call,
                      "op {} needs an integer type", to_string(op));
      bytes = checked_bytes(call, "nreduce", nreduce, type.bytes);
      src_bytes = scatter ? checked_bytes(call, "nreduce * n_pes(team)", bytes, static_cast<size_t>(n)) : bytes;
      c.symmetric("dest", dest, bytes, type.bytes);
      c.symmetric("source", source, src_bytes, type.bytes);
    });
    if (bytes == 0) return;
    if (n == 1) {
      copy_alone(c, dest, source, bytes, stream);
      return;
    }
    const launch_config cfg =
        choose(c, tuning::coll_kind::allreduce, bytes, scatter ? src_bytes : bytes * 2, stream, false);
    check_launch(call, launch_reduce(c.w.device_handle(), c.team, scatter, type, op, dest, source, nreduce, cfg));
#else
    (void)team, (void)dest, (void)source, (void)nreduce, (void)type, (void)op, (void)stream, (void)scatter;
    (void)blocking;
    no_cuda(call);
#endif
  });
}
}  // namespace

int broadcast_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                        size_t elem_bytes, int root, void* stream, bool blocking) noexcept {
  return move_on_stream(call, team, dest, source, nelems, elem_bytes, root, stream, 0, blocking);
}
int fcollect_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                       size_t elem_bytes, void* stream, bool blocking) noexcept {
  return move_on_stream(call, team, dest, source, nelems, elem_bytes, 0, stream, 1, blocking);
}
int alltoall_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                       size_t elem_bytes, void* stream, bool blocking) noexcept {
  return move_on_stream(call, team, dest, source, nelems, elem_bytes, 0, stream, 2, blocking);
}
int reduce_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce, scalar type,
                     reduce_op op, void* stream, bool blocking) noexcept {
  return reduce_common(call, team, dest, source, nreduce, type, op, stream, false, blocking);
}
int reducescatter_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nreduce,
                            scalar type, reduce_op op, void* stream, bool blocking) noexcept {
  return reduce_common(call, team, dest, source, nreduce, type, op, stream, true, blocking);
}

int collect_on_stream(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                      size_t elem_bytes, void* stream) noexcept {
  return run(call, [&] {
#ifdef SHOAL_HAVE_CUDA
    stream_call c(call, team);
    const size_t bytes = checked_bytes(call, "nelems", nelems, elem_bytes);
    c.symmetric("source", source, bytes, elem_bytes);
    // dest's extent depends on the other members' sizes, known only on the device: check its start.
    SHOAL_CHECK_ARG(dest != nullptr && c.w.offset_of(dest) >= 0, call,
                    "dest={} is not in the symmetric heap (allocate it with shoal_malloc)", dest);
    launch_config cfg;
    cfg.how = c.proxy ? algo::proxy : algo::ll;
    cfg.stream = static_cast<cudaStream_t>(stream);
    SHOAL_LOG(trace, coll, "{}: {} bytes from this PE: one CTA ({})", call, bytes,
              c.proxy ? "the proxy path: sizes by routed p, then routed puts" : "sizes by LL, then direct pushes");
    check_launch(call, launch_collect(c.w.device_handle(), c.team, dest, source, bytes, cfg));
#else
    (void)team, (void)dest, (void)source, (void)nelems, (void)elem_bytes, (void)stream;
    no_cuda(call);
#endif
  });
}

bool runs_on_gpu_kernels(const char* call, shoal_team_t handle) noexcept {
  try {
    coll_world w = coll_world::current(call);
    if (w.transport().direct()) return false;
    const team t = w.teams().lookup(call, "team", handle);
    if (!t.strided()) return false;  // no device handle: the host protocol serves it
    return std::all_of(t.members.begin(), t.members.end(), [&](int32_t pe) { return w.transport().reachable(pe); });
  } catch (...) {
    return false;  // not initialized, or not a team of this PE: the host protocol reports it
  }
}

void wait_for_earlier_gpu_work(const char* call) {
#ifdef SHOAL_HAVE_CUDA
  // An event recorded on the legacy stream completes after everything enqueued before it there and,
  // by the legacy stream's implicit synchronization, on every blocking stream. Polled (backoff) so a
  // recorded job failure ends the wait with peer_failure.
  struct event {
    cudaEvent_t e = nullptr;
    ~event() {
      if (e != nullptr) cudaEventDestroy(e);
    }
  } done;
  SHOAL_CUDA_CHECK(cudaEventCreateWithFlags(&done.e, cudaEventDisableTiming), call);
  SHOAL_CUDA_CHECK(cudaEventRecord(done.e, nullptr), call);
  backoff pause(std::chrono::milliseconds(0), call);
  cudaError_t status = cudaEventQuery(done.e);
  for (; status == cudaErrorNotReady; status = cudaEventQuery(done.e)) pause.pause();
  SHOAL_CUDA_CHECK(status, call);
#else
  no_cuda(call);
#endif
}

int finish_blocking(const char* call, int rc) noexcept {
  if (rc != SHOAL_OK) return rc;
  return run(call, [&] {
#ifdef SHOAL_HAVE_CUDA
    SHOAL_CUDA_CHECK(wait_legacy_stream(call), call);
#else
    no_cuda(call);
#endif
  });
}

int collect_on_gpu(const char* call, shoal_team_t team, void* dest, const void* source, size_t nelems,
                   size_t elem_bytes) noexcept {
  return run(call, [&] {
#ifdef SHOAL_HAVE_CUDA
    stream_call c(call, team);
    const device_world& dw = c.w.device_handle();
    const int n = c.team.n_pes;
    const int me = c.team.my_pe_in_team;
    size_t bytes = 0;
    auto validate_source = [&] {
      bytes = checked_bytes(call, "nelems", nelems, elem_bytes);
      c.symmetric("source", source, bytes, elem_bytes);
    };
    // 1. Every member's post (nelems, offsets, local error) by an LL fcollect: the sizes, and the
    //    agreement (no barrier needed: each member sent its post on entering, after its earlier work,
    //    so its source is ready).
    const gpu_post post = post_of(c, 7, static_cast<int32_t>(elem_bytes), 0, 0, nelems, dest, source);
    std::vector<uint64_t> sizes(static_cast<size_t>(n), 0);
    std::vector<int64_t> src_offs(static_cast<size_t>(n), -1);  // each member's source, as it validated it
    if (n > 1) {
      const std::vector<gpu_post> all = agree_posts(c, post, validate_source);
      for (int j = 0; j < n; ++j) {
        const bool both_send = all[j].nelems > 0 && nelems > 0;  // a member sending nothing may pass any source
        if (all[j].kind != post.kind || all[j].type != post.type || (both_send && all[j].src_off != post.src_off) ||
            all[j].dest_off != post.dest_off)
          SHOAL_THROW(errc::mismatch, call,
                      "team PE {} (PE {}) made a different call ({}, element bytes {}, dest=heap+{}, source=heap+{}) "
                      "than this PE (collect, element bytes {}, dest=heap+{}, source=heap+{}); no data moved",
                      j, c.team.world_pe(j), kind_name(all[j].kind), all[j].type, all[j].dest_off, all[j].src_off,
                      post.type, post.dest_off, post.src_off);
        sizes[j] = all[j].nelems;
        src_offs[j] = all[j].src_off;
      }
    } else {
      validate_source();
      sizes[0] = nelems;
    }
    // 2. Offsets in team order, the same on every member; dest must hold the total.
    std::vector<size_t> at(static_cast<size_t>(n) + 1, 0);
    for (int j = 0; j < n; ++j) {
      const size_t b = checked_bytes(call, "nelems", sizes[j], elem_bytes);
      SHOAL_CHECK_ARG(!__builtin_add_overflow(at[j], b, &at[j + 1]), call, "the total of nelems overflows size_t");
    }
    const size_t total = at[n];
    if (total == 0) return;
    c.symmetric("dest", dest, total, elem_bytes);

    // 3. Pull every member's block (copy engines over the peer mappings), then a team barrier so no
    //    member reuses its source while another still reads it.
    for (int j = 0; j < n; ++j) {
      const size_t b = at[j + 1] - at[j];
      if (b == 0) continue;
      const void* from =
          j == me ? source : c.w.transport().address(call, c.team.world_pe(j), static_cast<uint64_t>(src_offs[j]));
      SHOAL_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dest) + at[j], from, b, cudaMemcpyDefault, nullptr), call);
    }
    if (n > 1) check_launch(call, launch_team_sync(dw, c.team, nullptr));
    SHOAL_CUDA_CHECK(wait_legacy_stream(call), call);
#else
    (void)team, (void)dest, (void)source, (void)nelems, (void)elem_bytes;
    no_cuda(call);
#endif
  });
}

}  // namespace shoal::detail::coll

int shoalx_collectmem_on_stream(shoal_team_t team, void* dest, const void* source, size_t nelems,
                                struct CUstream_st* stream) {
  return shoal::detail::coll::collect_on_stream("shoalx_collectmem_on_stream", team, dest, source, nelems, 1, stream);
}
