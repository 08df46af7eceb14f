// NVSHMEM's unique-id init mode, as NVSHMEM programs spell it (nvshmemx_get_uniqueid on one rank, the id passed out
// of band, nvshmemx_set_attr_uniqueid_args + nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID)), on host-memory PEs
// (SHOAL_BACKEND=host). No launcher: the program forks its 2 ranks and passes the id through a pipe. Rank 1 uses
// the hostlib_ spelling. Exits 0 and prints "nv_uid_init: OK" when both ranks saw the ring value and the sizes.
#include <nvshmem.h>
#include <nvshmemx.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

int run_rank(int rank, int nranks, int pipe_read, int pipe_write) {
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) {
    if (nvshmemx_get_uniqueid(&id) != NVSHMEMX_SUCCESS) return 10;
    for (int r = 1; r < nranks; ++r)
      if (write(pipe_write, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 11;
  } else if (read(pipe_read, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
    return 12;
  }
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr) != NVSHMEMX_SUCCESS) return 13;
  int rc = rank == 0 ? nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr)
                     : nvshmemx_hostlib_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
  if (rc != NVSHMEMX_SUCCESS) return 14;
  if (nvshmem_my_pe() != rank || nvshmem_n_pes() != nranks) return 15;
  int* slot = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  nvshmem_int_p(slot, 40 + rank, (rank + 1) % nranks);
  nvshmem_barrier_all();
  const int want = 40 + (rank + nranks - 1) % nranks;
  if (*slot != want) {
    std::fprintf(stderr, "nv_uid_init: rank %d: slot %d, want %d\n", rank, *slot, want);
    return 16;
  }
  nvshmem_free(slot);
  if (rank == 0)
    nvshmem_finalize();
  else
    nvshmemx_hostlib_finalize();
  return 0;
}

}  // namespace

int main() {
  constexpr int kRanks = 2;
  int fds[2];
  if (pipe(fds) != 0) return 2;
  pid_t pids[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(run_rank(r, kRanks, fds[0], fds[1]));
  }
  close(fds[0]);
  close(fds[1]);
  int failed = 0;
  for (int r = 0; r < kRanks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "nv_uid_init: rank %d failed (status %d)\n", r, status);
      failed = 1;
    }
  }
  if (!failed) std::printf("nv_uid_init: OK\n");
  return failed;
}
