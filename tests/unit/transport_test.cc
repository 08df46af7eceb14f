// The transport layer on its own (no runtime): path discovery puts a PE of another node on the proxy
// path, and host operations are dispatched per path: load/store reaches the mapped heap; the proxy
// path goes through the UCX engine (looped back to this process) or, without UCX, fails at init.
// Offsets tagged kDataOffsetBit reach the program's globals on load/store paths and, through the
// engine's registration of the data segment, on the proxy path.
#include "transport/transport.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "heap/chunk_backend.hpp"
#include "shoal/error.hpp"
#include "transport/proxy/proxy_path.hpp"

// A global of this program, reached through the data segment.
uint64_t g_transport_test_word = 7;

namespace shoal::detail {
namespace {

// A bootstrap of `size` PEs in which this process is rank 0 and every other PE contributes what
// rank 0 does (enough for the all-gathers of discovery and of a one-PE heap).
class mirror_bootstrap final : public bootstrap {
 public:
  explicit mirror_bootstrap(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  void allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view) override {
    for (int pe = 0; pe < size_; ++pe) std::memcpy(static_cast<char*>(all) + pe * bytes_per_pe, mine, bytes_per_pe);
  }
  void barrier(std::string_view) override {}
  void broadcast(void*, size_t, int, std::string_view) override {}
  void abort_job(int, const std::string&) override {}
  void finalize() override {}

