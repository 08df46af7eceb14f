/* One OpenSHMEM program, built twice (against OpenMPI's OSHMEM and against shoal's <shmem.h>) by
 * tests/shmem/diff_test.sh, which requires the same output. Every family of OpenSHMEM 1.4 (what
 * Debian's OSHMEM implements) prints deterministic results from PE 0, races included (locks under
 * contention, fetch-AMO storms, waits on values other PEs put); the 1.5 families (teams, team
 * collectives, signals, wait_until_all/any/some) run where the header says 1.5, check themselves
 * and print lines starting "1.5 " that the comparison leaves out. Any failed check prints FAIL and
 * exits nonzero. Globals and statics are symmetric data objects (globals()), as the standard says. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(__cplusplus)
#include <complex.h>
#endif

#define V15 (SHMEM_MAJOR_VERSION * 10 + SHMEM_MINOR_VERSION >= 15)
#define K 64 /* iterations of every race */

static int me, n;

static void check(int ok, const char* what, long got, long want) {
  if (ok) return;
  printf("FAIL PE %d: %s: got %ld, want %ld\n", me, what, got, want);
  fflush(stdout);
  shmem_global_exit(1);
}
#define CHECK_EQ(got, want, what) check((long)(got) == (long)(want), what, (long)(got), (long)(want))

/* PE 0 prints; the others are silent. */
#define SAY(...)                      \
  do {                                \
    if (me == 0) printf(__VA_ARGS__); \
  } while (0)

static void rma(void) {
  long* dst = (long*)shmem_calloc(8 * n, sizeof(long));
  int* ints = (int*)shmem_calloc(2 * n, sizeof(int));
  double* dbl = (double*)shmem_malloc(n * sizeof(double));
  char* bytes = (char*)shmem_calloc(16, 1);
  long src[8];
  shmem_barrier_all(); /* OSHMEM's calloc zeroes after its barrier: no put before every PE is done */
  int right = (me + 1) % n, left = (me + n - 1) % n;
  for (int i = 0; i < 8; ++i) src[i] = 100 * me + i;
  shmem_long_put(dst, src, 8, right); /* typed blocking */
  shmem_int_p(&ints[me], me * 7, 0);  /* single element */
  shmem_double_p(&dbl[me], me + 0.5, 0);
  char text[16] = "shoal-openshmem";
  shmem_putmem(bytes, text, 16, right);              /* sized */
  shmem_long_put_nbi(dst + 8 * n - 4, src, 4, left); /* non-blocking */
  shmem_barrier_all();
  long sum = 0;
  for (int i = 0; i < 8; ++i) sum += dst[i];
  CHECK_EQ(sum, 800 * left + 28, "put from the left neighbour");
  CHECK_EQ(dst[8 * n - 1], 100 * right + 3, "put_nbi from the right neighbour");
  CHECK_EQ(strcmp(bytes, "shoal-openshmem"), 0, "putmem");
  long got[8];
  shmem_long_get(got, dst, 8, right); /* right's dst came from me */
  CHECK_EQ(got[5], 100 * me + 5, "get");
  long g = shmem_long_g(&dst[2], left);
  shmem_long_get_nbi(got, dst + 8 * n - 4, 4, right);
  shmem_quiet();
  CHECK_EQ(got[3], 100 * ((right + 1) % n) + 3, "get_nbi");
  shmem_barrier_all(); /* every PE has read its dst before the iputs overwrite it */
  /* strided: every other element of src into every third of the peer's array */
  long strided[24];
  memset(strided, 0, sizeof strided);
  shmem_long_iput(dst, src, 3, 2, 4, right);
  shmem_barrier_all();
  shmem_long_iget(strided, dst, 2, 3, 4, me); /* my own, written by the left */
  long iput_sum = strided[0] + strided[2] + strided[4] + strided[6];
  CHECK_EQ(iput_sum, 400 * left + 12, "iput/iget");
  /* generic (C11 _Generic / C++ overloads) */
  int one = 41;
  shmem_put(&ints[n + me], &one, 1, 0);
  shmem_p(&ints[n + me], one + 1, 0);
  shmem_barrier_all();
  if (me == 0) {
    long isum = 0, gsum = 0;
    double dsum = 0;
    for (int p = 0; p < n; ++p) isum += ints[p], gsum += ints[n + p], dsum += dbl[p];
    printf("rma: p sum %ld, generic p %ld, double p %.1f, g %ld, strided %ld\n", isum, gsum, dsum,
           g - 100 * ((n - 1) % n), iput_sum - 400 * (n - 1));
  }
  int peer_int = shmem_g(&ints[n], 0);
  CHECK_EQ(peer_int, 42, "generic g");
  shmem_barrier_all();
  shmem_free(bytes);
  shmem_free(dbl);
  shmem_free(ints);
  shmem_free(dst);
}

