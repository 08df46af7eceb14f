// libshoal_shmem: OpenSHMEM's legacy active-set collectives (shmem_barrier, the active-set shmem_sync,
// shmem_broadcast32/64, collect, fcollect, alltoall, alltoalls, shmem_<TYPE>_<OP>_to_all) on shoal's public
// RMA, AMOs and waits, and shmem_init/_init_thread/_finalize (and the deprecated start_pes), which set up
// their symmetric workspace. An active set (PE_start,
// 2^logPE_stride, PE_size) need not be a team: only its members call, so nothing here is collective
// over the world except init and finalize.
#include <cstring>
#include <vector>

#include "shmem.h"
#include "shmem_internal.hpp"

namespace {
namespace legacy {  // internal to this file and legacy_gen.inc

struct active_set {
  int start, log_stride, size;
  int pe(int index) const { return start + (index << log_stride); }
};

// The workspace, one symmetric block of 2 * n_pes words on every PE (shoal_calloc in shmem_init):
//   arrive[p] (words 0..n-1): how many sync signals PE p has sent to this PE. Written by PE p only,
//     by a remote atomic add after a quiet (its earlier puts have landed); read by this PE only, by
//     a wait. Signals between two PEs pair up in order because both PEs call the collectives that
//     contain them both in the same order, each sending the same number of signals per call.
//   sizes[i] (words n..2n-1): in shmem_collect32/64, the bytes member i of the active set brings.
//     Written by member i (a put to every member) between the first two syncs of a collect; read by
//     the owner after the second. The third sync keeps the next collect from overwriting it early.
uint64_t* g_workspace = nullptr;
std::vector<uint64_t> g_consumed;  // private: signals from each PE this PE has waited for
int g_n_pes = 0;

using shoal_shmem::fail;

// Checks the active set and pSync; on success `*index` is this PE's index in the set.
bool check(const char* call, active_set set, const long* pSync, int* index) {
  const int n = shoal_n_pes(), me = shoal_my_pe();
  if (g_workspace == nullptr || n != g_n_pes)
    return fail(call,
                "the legacy collectives need shmem_init (or shmem_init_thread) first, which sets up their "
                "workspace; shoal_init alone does not");
  if (set.size < 1) return fail(call, "PE_size=%d is below 1", set.size);
  if (set.start < 0 || set.start >= n) return fail(call, "PE_start=%d is not a PE (0..%d)", set.start, n - 1);
  if (set.log_stride < 0 || set.log_stride > 30) return fail(call, "logPE_stride=%d is outside 0..30", set.log_stride);
  const long long last = set.start + (static_cast<long long>(set.size - 1) << set.log_stride);
  if (last >= n)
    return fail(call, "the active set (PE_start=%d, logPE_stride=%d, PE_size=%d) ends at PE %lld, past the last PE %d",
                set.start, set.log_stride, set.size, last, n - 1);
  if (pSync == nullptr) return fail(call, "pSync is NULL");
  const int offset = me - set.start;
  if (offset < 0 || (offset & ((1 << set.log_stride) - 1)) != 0 || (offset >> set.log_stride) >= set.size)
    return fail(call,
                "PE %d is not in the active set (PE_start=%d, logPE_stride=%d, PE_size=%d); only its members call", me,
                set.start, set.log_stride, set.size);
  *index = offset >> set.log_stride;
  return true;
}

bool check_bytes(const char* call, size_t nelems, size_t elem_bytes, size_t* bytes) {
  if (__builtin_mul_overflow(nelems, elem_bytes, bytes))
    return fail(call, "nelems=%zu x %zu bytes overflows size_t", nelems, elem_bytes);
  return true;
}

// Every member's earlier puts and AMOs have landed, and every member has reached this point.
void sync(active_set set, int index) {
  shoal_quiet();
  const int me = shoal_my_pe();
  for (int i = 0; i < set.size; ++i)
    if (i != index) shoal_uint64_atomic_add(&g_workspace[me], 1, set.pe(i));
  for (int i = 0; i < set.size; ++i) {
    if (i == index) continue;
    const int p = set.pe(i);
    shoal_uint64_wait_until(&g_workspace[p], SHOAL_CMP_GE, ++g_consumed[p]);
  }
}

void barrier(const char* call, active_set set, long* pSync) {
  int index = 0;
  if (check(call, set, pSync, &index)) sync(set, index);
}

// The data movers: a sync (every member is in, so every dest is free), puts, a sync (quiet first:
// everything has landed everywhere on return).
void broadcast(const char* call, size_t elem_bytes, active_set set, void* dest, const void* source, size_t nelems,
               int PE_root, long* pSync) {
  int index = 0;
  size_t bytes = 0;
  if (!check(call, set, pSync, &index) || !check_bytes(call, nelems, elem_bytes, &bytes)) return;
  if (PE_root < 0 || PE_root >= set.size)
    return void(fail(call, "PE_root=%d is not an index of the active set (0..%d)", PE_root, set.size - 1));
  sync(set, index);
  if (index == PE_root && bytes > 0)  // the root's own dest is not written (the spec's rule)
    for (int i = 0; i < set.size; ++i)
      if (i != index) shoal_putmem(dest, source, bytes, set.pe(i));
  sync(set, index);
}

void fcollect(const char* call, size_t elem_bytes, active_set set, void* dest, const void* source, size_t nelems,
              long* pSync) {
  int index = 0;
  size_t bytes = 0;
  if (!check(call, set, pSync, &index) || !check_bytes(call, nelems, elem_bytes, &bytes)) return;
  sync(set, index);
  if (bytes > 0)
    for (int i = 0; i < set.size; ++i)
      shoal_putmem(static_cast<char*>(dest) + static_cast<size_t>(index) * bytes, source, bytes, set.pe(i));
  sync(set, index);
}

void collect(const char* call, size_t elem_bytes, active_set set, void* dest, const void* source, size_t nelems,
             long* pSync) {
  int index = 0;
  size_t bytes = 0;
  if (!check(call, set, pSync, &index) || !check_bytes(call, nelems, elem_bytes, &bytes)) return;
  uint64_t* sizes = g_workspace + g_n_pes;
  const uint64_t mine = bytes;
  sync(set, index);
  for (int i = 0; i < set.size; ++i) shoal_putmem(&sizes[index], &mine, sizeof mine, set.pe(i));
  sync(set, index);
  std::vector<uint64_t> all(static_cast<size_t>(set.size));
  shoal_getmem(all.data(), sizes, all.size() * sizeof(uint64_t), shoal_my_pe());  // the heap may be GPU memory
  uint64_t offset = 0;
  for (int i = 0; i < index; ++i) offset += all[static_cast<size_t>(i)];
  if (bytes > 0)
    for (int i = 0; i < set.size; ++i) shoal_putmem(static_cast<char*>(dest) + offset, source, bytes, set.pe(i));
  sync(set, index);
}

// Block i of source goes to member i, at dest + index * block there.
void alltoall(const char* call, size_t elem_bytes, active_set set, void* dest, const void* source, size_t nelems,
              long* pSync) {
  int index = 0;
  size_t bytes = 0;
  if (!check(call, set, pSync, &index) || !check_bytes(call, nelems, elem_bytes, &bytes)) return;
  sync(set, index);
  if (bytes > 0)
    for (int i = 0; i < set.size; ++i)
      shoal_putmem(static_cast<char*>(dest) + static_cast<size_t>(index) * bytes,
                   static_cast<const char*>(source) + static_cast<size_t>(i) * bytes, bytes, set.pe(i));
  sync(set, index);
}

// Block i (nelems elements sst apart, from source + i*sst*nelems) goes to member i at
// dest + index*dst*nelems (dst apart).
void alltoalls(const char* call, size_t elem_bytes, active_set set, void* dest, const void* source, ptrdiff_t dst,
               ptrdiff_t sst, size_t nelems, long* pSync) {
  int index = 0;
  size_t bytes = 0;
  if (!check(call, set, pSync, &index) || !check_bytes(call, nelems, elem_bytes, &bytes)) return;
  if (dst < 1 || sst < 1) return void(fail(call, "dst=%td / sst=%td is below 1", dst, sst));
  auto* put = elem_bytes == 4 ? shoal_iput32 : shoal_iput64;
  sync(set, index);
  if (nelems > 0)
    for (int i = 0; i < set.size; ++i) {
      char* to = static_cast<char*>(dest) + static_cast<size_t>(index) * static_cast<size_t>(dst) * bytes;
      const char* from = static_cast<const char*>(source) + static_cast<size_t>(i) * static_cast<size_t>(sst) * bytes;
      put(to, from, dst, sst, nelems, set.pe(i));
    }
  sync(set, index);
}

using shoal_shmem::op_and;
using shoal_shmem::op_max;
using shoal_shmem::op_min;
using shoal_shmem::op_or;
using shoal_shmem::op_prod;
using shoal_shmem::op_sum;
using shoal_shmem::op_xor;

// Every member gets every member's source (in index order, so every member computes the same
// result, floating point included) and reduces it locally; a sync before dest is written, since dest
// may be source. pWrk is checked, not used.
template <class Op, class T>
void to_all(const char* call, active_set set, T* dest, const T* source, int nreduce, T* pWrk, long* pSync) {
  int index = 0;
  if (!check(call, set, pSync, &index)) return;
  if (nreduce < 0) return void(fail(call, "nreduce=%d is negative", nreduce));
  if (pWrk == nullptr) return void(fail(call, "pWrk is NULL"));
  const size_t count = static_cast<size_t>(nreduce), bytes = count * sizeof(T);
  std::vector<T> acc(count), got(count);
  sync(set, index);
  for (int i = 0; i < set.size && count > 0; ++i) {
    shoal_getmem(i == 0 ? acc.data() : got.data(), source, bytes, set.pe(i));
    if (i > 0)
      for (size_t k = 0; k < count; ++k) acc[k] = Op{}(acc[k], got[k]);
  }
  sync(set, index);
  if (count > 0) shoal_putmem(dest, acc.data(), bytes, shoal_my_pe());
}

void attach() {
  if (g_workspace != nullptr) return;  // initialized before
  g_n_pes = shoal_n_pes();
  if (g_n_pes <= 0) return;  // shoal_init failed and reported it
  g_workspace = static_cast<uint64_t*>(shoal_calloc(2 * static_cast<size_t>(g_n_pes), sizeof(uint64_t)));
  g_consumed.assign(static_cast<size_t>(g_n_pes), 0);
  shoal_barrier_all();  // every PE's words are zero before any PE signals
}

void detach() {
  if (g_workspace == nullptr) return;
  shoal_free(g_workspace);
  g_workspace = nullptr;
  g_consumed.clear();
  g_n_pes = 0;
}

}  // namespace legacy
}  // namespace

extern "C" {

void shmem_init(void) {
  shoal_init();
  legacy::attach();
}

void start_pes(int npes) {
  (void)npes;  // OpenSHMEM 1.2's meaning too: the PEs are the ones the launcher started
  shmem_init();
}

int shmem_init_thread(int requested, int* provided) {
  int rc = shoal_init_thread(requested, provided);
  if (rc == SHOAL_OK) legacy::attach();
  return rc;
}

void shmem_finalize(void) {
  legacy::detach();
  shoal_finalize();
}

#include "legacy_gen.inc"

}  // extern "C"
