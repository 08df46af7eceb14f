// libshoal_shmem: the OpenSHMEM 1.5 calls shoal has no counterpart for, built on its public C API:
// shmem_alltoalls (strided all-to-all) and shmem_team_ptr.
#include <cstdio>

#include "shmem.h"

namespace {

using iput_fn = void (*)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);

iput_fn iput_of(size_t elem_bytes) {
  switch (elem_bytes) {
    case 1:
      return shoal_iput8;
    case 2:
      return shoal_iput16;
    case 4:
      return shoal_iput32;
    case 8:
      return shoal_iput64;
    case 16:
      return shoal_iput128;
    default:
      return nullptr;
  }
}

// Block j of source (nelems elements, sst apart, from source + j*sst*nelems) goes to team PE j, at
// dest + me*dst*nelems there (dst apart): a team barrier (every dest is free), strided puts to every
// member, and a team barrier (quiet first: every block has landed on return).
int alltoalls(const char* call, shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
              size_t nelems, size_t elem_bytes) {
  const int n = shoal_team_n_pes(team), me = shoal_team_my_pe(team);
  iput_fn put = iput_of(elem_bytes);
  if (n < 0 || me < 0 || dst < 1 || sst < 1 || put == nullptr) {
    std::fprintf(stderr, "%s: team=%d is not a team of this PE, or dst=%td / sst=%td is below 1\n", call, team, dst,
                 sst);
    return SHOAL_ERR_INVALID_ARGUMENT;
  }
  if (int rc = shoal_barrier(team); rc != SHOAL_OK) return rc;
  const size_t span = nelems * elem_bytes;
  for (int j = 0; j < n; ++j) {
    void* to = static_cast<char*>(dest) + static_cast<size_t>(me) * static_cast<size_t>(dst) * span;
    const void* from = static_cast<const char*>(source) + static_cast<size_t>(j) * static_cast<size_t>(sst) * span;
    if (nelems > 0) put(to, from, dst, sst, nelems, shoal_team_translate_pe(team, j, SHMEM_TEAM_WORLD));
  }
  return shoal_barrier(team);
}

}  // namespace

extern "C" {

#define SHOAL_SHMEM_DEFINE_ALLTOALLS(T, NAME)                                                             \
  int shmem_##NAME##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, \
                               size_t nelems) {                                                           \
    return alltoalls("shmem_" #NAME "_alltoalls", team, dest, source, dst, sst, nelems, sizeof(T));       \
  }
SHOAL_SHMEM_RMA_TYPES(SHOAL_SHMEM_DEFINE_ALLTOALLS)

int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {
  return alltoalls("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}

void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  int world_pe = shoal_team_translate_pe(team, pe, SHMEM_TEAM_WORLD);
  return world_pe < 0 ? nullptr : shoal_ptr(dest, world_pe);
}

}  // extern "C"
