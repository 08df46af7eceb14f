// Launcher detection from environment variables (shoalrun, Open MPI, MPICH, Slurm, torchrun, none)
// and the bootstrap options built from it, including a node-local file rendezvous end to end.
#include "bootstrap/launch_env.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/net.hpp"
#include "shoal/error.hpp"

namespace shoal::detail {
namespace {

using namespace std::chrono_literals;

// Every variable detection reads. Each test starts with all of them unset (CI itself may run under
// Slurm) and gets the original environment back afterwards.
const char* const kLauncherVars[] = {
    "SHOAL_RANK",
    "SHOAL_SIZE",
    "SHOAL_LOCAL_RANK",
    "SHOAL_LOCAL_SIZE",
    "SHOAL_BOOTSTRAP_UID",
    "SHOAL_BOOTSTRAP_FD",
    "SHOAL_BOOTSTRAP_ADDR",
    "SHOAL_BOOTSTRAP_TIMEOUT",
    "SHOAL_PEER_TIMEOUT",
    "SHOAL_WAIT_TIMEOUT",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_orte_ess_jobid",
    "OMPI_MCA_ess_base_jobid",
    "PMIX_NAMESPACE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "PMI_KVSNAME",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_STEP_ID",
    "SLURM_STEPID",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
};

class LaunchEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kLauncherVars) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kLauncherVars) ::unsetenv(name);
    for (auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [name, value] : vars) ::setenv(name, value, 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(LaunchEnv, NoLauncherIsASinglePe) {
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "single");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.size, 1);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_size, 1);
  EXPECT_FALSE(e.uid_text);
  EXPECT_EQ(e.listen_fd, -1);
  bootstrap_options o = resolve_bootstrap(e);
  EXPECT_EQ(o.size, 1);
  EXPECT_EQ(o.listen_fd, -1);
  EXPECT_NE(o.uid.secret, (std::array<uint8_t, 16>{}));  // generated locally
}

