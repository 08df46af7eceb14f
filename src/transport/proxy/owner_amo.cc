#include "transport/proxy/owner_amo.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "shoal/detail/proxy_ring.hpp"

#ifdef SHOAL_HAVE_CUDA
#include <cuda_runtime.h>

#include "heap/cuda_driver.hpp"
#include "transport/amo_kernel.hpp"
#endif

namespace shoal::detail {

namespace {

template <class T>
T apply_word(proxy_amo code, T* word, T operand, T swap_in) {
  switch (code) {
    case proxy_amo::add:
      return __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
    case proxy_amo::swap:
      return __atomic_exchange_n(word, operand, __ATOMIC_SEQ_CST);
    case proxy_amo::cswap:
      __atomic_compare_exchange_n(word, &operand, swap_in, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return operand;  // the old value either way
    case proxy_amo::and_:
      return __atomic_fetch_and(word, operand, __ATOMIC_SEQ_CST);
    case proxy_amo::or_:
      return __atomic_fetch_or(word, operand, __ATOMIC_SEQ_CST);
    case proxy_amo::xor_:
      return __atomic_fetch_xor(word, operand, __ATOMIC_SEQ_CST);
  }
  return 0;
}

// count_work's timer: adds one call and its duration to `calls` and `ns` when `on`.
struct timed {
  bool on;
  uint64_t& calls;
  int64_t& ns;
  std::chrono::steady_clock::time_point start =
      on ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  ~timed() {
    if (!on) return;
    ++calls;
    ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  }
};

}  // namespace

std::string owner_amo::stats() const {
  if (!stats_on_) return {};
  char line[256];
  std::snprintf(line, sizeof(line),
                ", owner: %llu copies waited for %.1f ms, %llu started %.1f ms, %llu atomics %.1f ms",
                static_cast<unsigned long long>(n_copy_), static_cast<double>(ns_copy_) / 1e6,
                static_cast<unsigned long long>(n_async_), static_cast<double>(ns_async_) / 1e6,
                static_cast<unsigned long long>(n_apply_), static_cast<double>(ns_apply_) / 1e6);
  return line;
}

std::string owner_amo::apply_on_host(uint8_t code, size_t nbytes, void* target, uint64_t operand, uint64_t swap_in,
                                     uint64_t* old) {
  if (code > static_cast<uint8_t>(proxy_amo::xor_)) return "unknown atomic opcode " + std::to_string(code);
  const auto op = static_cast<proxy_amo>(code);
  if (nbytes == 4)
    *old =
        apply_word(op, static_cast<uint32_t*>(target), static_cast<uint32_t>(operand), static_cast<uint32_t>(swap_in));
  else
    *old = apply_word(op, static_cast<uint64_t*>(target), operand, swap_in);
  return {};
}

#ifdef SHOAL_HAVE_CUDA

namespace {
std::string failed(const char* what, cudaError_t err) { return std::string(what) + ": " + cudaGetErrorString(err); }
std::string failed_cu(const char* what, CUresult r) { return std::string(what) + ": " + describe_cu_result(r); }
}  // namespace

owner_amo::~owner_amo() {
  const cuda_driver* drv = context_ != nullptr ? load_cuda_driver() : nullptr;
  const bool pushed = drv != nullptr && drv->cuCtxPushCurrent(static_cast<CUcontext>(context_)) == CUDA_SUCCESS;
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  if (fetched_ != nullptr) cudaFreeHost(fetched_);
  if (bounce_ != nullptr) cudaFreeHost(bounce_);
  for (void* b : buffers_) cudaFreeHost(b);
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  if (pushed) {
    CUcontext popped = nullptr;
    drv->cuCtxPopCurrent(&popped);
    drv->cuCtxDestroy(popped);
  }
}

// Whichever thread drives the engine runs the owner's work (the proxy thread, or a host thread of the
// program whose current device may be another): the private context (or the heap's GPU) is made
// current for the call only.
std::string owner_amo::enter(entered* e) {
  *e = {};
  if (private_context_) {
    const cuda_driver* drv = load_cuda_driver();
    if (drv == nullptr) return "loading the CUDA driver: " + cuda_driver_load_error();
    if (context_ == nullptr) {
      CUdevice device = 0;
      if (CUresult r = drv->cuDeviceGet(&device, device_); r != CUDA_SUCCESS) return failed_cu("cuDeviceGet", r);
      CUcontext context = nullptr;
      if (CUresult r = drv->cuCtxCreate(&context, nullptr, 0, 0, device); r != CUDA_SUCCESS)  // pushes it
        return failed_cu("cuCtxCreate (the proxy's private context; SHOAL_PROXY_CUDA_CONTEXT=primary avoids it)", r);
      context_ = context;
    } else if (CUresult r = drv->cuCtxPushCurrent(static_cast<CUcontext>(context_)); r != CUDA_SUCCESS) {
      return failed_cu("cuCtxPushCurrent (the proxy's private context)", r);
    }
    e->pushed = true;
  } else {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) current = -1;
    if (current != device_) {
      if (cudaError_t err = cudaSetDevice(device_); err != cudaSuccess) return failed("cudaSetDevice", err);
      e->previous = current;
    }
  }
  if (stream_ == nullptr) {
    cudaStream_t stream = nullptr;
    if (cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); err != cudaSuccess)
      return failed("cudaStreamCreateWithFlags", err);
    stream_ = stream;
    void* word = nullptr;
    if (cudaError_t err = cudaHostAlloc(&word, sizeof(unsigned long long), cudaHostAllocMapped); err != cudaSuccess)
      return failed("cudaHostAlloc", err);
    fetched_ = static_cast<unsigned long long*>(word);
    void* bounce = nullptr;
    if (cudaError_t err = cudaHostAlloc(&bounce, kBounceBytes, cudaHostAllocDefault); err != cudaSuccess)
      return failed("cudaHostAlloc (the staging bounce buffer)", err);
    bounce_ = bounce;
  }
  return {};
}