static void amo(void) {
  long* counter = (long*)shmem_calloc(4, sizeof(long));
  unsigned long* bits = (unsigned long*)shmem_calloc(3, sizeof(unsigned long));
  int* fetched = (int*)shmem_calloc(K * n, sizeof(int));
  int* counter32 = (int*)shmem_calloc(1, sizeof(int));
  shmem_barrier_all();
  /* fetch-AMO storm: every PE takes K tickets from PE 0's counter; the tickets are 0..nK-1, once each */
  for (int i = 0; i < K; ++i) {
    int t = shmem_int_atomic_fetch_inc(counter32, 0);
    shmem_int_p(&fetched[t], 1 + me, 0);
    shmem_long_atomic_add(&counter[1], 2, 0);
    long f = shmem_atomic_fetch_add(&counter[2], (long)me, 0); /* generic */
    (void)f;
  }
  shmem_long_atomic_inc(&counter[3], n - 1);
  shmem_ulong_atomic_or(&bits[0], 1UL << me, 0); /* extended */
  shmem_ulong_atomic_xor(&bits[1], 3UL << (2 * me), 0);
  unsigned long old_and = shmem_ulong_atomic_fetch_and(&bits[2], ~0UL, 0);
  (void)old_and;
  shmem_barrier_all();
  if (me == 0) {
    int holes = 0;
    long owners = 0;
    for (int t = 0; t < K * n; ++t) holes += fetched[t] == 0, owners += fetched[t];
    printf("amo storm: counter %d, tickets missing %d, owner sum %ld, add %ld, generic fetch_add %ld\n", *counter32,
           holes, owners, counter[1], counter[2]);
    printf("amo: inc %ld, or 0x%lx, xor 0x%lx\n", shmem_long_atomic_fetch(&counter[3], n - 1), bits[0], bits[1]);
  }
  shmem_barrier_all();
  /* compare_swap race: exactly one PE wins each round */
  int wins = 0;
  for (int round = 1; round <= K; ++round) {
    long prev = shmem_long_atomic_compare_swap(&counter[0], round - 1, round, 0);
    wins += prev == round - 1;
    shmem_barrier_all();
  }
  int* all_wins = (int*)shmem_calloc(n, sizeof(int));
  shmem_barrier_all(); /* OSHMEM's calloc zeroes after its barrier: no p before PE 0 is done */
  shmem_int_p(&all_wins[me], wins, 0);
  long swapped = shmem_long_atomic_swap(&counter[1], 1000 + me, me);
  shmem_long_atomic_set(&counter[2], 7, me);
  shmem_barrier_all();
  if (me == 0) {
    long total = 0;
    for (int p = 0; p < n; ++p) total += all_wins[p];
    printf("cswap: rounds won %ld of %d, final %ld; swap %ld, set %ld\n", total, K, counter[0], counter[1],
           shmem_long_atomic_fetch(&counter[2], 0));
  }
  (void)swapped;
  shmem_barrier_all();
  shmem_free(all_wins);
  shmem_free(counter32);
  shmem_free(fetched);
  shmem_free(bits);
  shmem_free(counter);
}

