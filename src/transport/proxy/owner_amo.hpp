// Atomics the proxy applies on its own PE's GPU heap for remote PEs: UCX's software atomics cannot
// touch device memory safely, so an AMO on a GPU heap word travels to the owning PE's proxy as an
// active message and is applied there by a one-thread kernel (transport/amo_kernel.hpp) on a private
// stream, atomic with every device atomic on that word (kernels' and the host's, which also run on
// the owning GPU). Proxy thread only.
//
// That CUDA work runs in a context of its own on the heap's GPU (SHOAL_PROXY_CUDA_CONTEXT=private, the
// default): a program thread blocked in a pageable cudaMemcpy on the legacy stream behind a kernel
// (what tensor.cpu() does) holds back every CUDA call of the primary context until that kernel ends, and
// the kernel may be waiting for this very work (docs/results/proxy/analysis.md, "The stall"). The heap is
// virtual-memory-management memory, which every context of its GPU reaches.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace shoal::detail {

class owner_amo {
 public:
  /// `device`: the CUDA device of this PE's heap (made current for each call of the owner's work).
  /// `host_heap`: the heap is host memory (tests: SHOAL_TEST_PROXY_AMO_BY_OWNER), applied with CPU
  /// atomics, which are atomic with the owner's own host AMOs.
  owner_amo(int device, bool host_heap) : device_(device), host_heap_(host_heap) {}
  ~owner_amo();
  /// false: the CUDA work runs in the primary context (SHOAL_PROXY_CUDA_CONTEXT=primary). Before the
  /// first use.
  void use_private_context(bool on) { private_context_ = on; }
  /// `pe`: this PE (for reports); `timeout`: how long one CUDA copy or atomic may take before it fails
  /// (SHOAL_WAIT_TIMEOUT; 0: unbounded). One that takes over 5 s is reported on stderr once, so a
  /// stuck proxy says what it waits for.
  void bound_waits(int pe, std::chrono::milliseconds timeout) { my_pe_ = pe, timeout_ = timeout; }
  owner_amo(const owner_amo&) = delete;
  owner_amo& operator=(const owner_amo&) = delete;

  /// Applies the ring atomic `code` (proxy_amo; cswap: `operand` is the compare value, `swap_in` the
  /// new one) to the nbytes (4, 8) word at `target`; the old value into *old. Empty on success, else
  /// what failed.
  std::string apply(uint8_t code, size_t nbytes, void* target, uint64_t operand, uint64_t swap_in, uint64_t* old);

  /// Does now what the first GPU-heap atomic or copy would do: makes the heap's GPU current, creates
  /// the private stream and the pinned reply word, and runs the atomic kernel once (loading it). At
  /// init, while no kernel of the program can be waiting on this PE's proxy: under lazy module loading
  /// a first launch of the atomic kernel waits for every running kernel of the context, so one made
  /// while a kernel spins on the signal it would set never returns. Empty on success (and for host
  /// heaps, which need nothing), else what failed.
  std::string prepare();

  /// Copies nbytes from `source` to `dest` (either may be this PE's GPU memory or host memory) and
  /// waits until they have landed: the owner's side of a staged put or get on a GPU heap, and the
  /// requester's staging of a put from GPU memory (memcpy on a host heap). A pageable host side goes
  /// through a pinned bounce buffer, 4 MiB at a time. Empty on success, else what failed.
  std::string copy(void* dest, const void* source, size_t nbytes);

