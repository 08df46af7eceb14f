// Every host API family on N PEs (run by shoalrun at 2, 4 and 8 PEs), data checked.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "shoal/shoal.h"

namespace {

int me() { return shoal_my_pe(); }
int npes() { return shoal_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }

TEST(HostApi, PutGetRing) {
  constexpr size_t kCount = 1000;
  auto* buf = static_cast<long*>(shoal_malloc(kCount * sizeof(long)));
  ASSERT_NE(buf, nullptr);
  std::vector<long> src(kCount);
  std::iota(src.begin(), src.end(), 1000L * me());
  shoal_barrier_all();
  shoal_long_put(buf, src.data(), kCount, right());
  shoal_barrier_all();
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(buf[i], 1000L * left() + long(i)) << "i=" << i;
  std::vector<long> got(kCount);
  shoal_long_get(got.data(), buf, kCount, right());  // right's buffer holds my values
  EXPECT_EQ(got, src);
  shoal_barrier_all();
  shoal_free(buf);
}

TEST(HostApi, ScalarPAndG) {
  auto* x = static_cast<double*>(shoal_malloc(sizeof(double)));
  shoal_double_p(x, 0.5 + me(), right());
  shoal_barrier_all();
  EXPECT_EQ(*x, 0.5 + left());
  EXPECT_EQ(shoal_double_g(x, right()), 0.5 + me());
  shoal_barrier_all();
  shoal_free(x);
}

TEST(HostApi, AtomicFetchAddFromEveryPe) {
  auto* counter = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  constexpr int kPerPe = 500;
  for (int i = 0; i < kPerPe; ++i) shoal_uint64_atomic_add(counter, 1, 0);
  shoal_barrier_all();
  EXPECT_EQ(shoal_uint64_atomic_fetch(counter, 0), uint64_t(kPerPe) * npes());
  shoal_barrier_all();
  shoal_free(counter);
}

TEST(HostApi, PutSignalThenWait) {
  auto* data = static_cast<int*>(shoal_malloc(64 * sizeof(int)));
  auto* sig = static_cast<uint64_t*>(shoal_calloc(1, sizeof(uint64_t)));
  std::vector<int> src(64, me() + 1);
  shoal_barrier_all();
  shoal_int_put_signal(data, src.data(), 64, sig, 1, SHOAL_SIGNAL_ADD, right());
  EXPECT_EQ(shoal_signal_wait_until(sig, SHOAL_CMP_GE, 1), 1u);
  for (int v : std::vector<int>(data, data + 64)) EXPECT_EQ(v, left() + 1);
  shoal_barrier_all();
  shoal_free(sig);
  shoal_free(data);
}

}  // namespace
