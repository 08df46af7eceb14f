/* The legacy active-set collectives beyond what OSHMEM can be compared on. legacy_cases CASE:
 * - a bad argument (pe_size, past_world, psync, not_member, root, stride, no_shmem_init): one bad call
 *   on every PE, which must stop the job with a message naming the call and the argument (ctest
 *   matches it);
 * - "return": the same under SHOAL_ERRORS_RETURN: every call returns (no hang) and leaves dest alone;
 * - "reuse": back-to-back calls on one pSync with no barrier between (shoal never writes pSync), over
 *   the world and over the evens and the odds at once, checking every value;
 * - "start_pes": the deprecated start_pes initializes (the legacy workspace too), and the program ends
 *   without shmem_finalize (implicit finalization). */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "no_shmem_init") == 0) {
    shoal_init(); /* the legacy collectives' workspace comes with shmem_init */
    static long sync_words[SHMEM_BARRIER_SYNC_SIZE];
    shmem_barrier(0, 0, shmem_n_pes(), sync_words);
    return 0;
  }
  if (strcmp(what, "start_pes") == 0) {
    start_pes(0); /* OpenSHMEM 1.2's init (deprecated, in 1.5): a legacy barrier and an implicit finalization */
    static long sync_words[SHMEM_BARRIER_SYNC_SIZE];
    static long word;
    shmem_long_p(&word, 1 + _my_pe(), (_my_pe() + 1) % _num_pes());
    shmem_barrier(0, 0, _num_pes(), sync_words);
    long want = 1 + (_my_pe() + _num_pes() - 1) % _num_pes();
    if (word != want)
      printf("FAIL: PE %d got %ld, want %ld\n", _my_pe(), word, want);
    else if (_my_pe() == 0)
      printf("start_pes: %d PEs ok\n", _num_pes());
    return 0;
  }
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* psync = (long*)shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
  long* buf = (long*)shmem_calloc(4 * n, sizeof(long));
  int* wrk = (int*)shmem_malloc(4 * sizeof(int));
  for (int i = 0; i < SHMEM_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  if (strcmp(what, "pe_size") == 0) shmem_broadcast64(buf, buf + n, 1, 0, 0, 0, 0, psync);
  if (strcmp(what, "past_world") == 0) shmem_barrier(0, 1, n, psync); /* 0, 2, ..., 2n-2 */
  if (strcmp(what, "psync") == 0) shmem_fcollect32(buf, buf + n, 1, 0, 0, n, NULL);
  if (strcmp(what, "not_member") == 0) shmem_int_sum_to_all((int*)buf, (int*)buf, 1, 1, 0, n - 1, wrk, psync);
  if (strcmp(what, "root") == 0) shmem_broadcast32(buf, buf + n, 1, n, 0, 0, n, psync);
  if (strcmp(what, "stride") == 0) shmem_alltoalls64(buf, buf + n, 0, 1, 1, 0, 0, n, psync);
  if (strcmp(what, "reuse") == 0) {
    int odd = me % 2, size = odd ? n / 2 : (n + 1) / 2, index = me / 2;
    long* src = buf + 2 * n;
    for (int round = 0; round < 64; ++round) {
      src[0] = 1000 * round + me;
      int root = round % n;
      shmem_broadcast64(buf, src, 1, root, 0, 0, n, psync);
      if (me != root && buf[0] != 1000 * round + root) printf("FAIL: broadcast round %d got %ld\n", round, buf[0]);
      shmem_long_sum_to_all(buf, src, 1, odd, 1, size, (long*)wrk, psync);
      long want = 0;
      for (int p = odd; p < n; p += 2) want += 1000 * round + p;
      if (buf[0] != want) printf("FAIL: sum round %d got %ld, want %ld\n", round, buf[0], want);
      shmem_fcollect64(buf, src, 1, odd, 1, size, psync);
      if (buf[index] != src[0]) printf("FAIL: fcollect round %d got %ld\n", round, buf[index]);
      shmem_barrier(odd, 1, size, psync);
    }
    for (int i = 0; i < SHMEM_SYNC_SIZE; ++i)
      if (psync[i] != SHMEM_SYNC_VALUE) printf("FAIL: pSync[%d] is %ld\n", i, psync[i]);
    if (me == 0) printf("legacy_cases: same pSync back to back ok\n");
  }
  if (strcmp(what, "return") == 0) {
    shoal_set_error_mode(SHOAL_ERRORS_RETURN);
    buf[0] = 5;
    shmem_long_sum_to_all(buf, buf, 1, 0, 0, n + 1, (long*)wrk, psync); /* past the world */
    shmem_broadcast64(buf, buf + 1, 1, 0, -1, 0, n, psync);
    shmem_collect64(buf, buf + 1, 1, 0, 0, n, NULL);
    if (me == 0) printf("legacy_cases: %s\n", buf[0] == 5 ? "every bad call returned" : "FAIL: dest written");
    shoal_set_error_mode(SHOAL_ERRORS_ABORT);
  }
  shmem_barrier_all();
  shmem_free(wrk);
  shmem_free(buf);
  shmem_free(psync);
  shmem_finalize();
  return 0;
}
