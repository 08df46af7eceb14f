// libshoal_shmem: the parts of <shmem.h> that are not a shoal_ call under another name: contexts
// (every context orders like the default one), distributed locks, malloc hints, pcontrol. Built
// on shoal's public C API only, like any OpenSHMEM program.
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <new>

#include "shmem.h"

struct shoal_shmem_ctx {
  shmem_team_t team;
};

extern "C" {

SHOAL_API struct shoal_shmem_ctx shoal_shmem_ctx_default = {SHMEM_TEAM_WORLD};

void* shmem_malloc_with_hints(size_t nbytes, long hints) {
  (void)hints;  // every symmetric object supports remote atomics and signals in shoal
  return shoal_malloc(nbytes);
}

void shmem_pcontrol(int level) { (void)level; }

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx) {
  (void)options;  // SERIALIZED / PRIVATE / NOSTORE only relax what a context must do
  if (ctx == nullptr) return SHOAL_ERR_INVALID_ARGUMENT;
  *ctx = SHMEM_CTX_INVALID;
  if (team == SHMEM_TEAM_INVALID || shoal_team_n_pes(team) < 0) return SHOAL_ERR_INVALID_ARGUMENT;
  auto* made = new (std::nothrow) shoal_shmem_ctx{team};
  if (made == nullptr) return SHOAL_ERR_OUT_OF_MEMORY;
  *ctx = made;
  return SHOAL_OK;
}

int shmem_ctx_create(long options, shmem_ctx_t* ctx) { return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx); }

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  if (ctx != SHMEM_CTX_DEFAULT) delete ctx;  // deleting SHMEM_CTX_INVALID (null) is a no-op
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team) {
  if (team == nullptr) return SHOAL_ERR_INVALID_ARGUMENT;
  *team = ctx == SHMEM_CTX_INVALID ? SHMEM_TEAM_INVALID : ctx->team;
  return ctx == SHMEM_CTX_INVALID ? SHOAL_ERR_INVALID_ARGUMENT : SHOAL_OK;
}

void shmem_ctx_fence(shmem_ctx_t ctx) {
  (void)ctx;
  shoal_fence();
}

void shmem_ctx_quiet(shmem_ctx_t ctx) {
  (void)ctx;
  shoal_quiet();
}

}  // extern "C"

// ---------------------------------------------------------------------------------------------
// Locks: a ticket lock in the symmetric long at PE 0. High 32 bits: the next ticket to hand out;
// low 32 bits: the ticket being served. Zero is "free, nobody waiting" (OpenSHMEM's initial value).

namespace {

constexpr int kLockPe = 0;
constexpr unsigned long kTicket = 1UL << 32;
constexpr unsigned long kLow = 0xffffffffUL;
constexpr double kLockTimeoutS = 600.0;  // a held lock that is never released stops the job

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

unsigned long lock_word(long* lock) { return static_cast<unsigned long>(shoal_long_atomic_fetch(lock, kLockPe)); }

}  // namespace

extern "C" {

void shmem_set_lock(long* lock) {
  unsigned long mine =
      static_cast<unsigned long>(shoal_long_atomic_fetch_add(lock, static_cast<long>(kTicket), kLockPe)) >> 32;
  const double start = now_s();
  while ((lock_word(lock) & kLow) != (mine & kLow)) {
    if (now_s() - start > kLockTimeoutS) {
      std::fprintf(stderr, "shmem_set_lock: PE %d waited %.0f s for lock %p; is it ever cleared?\n", shoal_my_pe(),
                   kLockTimeoutS, static_cast<void*>(lock));
      shoal_global_exit(1);
    }
    sched_yield();
  }
}

int shmem_test_lock(long* lock) {
  unsigned long seen = lock_word(lock);
  if ((seen >> 32) != (seen & kLow)) return 1;  // held (or waited for)
  long want = static_cast<long>(seen + kTicket);
  return shoal_long_atomic_compare_swap(lock, static_cast<long>(seen), want, kLockPe) == static_cast<long>(seen) ? 0
                                                                                                                 : 1;
}

void shmem_clear_lock(long* lock) {
  shoal_quiet();  // the holder's updates are complete before the next holder gets in
  unsigned long seen = lock_word(lock);
  for (;;) {  // serve the next ticket; the low half wraps without carrying into the high half
    unsigned long next = (seen & ~kLow) | ((seen + 1) & kLow);
    long got = shoal_long_atomic_compare_swap(lock, static_cast<long>(seen), static_cast<long>(next), kLockPe);
    if (got == static_cast<long>(seen)) return;
    seen = static_cast<unsigned long>(got);
  }
}

}  // extern "C"