std::string owner_amo::wait(const char* what, size_t nbytes) {
  auto* stream = static_cast<cudaStream_t>(stream_);
  const auto start = std::chrono::steady_clock::now();
  bool reported = false;
  for (uint32_t polls = 0;; ++polls) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotReady) return failed(what, e);
    if ((polls & 1023u) != 1023u) continue;
    std::this_thread::yield();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (!reported && waited >= std::chrono::seconds(5)) {
      std::fprintf(stderr, "shoal: PE %d: proxy: %s (%zu bytes) on the heap's GPU not complete after %lld ms\n", my_pe_,
                   what, nbytes, static_cast<long long>(waited.count()));
      reported = true;
    }
    if (timeout_.count() > 0 && waited > timeout_) return timed_out(what, nbytes);
  }
}

void owner_amo::leave(const entered& e) {
  if (e.pushed) {
    CUcontext popped = nullptr;
    load_cuda_driver()->cuCtxPopCurrent(&popped);
  } else if (e.previous >= 0) {
    cudaSetDevice(e.previous);
  }
}

namespace {
/// What memory `p` is: cudaMemoryTypeUnregistered for host memory that CUDA does not know (pageable: a copy from or
/// to it would take the driver's own staging path, which the owner avoids, see copy()), cudaMemoryTypeHost for
/// pinned host memory, else GPU (or managed) memory.
cudaMemoryType kind_of(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // older drivers report unknown host pointers as an error; not sticky
    return cudaMemoryTypeUnregistered;
  }
  return attr.type;
}
bool in_host_memory(cudaMemoryType kind) { return kind == cudaMemoryTypeUnregistered || kind == cudaMemoryTypeHost; }
}  // namespace

std::string owner_amo::prepare() {
  if (host_heap_) return {};
  const in_context scope(*this);
  if (!scope.error.empty()) return scope.error;
  if (cudaError_t e = preload_amo_kernel(fetched_, static_cast<cudaStream_t>(stream_)); e != cudaSuccess)
    return failed("loading the atomic kernel", e);
  return {};
}