TEST_F(LaunchEnv, Shoalrun) {
  set({{"SHOAL_RANK", "3"},
       {"SHOAL_SIZE", "8"},
       {"SHOAL_LOCAL_RANK", "3"},
       {"SHOAL_LOCAL_SIZE", "8"},
       {"SHOAL_BOOTSTRAP_UID", "shoal-uid-v1:127.0.0.1:4242:00112233445566778899aabbccddeeff"},
       {"SHOAL_BOOTSTRAP_FD", "9"},
       {"SHOAL_BOOTSTRAP_TIMEOUT", "2s"},
       {"SHOAL_PEER_TIMEOUT", "750ms"},
       {"SHOAL_WAIT_TIMEOUT", "1m"},
       // shoalrun's variables win over any launcher around it
       {"OMPI_COMM_WORLD_RANK", "0"},
       {"OMPI_COMM_WORLD_SIZE", "1"}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "shoalrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 8);
  EXPECT_EQ(e.local_rank, 3);
  EXPECT_EQ(e.local_size, 8);
  EXPECT_EQ(e.uid_text.value_or(""), "shoal-uid-v1:127.0.0.1:4242:00112233445566778899aabbccddeeff");
  EXPECT_EQ(e.listen_fd, 9);
  bootstrap_options o = resolve_bootstrap(e);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.uid.address_string(), "127.0.0.1:4242");
  EXPECT_EQ(o.listen_fd, -1);  // only PE 0 takes the inherited listener
  EXPECT_EQ(o.connect_timeout, 2000ms);
  EXPECT_EQ(o.peer_timeout, 750ms);
  EXPECT_EQ(o.collective_timeout, 60000ms);
  e.rank = 0;
  EXPECT_EQ(resolve_bootstrap(e).listen_fd, 9);
}

TEST_F(LaunchEnv, ShoalRankWithoutSizeIsAnError) {
  set({{"SHOAL_RANK", "1"}});
  EXPECT_THROW(detect_launch_env(), shoal::error);
}

TEST_F(LaunchEnv, RankOutsideSizeIsAnError) {
  set({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  try {
    detect_launch_env();
    ADD_FAILURE() << "accepted rank 4 of 4";
  } catch (const shoal::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(e.message().find("OMPI_COMM_WORLD"), std::string::npos) << e.what();
  }
  set({{"OMPI_COMM_WORLD_RANK", "x"}});
  EXPECT_THROW(detect_launch_env(), shoal::error);
}

TEST_F(LaunchEnv, OpenMpi) {
  set({{"OMPI_COMM_WORLD_RANK", "5"},
       {"OMPI_COMM_WORLD_SIZE", "16"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
       {"PMIX_NAMESPACE", "prterun-host-1234@1"},
       {"SLURM_PROCID", "0"},  // mpirun inside an allocation: Open MPI is the launcher
       {"SLURM_STEP_ID", "0"}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "ompi");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.size, 16);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_size, 4);
  EXPECT_EQ(e.job_id.value_or(""), "prterun-host-1234@1");
  EXPECT_FALSE(e.rendezvous_addr);
  // Four nodes and no address: a clear error, not a file nobody else can see.
  try {
    resolve_bootstrap(e);
    ADD_FAILURE() << "multi-node job without an address resolved";
  } catch (const shoal::error& err) {
    EXPECT_EQ(err.code(), errc::invalid_argument);
    EXPECT_NE(err.message().find("SHOAL_BOOTSTRAP_ADDR"), std::string::npos) << err.what();
  }
}

TEST_F(LaunchEnv, MpichHydra) {
  set({{"PMI_RANK", "2"},
       {"PMI_SIZE", "3"},
       {"MPI_LOCALRANKID", "2"},
       {"MPI_LOCALNRANKS", "3"},
       {"PMI_KVSNAME", "kvs_777_0"}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "pmi");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.size, 3);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_size, 3);
  EXPECT_EQ(e.job_id.value_or(""), "kvs_777_0");
}

TEST_F(LaunchEnv, Slurm) {
  set({{"SLURM_PROCID", "6"},
       {"SLURM_NTASKS", "7"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_NODEID", "2"},
       {"SLURM_TASKS_PER_NODE", "3(x2),1"},
       {"SLURM_JOB_ID", "4711"},
       {"SLURM_STEP_ID", "2"}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "slurm");
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.size, 7);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_size, 1);  // node 2 is the "1" after "3(x2)"
  EXPECT_EQ(e.job_id.value_or(""), "4711.2");

  set({{"SLURM_NODEID", "1"}});
  EXPECT_EQ(detect_launch_env().local_size, 3);
  set({{"SLURM_NTASKS_PER_NODE", "2"}});  // preferred over SLURM_TASKS_PER_NODE
  EXPECT_EQ(detect_launch_env().local_size, 2);
  ::unsetenv("SLURM_NTASKS_PER_NODE");
  set({{"SLURM_NODEID", "9"}});
  EXPECT_THROW(detect_launch_env(), shoal::error);                     // "3(x2),1" has no entry for node 9
  set({{"SLURM_NODEID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "5,2"}});  // the step's own layout wins
  EXPECT_EQ(detect_launch_env().local_size, 5);
}

TEST_F(LaunchEnv, SlurmBatchScriptAloneIsNoLaunch) {
  set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "4711"}});
  EXPECT_EQ(detect_launch_env().source, "single");
}

TEST_F(LaunchEnv, Torchrun) {
  set({{"RANK", "3"},
       {"WORLD_SIZE", "4"},
       {"LOCAL_RANK", "1"},
       {"LOCAL_WORLD_SIZE", "2"},
       {"MASTER_ADDR", "127.0.0.1"},
       {"MASTER_PORT", "29500"},
       {"TORCHELASTIC_RUN_ID", "abc"},
       {"SLURM_PROCID", "1"},  // torchrun inside an srun step: torchrun is the launcher
       {"SLURM_NTASKS", "2"},
       {"SLURM_STEP_ID", "0"}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_size, 2);
  EXPECT_EQ(e.rendezvous_addr.value_or(""), "127.0.0.1:29501");
  EXPECT_EQ(e.job_id.value_or(""), "abc");
  bootstrap_options o = resolve_bootstrap(e);
  EXPECT_EQ(o.uid.address_string(), "127.0.0.1:29501");
  EXPECT_EQ(o.listen_fd, -1);
}

TEST_F(LaunchEnv, TorchrunWithoutElasticIdAndIpv6Master) {
  set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "1000"}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(e.rendezvous_addr.value_or(""), "[::1]:1001");
}

TEST_F(LaunchEnv, ExplicitAddressWinsAndPeZeroListensOnIt) {
  // A free port: open a listener, note its port, close it.
  sockaddr_storage bound{};
  ::close(open_listener("127.0.0.1", 0, &bound));
  std::string addr = "127.0.0.1:" + std::to_string(net::port_of(bound));
  set({{"RANK", "0"},
       {"WORLD_SIZE", "2"},
       {"MASTER_ADDR", "127.0.0.1"},
       {"MASTER_PORT", "29500"},
       {"SHOAL_BOOTSTRAP_ADDR", addr.c_str()}});
  launch_env e = detect_launch_env();
  EXPECT_EQ(e.rendezvous_addr.value_or(""), addr);
  bootstrap_options root = resolve_bootstrap(e);
  ASSERT_GE(root.listen_fd, 0);
  e.rank = 1;
  bootstrap_options peer = resolve_bootstrap(e);
  EXPECT_EQ(peer.uid.secret, root.uid.secret);  // derived the same way on every PE
  EXPECT_EQ(peer.uid.address_string(), addr);
  // And they meet.
  std::unique_ptr<bootstrap> a, b;
  std::thread t([&] { a = bootstrap::connect(root, {}); });
  b = bootstrap::connect(peer, {});
  t.join();
  ASSERT_TRUE(a && b);
  std::thread t2([&] { a->finalize(); });
  b->finalize();
  t2.join();
}

TEST_F(LaunchEnv, FileRendezvousOnOneNode) {
  const int n = 3;
  std::string job = "launch-env-test-" + std::to_string(::getpid());
  set({{"SHOAL_BOOTSTRAP_TIMEOUT", "5s"}});
  std::vector<std::unique_ptr<bootstrap>> boots(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int rank = n - 1; rank >= 0; --rank)  // PE 0 last: the others must wait for its file
    threads.emplace_back([&, rank] {
      try {
        launch_env e;
        e.source = "pmi";
        e.rank = rank;
        e.size = n;
        e.local_rank = rank;
        e.local_size = n;
        e.job_id = job;
        if (rank == 0) std::this_thread::sleep_for(50ms);
        bootstrap_options o = resolve_bootstrap(e);
        if (rank == 0) {
          EXPECT_GE(o.listen_fd, 0);
          struct stat st {};
          EXPECT_EQ(::stat(rendezvous_file_path(job).c_str(), &st), 0);
          EXPECT_EQ(st.st_mode & 0777, 0600u);  // it holds the secret
        }
        boots[rank] = bootstrap::connect(o, {});
        int mine = rank * 10, all[n] = {};
        boots[rank]->allgather(&mine, all, sizeof(int), "test_allgather");
        for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], r * 10);
        boots[rank]->finalize();
      } catch (const std::exception& ex) {
        errors[rank] = ex.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "PE " << r;
  struct stat st {};
  EXPECT_NE(::stat(rendezvous_file_path(job).c_str(), &st), 0) << "PE 0 left its rendezvous file behind";
}

// PE 1 of a 2-PE Slurm step on one node, with a job id unique to this process.
launch_env second_of_two_slurm_pes(const std::string& job_prefix) {
  launch_env e;
  e.source = "slurm";
  e.rank = 1;
  e.size = 2;
  e.local_size = 2;
  e.job_id = job_prefix + std::to_string(::getpid());
  return e;
}

TEST_F(LaunchEnv, FileRendezvousTimesOutWithoutPeZero) {
  set({{"SHOAL_BOOTSTRAP_TIMEOUT", "200ms"}});
  launch_env e = second_of_two_slurm_pes("launch-env-test-nobody-");
  try {
    resolve_bootstrap(e);
    ADD_FAILURE() << "resolved without PE 0";
  } catch (const shoal::error& err) {
    EXPECT_EQ(err.code(), errc::timeout);
    EXPECT_NE(err.message().find(rendezvous_file_path(*e.job_id)), std::string::npos) << err.what();
  }
}

// /tmp is shared (issue 17): a rendezvous file that others may write, or a link planted at its name,
// is not PE 0's and must not send this PE to whatever listener it names.
TEST_F(LaunchEnv, FileRendezvousIgnoresFilesOthersCouldHavePlanted) {
  set({{"SHOAL_BOOTSTRAP_TIMEOUT", "200ms"}});
  launch_env e = second_of_two_slurm_pes("launch-env-test-planted-");
  const std::string path = rendezvous_file_path(*e.job_id), real = path + ".real";
  for (bool as_link : {false, true}) {
    {
      std::ofstream out(as_link ? real : path);
      out << "shoal-uid-v1:127.0.0.1:9:00112233445566778899aabbccddeeff\n";
    }
    if (as_link)
      ASSERT_EQ(::symlink(real.c_str(), path.c_str()), 0);
    else
      ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
    try {
      resolve_bootstrap(e);
      ADD_FAILURE() << "followed a planted rendezvous " << (as_link ? "link" : "file");
    } catch (const shoal::error& err) {
      EXPECT_EQ(err.code(), errc::timeout) << err.what();
    }
    ::unlink(path.c_str());
    ::unlink(real.c_str());
  }
}

TEST_F(LaunchEnv, NoJobIdNoAddressIsAnError) {
  launch_env e;
  e.source = "pmi";
  e.rank = 1;
  e.size = 2;
  e.local_size = -1;
  EXPECT_THROW(resolve_bootstrap(e), shoal::error);
}

TEST(RendezvousFile, PathIsSanitized) {
  EXPECT_EQ(rendezvous_file_path("4711.2"), "/tmp/shoal-4711.2.uid");
  EXPECT_EQ(rendezvous_file_path("prterun-host-1234@1"), "/tmp/shoal-prterun-host-1234_1.uid");
  EXPECT_EQ(rendezvous_file_path("../etc/x"), "/tmp/shoal-.._etc_x.uid");
}

}  // namespace
}  // namespace shoal::detail