static void waits_and_locks(void) {
  long* flag = (long*)shmem_calloc(n, sizeof(long));
  long* shared = (long*)shmem_calloc(2, sizeof(long));
  long* lock = (long*)shmem_calloc(1, sizeof(long));
  shmem_barrier_all();
  /* wait_until / test: each PE waits for its left neighbour's flag */
  int left = (me + n - 1) % n, right = (me + 1) % n;
  shmem_long_p(&flag[me], 10 + me, right); /* right waits on its flag of its left: me */
  shmem_fence();
  shmem_long_wait_until(&flag[left], SHMEM_CMP_GE, 10);
  CHECK_EQ(flag[left], 10 + left, "wait_until");
  CHECK_EQ(shmem_long_test(&flag[left], SHMEM_CMP_EQ, 10 + left), 1, "test");
  shmem_sync_all();
  /* locks under contention: K read-modify-writes each, by get + put under the lock */
  for (int i = 0; i < K; ++i) {
    shmem_set_lock(lock);
    long v = shmem_long_g(&shared[0], 0);
    shmem_long_p(&shared[0], v + 1, 0);
    shmem_quiet();
    shmem_clear_lock(lock);
  }
  int tries = 0;
  for (int taken = 0; !taken;) {
    taken = shmem_test_lock(lock) == 0;
    ++tries;
  }
  long v = shmem_long_g(&shared[1], 0);
  shmem_long_p(&shared[1], v + 1, 0);
  shmem_quiet();
  shmem_clear_lock(lock);
  shmem_barrier_all();
  SAY("locks: %ld increments of %d, test_lock increments %ld\n", shared[0], K * n, shared[1]);
  shmem_barrier_all();
  shmem_free(lock);
  shmem_free(shared);
  shmem_free(flag);
}

static void contexts_and_memory(void) {
  shmem_ctx_t ctx;
  CHECK_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx), 0, "ctx_create");
  long* dst = (long*)shmem_align(64, 4 * sizeof(long));
  CHECK_EQ((unsigned long)dst % 64, 0, "shmem_align");
  memset(dst, 0, 4 * sizeof(long));
  shmem_barrier_all();
  long x = 5 + me;
  shmem_ctx_long_put(ctx, &dst[0], &x, 1, (me + 1) % n);
  shmem_ctx_long_atomic_add(ctx, &dst[1], 1, 0);
  shmem_ctx_quiet(ctx);
  shmem_ctx_long_p(SHMEM_CTX_DEFAULT, &dst[2], 3, me);
  shmem_ctx_destroy(ctx);
#if V15
  shmem_pcontrol(1);
#endif
  shmem_barrier_all();
  CHECK_EQ(shmem_addr_accessible(dst, me), 1, "addr_accessible");
  CHECK_EQ(shmem_ptr(dst, me) == (void*)dst, 1, "shmem_ptr to self");
  SAY("ctx: put %ld, atomic adds %ld, default p %ld\n", dst[0], dst[1], dst[2]);
  dst = (long*)shmem_realloc(dst, 8 * sizeof(long));
  CHECK_EQ(dst[2], 3, "realloc keeps contents");
  shmem_free(dst);
}

/* The names OpenSHMEM deprecated and 1.5 still defines: the pre-1.4 AMO names (a fetch-add storm whose
 * tickets must be 0..nK-1 once each, cswap rounds with one winner, swap, set, fetch, add, inc), _my_pe,
 * _num_pes, shmalloc/shrealloc/shfree/shmemalign, and shmem_long_wait on a value another PE puts. */