std::string owner_amo::copy(void* dest, const void* source, size_t nbytes) {
  const timed t{stats_on_, n_copy_, ns_copy_};
  if (nbytes == 0) return {};
  if (host_heap_) {
    std::memcpy(dest, source, nbytes);
    return {};
  }
  const in_context scope(*this);
  if (!scope.error.empty()) return scope.error;
  const cudaMemoryType to_kind = kind_of(dest), from_kind = kind_of(source);
  // Both sides in host memory (a p's value or a host buffer staged for a put, a get landing in a ring slot's payload
  // area): a memcpy, not a copy through the GPU.
  if (in_host_memory(to_kind) && in_host_memory(from_kind)) {
    std::memcpy(dest, source, nbytes);
    return {};
  }
  // On the private stream, then waited for: the bytes are in place (not merely staged by the driver)
  // before the answer leaves, and before any later owner-applied atomic's kernel on the same stream.
  // A pageable host side (the staging of a put, a UCX receive buffer) goes through the pinned bounce
  // buffer in pieces, so the copy is a DMA on the private stream alone rather than the driver's own
  // pageable staging. (It did not cure the stall of docs/results/proxy/analysis.md: a kernel that keeps
  // proxy operations in flight still holds these copies back.)
  auto* stream = static_cast<cudaStream_t>(stream_);
  auto* to = static_cast<char*>(dest);
  const auto* from = static_cast<const char*>(source);
  const bool host_to = to_kind == cudaMemoryTypeUnregistered;
  const bool host_from = !host_to && from_kind == cudaMemoryTypeUnregistered;
  for (size_t done = 0; done < nbytes;) {
    const size_t n = (host_to || host_from) ? std::min(nbytes - done, kBounceBytes) : nbytes;
    void* d = host_to ? bounce_ : to + done;
    const void* src = from + done;
    if (host_from) std::memcpy(bounce_, from + done, n), src = bounce_;
    if (cudaError_t e = cudaMemcpyAsync(d, src, n, cudaMemcpyDefault, stream); e != cudaSuccess)
      return failed("cudaMemcpyAsync", e);
    if (std::string err = wait("a staging copy", n); !err.empty()) return err;
    if (host_to) std::memcpy(to + done, bounce_, n);
    done += n;
  }
  return {};
}

int owner_amo::take_buffer(std::string* error) {
  if (buffers_.empty()) {
    for (int i = 0; i < kAsyncBuffers; ++i) {
      void* buffer = nullptr;
      if (cudaError_t e = cudaHostAlloc(&buffer, kAsyncBytes, cudaHostAllocDefault); e != cudaSuccess) {
        *error = failed("cudaHostAlloc (a staging buffer)", e);
        return -1;
      }
      buffers_.push_back(buffer);
      cudaEvent_t event = nullptr;
      if (cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming); e != cudaSuccess) {
        *error = failed("cudaEventCreateWithFlags", e);
        return -1;
      }
      events_.push_back(event);
      free_.push_back(i);
    }
  }
  while (free_.empty() && !pending_.empty()) finish_oldest();
  if (free_.empty()) {
    *error = "no staging buffer free";
    return -1;
  }
  const int b = free_.back();
  free_.pop_back();
  return b;
}

std::string owner_amo::timed_out(const char* what, size_t nbytes) const {
  return std::string(what) + " (" + std::to_string(nbytes) + " bytes) on the heap's GPU not complete within " +
         std::to_string(timeout_.count()) + " ms (SHOAL_WAIT_TIMEOUT)";
}

void owner_amo::report_front(const std::string& error, bool free_buffer) {
  pending_copy p = std::move(pending_.front());
  pending_.pop_front();
  const char* bytes = p.buffer < 0 ? p.host_bytes.data() : static_cast<const char*>(buffers_[p.buffer]);
  if (p.out)
    p.out_bytes(error, error.empty() ? bytes : nullptr);
  else
    p.in(error);
  if (free_buffer && p.buffer >= 0) free_.push_back(p.buffer);
}

