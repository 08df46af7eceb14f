// Faults, driven by fault_test.sh (which checks the exit status, the output and the time):
//   exit_early     PE 1 _exit(0)s without finalize while the others sit in shoal_barrier_all
//   exit_in_wait   PE 1 _exit(0)s while the others wait in shoal_int_wait_until on a word nobody sets
//   exit_in_barrier  PE 1 exit(3)s (destructors run: the implicit finalize) while the others sit in
//                  shoal_barrier_all: the finalize must be seen as a mismatch, not waited for, reported
//                  as PE 1 exiting with status 3 without shoal_finalize, and the job must end with 3
//   finalize_vs_barrier  PE 0 calls shoal_finalize while the others make an extra shoal_barrier_all
//   exit_in_split  PE 1 _exit(0)s while the other odd PEs split the odd PEs' team (collective over its
//                  members only) and the even PEs wait on a word nobody sets
//   sigkill        PE 1 raises SIGKILL while the others sit in shoal_barrier_all
//   freeze         PE 1 stops itself (SIGSTOP): alive but silent; the heartbeat timeout must catch it
//   global_exit    the last PE calls shoal_global_exit(3) while the others sit in shoal_barrier_all
//   abort_on_error PE 1 passes pe=n_pes to shoal_int_p in the default (abort) error mode
//   wait_timeout   (SHOAL_WAIT_TIMEOUT=3s) every PE waits on a word nobody sets, in RETURN mode: the
//                  call must fail with SHOAL_ERR_TIMEOUT and a message with the address, the value
//                  seen and the value expected; then the job goes on (barrier, put) and exits 0
//   split_timeout  (SHOAL_WAIT_TIMEOUT=3s, RETURN mode, 4 PEs) the odd PEs' team is split by PE 3 while
//                  PE 1, also a member, never calls: PE 3 must fail with SHOAL_ERR_TIMEOUT naming PE 1;
//                  then the team is made again in the same slot and split by both, which must work
//                  (nothing of the failed split may be taken for the new one), and the job exits 0
//   mismatch_barrier_vs_malloc  (RETURN mode) PE 0 calls shoal_barrier_all, the others shoal_malloc:
//                  every PE must get an error promptly and print "mismatch reported"
// Every mode but wait_timeout, split_timeout and mismatch_barrier_vs_malloc must not reach its end; if it does, it
// prints UNREACHABLE and exits 0 so the driver sees the wrong status.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "shoal/shoal.h"