static void deprecated_names(void) {
  long* words = (long*)shmalloc(4 * sizeof(long));
  int* tickets = (int*)shmemalign(64, (size_t)(K * n) * sizeof(int));
  int* counter = (int*)shmalloc(sizeof(int));
  CHECK_EQ(_my_pe(), me, "_my_pe");
  CHECK_EQ(_num_pes(), n, "_num_pes");
  CHECK_EQ((unsigned long)tickets % 64, 0, "shmemalign");
  memset(words, 0, 4 * sizeof(long));
  memset(tickets, 0, (size_t)(K * n) * sizeof(int));
  *counter = 0;
  shmem_barrier_all();
  for (int i = 0; i < K; ++i) {
    int t = shmem_int_finc(counter, 0);
    shmem_int_p(&tickets[t], 1 + me, 0);
    shmem_long_add(&words[1], 3, 0);
    (void)shmem_long_fadd(&words[2], (long)me, 0);
    shmem_long_inc(&words[3], 0);
  }
  shmem_barrier_all();
  if (me == 0) {
    int holes = 0;
    long owners = 0;
    for (int t = 0; t < K * n; ++t) holes += tickets[t] == 0, owners += tickets[t];
    printf("deprecated amo: finc %d, tickets missing %d, owner sum %ld, add %ld, fadd %ld, inc %ld\n", *counter, holes,
           owners, words[1], words[2], shmem_long_fetch(&words[3], 0));
  }
  shmem_barrier_all();
  int wins = 0;
  for (int round = 1; round <= K; ++round) {
    wins += shmem_long_cswap(&words[0], round - 1, round, 0) == round - 1;
    shmem_barrier_all();
  }
  int* all_wins = (int*)shrealloc(counter, (size_t)n * sizeof(int));
  memset(all_wins, 0, (size_t)n * sizeof(int));
  shmem_barrier_all();
  shmem_int_p(&all_wins[me], wins, 0);
  long swapped = shmem_long_swap(&words[1], 100 + me, me);
  shmem_long_set(&words[2], 9, me);
  shmem_barrier_all();
  /* shmem_long_wait: PE 0 waits until its word changes from 0, which the last PE puts */
  words[3] = 0;
  shmem_barrier_all();
  if (me == n - 1) shmem_long_p(&words[3], 77, 0);
  if (me == 0) {
    shmem_long_wait(&words[3], 0);
    long total = 0;
    for (int p = 0; p < n; ++p) total += all_wins[p];
    printf("deprecated cswap: rounds won %ld of %d, final %ld; swap gave %ld, set %ld, wait saw %ld\n", total, K,
           words[0], swapped, words[2], words[3]);
  }
  shmem_barrier_all();
  shfree(all_wins);
  shfree(tickets);
  shfree(words);
}

#if V15
static void teams_and_collectives(void) {
  long* src = (long*)shmem_calloc(4 * n, sizeof(long));
  long* dst = (long*)shmem_calloc(4 * n * n, sizeof(long));
  for (int i = 0; i < 4 * n; ++i) src[i] = 10 * me + i;
  shmem_barrier_all();
  CHECK_EQ(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 4, n - 1), 0, "broadcast");
  CHECK_EQ(dst[3], 10 * (n - 1) + 3, "broadcast value");
  CHECK_EQ(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, 2), 0, "fcollect");
  CHECK_EQ(dst[2 * (n - 1) + 1], 10 * (n - 1) + 1, "fcollect value");
  CHECK_EQ(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1), 0, "collect");
  CHECK_EQ(dst[n * (n + 1) / 2 - 1], 10 * (n - 1) + n - 1, "collect value");
  CHECK_EQ(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 2), 0, "alltoall");
  CHECK_EQ(dst[2 * (n - 1)], 10 * (n - 1) + 2 * me, "alltoall value");
  /* strided all-to-all, one element a block: block j is source[2j]; it lands at dest[3 * me] of PE j */
  memset(dst, 0, 4 * n * n * sizeof(long));
  shmem_barrier_all();
  CHECK_EQ(shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 3, 2, 1), 0, "alltoalls");
  for (int p = 0; p < n; ++p) CHECK_EQ(dst[3 * p], 10 * p + 2 * me, "alltoalls value");
  CHECK_EQ(dst[1], 0, "alltoalls leaves the gaps");
  CHECK_EQ(shmem_team_ptr(SHMEM_TEAM_WORLD, dst, me) == (void*)dst, 1, "team_ptr to self");
  CHECK_EQ(shmem_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 2), 0, "generic sum_reduce");
  CHECK_EQ(dst[1], 10 * n * (n - 1) / 2 + n, "sum_reduce value");
  CHECK_EQ(shmem_long_max_reduce(SHMEM_TEAM_WORLD, dst, src, 1), 0, "max_reduce");
  CHECK_EQ(dst[0], 10 * (n - 1), "max_reduce value");
  /* evens and odds; the evens split a sub-team of their team while the odds reduce on theirs */
  shmem_team_t half = SHMEM_TEAM_INVALID, x = SHMEM_TEAM_INVALID;
  CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &half), 0, "split_2d");
  int size = shmem_team_n_pes(half);
  if (me % 2 == 0) {
    shmem_team_t rev = SHMEM_TEAM_INVALID;
    CHECK_EQ(shmem_team_split_strided(half, size - 1, -1, size, NULL, 0, &rev), 0, "split of a sub-team");
    CHECK_EQ(shmem_team_translate_pe(rev, 0, SHMEM_TEAM_WORLD), 2 * (size - 1), "translate_pe");
    CHECK_EQ(shmem_team_sync(rev), 0, "team_sync");
    shmem_team_destroy(rev);
  } else {
    CHECK_EQ(shmem_long_sum_reduce(half, dst, src, 1), 0, "team reduce");
    CHECK_EQ(dst[0], 10 * (long)size * size, "team reduce value"); /* 10 * (1 + 3 + 5 ...) */
  }
  shmem_team_destroy(x);
  shmem_team_destroy(half);
  shmem_barrier_all();
  SAY("1.5 teams and collectives ok\n");
  shmem_free(dst);
  shmem_free(src);
}