void owner_amo::finish_oldest() {
  const pending_copy& p = pending_.front();
  auto* event = static_cast<cudaEvent_t>(events_[p.buffer]);
  for (uint32_t polls = 0;; ++polls) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return report_front({}, true);
    if (e != cudaErrorNotReady) return report_front(failed("a staging copy", e), true);
    if ((polls & 1023u) == 1023u) {
      std::this_thread::yield();
      const auto waited = std::chrono::steady_clock::now() - p.start;
      if (timeout_.count() > 0 && waited > timeout_) return report_front(timed_out("a staging copy", p.nbytes), false);
    }
  }
}

bool owner_amo::poll() {
  if (pending_.empty()) return false;
  if (host_heap_) {  // defer_host_copies: made already, reported now
    while (!pending_.empty()) report_front({}, false);
    return true;
  }
  const in_context scope(*this);
  bool any = false;
  while (!pending_.empty()) {
    pending_copy& p = pending_.front();
    const cudaError_t e =
        scope.error.empty() ? cudaEventQuery(static_cast<cudaEvent_t>(events_[p.buffer])) : cudaErrorNotReady;
    if (e == cudaErrorNotReady) {
      const auto waited = std::chrono::steady_clock::now() - p.start;
      if (!p.reported && waited >= std::chrono::seconds(5)) {
        std::fprintf(stderr,
                     "shoal: PE %d: proxy: a staging copy (%zu bytes) on the heap's GPU not complete after 5 s\n",
                     my_pe_, p.nbytes);
        p.reported = true;
      }
      if (timeout_.count() > 0 && waited > timeout_) {
        report_front(timed_out("a staging copy", p.nbytes), false);
        any = true;
        continue;
      }
      break;
    }
    report_front(e == cudaSuccess ? std::string{} : failed("a staging copy", e), true);
    any = true;
  }
  return any;
}

void owner_amo::copy_in(void* dest, const void* source, size_t nbytes, in_done done, bool in_heap) {
  const timed t{stats_on_, n_async_, ns_async_};
  if (host_heap_ || nbytes == 0) {
    if (nbytes > 0) std::memcpy(dest, source, nbytes);
    if (!(host_heap_ && defer_host_)) return done({});
    pending_.push_back({-1, false, nbytes, std::move(done), {}, std::chrono::steady_clock::now()});
    return;
  }
  if (nbytes > kAsyncBytes) return done(copy(dest, source, nbytes));
  const in_context scope(*this);
  if (!scope.error.empty()) return done(scope.error);
  if (!in_heap && in_host_memory(kind_of(dest))) {  // a get landing in host memory (a payload area, a host buffer)
    std::memcpy(dest, source, nbytes);
    return done({});
  }
  std::string error;
  const int b = take_buffer(&error);
  if (b < 0) return done(error);
  std::memcpy(buffers_[b], source, nbytes);
  auto* stream = static_cast<cudaStream_t>(stream_);
  cudaError_t e = cudaMemcpyAsync(dest, buffers_[b], nbytes, cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) e = cudaEventRecord(static_cast<cudaEvent_t>(events_[b]), stream);
  if (e != cudaSuccess) {
    free_.push_back(b);
    return done(failed("cudaMemcpyAsync (a staging copy)", e));
  }
  pending_.push_back({b, false, nbytes, std::move(done), {}, std::chrono::steady_clock::now()});
}