 private:
  int size_;
};

TEST(Transport, DiscoverPutsAnotherNodesPeOnTheProxyPath) {
  mirror_bootstrap boot(3);
  node_map nodes;
  nodes.local_of_pe = {0, -1, 1};  // PE 1 on another node, PE 2 on this one
  nodes.pe_of_local = {0, 2};
  auto backend = make_host_backend();
  const discovery found = peer_transport::discover(boot, *backend, nodes);
  EXPECT_EQ(found.paths, (std::vector<peer_path>{peer_path::self, peer_path::proxy, peer_path::shared_memory}));
  EXPECT_EQ(found.sharing.most_pes_per_gpu, 1);  // host heaps: no GPU to share
  EXPECT_EQ(found.sharing.fewest_sms, 0);
}

gpu_identity gpu_of(int node, const char* bus, int sms) {
  gpu_identity g;
  std::snprintf(g.pci_bus_id, sizeof(g.pci_bus_id), "%s", bus);
  g.node = node;
  g.sms = sms;
  return g;
}

TEST(Transport, SharingOfGpusCountsPesPerGpuOfEachNode) {
  // No GPU anywhere (host heaps): nothing shared, no SM count.
  gpu_sharing none = sharing_of({gpu_identity{}, gpu_identity{}});
  EXPECT_EQ(none.most_pes_per_gpu, 1);
  EXPECT_EQ(none.fewest_sms, 0);
  // One GPU a PE: nothing shared.
  gpu_sharing own = sharing_of({gpu_of(0, "0000:19:00.0", 132), gpu_of(0, "0000:3b:00.0", 132)});
  EXPECT_EQ(own.most_pes_per_gpu, 1);
  EXPECT_EQ(own.fewest_sms, 132);
  // Node 0: three PEs on one GPU and one on another; node 4: the same bus id is another GPU, with fewer SMs.
  gpu_sharing mixed =
      sharing_of({gpu_of(0, "0000:19:00.0", 132), gpu_of(0, "0000:19:00.0", 132), gpu_of(0, "0000:3b:00.0", 132),
                  gpu_of(0, "0000:19:00.0", 132), gpu_of(4, "0000:19:00.0", 114), gpu_of(4, "0000:3b:00.0", 114)});
  EXPECT_EQ(mixed.most_pes_per_gpu, 3);
  EXPECT_EQ(mixed.fewest_sms, 114);
  // Eight PEs on the one GPU of a node.
  std::vector<gpu_identity> eight(8, gpu_of(0, "0000:19:00.0", 132));
  EXPECT_EQ(sharing_of(eight).most_pes_per_gpu, 8);
}

class TransportDispatch : public ::testing::Test {
 protected:
  static constexpr uint64_t kReserve = uint64_t{4} << 20;
  TransportDispatch() : heap_(boot_, node_map::discover(boot_), make_host_backend(), kReserve, kReserve) {
    heap_.grow_to(4096, "test");
  }
  // The tagged offset of g_transport_test_word.
  uint64_t global_offset() const {
    const int64_t off = data_.offset_of(&g_transport_test_word);
    EXPECT_GE(off, 0) << "globals are not symmetric: " << data_.why_not();
    return static_cast<uint64_t>(off) | kDataOffsetBit;
  }
  mirror_bootstrap boot_{1};
  symmetric_heap heap_;
  symmetric_data data_{boot_, heap_, true, ""};
};

TEST_F(TransportDispatch, LoadStorePathReachesTheMappedHeap) {
  peer_transport transport_(boot_, heap_, data_, {peer_path::self});
  EXPECT_TRUE(transport_.reachable(0));
  EXPECT_TRUE(transport_.all_load_store());
  EXPECT_EQ(transport_.base_of(0), heap_.base());
  const uint64_t value = 0x1122334455667788u;
  transport_.put("shoal_putmem", 0, 64, &value, sizeof value);
  uint64_t seen = 0;
  std::memcpy(&seen, heap_.base() + 64, sizeof seen);
  EXPECT_EQ(seen, value);
  uint64_t add = 8, fetched = 0;
  transport_.atomic("shoal_atomic_fetch_add", 0, 64, amo_op::fetch_add, scalar_of<uint64_t>(), &add, nullptr, &fetched);
  EXPECT_EQ(fetched, value);
  transport_.get("shoal_getmem", &seen, 0, 64, sizeof seen);
  EXPECT_EQ(seen, value + 8);
  EXPECT_TRUE(transport_.device_table().empty());
  // The same operations on a global, through its tagged data-segment offset.
  g_transport_test_word = 7;
  transport_.put("shoal_putmem", 0, global_offset(), &value, sizeof value);
  EXPECT_EQ(g_transport_test_word, value);
  transport_.atomic("shoal_atomic_fetch_add", 0, global_offset(), amo_op::fetch_add, scalar_of<uint64_t>(), &add,
                    nullptr, &fetched);
  EXPECT_EQ(fetched, value);
  transport_.get("shoal_getmem", &seen, 0, global_offset(), sizeof seen);
  EXPECT_EQ(seen, value + 8);
  EXPECT_EQ(transport_.address("shoal_ptr", 0, global_offset()), reinterpret_cast<char*>(&g_transport_test_word));
  EXPECT_EQ(transport_.data_of(0), data_.local_span().base);
}

// This PE's view of a two-PE job whose PE 1 is on another node; the mirror bootstrap hands this
// PE's own worker address and rkey to "PE 1", so proxy operations loop back into this heap.
TEST_F(TransportDispatch, ProxyPathLoopsBackThroughTheEngineOrNamesUcx) {
  mirror_bootstrap net(2);
  if (!proxy_built()) {
    try {
      peer_transport t(net, heap_, data_, {peer_path::self, peer_path::proxy});
      FAIL() << "a proxy peer without UCX did not fail at init";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::unsupported);
      EXPECT_NE(std::string(e.what()).find("install libucx-dev"), std::string::npos) << e.what();
    }
    return;
  }
  peer_transport transport_(net, heap_, data_, {peer_path::self, peer_path::proxy});
  EXPECT_EQ(transport_.path_to(1), peer_path::proxy);
  EXPECT_FALSE(transport_.reachable(1));
  EXPECT_TRUE(transport_.accessible(1));
  EXPECT_EQ(transport_.base_of(1), nullptr);
  EXPECT_EQ(transport_.device_table(), (std::vector<peer_path>{peer_path::self, peer_path::proxy}));
  const uint64_t value = 0x0102030405060708u;
  transport_.put("shoal_putmem", 1, 128, &value, sizeof value);
  transport_.quiet();
  uint64_t seen = 0;
  std::memcpy(&seen, heap_.base() + 128, sizeof seen);
  EXPECT_EQ(seen, value);
  uint64_t add = 5, fetched = 0;
  transport_.atomic("shoal_atomic_fetch_add", 1, 128, amo_op::fetch_add, scalar_of<uint64_t>(), &add, nullptr,
                    &fetched);
  EXPECT_EQ(fetched, value);
  uint64_t compare = value + 5, swap_in = 42;
  transport_.atomic("shoal_atomic_compare_swap", 1, 128, amo_op::compare_swap, scalar_of<uint64_t>(), &swap_in,
                    &compare, &fetched);
  EXPECT_EQ(fetched, value + 5);
  transport_.get("shoal_getmem", &seen, 1, 128, sizeof seen);
  EXPECT_EQ(seen, 42u);
  // A 2-byte add (a compare-and-swap loop on the containing word) leaves its neighbours alone.
  uint16_t small_add = 0x0101, small_old = 0;
  transport_.atomic("shoal_atomic_fetch_add", 1, 130, amo_op::fetch_add, scalar_of<uint16_t>(), &small_add, nullptr,
                    &small_old);
  EXPECT_EQ(small_old, 0u);
  transport_.get("shoal_getmem", &seen, 1, 128, sizeof seen);
  EXPECT_EQ(seen, 42u + (uint64_t{0x0101} << 16));
  try {
    transport_.address("shoalx_putmem_on_stream", 1, 64);
    FAIL() << "a proxy peer gave an address";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unsupported);
    EXPECT_NE(std::string(e.what()).find("PE 1 is reached through the proxy transport"), std::string::npos) << e.what();
  }
  // A global over the proxy: the loop-back reaches this PE's own global through the engine's
  // registration of the data segment (put, fetch_add, put-with-signal's signal word, get).
  g_transport_test_word = 7;
  transport_.put("shoal_uint64_put", 1, global_offset(), &value, sizeof value);
  transport_.quiet();
  EXPECT_EQ(g_transport_test_word, value);
  transport_.atomic("shoal_atomic_fetch_add", 1, global_offset(), amo_op::fetch_add, scalar_of<uint64_t>(), &add,
                    nullptr, &fetched);
  EXPECT_EQ(fetched, value);
  transport_.get("shoal_getmem", &seen, 1, global_offset(), sizeof seen);
  EXPECT_EQ(seen, value + 5);
  EXPECT_EQ(g_transport_test_word, value + 5);
  EXPECT_EQ(transport_.data_of(1), nullptr);
  transport_.close("test");
}

}  // namespace
}  // namespace shoal::detail
