/* The legacy active-set collectives of OpenSHMEM (shmem_barrier, shmem_broadcast32/64, collect,
 * fcollect, alltoall, alltoalls, shmem_<TYPE>_<OP>_to_all) and the context forms of the generic
 * interfaces, built against OpenMPI's OSHMEM and against shoal's <shmem.h> by diff_test.sh, which
 * requires the same output. Active sets: the world, the evens and the odds (stride 2, run at the
 * same time with different calls), every PE but PE 0 (PE 0 meanwhile does RMA of its own) and one
 * PE alone. Every PE reports a checksum of what it received to PE 0, which prints them all. Values
 * are small integers (exact in every floating type), so any order of reduction gives one result. A
 * failed check prints FAIL and exits nonzero. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#if defined(__cplusplus)
#include <complex>
typedef std::complex<float> complexf;
typedef std::complex<double> complexd;
#define CPLX(re, im) complexf((float)(re), (float)(im))
#define CPLXD(re, im) complexd((double)(re), (double)(im))
#define RE(z) (z).real()
#define IM(z) (z).imag()
#else
#include <complex.h>
typedef float _Complex complexf;
typedef double _Complex complexd;
#define CPLX(re, im) ((float)(re) + (float)(im)*I)
#define CPLXD(re, im) ((double)(re) + (double)(im)*I)
#define RE(z) creal(z)
#define IM(z) cimag(z)
#endif

#define N 6  /* elements per block */
#define K 16 /* back-to-back rounds on one pSync */

