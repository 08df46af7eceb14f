/* An NVSHMEM host program in C11, built against shoal's <nvshmem.h>/<nvshmemx.h> and run on host-memory PEs
 * (shoalrun, SHOAL_BACKEND=host): setup and queries, symmetric memory, RMA, atomics, signals, ordering, teams and
 * team collectives, each checked. Prints "nv_host_c: OK" and exits 0, or names the first failed check. */
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_me;
#define CHECK(cond)                                                                             \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      fprintf(stderr, "nv_host_c: PE %d: check failed: %s (line %d)\n", g_me, #cond, __LINE__); \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

int main(void) {
  int major = 0, minor = 0, patch = 0;
  char name[NVSHMEM_MAX_NAME_LEN];
  CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED);
  nvshmem_init();
  CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED);
  g_me = nvshmem_my_pe();
  const int npes = nvshmem_n_pes(), right = (g_me + 1) % npes, left = (g_me + npes - 1) % npes;
  nvshmem_info_get_version(&major, &minor);
  CHECK(major == NVSHMEM_MAJOR_VERSION && minor == NVSHMEM_MINOR_VERSION);
  nvshmem_info_get_name(name);
  CHECK(strlen(name) > 0);
  nvshmemx_vendor_get_version_info(&major, &minor, &patch);
  CHECK(major == 3 && minor == 8 && NVSHMEM_VENDOR_VERSION == 30800);
  CHECK(strcmp(nvshmemx_status_string(NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED),
               "NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED") == 0);

  /* symmetric memory and RMA */
  int* ring = (int*)nvshmem_calloc(4, sizeof(int));
  long* lbuf = (long*)nvshmem_malloc(8 * sizeof(long));
  CHECK(ring != NULL && lbuf != NULL);
  nvshmem_int_p(ring, 100 + g_me, right);
  long src[8];
  for (int i = 0; i < 8; ++i) src[i] = 1000L * g_me + i;
  nvshmem_long_put(lbuf, src, 8, right);
  nvshmem_quiet();
  nvshmem_barrier_all();
  CHECK(ring[0] == 100 + left);
  CHECK(lbuf[7] == 1000L * left + 7);
  CHECK(nvshmem_int_g(ring, right) == 100 + g_me);
  long got[8];
  nvshmem_long_get_nbi(got, lbuf, 8, left);
  nvshmem_quiet();
  CHECK(got[3] == 1000L * ((left + npes - 1) % npes) + 3);
  nvshmem_putmem(ring + 1, &g_me, sizeof(int), right);
  nvshmem_barrier_all();
  CHECK(ring[1] == left);

  /* a registered local buffer as the source of a put; registering twice or unregistering an unknown address fails */
  int local[4] = {g_me, g_me, g_me, g_me};
  CHECK(nvshmemx_buffer_register(local, sizeof(local)) == 0);
  nvshmem_int_put(ring, local, 1, right);
  int old_mode = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  CHECK(nvshmemx_buffer_register(local + 1, sizeof(int)) != 0);
  CHECK(nvshmemx_buffer_unregister(local + 1) != 0);
  shoal_set_error_mode(old_mode);
  CHECK(nvshmemx_buffer_unregister(local) == 0);
  nvshmemx_buffer_unregister_all();
  nvshmem_barrier_all();
  CHECK(ring[0] == left);
  /* symmetric registration of user memory is refused when called (it compiles): NULL, as NVSHMEM's failure */
  CHECK(nvshmemx_buffer_register_symmetric(local, sizeof(local), 0) == NULL);
  CHECK(nvshmemx_buffer_register_symmetric_at_preferred_address(local, sizeof(local), NULL, 0) == NULL);
  CHECK(nvshmemx_buffer_unregister_symmetric(local, sizeof(local)) == NVSHMEMX_ERROR_NOT_SUPPORTED);

  /* NVSHMEM's message macros (NVSHMEM's perftest harness uses them): a warning on stdout; the error forms compile */
  if (g_me == 0) NVSHMEMI_WARN_PRINT("nv_host_c: %s", "message macros");
  if (g_me < 0) NVSHMEMI_ERROR_PRINT("nv_host_c: negative PE %d", g_me);
  if (g_me < 0) NVSHMEMI_ERROR_EXIT("nv_host_c: negative PE %d", g_me);

  /* atomics: every PE adds its number + 1 on PE 0 */
  unsigned long long* counter = (unsigned long long*)nvshmem_calloc(1, sizeof(unsigned long long));
  nvshmem_barrier_all();
  nvshmem_ulonglong_atomic_fetch_add(counter, (unsigned long long)g_me + 1, 0);
  nvshmem_barrier_all();
  if (g_me == 0) CHECK(*counter == (unsigned long long)npes * (npes + 1) / 2);
  CHECK(nvshmem_int_atomic_compare_swap(ring + 2, 0, 7, right) == 0);
  nvshmemx_float_atomic_add((float*)(ring + 3), 1.5f, right); /* float add: an nvshmemx_ name in NVSHMEM */
  nvshmem_barrier_all();
  CHECK(ring[2] == 7);

  /* signals */
  uint64_t* sig = (uint64_t*)nvshmem_calloc(1, sizeof(uint64_t));
  nvshmem_barrier_all();
  nvshmemx_signal_op(sig, 5, NVSHMEM_SIGNAL_ADD, right);
  nvshmem_fence();
  nvshmem_barrier_all();
  CHECK(nvshmem_signal_fetch(sig) == 5);
  nvshmemx_signal_counted_reset(sig); /* NVSHMEM 3.8 */
  CHECK(nvshmem_signal_fetch(sig) == 0);
  nvshmem_barrier_all();

  /* teams: the even PEs, with an NVSHMEM team config */
  nvshmem_team_config_t config = NVSHMEM_TEAM_CONFIG_INITIALIZER;
  config.num_contexts = 2;
  nvshmem_team_t even = NVSHMEM_TEAM_INVALID;
  CHECK(nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, &config,
                                   NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS, &even) == 0);
  if (g_me % 2 == 0) {
    CHECK(even != NVSHMEM_TEAM_INVALID);
    CHECK(nvshmem_team_my_pe(even) == g_me / 2);
    CHECK(nvshmem_team_translate_pe(even, nvshmem_team_my_pe(even), NVSHMEM_TEAM_WORLD) == g_me);
    nvshmem_team_config_t got_config;
    nvshmem_team_get_config(even, &got_config);
    CHECK(got_config.num_contexts == 2);
  } else {
    CHECK(even == NVSHMEM_TEAM_INVALID);
  }

  /* NVSHMEM 3.8 teams: one PE per node with this PE's node index; team_init over every PE in reverse order, the id
   * made on the last PE and shared through a put */
  CHECK(nvshmem_team_n_pes(NVSHMEMX_TEAM_SAME_MYPE_NODE) >= 1);
  CHECK(nvshmem_team_translate_pe(NVSHMEMX_TEAM_SAME_MYPE_NODE, nvshmem_team_my_pe(NVSHMEMX_TEAM_SAME_MYPE_NODE),
                                  NVSHMEM_TEAM_WORLD) == g_me);
  uint64_t* shared_id = (uint64_t*)nvshmem_calloc(1, sizeof(uint64_t));
  if (g_me == npes - 1) {
    nvshmemx_team_uniqueid_t id = NVSHMEM_TEAM_UNIQUID_INITIALIZER;
    CHECK(nvshmemx_team_get_uniqueid(&id) == 0 && id != 0);
    for (int pe = 0; pe < npes; ++pe) nvshmem_uint64_p(shared_id, id, pe);
  }
  nvshmem_barrier_all();
  nvshmem_team_config_t init_config = NVSHMEM_TEAM_CONFIG_INITIALIZER;
  init_config.uniqueid = *shared_id;
  nvshmem_team_t reversed = NVSHMEM_TEAM_INVALID;
  CHECK(nvshmemx_team_init(&reversed, &init_config, 0, npes, npes - 1 - g_me) == NVSHMEMX_ERROR_INVALID_VALUE);
  CHECK(nvshmemx_team_init(&reversed, &init_config, NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID, npes, npes - 1 - g_me) == 0);
  CHECK(nvshmem_team_my_pe(reversed) == npes - 1 - g_me);
  CHECK(nvshmem_team_translate_pe(reversed, 0, NVSHMEM_TEAM_WORLD) == npes - 1);
  CHECK(nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, g_me, even) == (g_me % 2 == 0 ? g_me / 2 : NVSHMEM_PE_INVALID) ||
        g_me % 2 != 0);
  nvshmem_team_sync(reversed);
  nvshmem_team_destroy(reversed);
  nvshmem_barrier_all();

  /* team collectives on the world */
  int* red_src = (int*)nvshmem_malloc(2 * sizeof(int));
  int* red_dst = (int*)nvshmem_malloc(2 * sizeof(int));
  red_src[0] = g_me;
  red_src[1] = 1;
  nvshmem_barrier_all();
  CHECK(nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, red_dst, red_src, 2) == 0);
  CHECK(red_dst[0] == npes * (npes - 1) / 2 && red_dst[1] == npes);
  int* all = (int*)nvshmem_malloc((size_t)npes * sizeof(int));
  CHECK(nvshmem_int_fcollect(NVSHMEM_TEAM_WORLD, all, red_src, 1) == 0);
  for (int i = 0; i < npes; ++i) CHECK(all[i] == i);
  CHECK(nvshmem_int_broadcast(NVSHMEM_TEAM_WORLD, red_dst, red_src, 1, npes - 1) == 0);
  CHECK(red_dst[0] == npes - 1);
  nvshmem_sync_all();
  if (g_me % 2 == 0) nvshmem_team_destroy(even);

  nvshmem_free(all);
  nvshmem_free(red_dst);
  nvshmem_free(red_src);
  nvshmem_free(sig);
  nvshmem_free(counter);
  nvshmem_free(lbuf);
  nvshmem_free(ring);
  nvshmem_finalize();
  CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED);
  if (g_me == 0) printf("nv_host_c: OK\n");
  return 0;
}