static void signals_and_multi_waits(void) {
  uint64_t* sig = (uint64_t*)shmem_calloc(1, sizeof(uint64_t));
  long* data = (long*)shmem_calloc(n, sizeof(long));
  long* ivars = (long*)shmem_malloc_with_hints(n * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE);
  memset(ivars, 0, n * sizeof(long));
  shmem_barrier_all();
  long v = 1000 + me;
  if (me % 2) /* typed, and generic with a context first */
    shmem_long_put_signal(&data[me], &v, 1, sig, 1, SHMEM_SIGNAL_ADD, 0);
  else
    shmem_put_signal(SHMEM_CTX_DEFAULT, &data[me], &v, 1, sig, 1, SHMEM_SIGNAL_ADD, 0);
  if (me == 0) {
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)n);
    for (int p = 0; p < n; ++p) CHECK_EQ(data[p], 1000 + p, "put_signal data");
    CHECK_EQ(shmem_signal_fetch(sig), n, "signal_fetch");
  }
  /* every PE sets its word of PE 0's ivars; PE 0 takes them as they come */
  shmem_long_atomic_set(&ivars[me], me + 1, 0);
  if (me == 0) {
    int seen[1024] = {0}, got = 0;
    size_t idx[1024];
    while (got < n) {
      size_t k = shmem_long_wait_until_some(ivars, n, idx, seen, SHMEM_CMP_NE, 0);
      for (size_t i = 0; i < k; ++i) seen[idx[i]] = 1, ++got;
    }
    memset(seen, 0, sizeof seen);
    size_t any = shmem_long_wait_until_any(ivars, n, seen, SHMEM_CMP_GT, 0);
    CHECK_EQ(any < (size_t)n, 1, "wait_until_any");
    shmem_long_wait_until_all(ivars, n, NULL, SHMEM_CMP_GT, 0);
    CHECK_EQ(shmem_long_test_all(ivars, n, NULL, SHMEM_CMP_GT, 0), 1, "test_all");
    long want[1024];
    for (int p = 0; p < n; ++p) want[p] = p + 1;
    shmem_long_wait_until_all_vector(ivars, n, NULL, SHMEM_CMP_EQ, want);
  }
  shmem_barrier_all();
  SAY("1.5 signals and multi-waits ok\n");
  shmem_free(ivars);
  shmem_free(data);
  shmem_free(sig);
}
#endif

