// On-stream team collectives (shoalx_*_on_stream: one kernel on a cudaStream_t, capturable), written
// for n PEs (run on 2), every result compared bitwise with a host reference that folds in team order:
//  - reduce and reducescatter for every type (int8/uint8/int16/int32/uint32/int64/uint64 wrapping,
//    float, double, half, bfloat16) and op, sizes 0, 1, 7, 1023, the LL/direct boundary (LL bytes - 1
//    element, LL bytes, + 1 element), 1 MiB + 3 elements and 4 MiB + 3 (several channels); in place
//    and one element off alignment; source left untouched, poisoned guard bytes around dest untouched;
//  - broadcastmem (every root, and in place), fcollectmem, alltoallmem over the same sizes, and the
//    typed names of 1-, 2-, 4-, 8- and 16-byte elements;
//  - teams: WORLD, WORLD reversed (start n-1, stride -1), this PE alone (a 1-PE split);
//  - 100 back-to-back rounds of a sequence of collectives (LL and direct, barrier and team_sync checked
//    through a store to the next team PE), each result checked by a kernel on the stream;
//  - a CUDA graph capturing that sequence for all three teams, replayed 50 times with the host
//    changing the data between replays, checked by the graph's kernels and by the host every replay;
//  - bad calls in SHOAL_ERRORS_RETURN mode (non-symmetric or too short or misaligned buffers, bad
//    root, bad team, size overflow) return nonzero and add nothing to a capturing stream;
//  - the blocking host collectives (shoal_float_sum_reduce, ...) on the GPU heap.
// Registered three times: SHOAL_COLL_ALGO unset (auto), =ll and =direct (CMakeLists.txt).
// The shared part is coll_stream_cases.cuh; the error cases and the blocking host collectives are
// coll_stream_errors_gpu_test.cu (the same executable).
#include "coll_stream_cases.cuh"

