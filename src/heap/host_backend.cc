// The `host` chunk backend: chunks are memfds, mapped MAP_SHARED|MAP_FIXED into a PROT_NONE
// reservation. Lets the whole heap (and the host API on top) run on machines without a GPU.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/check.hpp"
#include "heap/chunk_backend.hpp"

namespace shoal::detail {

namespace {

// Error call names: the backend cannot know which public call triggered it; symmetric_heap rewraps
// growth errors with the API call, these name the heap operation.
constexpr const char* kInitCall = "shoal heap init";
constexpr const char* kGrowCall = "shoal heap grow";
constexpr const char* kReleaseCall = "shoal heap release";

// A reservation starts at a multiple of the largest power of two that is at most its size and at
// most this (1 GiB: symmetric_heap::base_alignment's cap). With the default 64 GiB stride every heap
// base is then 1 GiB aligned, so shoal_align takes any power of two up to 1 GiB (OpenSHMEM's
// shmem_align), and the huge-page friendly offsets stay 2 MiB aligned. Address space only: the
// padding is unmapped again at once.
constexpr uintptr_t kReserveAlignment = uintptr_t{1} << 30;

[[noreturn]] void throw_errno(const char* call, const char* what) {
  int e = errno;
  SHOAL_THROW(errc::system, call, "{} failed: {} (errno {})", what, std::strerror(e), e);
}

class host_backend final : public chunk_backend {
 public:
  host_backend() {
    long page = sysconf(_SC_PAGESIZE);
    SHOAL_SYSCHECK(page, kInitCall);
    page_bytes_ = static_cast<size_t>(page);
  }

  const char* name() const override { return "host"; }
  size_t granularity() const override { return page_bytes_; }
  bool host_accessible() const override { return true; }

  void* reserve(size_t bytes) override {
    SHOAL_CHECK_ARG(bytes > 0 && bytes % page_bytes_ == 0, kInitCall,
                    "reservation of {} bytes is not a positive multiple of the page size {}", bytes, page_bytes_);
    const size_t align = std::max<size_t>(std::min<size_t>(kReserveAlignment, std::bit_floor(bytes)), page_bytes_);
    SHOAL_CHECK_ARG(bytes <= SIZE_MAX - align, kInitCall, "reservation of {} bytes overflows the address space", bytes);
    // MAP_NORESERVE + PROT_NONE: address space only, no commit charge, until chunks are mapped over it.
    const size_t padded = bytes + align;
    void* raw = mmap(nullptr, padded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw_errno(kInitCall, "mmap(PROT_NONE reservation)");
    // Trim the over-reservation to an aligned window of exactly `bytes`.
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + align - 1) & ~(align - 1);
    const size_t head = aligned - start;
    const size_t tail = padded - head - bytes;
    if (head > 0) SHOAL_SYSCHECK(munmap(raw, head), kInitCall);
    if (tail > 0) SHOAL_SYSCHECK(munmap(reinterpret_cast<void*>(aligned + bytes), tail), kInitCall);
    return reinterpret_cast<void*>(aligned);
  }

  void release(void* base, size_t bytes) override {
    if (base != nullptr && bytes > 0) SHOAL_SYSCHECK(munmap(base, bytes), kReleaseCall);
  }

  chunk create(size_t bytes) override {
    SHOAL_CHECK_ARG(bytes > 0 && bytes % page_bytes_ == 0, kGrowCall,
                    "chunk of {} bytes is not a positive multiple of the page size {}", bytes, page_bytes_);
    int fd = memfd_create("shoal-heap", MFD_CLOEXEC);
    SHOAL_SYSCHECK(fd, kGrowCall);
    // A fresh memfd of this length reads as zeros; pages are allocated on first touch.
    if (ftruncate(fd, static_cast<off_t>(bytes)) == -1) {
      int e = errno;
      close(fd);
      errno = e;
      throw_errno(kGrowCall, "ftruncate(memfd)");
    }
    return chunk{fd, bytes, 0};
  }

  chunk import(int fd, size_t bytes) override {
    // The fd is ours from here on, even when we refuse it.
    struct stat st {};
    if (fstat(fd, &st) == -1) {
      int e = errno;
      close(fd);
      errno = e;
      throw_errno(kGrowCall, "fstat(received chunk fd)");
    }
    if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < bytes || bytes % page_bytes_ != 0) {
      close(fd);
      SHOAL_THROW(errc::internal, kGrowCall, "received chunk fd of {} bytes (mode {:o}) cannot back {} bytes",
                  static_cast<int64_t>(st.st_size), static_cast<unsigned>(st.st_mode), bytes);
    }
    return chunk{fd, bytes, 0};
  }

  void map(void* addr, const chunk& c) override {
    void* got = mmap(addr, c.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, c.fd, 0);
    if (got == MAP_FAILED) throw_errno(kGrowCall, "mmap(MAP_SHARED|MAP_FIXED chunk)");
    // MAP_FIXED either lands at addr or fails; anything else means a kernel we do not understand.
    if (got != addr) {
      munmap(got, c.bytes);
      SHOAL_THROW(errc::internal, kGrowCall, "chunk mapped at {} instead of {}", got, addr);
    }
  }

  void unmap(void* addr, size_t bytes) override {
    // Map PROT_NONE over the chunk rather than munmap: the hole stays part of our reservation, so no
    // other mmap in the process can land inside the heap range.
    void* got = mmap(addr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (got == MAP_FAILED) throw_errno(kReleaseCall, "mmap(PROT_NONE over chunk)");
  }

  void destroy(chunk& c) override {
    if (c.fd >= 0) {
      int fd = c.fd;
      c.fd = -1;
      c.bytes = 0;
      // close() on Linux releases the fd even when it reports an error; never retry it.
      SHOAL_SYSCHECK(close(fd), kReleaseCall);
    }
  }

 private:
  size_t page_bytes_ = 4096;
};

}  // namespace

std::unique_ptr<chunk_backend> make_host_backend() { return std::make_unique<host_backend>(); }

}  // namespace shoal::detail
