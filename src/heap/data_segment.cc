#include "heap/data_segment.hpp"

#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <type_traits>

#include "common/check.hpp"
#include "common/log.hpp"

namespace shoal::detail {

namespace {

constexpr const char* kInitCall = "shoal_init";

uintptr_t page_bytes() { return static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)); }

// What dl_iterate_phdr's first entry (the main program) says about its writable data.
struct program_headers {
  bool seen = false;
  int writable = 0;              // writable PT_LOAD segments
  uintptr_t start = 0, end = 0;  // of the (last) writable PT_LOAD, in memory (p_memsz: .bss included)
  int prot = 0;
  uintptr_t relro_start = 0, relro_end = 0;  // PT_GNU_RELRO; 0, 0 when absent
};

int read_main_program(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<program_headers*>(data);
  out->seen = true;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) != 0 && ph.p_memsz > 0) {
      ++out->writable;
      out->start = start;
      out->end = start + ph.p_memsz;
      out->prot = PROT_WRITE | ((ph.p_flags & PF_R) != 0 ? PROT_READ : 0) | ((ph.p_flags & PF_X) != 0 ? PROT_EXEC : 0);
    } else if (ph.p_type == PT_GNU_RELRO) {
      out->relro_start = start;
      out->relro_end = start + ph.p_memsz;
    }
  }
  return 1;  // the first object is the main program: stop there
}

// The process-wide outcome. Written once under g_share_once (and reset in a forked child), read by
// every world's symmetric_data. g_data_prot: the segment's protection, which the memfd mapping keeps.
shared_data_segment g_shared;
int g_data_prot = PROT_READ | PROT_WRITE;
std::once_flag g_share_once;

bool all_zero(const char* p, size_t num_bytes) {
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t acc = 0;
  for (size_t i = 0; i < num_bytes / sizeof(uint64_t); ++i) acc |= w[i];
  return acc == 0;
}

// In a forked child (only the forking thread exists): copy the shared data into private anonymous
// memory and move that over the program's data in one step (mremap), so the child neither shares
// its globals with the parent nor ever sees them unmapped. Then forget the segment: a shoal_init in
// the child shares its own.
void privatize_in_child() {
  const data_segment_span span = g_shared.span;
  if (span.base == nullptr) return;
  void* copy = mmap(nullptr, span.num_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool moved = false;
  if (copy != MAP_FAILED) {
    auto* to = static_cast<char*>(copy);
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (size_t at = 0; at < span.num_bytes; at += page)  // zero pages stay untouched (no memory)
      if (!all_zero(span.base + at, page)) std::memcpy(to + at, span.base + at, page);
    if (g_data_prot != (PROT_READ | PROT_WRITE)) mprotect(copy, span.num_bytes, g_data_prot);
    // The system call itself: UCX's memory hooks (libucm, loaded with the proxy) replace mremap()
    // and drop its fifth argument, which would move the copy to address 0.
    const long got =
        syscall(SYS_mremap, copy, span.num_bytes, span.num_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, span.base);
    moved = got == reinterpret_cast<long>(span.base);
    if (!moved) munmap(copy, span.num_bytes);
  }
  if (!moved) {
    // Nothing logs safely here; the child keeps sharing its parent's globals. Say so.
    static const char line[] = "shoal: warning: a forked child could not get a private copy of its globals\n";
    (void)!::write(STDERR_FILENO, line, sizeof(line) - 1);
    return;
  }
  close(g_shared.fd);
  g_shared.span = {};
  g_shared.fd = -1;
  new (&g_share_once) std::once_flag;  // not assignable: a fresh one in place, for a shoal_init here
}

// find_program_data, with the segment's protection.
data_segment_span find_program_data(std::string* why_not, int* prot);

// Whether [start, end) is covered by private writable mappings (/proc/self/maps), as a program's data
// is: anything else (already shared, read-only, a hole) is not remapped. nullptr when it is, or when
// /proc cannot be read (best effort); else why not.
const char* not_private_data(uintptr_t start, uintptr_t end) {
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return nullptr;
  uintptr_t covered = start;
  const char* why = nullptr;
  char line[512];
  while (why == nullptr && covered < end && std::fgets(line, sizeof(line), maps) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || hi <= covered) continue;
    if (lo > covered)
      why = "the program's data range has a hole";
    else if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
      why = "the program's data range is not all private read-write memory";
    else
      covered = hi;
  }
  std::fclose(maps);
  if (why == nullptr && covered < end) why = "the program's data range runs past its mappings";
  return why;
}