namespace shoal_test {
namespace {

// ---- the matrix -------------------------------------------------------------------------------

TEST(coll_stream_gpu, reduce_int8) { reduce_matrix<int8_t>(); }
TEST(coll_stream_gpu, reduce_uint8) { reduce_matrix<uint8_t>(); }
TEST(coll_stream_gpu, reduce_int16) { reduce_matrix<int16_t>(); }
TEST(coll_stream_gpu, reduce_int32) { reduce_matrix<int32_t>(); }
TEST(coll_stream_gpu, reduce_uint32) { reduce_matrix<uint32_t>(); }
TEST(coll_stream_gpu, reduce_int64) { reduce_matrix<int64_t>(); }
TEST(coll_stream_gpu, reduce_uint64) { reduce_matrix<uint64_t>(); }
TEST(coll_stream_gpu, reduce_float) { reduce_matrix<float>(); }
TEST(coll_stream_gpu, reduce_double) { reduce_matrix<double>(); }
TEST(coll_stream_gpu, reduce_half) { reduce_matrix<__half>(); }
TEST(coll_stream_gpu, reduce_bfloat16) { reduce_matrix<__nv_bfloat16>(); }

TEST(coll_stream_gpu, broadcast_fcollect_alltoall_mem) {
  stream_env& e = env();
  const size_t b = e.ll_bytes;
  for (int ti = 0; ti < 3; ++ti) {
    const int n = e.team[ti].n;
    for (int kind : {mv_broadcast, mv_fcollect, mv_alltoall}) {
      const size_t per = kind == mv_broadcast ? 1 : static_cast<size_t>(n);  // large: bytes of dest / n
      for (size_t nb : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, b - 1, b, b + 1, kLargeBytes / per + 5,
                        kHugeBytes / per + 5}) {
        if (kind == mv_broadcast) {
          for (int root = 0; root < n; ++root) move_case(kind, 0, ti, nb, root, false);
        } else {
          move_case(kind, 0, ti, nb, 0, false);
        }
      }
    }
    for (size_t nb : {size_t{7}, b, b + 1, kLargeBytes + 5})  // dest == source on every member
      for (int root = 0; root < n; ++root) move_case(mv_broadcast, 0, ti, nb, root, true);
  }
}

TEST(coll_stream_gpu, broadcast_fcollect_alltoall_typed) {
  stream_env& e = env();
  for (int elem : {1, 2, 4, 8, 16})
    for (int ti = 0; ti < 3; ++ti) {
      const size_t n = static_cast<size_t>(e.team[ti].n);
      const size_t b = e.ll_bytes / static_cast<size_t>(elem);
      for (int kind : {mv_broadcast, mv_fcollect, mv_alltoall})
        for (size_t ne :
             {size_t{1}, size_t{7}, size_t{1023}, b, b + 1, kLargeBytes / static_cast<size_t>(elem) / n + 1})
          move_case(kind, elem, ti, ne, static_cast<int>(n) - 1, false);
    }
}

// ---- sequences: back to back and in a CUDA graph ----------------------------------------------

/// One collective of a sequence with its own symmetric buffers (allocated and freed collectively, in
/// the same order on every PE): enqueue() adds fill -> collective -> check kernel to a stream;
/// host_check() compares the last result (and the guard after dest) on the host.
struct item {
  explicit item(std::string name) : name_(std::move(name)), report_(new_device_report()) {}
  virtual ~item() = default;
  item(const item&) = delete;
  item& operator=(const item&) = delete;
  virtual void enqueue(cudaStream_t s, salt_src salt, int root) = 0;
  virtual void host_check(uint32_t salt, const std::string& ctx) = 0;
  /// The check kernels' findings (iteration = the salt of the failing round).
  void check_report(const std::string& ctx) {
    EXPECT_TRUE(device_report_clean((ctx + ": " + name_ + ", checked on the stream").c_str(), report_));
    reset_device_report(report_);
  }
  std::string name_;
  device_report* report_;
};

template <class T>
struct reduce_item final : item {
  reduce_item(const team_info& t, int op, bool scatter, size_t nreduce, bool in_place)
      : item(format("%s<%s> %s x %zu%s on %s", scatter ? "reducescatter" : "reduce", op_name(op), on_stream<T>::kName,
                    nreduce, in_place ? " in place" : "", t.name)),
        t_(t),
        op_(op),
        scatter_(scatter),
        nreduce_(nreduce),
        in_place_(in_place) {
    src_ = static_cast<T*>(shoal_malloc(src_count() * sizeof(T) + kGuard));
    dst_ = in_place ? src_ : static_cast<T*>(shoal_malloc(nreduce * sizeof(T) + kGuard));
    if (src_ == nullptr || dst_ == nullptr) ADD_FAILURE() << format("%s: shoal_malloc returned NULL", name_.c_str());
    GT_CUDA(cudaMemset(src_, kPoison, src_count() * sizeof(T) + kGuard));
    if (!in_place) GT_CUDA(cudaMemset(dst_, kPoison, nreduce * sizeof(T) + kGuard));
  }
  ~reduce_item() override {
    if (!in_place_) shoal_free(dst_);
    shoal_free(src_);
  }
  size_t src_count() const { return scatter_ ? nreduce_ * static_cast<size_t>(t_.n) : nreduce_; }
  void enqueue(cudaStream_t s, salt_src salt, int) override {
    fill_values_kernel<T><<<grid_for(src_count()), kThreads, 0, s>>>(src_, src_count(), op_, t_.me, salt);
    const int rc = on_stream<T>::reduce(op_, scatter_, t_.handle, dst_, src_, nreduce_, s);
    if (rc != 0) ADD_FAILURE() << format("%s: returned %d", name_.c_str(), rc);
    check_reduce_kernel<T>
        <<<grid_for(nreduce_), kThreads, 0, s>>>(dst_, nreduce_, scatter_, op_, t_.me, t_.n, salt, report_);
  }
  void host_check(uint32_t salt, const std::string& ctx) override {
    const size_t bytes = nreduce_ * sizeof(T);
    std::vector<uint8_t> seen(bytes + kGuard), want(bytes + kGuard, kPoison);
    for (size_t i = 0; i < nreduce_; ++i) {
      const T v = expected_of<T>(op_, scatter_, t_.me, t_.n, salt, nreduce_, i);
      std::memcpy(want.data() + i * sizeof(T), &v, sizeof(T));
    }
    GT_CUDA(cudaMemcpy(seen.data(), dst_, seen.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(bytes_equal((ctx + ": " + name_ + " (dest, guard)").c_str(), seen.data(), want.data(), seen.size()));
  }
  const team_info& t_;
  int op_;
  bool scatter_;
  size_t nreduce_;
  bool in_place_;
  T* src_ = nullptr;
  T* dst_ = nullptr;
};

struct move_item final : item {
  move_item(const team_info& t, int kind, size_t nb)
      : item(format("%smem x %zu bytes on %s", move_name(kind), nb, t.name)), t_(t), kind_(kind), nb_(nb) {
    src_ = static_cast<uint8_t*>(shoal_malloc(move_src_bytes(kind, nb, t.n) + kGuard));
    dst_ = static_cast<uint8_t*>(shoal_malloc(move_dst_bytes(kind, nb, t.n) + kGuard));
    if (src_ == nullptr || dst_ == nullptr) ADD_FAILURE() << format("%s: shoal_malloc returned NULL", name_.c_str());
    GT_CUDA(cudaMemset(src_, kPoison, move_src_bytes(kind, nb, t.n) + kGuard));
    GT_CUDA(cudaMemset(dst_, kPoison, move_dst_bytes(kind, nb, t.n) + kGuard));
  }
  ~move_item() override {
    shoal_free(dst_);
    shoal_free(src_);
  }
  void enqueue(cudaStream_t s, salt_src salt, int root) override {
    root_ = kind_ == mv_broadcast ? root : 0;
    const size_t sb = move_src_bytes(kind_, nb_, t_.n), db = move_dst_bytes(kind_, nb_, t_.n);
    fill_move_kernel<<<grid_for(sb), kThreads, 0, s>>>(src_, nb_, kind_, t_.me, t_.n, salt);
    const int rc = move_on_stream(kind_, 0, t_.handle, dst_, src_, nb_, root_, s);
    if (rc != 0) ADD_FAILURE() << format("%s: returned %d", name_.c_str(), rc);
    check_move_kernel<<<grid_for(db), kThreads, 0, s>>>(dst_, nb_, kind_, t_.me, t_.n, root_, salt, report_);
  }
  void host_check(uint32_t salt, const std::string& ctx) override {
    const size_t db = move_dst_bytes(kind_, nb_, t_.n);
    std::vector<uint8_t> seen(db + kGuard), want(db + kGuard, kPoison);
    for (size_t i = 0; i < db; ++i) want[i] = move_expected(kind_, t_.me, root_, nb_, salt, i);
    GT_CUDA(cudaMemcpy(seen.data(), dst_, seen.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(bytes_equal((ctx + ": " + name_ + format(", root %d (dest, guard)", root_)).c_str(), seen.data(),
                            want.data(), seen.size()));
  }
  const team_info& t_;
  int kind_;
  size_t nb_;
  int root_ = 0;
  uint8_t* src_ = nullptr;
  uint8_t* dst_ = nullptr;
};

/// barrier_on_stream / team_sync_on_stream: a store into the next team PE's slot before it, a check
/// of the previous team PE's store after it (a barrier that does not wait lets the check run early).
struct barrier_item final : item {
  barrier_item(const team_info& t, bool team_sync)
      : item(format("%s on %s (store before, check after)", team_sync ? "team_sync_on_stream" : "barrier_on_stream",
                    t.name)),
        t_(t),
        team_sync_(team_sync) {
    slots_ = static_cast<uint64_t*>(shoal_calloc(static_cast<size_t>(kSlotRows) * npes(), sizeof(uint64_t)));
    if (slots_ == nullptr) ADD_FAILURE() << format("%s: shoal_calloc returned NULL", name_.c_str());
  }
  ~barrier_item() override { shoal_free(slots_); }
  void enqueue(cudaStream_t s, salt_src salt, int) override {
    put_slot_kernel<<<1, 1, 0, s>>>(slots_, npes(), me(), t_.next_world(), salt);
    const int rc = team_sync_ ? shoalx_team_sync_on_stream(t_.handle, s) : shoalx_barrier_on_stream(t_.handle, s);
    if (rc != 0) ADD_FAILURE() << format("%s: returned %d", name_.c_str(), rc);
    check_slot_kernel<<<1, 1, 0, s>>>(slots_, npes(), t_.prev_world(), salt, report_);
  }
  void host_check(uint32_t salt, const std::string& ctx) override {
    uint64_t seen = 0;
    GT_CUDA(cudaMemcpy(&seen, &slots_[static_cast<size_t>(salt % kSlotRows) * npes() + t_.prev_world()], sizeof(seen),
                       cudaMemcpyDeviceToHost));
    if (seen != salt)
      ADD_FAILURE() << format("%s: %s: slot of PE %d holds %llu, expected %u", ctx.c_str(), name_.c_str(),
                              t_.prev_world(), static_cast<unsigned long long>(seen), salt);
  }
  const team_info& t_;
  bool team_sync_;
  uint64_t* slots_ = nullptr;
};

/// Holds its stream for `ns` nanoseconds (a PE arriving late at its next replay).
__global__ void delay_kernel(uint64_t ns) {
  const uint64_t start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

/// SHOAL_TEST_CE_HOG_MIB=N (issue 14): before each replay, an N MiB host-to-device copy is queued on a
/// side stream, so the copy engines are busy when the replay's own copies (the salt; the ce algorithm's
/// copy-engine steps) run: any of them not ordered with the replay's kernels would land late.
size_t ce_hog_bytes() {
  const char* v = std::getenv("SHOAL_TEST_CE_HOG_MIB");
  return v != nullptr ? std::strtoull(v, nullptr, 10) << 20 : 0;
}

/// LL and direct reduce, in-place reduce, reducescatter, broadcast, fcollect, alltoall, barrier,
/// team_sync on team t (each with its own buffers).
void add_sequence(std::vector<std::unique_ptr<item>>& v, const team_info& t) {
  const size_t b = env().ll_bytes;
  v.push_back(std::make_unique<reduce_item<float>>(t, op_sum, false, 1023, false));
  v.push_back(std::make_unique<reduce_item<int64_t>>(t, op_xor, false, 3 * b / 8 + 5, false));
  v.push_back(std::make_unique<reduce_item<double>>(t, op_min, false, b / 8 + 3, true));
  v.push_back(std::make_unique<reduce_item<__nv_bfloat16>>(t, op_prod, false, 4097, false));
  v.push_back(std::make_unique<reduce_item<__half>>(t, op_sum, true, 777, false));
  v.push_back(std::make_unique<reduce_item<uint8_t>>(t, op_max, true, b + 9, false));
  v.push_back(std::make_unique<move_item>(t, mv_broadcast, 1000));
  v.push_back(std::make_unique<move_item>(t, mv_broadcast, 3 * b + 1));
  v.push_back(std::make_unique<move_item>(t, mv_fcollect, 513));
  v.push_back(std::make_unique<move_item>(t, mv_fcollect, b + 3));
  v.push_back(std::make_unique<move_item>(t, mv_alltoall, 333));
  v.push_back(std::make_unique<move_item>(t, mv_alltoall, b + 1));
  v.push_back(std::make_unique<barrier_item>(t, false));
  v.push_back(std::make_unique<barrier_item>(t, true));
}

TEST(coll_stream_gpu, back_to_back_100_rounds) {
  stream_env& e = env();
  for (int ti = 0; ti < 3; ++ti) {
    const team_info& t = e.team[ti];
    std::vector<std::unique_ptr<item>> items;
    add_sequence(items, t);
    sync_all_pes();
    const uint32_t base = next_salt() * 1000u;
    // No host synchronization between rounds: new data every round, dest reused every round.
    for (int it = 0; it < kBackToBack; ++it)
      for (auto& x : items) x->enqueue(e.s, salt_src{base + static_cast<uint32_t>(it)}, it % t.n);
    GT_CUDA(cudaStreamSynchronize(e.s));
    const std::string ctx = format("%d back-to-back rounds", kBackToBack);
    for (auto& x : items) {
      x->check_report(ctx);
      x->host_check(base + kBackToBack - 1, ctx);
    }
    sync_all_pes();  // every PE done with the buffers before they are freed (collectively)
  }
}

TEST(coll_stream_gpu, cuda_graph_50_replays) {
  stream_env& e = env();
  std::vector<std::unique_ptr<item>> items;
  std::vector<int> root_of;
  for (int ti = 0; ti < 3; ++ti) {  // all three teams' sequences in one graph
    add_sequence(items, e.team[ti]);
    root_of.resize(items.size(), e.team[ti].n - 1);  // broadcast root: fixed at capture
  }
  uint32_t* salt_word = nullptr;
  GT_CUDA(cudaMalloc(&salt_word, sizeof(uint32_t)));
  GT_CUDA(cudaMemset(salt_word, 0, sizeof(uint32_t)));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sync_all_pes();
  cudaGraph_t graph;
  GT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (size_t k = 0; k < items.size(); ++k) items[k]->enqueue(s, salt_src{0, salt_word}, root_of[k]);
  GT_CUDA(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  size_t nodes = 0;
  GT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (me() == 0) std::printf("captured graph: %zu collectives, %zu nodes\n", items.size(), nodes);
  if (nodes < items.size()) ADD_FAILURE() << format("the graph has %zu nodes for %zu collectives", nodes, items.size());
  const size_t hog_bytes = ce_hog_bytes();
  void* hog_src = nullptr;
  void* hog_dst = nullptr;
  cudaStream_t hog_stream = nullptr;
  if (hog_bytes > 0) {
    GT_CUDA(cudaMallocHost(&hog_src, hog_bytes));
    GT_CUDA(cudaMalloc(&hog_dst, hog_bytes));
    GT_CUDA(cudaStreamCreateWithFlags(&hog_stream, cudaStreamNonBlocking));
  }
  const uint32_t base = next_salt() * 1000u;
  // Adversarial interleaving: before each replay, each PE holds its stream for a pseudo-random 0-255 us
  // (different per PE and replay), so PEs enter the graph's collectives in every order; with the
  // PEs time-sliced on one GPU the delays also move where a PE is when the other runs.
  uint32_t rng = 0x9e3779b9u * static_cast<uint32_t>(me() + 1);
  for (int k = 0; k < kReplays; ++k) {
    const uint32_t salt = base + static_cast<uint32_t>(k);
    rng = rng * 1664525u + 1013904223u;
    delay_kernel<<<1, 1, 0, s>>>(static_cast<uint64_t>((rng >> 8) & 0xff) * 1000u);
    GT_CUDA(cudaGetLastError());
    // New data for this replay, in stream order: a plain cudaMemcpy goes through the legacy stream and
    // may return before the copy lands, so the graph (on a non-blocking stream) could read the old salt.
    if (hog_bytes > 0) GT_CUDA(cudaMemcpyAsync(hog_dst, hog_src, hog_bytes, cudaMemcpyHostToDevice, hog_stream));
    GT_CUDA(cudaMemcpyAsync(salt_word, &salt, sizeof(salt), cudaMemcpyHostToDevice, s));
    GT_CUDA(cudaGraphLaunch(exec, s));
    GT_CUDA(cudaStreamSynchronize(s));
    const std::string ctx = format("graph replay %d", k);
    for (auto& x : items) x->host_check(salt, ctx);
  }
  for (auto& x : items) x->check_report(format("%d graph replays", kReplays));
  sync_all_pes();
  GT_CUDA(cudaGraphExecDestroy(exec));
  GT_CUDA(cudaGraphDestroy(graph));
  GT_CUDA(cudaStreamDestroy(s));
  GT_CUDA(cudaFree(salt_word));
  if (hog_bytes > 0) {
    GT_CUDA(cudaStreamSynchronize(hog_stream));
    GT_CUDA(cudaStreamDestroy(hog_stream));
    GT_CUDA(cudaFree(hog_dst));
    GT_CUDA(cudaFreeHost(hog_src));
  }
}

}  // namespace
}  // namespace shoal_test