namespace {

int check_failures = 0;
#define CHECK_THAT(cond, ...)                                           \
  do {                                                                  \
    if (!(cond)) {                                                      \
      ++check_failures;                                                 \
      std::fprintf(stderr, "FAILED at line %d: %s: ", __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                \
      std::fprintf(stderr, "\n");                                       \
    }                                                                   \
  } while (0)

int wait_timeout_mode() {
  shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  const int me = shoal_my_pe(), n = shoal_n_pes();
  auto* word = static_cast<int*>(shoal_malloc(sizeof(int)));
  *word = 7;
  shoal_barrier_all();
  shoal_int_wait_until(word, SHOAL_CMP_EQ, 42);  // nobody writes 42
  const char* msg = nullptr;
  int code = shoal_last_error(&msg);
  std::string text = msg != nullptr ? msg : "";
  char addr[32];
  std::snprintf(addr, sizeof(addr), "%p", static_cast<void*>(word));
  CHECK_THAT(code == SHOAL_ERR_TIMEOUT, "code %d, message '%s'", code, text.c_str());
  CHECK_THAT(text.find("shoal_int_wait_until") != std::string::npos, "'%s' lacks the call", text.c_str());
  CHECK_THAT(text.find(addr) != std::string::npos, "'%s' lacks the address %s", text.c_str(), addr);
  CHECK_THAT(text.find("0x7") != std::string::npos, "'%s' lacks the value seen (0x7)", text.c_str());
  CHECK_THAT(text.find("0x2a") != std::string::npos, "'%s' lacks the value expected (0x2a)", text.c_str());
  CHECK_THAT(text.find("SHOAL_WAIT_TIMEOUT") != std::string::npos, "'%s' lacks the knob", text.c_str());
  shoal_clear_error();
  // signal_wait_until and the _any form time out the same way
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  uint64_t v = shoal_signal_wait_until(sig, SHOAL_CMP_GE, 5);
  code = shoal_last_error(&msg);
  CHECK_THAT(code == SHOAL_ERR_TIMEOUT && v == 0, "signal_wait_until: code %d value %" PRIu64 " '%s'", code, v,
             msg ? msg : "");
  shoal_clear_error();
  size_t idx = shoal_int_wait_until_any(word, 1, nullptr, SHOAL_CMP_NE, 7);
  code = shoal_last_error(&msg);
  CHECK_THAT(code == SHOAL_ERR_TIMEOUT && idx == SIZE_MAX, "wait_until_any: code %d idx %zu '%s'", code, idx,
             msg ? msg : "");
  shoal_clear_error();
  // the job is still fine
  shoal_barrier_all();
  shoal_int_p(word, 100 + me, (me + 1) % n);
  shoal_barrier_all();
  CHECK_THAT(*word == 100 + (me + n - 1) % n, "put after the timeout: %d", *word);
  code = shoal_last_error(&msg);
  CHECK_THAT(code == SHOAL_OK, "unexpected error %d '%s'", code, msg ? msg : "");
  shoal_barrier_all();
  shoal_free(sig);
  shoal_free(word);
  shoal_finalize();
  if (me == 0) std::printf("wait_timeout: %s\n", check_failures == 0 ? "ok" : "FAILED");
  return check_failures == 0 ? 0 : 1;
}

int split_timeout_mode() {
  shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  const int me = shoal_my_pe(), n = shoal_n_pes();
  CHECK_THAT(n == 4, "split_timeout needs 4 PEs, not %d", n);
  auto* done = static_cast<int*>(shoal_calloc(1, sizeof(int)));  // PE 3 sets everyone's once it gave up
  shoal_team_t odds = SHOAL_TEAM_INVALID;
  CHECK_THAT(shoal_team_split_strided(SHOAL_TEAM_WORLD, 1, 2, 2, nullptr, 0, &odds) == 0, "split of the odd PEs");
  if (me == 3) {
    shoal_team_t t = 12345;
    int rc = shoal_team_split_strided(odds, 0, 1, 2, nullptr, 0, &t);
    const char* msg = nullptr;
    int code = shoal_last_error(&msg);
    std::string text = msg != nullptr ? msg : "";
    std::printf("PE 3: rc %d: %s\n", rc, text.c_str());
    CHECK_THAT(rc == SHOAL_ERR_TIMEOUT && code == SHOAL_ERR_TIMEOUT && t == SHOAL_TEAM_INVALID, "rc %d code %d team %d",
               rc, code, t);
    CHECK_THAT(text.find("shoal_team_split_strided") != std::string::npos, "'%s' lacks the call", text.c_str());
    CHECK_THAT(text.find("PE 1") != std::string::npos, "'%s' does not name PE 1", text.c_str());
    shoal_clear_error();
    for (int pe = 0; pe < n; ++pe) shoal_int_p(done, 1, pe);
    shoal_quiet();
  } else {
    // Not in a wait bounded by SHOAL_WAIT_TIMEOUT: PE 3 takes up to 2 s (the bootstrap allows the
    // first member some slack).
    while (std::atomic_ref<int>(*done).load(std::memory_order_acquire) == 0) usleep(1000);
  }
  shoal_barrier_all();
  shoal_team_destroy(odds);
  // The same team again, in the same slot, split (differently) by both members.
  shoal_team_t again = SHOAL_TEAM_INVALID, first = 12345;
  CHECK_THAT(shoal_team_split_strided(SHOAL_TEAM_WORLD, 1, 2, 2, nullptr, 0, &again) == 0, "split of the odd PEs");
  CHECK_THAT(again == odds, "the odd PEs' team is %d, not %d as before", again, odds);
  if (again != SHOAL_TEAM_INVALID) {
    CHECK_THAT(shoal_team_split_strided(again, 0, 1, 1, nullptr, 0, &first) == 0, "split of the new odd team");
    CHECK_THAT((first != SHOAL_TEAM_INVALID) == (me == 1), "PE %d got team %d", me, first);
    shoal_team_destroy(first);
  }
  shoal_team_destroy(again);
  const char* msg = nullptr;
  int code = shoal_last_error(&msg);
  CHECK_THAT(code == SHOAL_OK, "unexpected error %d '%s'", code, msg ? msg : "");
  shoal_barrier_all();
  shoal_free(done);
  shoal_finalize();
  if (me == 0) std::printf("split_timeout: %s\n", check_failures == 0 ? "ok" : "FAILED");
  return check_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODE\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  shoal_init();
  if (mode == "wait_timeout") return wait_timeout_mode();
  if (mode == "split_timeout") return split_timeout_mode();
  const int me = shoal_my_pe(), n = shoal_n_pes();
  auto* word = static_cast<int*>(shoal_calloc(1, sizeof(int)));
  shoal_barrier_all();
  if (me == 0) std::printf("all %d PEs initialized; mode %s\n", n, mode.c_str());
  if (mode == "exit_early" || mode == "exit_in_wait") {
    if (me == 1) _exit(0);
    if (mode == "exit_early") {
      shoal_barrier_all();
    } else {
      shoal_int_wait_until(word, SHOAL_CMP_EQ, 1);
    }
  } else if (mode == "exit_in_split") {
    shoal_team_t odds = SHOAL_TEAM_INVALID, sub = SHOAL_TEAM_INVALID;
    if (shoal_team_split_strided(SHOAL_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odds) != 0) return 1;
    if (me == 1) _exit(0);
    if (odds != SHOAL_TEAM_INVALID) {
      shoal_team_split_strided(odds, 0, 1, n / 2, nullptr, 0, &sub);
    } else {
      shoal_int_wait_until(word, SHOAL_CMP_EQ, 1);
    }
  } else if (mode == "exit_in_barrier") {
    if (me == 1) std::exit(3);
    shoal_barrier_all();
  } else if (mode == "finalize_vs_barrier") {
    if (me == 0) {
      shoal_finalize();
      std::printf("UNREACHABLE: PE 0's finalize returned while the others are in a barrier\n");
      return 0;
    }
    shoal_barrier_all();
  } else if (mode == "sigkill") {
    if (me == 1) raise(SIGKILL);
    shoal_barrier_all();
  } else if (mode == "freeze") {
    if (me == 1) raise(SIGSTOP);
    shoal_barrier_all();
  } else if (mode == "global_exit") {
    if (me == n - 1) {
      usleep(200 * 1000);  // let the others block in the barrier first
      shoal_global_exit(3);
    }
    shoal_barrier_all();
  } else if (mode == "mismatch_barrier_vs_malloc") {
    shoal_set_error_mode(SHOAL_ERRORS_RETURN);
    if (me == 0) {
      shoal_barrier_all();
    } else {
      (void)shoal_malloc(64);
    }
    const char* msg = nullptr;
    int code = shoal_last_error(&msg);
    std::printf("PE %d: code %d: %s\n", me, code, msg != nullptr ? msg : "");
    if (code == SHOAL_OK) return 1;
    std::printf("PE %d: mismatch reported\n", me);
    std::fflush(stdout);
    // A mismatch leaves the bootstrap usable on every PE, so the job can still end in order (leaving
    // without finalize would make the slower PEs see this one die before they print).
    shoal_finalize();
    _exit(0);
  } else if (mode == "abort_on_error") {
    if (me == 1) shoal_int_p(word, 1, n);
    shoal_barrier_all();
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::printf("UNREACHABLE: PE %d returned from mode %s\n", me, mode.c_str());
  shoal_finalize();
  return 0;
}
