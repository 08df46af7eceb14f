/* hello: every PE puts its rank into its right neighbour's symmetric buffer, then checks what its
 * left neighbour wrote. Builds against an installed shoal (CMake or pkg-config); plain C11. */
#include <shoal/shoal.h>
#include <stdio.h>

int main(void) {
  shoal_init();
  int me = shoal_my_pe();
  int npes = shoal_n_pes();
  int* slot = (int*)shoal_malloc(sizeof(int));
  *slot = -1;
  shoal_barrier_all();
  shoal_int_p(slot, me, (me + 1) % npes);
  shoal_barrier_all();
  int expected = (me + npes - 1) % npes;
  int ok = *slot == expected;
  if (!ok) fprintf(stderr, "PE %d: got %d from the left neighbour, expected %d\n", me, *slot, expected);
  /* agree on the outcome: PE 0 counts the failures */
  int* failures = (int*)shoal_calloc(1, sizeof(int));
  if (!ok) shoal_int_atomic_inc(failures, 0);
  shoal_barrier_all();
  int total = shoal_int_g(failures, 0);
  if (me == 0 && total == 0) printf("ring check passed on %d PEs\n", npes);
  shoal_free(failures);
  shoal_free(slot);
  shoal_finalize();
  return total == 0 ? 0 : 1;
}