  /// What copy_in and copy_out report: empty on success, else what failed; copy_out's bytes (valid during the call;
  /// nullptr after a failure).
  using in_done = std::function<void(const std::string& error)>;
  using out_done = std::function<void(const std::string& error, const char* bytes)>;
  /// Copies of at most this many bytes run through a pinned staging buffer of their own and complete later
  /// (kAsyncBuffers of them; with all in use, the oldest copy is waited for); larger ones run at once (copy()).
  static constexpr size_t kAsyncBytes = size_t{64} << 10;
  static constexpr int kAsyncBuffers = 32;
  /// Lands nbytes of host memory `source` (read before the return) at `dest` (this PE's GPU memory; host memory
  /// is a memcpy) without waiting: the copy runs on the private stream, behind the owner's earlier copies and
  /// atomics and before its later ones, and `done` runs once the bytes have landed: from poll(), in the order the
  /// copies were started, or before the return where the copy ran at once (host memory, a host heap, a copy above
  /// kAsyncBytes, a failure). The owner's side of a staged put and the requester's side of a staged get: many in
  /// flight at once instead of one copy waited for per message. `in_heap`: dest is in this PE's heap (GPU memory on
  /// a GPU heap), so no query of what memory it is (one CUDA call less per staged put).
  void copy_in(void* dest, const void* source, size_t nbytes, in_done done, bool in_heap = false);
  /// Copies nbytes at `source` (this PE's GPU memory; host memory is read as it is) out to host memory without
  /// waiting, like copy_in; `done` gets the bytes. The owner's side of a staged get.
  void copy_out(const void* source, size_t nbytes, out_done done);
  /// Runs the `done` of every copy that has landed, in order; true when any ran. A copy not landed after 5 s is
  /// reported once, and fails at the timeout of bound_waits().
  bool poll();
  /// Copies started by copy_in/copy_out whose `done` has not run yet.
  size_t copies_pending() const { return pending_.size(); }
  /// Tests (host heaps, SHOAL_TEST_PROXY_DEFER_COPIES=1): copy_in and copy_out report from the next poll() instead
  /// of at once, as GPU heaps' copies do, so the CPU suites run the answers' deferred paths. CUDA builds only.
  void defer_host_copies(bool on) { defer_host_ = on; }
  /// SHOAL_PROXY_STATS: count and time the owner's copies and atomics; stats() says them (", owner: ..."), for the
  /// engine's line at close.
  void count_work(bool on) { stats_on_ = on; }
  std::string stats() const;

 private:
  // One copy_in/copy_out in flight on the private stream: its staging buffer (index) and the event after it; or
  // (defer_host_copies) a host copy already made, buffer -1, a copy_out's bytes in host_bytes.
  struct pending_copy {
    int buffer;
    bool out;
    size_t nbytes;
    in_done in;
    out_done out_bytes;
    std::chrono::steady_clock::time_point start;
    bool reported = false;
    std::vector<char> host_bytes = {};
  };
  // A free staging buffer (waiting for the oldest copy when none is), or -1 with *error set. In context.
  int take_buffer(std::string* error);
  // Waits for the oldest copy and runs its `done`. In context.
  void finish_oldest();
  // What `what` (a copy or the atomic kernel, on nbytes) not done within the timeout of bound_waits() reports.
  std::string timed_out(const char* what, size_t nbytes) const;
  // Runs the front copy's `done` (error: its failure) and frees its buffer (not after a timeout: the copy may
  // still write it).
  void report_front(const std::string& error, bool free_buffer);
  // What enter() changed on the calling thread, undone by leave().
  struct entered {
    bool pushed = false;  // the private context was pushed
    int previous = -1;    // primary: the device to restore, -1 for none
  };
  // Makes the private context (or the heap's GPU) current, and creates the context, the private stream,
  // the pinned reply word and the bounce buffer on first use; empty on success. Undo with leave().
  std::string enter(entered* e);
  static void leave(const entered& e);
  // Waits for the private stream's work (`what`, for reports), bounded as bound_waits() says.
  std::string wait(const char* what, size_t nbytes);
  // enter() for a scope: `error` is enter()'s answer; leave() at the end of the scope either way.
  struct in_context {
    entered e;
    std::string error;
    explicit in_context(owner_amo& o) : error(o.enter(&e)) {}
    ~in_context() { leave(e); }
    in_context(const in_context&) = delete;
    in_context& operator=(const in_context&) = delete;
  };
  std::string apply_on_host(uint8_t code, size_t nbytes, void* target, uint64_t operand, uint64_t swap_in,
                            uint64_t* old);

  int device_;
  bool host_heap_;
  bool private_context_ = true;
  bool defer_host_ = false;
  bool stats_on_ = false;
  // count_work: calls and nanoseconds of copy() (waited for), copy_in/copy_out (started) and apply().
  uint64_t n_copy_ = 0, n_async_ = 0, n_apply_ = 0;
  int64_t ns_copy_ = 0, ns_async_ = 0, ns_apply_ = 0;
  int my_pe_ = -1;
  std::chrono::milliseconds timeout_{0};
  void* context_ = nullptr;                // CUcontext: the private context, made by the first enter()
  void* stream_ = nullptr;                 // cudaStream_t, created by prepare() (or the first use)
  unsigned long long* fetched_ = nullptr;  // pinned host word the kernel writes the old value to
  static constexpr size_t kBounceBytes = size_t{4} << 20;
  void* bounce_ = nullptr;            // pinned, kBounceBytes: copies with a pageable host side go through it
  std::vector<void*> buffers_;        // pinned, kAsyncBytes each: copy_in/copy_out staging (first use)
  std::vector<void*> events_;         // cudaEvent_t per buffer: recorded after its copy
  std::vector<int> free_;             // buffers not in use
  std::deque<pending_copy> pending_;  // in the order started (one stream: they land in that order)
};

}  // namespace shoal::detail