#if V15
/* The non-blocking fetching AMOs (a fetch_add_nbi storm whose tickets must be 0..nK-1 once each, swap_nbi,
 * compare_swap_nbi with one winner, fetch_nbi; typed, generic, with a context), the team reductions of long
 * double and the complex types (on globals, in place too), and shmem_sync in both its forms. */
long double g_ld[4];
#if defined(__cplusplus)
std::complex<double> g_cd[4];
#else
double _Complex g_cd[4];
#endif
static void nbi_amo_and_reductions(void) {
  int* counter = (int*)shmem_calloc(1, sizeof(int));
  int* tickets = (int*)shmem_calloc((size_t)(K * n), sizeof(int));
  long* word = (long*)shmem_calloc(2, sizeof(long));
  shmem_barrier_all();
  int got[K];
  for (int i = 0; i < K; ++i) {
    if (i % 2)
      shmem_int_atomic_fetch_inc_nbi(&got[i], counter, 0);
    else
      shmem_atomic_fetch_add_nbi(SHMEM_CTX_DEFAULT, &got[i], counter, 1, 0);
  }
  shmem_quiet();
  for (int i = 0; i < K; ++i) shmem_int_p(&tickets[got[i]], 1, 0);
  shmem_barrier_all();
  if (me == 0)
    for (int t = 0; t < K * n; ++t) CHECK_EQ(tickets[t], 1, "fetch_add_nbi tickets");
  int wins = 0;
  for (int round = 1; round <= K; ++round) {
    long prev = -1;
    shmem_long_atomic_compare_swap_nbi(&prev, &word[0], round - 1, round, 0);
    shmem_quiet();
    wins += prev == round - 1;
    shmem_barrier_all();
  }
  int* all = (int*)shmem_calloc((size_t)n, sizeof(int));
  shmem_barrier_all();
  shmem_int_p(&all[me], wins, 0);
  long before = -1, now = -1;
  shmem_long_atomic_swap_nbi(&before, &word[1], 10 + me, me);
  shmem_atomic_fetch_nbi(&now, &word[1], me);
  shmem_quiet();
  CHECK_EQ(before, 0, "swap_nbi old value");
  CHECK_EQ(now, 10 + me, "fetch_nbi");
  shmem_barrier_all();
  if (me == 0) {
    long total = 0;
    for (int p = 0; p < n; ++p) total += all[p];
    CHECK_EQ(total, K, "compare_swap_nbi: one winner a round");
  }
  /* long double max/sum and complex sum/prod, on globals, in place for the sum */
  for (int i = 0; i < 4; ++i) g_ld[i] = me + 0.25L * i;
  long double* ld_dst = (long double*)shmem_calloc(4, sizeof(long double));
  shmem_barrier_all();
  CHECK_EQ(shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, ld_dst, g_ld, 4), 0, "longdouble max_reduce");
  CHECK_EQ(ld_dst[3] == (n - 1) + 0.75L, 1, "longdouble max value");
  int rc = shmem_sum_reduce(SHMEM_TEAM_WORLD, g_ld, g_ld, 4); /* CHECK_EQ reads its argument twice */
  CHECK_EQ(rc, 0, "generic longdouble sum_reduce in place");
  CHECK_EQ(g_ld[2] == n * (n - 1) / 2.0L + n * 0.5L, 1, "longdouble sum value");
  for (int i = 0; i < 4; ++i) {
#if defined(__cplusplus)
    g_cd[i] = std::complex<double>(1.0 + me, (double)i);
#else
    g_cd[i] = (1.0 + me) + (double)i * I;
#endif
  }
  shmem_barrier_all();
  rc = shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, g_cd, g_cd, 4);
  CHECK_EQ(rc, 0, "complexd sum_reduce");
  for (int i = 0; i < 4; ++i) {
#if defined(__cplusplus)
    CHECK_EQ(g_cd[i].real() == n * (n + 1) / 2.0 && g_cd[i].imag() == (double)(n * i), 1, "complexd sum value");
#else
    CHECK_EQ(creal(g_cd[i]) == n * (n + 1) / 2.0 && cimag(g_cd[i]) == (double)(n * i), 1, "complexd sum value");
#endif
  }
  for (int i = 0; i < 4; ++i) {
#if defined(__cplusplus)
    g_cd[i] = std::complex<double>(0.0, 1.0);
#else
    g_cd[i] = I;
#endif
  }
  shmem_barrier_all();
  rc = shmem_prod_reduce(SHMEM_TEAM_WORLD, g_cd, g_cd, 4);
  CHECK_EQ(rc, 0, "generic complexd prod_reduce");
  /* i^n: 1, i, -1, -i */
  const double want_re[4] = {1, 0, -1, 0}, want_im[4] = {0, 1, 0, -1};