void owner_amo::copy_out(const void* source, size_t nbytes, out_done done) {
  const timed t{stats_on_, n_async_, ns_async_};
  if (host_heap_ || nbytes == 0) {
    if (!(host_heap_ && defer_host_)) return done({}, static_cast<const char*>(source));
    pending_.push_back({-1, true, nbytes, {}, std::move(done), std::chrono::steady_clock::now()});
    const auto* bytes = static_cast<const char*>(source);
    pending_.back().host_bytes.assign(bytes, bytes + nbytes);
    return;
  }
  if (nbytes > kAsyncBytes) {
    std::unique_ptr<char[]> bytes(new char[nbytes]);
    const std::string error = copy(bytes.get(), source, nbytes);
    return done(error, error.empty() ? bytes.get() : nullptr);
  }
  const in_context scope(*this);
  if (!scope.error.empty()) return done(scope.error, nullptr);
  std::string error;
  const int b = take_buffer(&error);
  if (b < 0) return done(error, nullptr);
  auto* stream = static_cast<cudaStream_t>(stream_);
  cudaError_t e = cudaMemcpyAsync(buffers_[b], source, nbytes, cudaMemcpyDefault, stream);
  if (e == cudaSuccess) e = cudaEventRecord(static_cast<cudaEvent_t>(events_[b]), stream);
  if (e != cudaSuccess) {
    free_.push_back(b);
    return done(failed("cudaMemcpyAsync (a staging copy)", e), nullptr);
  }
  pending_.push_back({b, true, nbytes, {}, std::move(done), std::chrono::steady_clock::now()});
}

std::string owner_amo::apply(uint8_t code, size_t nbytes, void* target, uint64_t operand, uint64_t swap_in,
                             uint64_t* old) {
  const timed t{stats_on_, n_apply_, ns_apply_};
  if (host_heap_) return apply_on_host(code, nbytes, target, operand, swap_in, old);
  const in_context scope(*this);
  if (!scope.error.empty()) return scope.error;
  amo_args args{amo_op::fetch_add, operand, 0};
  switch (static_cast<proxy_amo>(code)) {
    case proxy_amo::add:
      break;
    case proxy_amo::swap:
      args.op = amo_op::swap;
      break;
    case proxy_amo::cswap:  // the ring's convention: operand compares, swap_in is written
      args = {amo_op::compare_swap, swap_in, operand};
      break;
    case proxy_amo::and_:
      args.op = amo_op::fetch_and;
      break;
    case proxy_amo::or_:
      args.op = amo_op::fetch_or;
      break;
    case proxy_amo::xor_:
      args.op = amo_op::fetch_xor;
      break;
    default:
      return "unknown atomic opcode " + std::to_string(code);
  }
  const scalar type{scalar_kind::unsigned_int, static_cast<uint8_t>(nbytes)};
  auto* stream = static_cast<cudaStream_t>(stream_);
  if (cudaError_t err = launch_amo_kernel(type, target, args, fetched_, stream); err != cudaSuccess)
    return failed("the atomic kernel's launch", err);
  if (std::string err = wait("the atomic kernel", nbytes); !err.empty()) return err;
  *old = *fetched_;
  return {};
}

#else

owner_amo::~owner_amo() = default;

std::string owner_amo::prepare() { return {}; }

std::string owner_amo::apply(uint8_t code, size_t nbytes, void* target, uint64_t operand, uint64_t swap_in,
                             uint64_t* old) {
  if (host_heap_) return apply_on_host(code, nbytes, target, operand, swap_in, old);
  return "GPU heap atomics need a CUDA build";
}

std::string owner_amo::copy(void* dest, const void* source, size_t nbytes) {
  if (!host_heap_) return "GPU heap copies need a CUDA build";
  if (nbytes > 0) std::memcpy(dest, source, nbytes);
  return {};
}

void owner_amo::copy_in(void* dest, const void* source, size_t nbytes, in_done done, bool in_heap) {
  done(copy(dest, source, nbytes));
}

void owner_amo::copy_out(const void* source, size_t nbytes, out_done done) {
  if (!host_heap_) return done("GPU heap copies need a CUDA build", nullptr);
  done({}, static_cast<const char*>(source));
}

bool owner_amo::poll() { return false; }

#endif

}  // namespace shoal::detail
