#include "transport/proxy/owner_amo.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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

}  // namespace

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
    if (timeout_.count() > 0 && waited > timeout_)
      return std::string(what) + " (" + std::to_string(nbytes) + " bytes) on the heap's GPU not complete within " +
             std::to_string(timeout_.count()) + " ms (SHOAL_WAIT_TIMEOUT)";
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
  if (nbytes == 0) return {};
  if (host_heap_) {
    std::memcpy(dest, source, nbytes);
    return {};
  }
  const in_context scope(*this);
  if (!scope.error.empty()) return scope.error;
  const cudaMemoryType to_kind = kind_of(dest), from_kind = kind_of(source);
  if (in_host_memory(to_kind) && in_host_memory(from_kind)) {  // a get landing in a ring slot's payload area
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

std::string owner_amo::apply(uint8_t code, size_t nbytes, void* target, uint64_t operand, uint64_t swap_in,
                             uint64_t* old) {
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

#endif

}  // namespace shoal::detail