#if defined(__cplusplus)
  CHECK_EQ(g_cd[0].real() == want_re[n % 4] && g_cd[0].imag() == want_im[n % 4], 1, "complexd prod value");
#else
  CHECK_EQ(creal(g_cd[0]) == want_re[n % 4] && cimag(g_cd[0]) == want_im[n % 4], 1, "complexd prod value");
#endif
  /* the untyped collectives and putmem_signal_nbi, on globals */
  static char s_bytes[8 * 64], s_from[64];
  static uint64_t s_sig;
  for (int i = 0; i < 64; ++i) s_from[i] = (char)(me * 8 + i % 8);
  shmem_barrier_all();
  rc = shmem_broadcastmem(SHMEM_TEAM_WORLD, s_bytes, s_from, 8, n - 1);
  CHECK_EQ(rc == 0 && s_bytes[7] == (char)((n - 1) * 8 + 7), 1, "broadcastmem");
  rc = shmem_fcollectmem(SHMEM_TEAM_WORLD, s_bytes, s_from, 2);
  CHECK_EQ(rc == 0 && s_bytes[2 * (n - 1) + 1] == (char)((n - 1) * 8 + 1), 1, "fcollectmem");
  rc = shmem_collectmem(SHMEM_TEAM_WORLD, s_bytes, s_from, (size_t)me + 1);
  CHECK_EQ(rc == 0 && s_bytes[n * (n + 1) / 2 - 1] == (char)((n - 1) * 8 + n - 1), 1, "collectmem");
  rc = shmem_alltoallmem(SHMEM_TEAM_WORLD, s_bytes, s_from, 1);
  CHECK_EQ(rc == 0 && s_bytes[n - 1] == (char)((n - 1) * 8 + me), 1, "alltoallmem");
  rc = shmem_alltoallsmem(SHMEM_TEAM_WORLD, s_bytes, s_from, 2, 1, 1);
  CHECK_EQ(rc == 0 && s_bytes[2 * (n - 1)] == (char)((n - 1) * 8 + me), 1, "alltoallsmem");
  shmem_putmem_signal_nbi(&s_bytes[me], &s_from[0], 1, &s_sig, 1, SHMEM_SIGNAL_ADD, 0);
  shmem_quiet();
  if (me == 0) {
    shmem_signal_wait_until(&s_sig, SHMEM_CMP_EQ, (uint64_t)n);
    for (int p = 0; p < n; ++p) CHECK_EQ(s_bytes[p], p * 8, "putmem_signal_nbi data");
  }
  shmem_barrier_all();
  /* shmem_sync: the team form, and the active-set form over the even PEs */
  rc = shmem_sync(SHMEM_TEAM_WORLD);
  CHECK_EQ(rc, 0, "shmem_sync(team)");
  static long psync[SHMEM_BARRIER_SYNC_SIZE];
  if (me % 2 == 0) shmem_sync(0, 1, (n + 1) / 2, psync);
  shmem_barrier_all();
  SAY("1.5 nbi fetching AMOs, long double and complex team reductions, mem collectives, shmem_sync ok\n");
  shmem_free(ld_dst);
  shmem_free(all);
  shmem_free(word);
  shmem_free(tickets);
  shmem_free(counter);
}
#endif