static int me, n;
static long* report; /* report[p] on PE 0: PE p's checksum of the last step */
/* Legacy programs keep pSync in static arrays: these are never written by the calls (see docs). */
static long psync_a[SHMEM_SYNC_SIZE], psync_b[SHMEM_SYNC_SIZE];
static int pwrk_i[N / 2 + 1 + _SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static void check(int ok, const char* what, long got, long want) {
  if (ok) return;
  printf("FAIL PE %d: %s: got %ld, want %ld\n", me, what, got, want);
  fflush(stdout);
  shmem_global_exit(1);
}
#define CHECK_EQ(got, want, what) check((long)(got) == (long)(want), what, (long)(got), (long)(want))

/* Every PE puts `sum` to report[me] on PE 0; PE 0 prints "<what>: s0 s1 ...". Collective over all PEs. */
static void say(const char* what, long sum) {
  shmem_long_p(&report[me], sum, 0);
  shmem_barrier_all();
  if (me == 0) {
    printf("%s:", what);
    for (int p = 0; p < n; ++p) printf(" %ld", report[p]);
    printf("\n");
  }
  shmem_barrier_all();
}

static void barriers(long* counter) {
  /* world, K times on one pSync: a PE's increments are all in before anyone leaves the barrier */
  for (int i = 0; i < K; ++i) {
    shmem_long_atomic_inc(&counter[0], 0);
    shmem_barrier(0, 0, n, psync_a);
    CHECK_EQ(shmem_long_atomic_fetch(&counter[0], 0) >= (long)n * (i + 1), 1, "barrier(world) let a PE through early");
  }
  /* the evens and the odds at once, each on its own counter, on the same pSync */
  int half = (n + 1) / 2, odd = me % 2;
  for (int i = 0; i < K; ++i) {
    shmem_long_p(&counter[2 + me], i + 1, odd); /* a put, completed by the barrier's quiet */
    shmem_barrier(odd, 1, odd ? n / 2 : half, psync_a);
    for (int p = odd; p < n; p += 2) CHECK_EQ(shmem_long_g(&counter[2 + p], odd), i + 1, "barrier(stride 2) put");
    shmem_barrier(odd, 1, odd ? n / 2 : half, psync_a); /* nobody writes round i+1 before every read of round i */
  }
  /* every PE but PE 0, while PE 0 does RMA on its own */
  if (me > 0) {
    for (int i = 0; i < K; ++i) shmem_barrier(1, 0, n - 1, psync_b);
  } else {
    shmem_long_p(&counter[1], 7, 0);
  }
  shmem_barrier(me, 0, 1, psync_a); /* a set of one */
  shmem_barrier_all();
  say("barrier: world counter, then each PE's last round",
      me == 0 ? counter[0] : shmem_long_g(&counter[2 + me], me % 2));
}

/* Checksums, wrapping (unsigned) */
static long sum32(const int* a, int count) {
  unsigned long s = 0;
  for (int i = 0; i < count; ++i) s = 31 * s + (unsigned long)a[i];
  return (long)s;
}
static long sum64(const long* a, int count) {
  unsigned long s = 0;
  for (int i = 0; i < count; ++i) s = 37 * s + (unsigned long)a[i];
  return (long)s;
}

static void data_movers(void) {
  int* src32 = (int*)shmem_malloc(4 * N * n * sizeof(int));
  int* dst32 = (int*)shmem_malloc(4 * N * n * sizeof(int));
  long* src64 = (long*)shmem_malloc(4 * N * n * sizeof(long));
  long* dst64 = (long*)shmem_malloc(4 * N * n * sizeof(long));
  const int total = 4 * N * n;
  for (int i = 0; i < total; ++i) src32[i] = 1000 * me + i, src64[i] = 100000L * me + 3 * i;
#define RESET()                                                        \
  do {                                                                 \
    for (int i_ = 0; i_ < total; ++i_) dst32[i_] = -1, dst64[i_] = -1; \
    shmem_barrier_all();                                               \
  } while (0)
  int half = (n + 1) / 2, odd = me % 2, odd_size = odd ? n / 2 : half;

  /* broadcast: world (root n-1), then the evens and odds at once (root: their last member) */
  RESET();
  shmem_broadcast32(dst32, src32, N, n - 1, 0, 0, n, psync_a);
  shmem_broadcast64(dst64, src64, N, n - 1, 0, 0, n, psync_b);
  if (me == n - 1) CHECK_EQ(dst32[0], -1, "broadcast32 wrote the root's dest");
  say("broadcast32 world", sum32(dst32, N + 1));
  say("broadcast64 world", sum64(dst64, N + 1));
  RESET();
  for (int r = 0; r < K; ++r) /* back to back, alternating two pSync arrays (the spec's rule) */
    shmem_broadcast64(dst64, src64 + (r % 3), N, odd_size - 1, odd, 1, odd_size, r % 2 ? psync_a : psync_b);
  shmem_broadcast32(dst32, src32, 2 * N, 0, odd, 1, odd_size, psync_b);
  say("broadcast evens/odds", sum64(dst64, N + 1) + sum32(dst32, 2 * N + 1));
  /* every PE but 0, while PE 0 writes into its own dest */
  RESET();
  if (me > 0)
    shmem_broadcast32(dst32, src32 + 1, N, 0, 1, 0, n - 1, psync_a);
  else
    shmem_int_put(dst32, src32 + 5, N, 0);
  say("broadcast32 PEs 1..n-1", sum32(dst32, N + 1));

  /* collect (me + 1 elements each) and fcollect */
  RESET();
  shmem_collect32(dst32, src32, (size_t)me + 1, 0, 0, n, psync_a);
  shmem_collect64(dst64, src64, (size_t)me + 1, 0, 0, n, psync_b);
  say("collect32 world", sum32(dst32, n * (n + 1) / 2 + 1));
  say("collect64 world", sum64(dst64, n * (n + 1) / 2 + 1));
  RESET();
  shmem_collect64(dst64, src64 + me, (size_t)(2 * me + 1), odd, 1, odd_size, psync_b);
  shmem_fcollect32(dst32, src32 + me, N, odd, 1, odd_size, psync_a);
  say("collect64/fcollect32 evens/odds", sum64(dst64, 4 * N) + sum32(dst32, odd_size * N + 1));
  RESET();
  shmem_fcollect64(dst64, src64, N, 0, 0, n, psync_a);
  shmem_fcollect64(dst64 + N * n, src64 + N, N, 0, 0, n, psync_b);
  say("fcollect64 world twice", sum64(dst64, 2 * N * n + 1));
  RESET();
  if (me > 0) shmem_collect32(dst32, src32, (size_t)me, 1, 0, n - 1, psync_b);
  say("collect32 PEs 1..n-1", sum32(dst32, n * (n - 1) / 2 + 1));

  /* alltoall: world, and every PE but 0 */
  RESET();
  shmem_alltoall32(dst32, src32, N, 0, 0, n, psync_a);
  shmem_alltoall64(dst64, src64, 2, 0, 0, n, psync_b);
  say("alltoall world", sum32(dst32, N * n + 1) + sum64(dst64, 2 * n + 1));
  RESET();
  if (me > 0) shmem_alltoall64(dst64, src64, N, 1, 0, n - 1, psync_a);
  say("alltoall64 PEs 1..n-1", sum64(dst64, N * n + 1));

  /* alltoalls: dst 2, sst 3, 2 elements a block; world, then evens/odds */
  RESET();
  shmem_alltoalls32(dst32, src32, 2, 3, 2, 0, 0, n, psync_a);
  shmem_alltoalls64(dst64, src64, 3, 1, 2, 0, 0, n, psync_b);
  CHECK_EQ(dst32[1], -1, "alltoalls32 leaves the gaps");
  say("alltoalls world", sum32(dst32, 4 * n + 1) + sum64(dst64, 6 * n + 1));
  RESET();
  shmem_alltoalls64(dst64, src64, 1, 2, 3, odd, 1, odd_size, psync_a);
  say("alltoalls64 evens/odds", sum64(dst64, 3 * n + 1));
  shmem_barrier_all();
#undef RESET
  shmem_free(dst64);
  shmem_free(src64);
  shmem_free(dst32);
  shmem_free(src32);
}

static void reductions(void) {
  short* s = (short*)shmem_malloc(2 * N * sizeof(short));
  int* i32 = (int*)shmem_malloc(2 * N * sizeof(int));
  long* l = (long*)shmem_malloc(2 * N * sizeof(long));
  long long* ll = (long long*)shmem_malloc(2 * N * sizeof(long long));
  float* f = (float*)shmem_malloc(2 * N * sizeof(float));
  double* d = (double*)shmem_malloc(2 * N * sizeof(double));
  long double* ld = (long double*)shmem_malloc(2 * N * sizeof(long double));
  complexf* cf = (complexf*)shmem_malloc(2 * N * sizeof(complexf));
  complexd* cd = (complexd*)shmem_malloc(2 * N * sizeof(complexd));
  short* wrk_s = (short*)shmem_malloc(N * sizeof(short));
  long* wrk_l = (long*)shmem_malloc(N * sizeof(long));
  long long* wrk_ll = (long long*)shmem_malloc(N * sizeof(long long));
  float* wrk_f = (float*)shmem_malloc(N * sizeof(float));
  double* wrk_d = (double*)shmem_malloc(N * sizeof(double));
  long double* wrk_ld = (long double*)shmem_malloc(N * sizeof(long double));
  complexf* wrk_cf = (complexf*)shmem_malloc(N * sizeof(complexf));
  complexd* wrk_cd = (complexd*)shmem_malloc(N * sizeof(complexd));
  int odd = me % 2, odd_size = odd ? n / 2 : (n + 1) / 2;
#define FILL()                                                                         \
  do {                                                                                 \
    for (int k = 0; k < N; ++k) {                                                      \
      int v = (me + 1) * (k + 1) % 7 + 1;                                              \
      s[k] = (short)v, i32[k] = v, l[k] = v << me, ll[k] = (long long)v * (1LL << 33); \
      f[k] = (float)v * 0.5f, d[k] = v - 3.25, ld[k] = (long double)v * 0.25L;         \
      cf[k] = CPLX(v, k - me), cd[k] = CPLXD(k + 1, me);                               \
      s[N + k] = i32[N + k] = -1, l[N + k] = ll[N + k] = -1, f[N + k] = d[N + k] = -1; \
    }                                                                                  \
    shmem_barrier_all();                                                               \
  } while (0)
  FILL();
  /* the world: every op on int, in place for sum (dest == source) */
  long acc = 0;
  shmem_int_max_to_all(i32 + N, i32, N, 0, 0, n, pwrk_i, psync_a);
  acc = sum32(i32 + N, N);
  shmem_int_min_to_all(i32 + N, i32, N, 0, 0, n, pwrk_i, psync_b);
  acc = acc * 7 + sum32(i32 + N, N);
  shmem_int_and_to_all(i32 + N, i32, N, 0, 0, n, pwrk_i, psync_a);
  acc = acc * 7 + sum32(i32 + N, N);
  shmem_int_or_to_all(i32 + N, i32, N, 0, 0, n, pwrk_i, psync_b);
  acc = acc * 7 + sum32(i32 + N, N);
  shmem_int_xor_to_all(i32 + N, i32, N, 0, 0, n, pwrk_i, psync_a);
  acc = acc * 7 + sum32(i32 + N, N);
  shmem_int_prod_to_all(i32 + N, i32, N, 0, 0, n, pwrk_i, psync_b);
  acc = acc * 7 + sum32(i32 + N, N);
  shmem_barrier_all();
  shmem_int_sum_to_all(i32, i32, N, 0, 0, n, pwrk_i, psync_a);
  acc = acc * 7 + sum32(i32, N);
  say("int max/min/and/or/xor/prod/sum(in place) world", acc);
  /* the other integer types and the floating ones, world */
  FILL();
  shmem_short_sum_to_all(s + N, s, N, 0, 0, n, wrk_s, psync_a);
  shmem_short_xor_to_all(s, s, N, 0, 0, n, wrk_s, psync_b); /* in place */
  shmem_long_or_to_all(l + N, l, N, 0, 0, n, wrk_l, psync_a);
  shmem_longlong_max_to_all(ll + N, ll, N, 0, 0, n, wrk_ll, psync_b);
  shmem_longlong_sum_to_all(ll + N + 1, ll, N - 1, 0, 0, n, wrk_ll, psync_a);
  acc = 0;
  for (int k = 0; k < N; ++k)
    acc = acc * 3 + s[N + k] + 5 * s[k] + l[N + k] + (long)(ll[N + k] >> 33) + (long)(ll[N + k] & 0xffff);
  say("short sum/xor, long or, longlong max/sum world", acc);
  shmem_float_sum_to_all(f + N, f, N, 0, 0, n, wrk_f, psync_a);
  shmem_double_min_to_all(d + N, d, N, 0, 0, n, wrk_d, psync_b);
  shmem_longdouble_prod_to_all(ld + N, ld, N, 0, 0, n, wrk_ld, psync_a);
  shmem_float_max_to_all(f, f, 1, 0, 0, n, wrk_f, psync_b);
  acc = 0;
  for (int k = 0; k < N; ++k) acc = acc * 3 + (long)(f[N + k] * 2) + (long)(d[N + k] * 4) + (long)(ld[N + k] * 4096);
  say("float sum/max, double min, long double prod world", acc + (long)(f[0] * 2));
  shmem_complexf_sum_to_all(cf + N, cf, N, 0, 0, n, wrk_cf, psync_a);
  shmem_complexd_prod_to_all(cd + N, cd, N, 0, 0, n, wrk_cd, psync_b);
  acc = 0;
  for (int k = 0; k < N; ++k)
    acc = acc * 3 + (long)RE(cf[N + k]) + 10 * (long)IM(cf[N + k]) + (long)RE(cd[N + k]) + 100 * (long)IM(cd[N + k]);
  say("complexf sum, complexd prod world", acc);
  /* the evens and the odds at once, different calls; then every PE but 0 while PE 0 computes alone */
  FILL();
  if (odd)
    shmem_long_prod_to_all(l + N, l, N, 1, 1, odd_size, wrk_l, psync_a);
  else
    shmem_long_sum_to_all(l + N, l, N, 0, 1, odd_size, wrk_l, psync_a);
  shmem_double_max_to_all(d + N, d, N, odd, 1, odd_size, wrk_d, psync_b);
  acc = 0;
  for (int k = 0; k < N; ++k) acc = acc * 3 + l[N + k] + (long)(d[N + k] * 4);
  say("long prod (odds) / sum (evens), double max evens/odds", acc);
  FILL();
  if (me > 0) {
    for (int r = 0; r < K; ++r) shmem_short_min_to_all(s + N, s, N, 1, 0, n - 1, wrk_s, r % 2 ? psync_a : psync_b);
    shmem_float_min_to_all(f + N, f, N, 1, 0, n - 1, wrk_f, psync_b);
  } else {
    shmem_short_max_to_all(s + N, s, N, 0, 0, 1, wrk_s, psync_b); /* a set of one */
    shmem_float_sum_to_all(f + N, f, N, 0, 0, 1, wrk_f, psync_a);
  }
  acc = 0;
  for (int k = 0; k < N; ++k) acc = acc * 3 + s[N + k] + (long)(f[N + k] * 2);
  say("short/float min PEs 1..n-1, max/sum PE 0 alone", acc);
#undef FILL
  shmem_barrier_all();
  shmem_free(wrk_cd);
  shmem_free(wrk_cf);
  shmem_free(wrk_ld);
  shmem_free(wrk_d);
  shmem_free(wrk_f);
  shmem_free(wrk_ll);
  shmem_free(wrk_l);
  shmem_free(wrk_s);
  shmem_free(cd);
  shmem_free(cf);
  shmem_free(ld);
  shmem_free(d);
  shmem_free(f);
  shmem_free(ll);
  shmem_free(l);
  shmem_free(i32);
  shmem_free(s);
}

/* The generic interfaces with a context first (C11 _Generic on shmem_ctx_t / C++ overloads). */
static void generic_contexts(void) {
  shmem_ctx_t ctx;
  CHECK_EQ(shmem_ctx_create(0, &ctx), 0, "ctx_create");
  long* l = (long*)shmem_calloc(4 * n + 8, sizeof(long));
  int* i32 = (int*)shmem_calloc(2 * n, sizeof(int));
  double* d = (double*)shmem_calloc(n, sizeof(double));
  shmem_barrier_all();
  int right = (me + 1) % n;
  long src[4] = {10L * me, 10L * me + 1, 10L * me + 2, 10L * me + 3};
  shmem_put(ctx, &l[4 * me], src, 4, right); /* ctx, long* */
  shmem_p(ctx, &i32[me], me + 100, 0);
  shmem_p(SHMEM_CTX_DEFAULT, &d[me], me + 0.5, 0);
  shmem_atomic_add(ctx, &l[4 * n], (long)me + 1, 0);
  shmem_atomic_inc(ctx, &l[4 * n + 1], 0);
  long before = shmem_atomic_fetch_add(ctx, &l[4 * n + 2], 2L, 0);
  (void)before;
  int mine[2] = {me + 7, -1};
  shmem_iput(ctx, &i32[n + me], mine, 1, 2, 1, 0); /* strided, one element */
  shmem_put_nbi(ctx, &l[4 * n + 4 + (me % 4)], &src[1], 1, 0);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  long got[4];
  shmem_get(ctx, got, &l[4 * me], 4, right);
  CHECK_EQ(got[2], 10L * me + 2, "generic ctx get");
  int g = shmem_g(ctx, &i32[n - 1], 0);
  long fetched = shmem_atomic_fetch(ctx, &l[4 * n], 0);
  long swapped = shmem_atomic_swap(ctx, &l[4 * n + 3], (long)me, me);
  (void)swapped;
  shmem_barrier_all();
  long sum = 0;
  for (int k = 0; k < 4 * n; ++k) sum += l[k];
  say("generic ctx: put sum", sum);
  say("generic ctx: p, fetch, g", i32[me] * 1000000L + fetched * 1000 + g);
  if (me == 0) {
    double ds = 0;
    for (int p = 0; p < n; ++p) ds += d[p];
    printf("generic ctx: double p %.1f, inc %ld, fetch_add %ld, nbi %ld\n", ds, l[4 * n + 1], l[4 * n + 2],
           l[4 * n + 4] + l[4 * n + 5] + l[4 * n + 6] + l[4 * n + 7]);
  }
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
  shmem_free(d);
  shmem_free(i32);
  shmem_free(l);
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  for (int i = 0; i < SHMEM_SYNC_SIZE; ++i)
    psync_a[i] = SHMEM_SYNC_VALUE, psync_b[i] = _SHMEM_SYNC_VALUE; /* old name */
  report = (long*)shmem_calloc(n, sizeof(long));
  long* counter = (long*)shmem_calloc(2 + n, sizeof(long));
  shmem_barrier_all(); /* every pSync is initialized and every calloc is zero before the first call */
  if (me == 0) printf("PEs %d\n", n);
  barriers(counter);
  data_movers();
  reductions();
  generic_contexts();
  for (int i = 0; i < SHMEM_SYNC_SIZE; ++i) CHECK_EQ(psync_a[i] == SHMEM_SYNC_VALUE, 1, "pSync restored");
  shmem_barrier_all();
  if (me == 0) printf("done\n");
  fflush(stdout);
  shmem_free(counter);
  shmem_free(report);
  shmem_finalize();
  return 0;
}