void share_once() {
  std::string why;
  const data_segment_span span = find_program_data(&why, &g_data_prot);
  if (span.base == nullptr) {
    g_shared.why_not = why;
    return;
  }
  const auto start = reinterpret_cast<uintptr_t>(span.base);
  if (const char* odd = not_private_data(start, start + span.num_bytes)) {
    g_shared.why_not = odd;
    return;
  }
  const auto fail = [&](const char* what) {
    g_shared.why_not = fmt::format("{} failed: {} (errno {})", what, std::strerror(errno), errno);
  };
  int fd = memfd_create("shoal-data", MFD_CLOEXEC);
  if (fd < 0) return fail("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(span.num_bytes)) != 0) {
    fail("ftruncate(data segment memfd)");
    close(fd);
    return;
  }
  // Copy through a second mapping of the memfd, then swap it in with MAP_FIXED (atomic for readers).
  auto* staging = static_cast<char*>(mmap(nullptr, span.num_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (staging == MAP_FAILED) {
    fail("mmap(data segment memfd)");
    close(fd);
    return;
  }
  // Page by page, leaving zero pages out: the memfd reads as zero already, and a large .bss that
  // was never written costs no memory (reading untouched pages maps the kernel's zero page).
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < span.num_bytes; at += page)
    if (!all_zero(span.base + at, page)) std::memcpy(staging + at, span.base + at, page);
  void* got = mmap(span.base, span.num_bytes, g_data_prot, MAP_SHARED | MAP_FIXED, fd, 0);
  if (got != span.base) {
    const int e = errno;
    // The kernel checks before it replaces the old mapping, so the data is normally as it was; if
    // the range was unmapped anyway, put a private copy back from the staging mapping.
    unsigned char resident = 0;
    if (mincore(span.base, 1, &resident) != 0 && errno == ENOMEM &&
        mmap(span.base, span.num_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
            span.base) {
      std::memcpy(span.base, staging, span.num_bytes);
      mprotect(span.base, span.num_bytes, g_data_prot);
    }
    munmap(staging, span.num_bytes);
    errno = e;
    fail("mmap(MAP_SHARED|MAP_FIXED over the program's data)");
    close(fd);
    return;
  }
  munmap(staging, span.num_bytes);
  g_shared.span = span;
  g_shared.fd = fd;
  static const bool handler = pthread_atfork(nullptr, nullptr, privatize_in_child) == 0;
  if (!handler) SHOAL_LOG(warn, heap, "pthread_atfork failed: a forked child would share this PE's globals");
  SHOAL_LOG(info, heap, "global and static variables are symmetric: {} bytes of program data at {} shared",
            span.num_bytes, static_cast<void*>(span.base));
}

// One PE's view of its data segment, all-gathered so that every PE takes the same decision.
// Zero-filled: why is NUL-terminated.
struct data_status {
  uint64_t num_bytes;  // 0 when this PE does not share
  char why[200];
};
static_assert(std::is_trivially_copyable_v<data_status>);

data_segment_span find_program_data(std::string* why_not, int* prot) {
  program_headers ph;
  dl_iterate_phdr(read_main_program, &ph);
  const uintptr_t page = page_bytes();
  if (!ph.seen || ph.writable == 0) {
    *why_not = "the program has no writable data segment";
    return {};
  }
  if (ph.writable > 1) {
    *why_not = fmt::format("the program has {} writable segments (one is supported)", ph.writable);
    return {};
  }
  *prot = ph.prot;
  // The kernel mapped the segment from its first page; the dynamic linker made the RELRO pages
  // (rounded down at their end, as it does) read-only again: they stay as they are.
  uintptr_t start = ph.start & ~(page - 1);
  if (ph.relro_end > start && ph.relro_start < ph.end) start = std::max(start, ph.relro_end & ~(page - 1));
  const uintptr_t end = (ph.end + page - 1) & ~(page - 1);
  if (end <= start) {
    *why_not = "the program's writable data is all RELRO";
    return {};
  }
  return {reinterpret_cast<char*>(start), end - start};
}

}  // namespace

data_segment_span find_program_data(std::string* why_not) {
  int prot = 0;
  return find_program_data(why_not, &prot);
}

const shared_data_segment& share_program_data() {
  std::call_once(g_share_once, share_once);
  return g_shared;
}

symmetric_data::symmetric_data(bootstrap& boot, symmetric_heap& heap, bool wanted, std::string why_not)
    : nodes_(heap.nodes()) {
  data_status mine;
  std::memset(&mine, 0, sizeof(mine));
  const shared_data_segment* shared = nullptr;
  if (wanted) {
    shared = &share_program_data();
    if (shared->span.base == nullptr) {
      why_not = shared->why_not;
      SHOAL_LOG(warn, heap, "global and static variables cannot be made symmetric: {}; going on without", why_not);
    }
  }
  if (shared != nullptr && shared->span.base != nullptr) {
    mine.num_bytes = shared->span.num_bytes;
  } else {
    std::snprintf(mine.why, sizeof(mine.why), "%s", why_not.c_str());
  }
  std::vector<data_status> all(static_cast<size_t>(boot.size()));
  boot.allgather(&mine, all.data(), sizeof(data_status), kInitCall);

  // All PEs of the job decide alike; only same-node PEs map each other, but a program that is not
  // the same everywhere is not symmetric anywhere.
  for (int pe = 0; pe < boot.size() && why_not_.empty(); ++pe) {
    const data_status& s = all[static_cast<size_t>(pe)];
    if (s.num_bytes == 0)
      why_not_ = pe == boot.rank() ? why_not
                                   : fmt::format("PE {} does not share its globals: {}", pe,
                                                 std::string(s.why, strnlen(s.why, sizeof(s.why))));
    else if (s.num_bytes != all[0].num_bytes)
      why_not_ = fmt::format("PEs run different programs: PE 0's data segment is {} bytes, PE {}'s {}",
                             all[0].num_bytes, pe, s.num_bytes);
  }
  if (!why_not_.empty()) {
    SHOAL_LOG(info, heap, "global and static variables are not symmetric: {}", why_not_);
    return;
  }

  num_bytes_ = mine.num_bytes;
  std::vector<unique_fd> fds = heap.exchange_fd(shared->fd, num_bytes_, kInitCall);
  by_local_.assign(nodes_.pe_of_local.size(), nullptr);
  by_local_[static_cast<size_t>(nodes_.my_local)] = shared->span.base;
  std::string failed;
  for (size_t local = 0; local < fds.size() && failed.empty(); ++local) {
    if (static_cast<int>(local) == nodes_.my_local) continue;
    struct stat st {};
    if (fstat(fds[local].get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < num_bytes_) {
      failed = fmt::format("local PE {} sent a data segment fd that cannot back {} bytes", local, num_bytes_);
      break;
    }
    void* p = mmap(nullptr, num_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fds[local].get(), 0);
    if (p == MAP_FAILED) {
      failed = fmt::format("mmap(local PE {}'s data segment) failed: {}", local, std::strerror(errno));
      break;
    }
    by_local_[local] = static_cast<char*>(p);
  }
  // The fds close here: the mappings keep the memory.
  std::memset(&mine, 0, sizeof(mine));
  std::snprintf(mine.why, sizeof(mine.why), "%s", failed.c_str());
  boot.allgather(&mine, all.data(), sizeof(data_status), kInitCall);
  for (int pe = 0; pe < boot.size() && why_not_.empty(); ++pe) {
    const data_status& s = all[static_cast<size_t>(pe)];
    if (s.why[0] != '\0')
      why_not_ = fmt::format("PE {} could not map its peers' globals: {}", pe,
                             std::string(s.why, strnlen(s.why, sizeof(s.why))));
  }
  if (!why_not_.empty()) {
    SHOAL_LOG(warn, heap, "global and static variables are not symmetric: {}", why_not_);
    unmap_peers();
    return;
  }
  own_ = shared->span.base;
  SHOAL_LOG(info, heap, "global and static variables are symmetric: {} bytes at {}, {} local PEs", num_bytes_,
            static_cast<void*>(own_), by_local_.size());
}

symmetric_data::~symmetric_data() { unmap_peers(); }

void symmetric_data::unmap_peers() noexcept {
  for (size_t local = 0; local < by_local_.size(); ++local) {
    if (static_cast<int>(local) == nodes_.my_local || by_local_[local] == nullptr) continue;
    if (munmap(by_local_[local], num_bytes_) != 0)
      SHOAL_LOG(warn, heap, "unmapping local PE {}'s data segment: {}", local, std::strerror(errno));
  }
  by_local_.clear();
  own_ = nullptr;
}

char* symmetric_data::data_of(int pe) const {
  if (own_ == nullptr || pe < 0 || static_cast<size_t>(pe) >= nodes_.local_of_pe.size()) return nullptr;
  const int local = nodes_.local_of_pe[static_cast<size_t>(pe)];
  return local < 0 ? nullptr : by_local_[static_cast<size_t>(local)];
}

}  // namespace shoal::detail