/* Symmetric data objects: the program's globals and statics, initialized (.data) and zero (.bss). */
long g_initialized = 5;
static int s_ring[64];
static long s_counter;
static long s_lock; /* a lock in a static, as OpenSHMEM programs usually write it */
static long s_under_lock;
static long s_flag;
struct pair {
  int id;
  double value;
};
static struct pair s_pair = {3, 0.5};
#if V15
static uint64_t s_signal;
static long s_signalled[4];
#endif

static void globals(void) {
  int left = (me + n - 1) % n, right = (me + 1) % n;
  shmem_barrier_all();
  /* p into every PE's static array; g of the right's initialized global */
  for (int pe = 0; pe < n; ++pe) shmem_int_p(&s_ring[me], 10 * me + 1, pe);
  CHECK_EQ(shmem_long_g(&g_initialized, right), 5, "g of an initialized global");
  shmem_barrier_all();
  int sum = 0;
  for (int pe = 0; pe < n; ++pe) sum += s_ring[pe];
  CHECK_EQ(sum, 5 * n * (n - 1) + n, "p into a static array");
  /* put/get of a struct; strided put into the right's array (every other int from index 32) */
  s_pair.id = 100 + me;
  shmem_barrier_all();
  struct pair got;
  shmem_getmem(&got, &s_pair, sizeof(s_pair), right);
  CHECK_EQ(got.id, 100 + right, "getmem of a static struct");
  CHECK_EQ(got.value * 2, 1, "getmem of a static struct");
  int column[8];
  for (int i = 0; i < 8; ++i) column[i] = 1000 * me + i;
  shmem_int_iput(&s_ring[32], column, 2, 1, 8, right);
  shmem_barrier_all();
  CHECK_EQ(s_ring[32 + 14], 1000 * left + 7, "iput into a static array");
  CHECK_EQ(s_ring[33], 0, "iput leaves the gaps");
  /* fetch_add storm and a lock on statics of PE 0 */
  for (int i = 0; i < K; ++i) shmem_long_atomic_fetch_add(&s_counter, 1, 0);
  for (int i = 0; i < K; ++i) {
    shmem_set_lock(&s_lock);
    shmem_long_p(&s_under_lock, shmem_long_g(&s_under_lock, 0) + 1, 0);
    shmem_quiet();
    shmem_clear_lock(&s_lock);
  }
  /* wait_until on a static flag that the left neighbour sets */
  shmem_long_p(&s_flag, 7 + me, right);
  shmem_long_wait_until(&s_flag, SHMEM_CMP_NE, 0);
  CHECK_EQ(s_flag, 7 + left, "wait_until on a static");
  shmem_barrier_all();
  SAY("globals: ring sum %d, right's g %ld, struct %d, storm %ld of %d, lock %ld of %d\n", sum,
      shmem_long_g(&g_initialized, right), got.id - 100 - right, s_counter, K * n, s_under_lock, K * n);
#if V15
  /* put_signal into statics; the right waits on its static signal word */
  long data[4] = {me, me + 1, me + 2, me + 3};
  shmem_long_put_signal(s_signalled, data, 4, &s_signal, 1, SHMEM_SIGNAL_ADD, right);
  shmem_signal_wait_until(&s_signal, SHMEM_CMP_EQ, 1);
  CHECK_EQ(s_signalled[3], left + 3, "put_signal into a static");
  shmem_barrier_all();
  SAY("1.5 globals: put_signal ok\n");
#endif
  shmem_barrier_all();
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  SAY("PEs %d\n", n);
  rma();
  amo();
  waits_and_locks();
  contexts_and_memory();
  deprecated_names();
  globals();
#if V15
  teams_and_collectives();
  signals_and_multi_waits();
  nbi_amo_and_reductions();
#endif
  shmem_barrier_all();
  SAY("done\n");
  fflush(stdout);
  shmem_finalize();
  return 0;
}
