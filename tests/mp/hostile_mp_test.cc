// A hostile neighbour on the node (issue 17), driven by hostile_test's CTest entries through
// fault_test.sh, which checks that every PE ends with status 0, printed "hostile: ok" and warned about
// the foreign messages on its socket.
//
// PE 0 forks the attacker before shoal_init: a process outside the job (it closes the inherited
// bootstrap listener) that works as an attacker on the node would, from what any process can see:
//  1. init: connects garbage to the bootstrap port (random bytes, HTTP, a hello with a wrong secret,
//     a silent connection held open to the end), then injects into every `@shoal-heap-` socket it
//     finds in /proc/net/unix while the PEs are still starting;
//  2. between init and the first growing malloc (PE 0 says "go" through a pipe; the PEs wait in a
//     barrier until the attacker says it is done): random datagrams, valid-looking chunk messages
//     (right magic, plausible offsets, sizes and sender indices, a random or zero key) carrying
//     memfds filled with 0xEE, messages with several fds, into every socket of the job;
//  3. during growth: keeps injecting until PE 0 says "stop".
// The job must finish with correct data in every grown block (a mapped foreign memfd shows as 0xEE).
// For test hygiene only the job's own sockets are attacked (other jobs on this machine are left
// alone): they are recognised by the socket inodes that the job's processes hold.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shoal/shoal.h"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr size_t kBlockBytes = size_t{6} << 20;  // with SHOAL_HEAP_CHUNK=2M every block grows the heap
constexpr int kBlocks = 3;

int failures = 0;
#define CHECK_THAT(cond, ...)                                                                  \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      ++failures;                                                                              \
      std::fprintf(stderr, "FAILED (PE %d) at line %d: %s: ", shoal_my_pe(), __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                       \
      std::fprintf(stderr, "\n");                                                              \
    }                                                                                          \
  } while (0)

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

// ---- the attacker -----------------------------------------------------------------------------

// The inodes of the sockets held by the job's PEs: the children of PE 0's parent (shoalrun).
std::set<uint64_t> job_socket_inodes(pid_t launcher) {
  std::set<uint64_t> inodes;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return inodes;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat_file(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    std::getline(stat_file, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != launcher) continue;
    const std::string fd_dir = std::string("/proc/") + e->d_name + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    while (dirent* f = readdir(fds)) {
      char target[64] = {};
      if (readlink((fd_dir + "/" + f->d_name).c_str(), target, sizeof(target) - 1) <= 0) continue;
      unsigned long long ino;
      if (std::sscanf(target, "socket:[%llu]", &ino) == 1) inodes.insert(ino);
    }
    closedir(fds);
  }
  closedir(proc);
  return inodes;
}

// `@shoal-heap-...` names in /proc/net/unix (what `ss -lx` shows every user), limited to `inodes`.
std::vector<std::string> heap_sockets(const std::set<uint64_t>& inodes) {
  std::vector<std::string> names;
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    unsigned long long ino = 0;
    char path[256] = {};
    if (std::sscanf(line.c_str(), "%*s %*s %*s %*s %*s %*s %llu %255s", &ino, path) != 2) continue;
    if (std::strncmp(path, "@shoal-heap-", 12) == 0 && inodes.count(ino) != 0) names.emplace_back(path + 1);
  }
  return names;
}

struct attacker {
  std::mt19937_64 rng{20261201};
  int npes;
  pid_t launcher = 0;
  int sock = -1;   // unbound datagram socket
  int bound = -1;  // one bound at a shoal-looking name
  int memfd = -1;  // 2 MiB of 0xEE
  long sent = 0;

  explicit attacker(int n) : npes(n) {}

  void setup(pid_t job_launcher) {
    launcher = job_launcher;
    sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    bound = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    const std::string name = "shoal-heap-evil-" + std::to_string(getpid());
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    bind(bound, reinterpret_cast<sockaddr*>(&a),
         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size()));
    memfd = memfd_create("evil", MFD_CLOEXEC);
    if (memfd >= 0 && ftruncate(memfd, 2 << 20) == 0) {
      std::vector<char> fill(2 << 20, static_cast<char>(0xEE));
      [[maybe_unused]] ssize_t w = pwrite(memfd, fill.data(), fill.size(), 0);
    }
  }

  void send_one(const std::string& to, const void* data, size_t nbytes, int num_fds, bool from_bound) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, to.data(), to.size());
    iovec iov{const_cast<void*>(data), nbytes};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_name = &a;
    msg.msg_namelen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + to.size());
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (num_fds > 0 && memfd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(static_cast<size_t>(num_fds) * sizeof(int));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(static_cast<size_t>(num_fds) * sizeof(int));
      for (int i = 0; i < num_fds; ++i) std::memcpy(CMSG_DATA(c) + i * sizeof(int), &memfd, sizeof(int));
    }
    if (sendmsg(from_bound ? bound : sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) ++sent;
  }

  // A chunk message as the source describes it (magic, sender index, growth, offset, bytes, key).
  std::vector<uint8_t> chunk_like(bool zero_key) {
    std::vector<uint8_t> m(48, 0);
    const uint32_t magic = 0x53484c43;
    const int32_t local = static_cast<int32_t>(rng() % static_cast<uint64_t>(npes));
    const uint64_t seq = 1 + rng() % 8, offset = (rng() % 8) << 21, nbytes = uint64_t{2} << 20;
    std::memcpy(m.data(), &magic, 4);
    std::memcpy(m.data() + 4, &local, 4);
    std::memcpy(m.data() + 8, &seq, 8);
    std::memcpy(m.data() + 16, &offset, 8);
    std::memcpy(m.data() + 24, &nbytes, 8);
    if (!zero_key)
      for (size_t i = 32; i < 48; ++i) m[i] = static_cast<uint8_t>(rng());
    return m;
  }

  // One round into every socket: random datagrams (with and without an fd), valid-looking chunk
  // messages with a memfd, one with three memfds, the 32-byte pre-key layout.
  void round(const std::vector<std::string>& targets) {
    for (const std::string& to : targets) {
      std::vector<uint8_t> junk(1 + rng() % 100);
      for (auto& b : junk) b = static_cast<uint8_t>(rng());
      send_one(to, junk.data(), junk.size(), 0, false);
      send_one(to, junk.data(), junk.size(), 1, true);
      auto m = chunk_like(false);
      send_one(to, m.data(), m.size(), 1, rng() % 2 == 0);
      m = chunk_like(true);
      send_one(to, m.data(), m.size(), 1, false);
      send_one(to, m.data(), m.size(), 3, true);
      send_one(to, m.data(), 32, 1, false);
    }
  }

  // Garbage at the bootstrap port of SHOAL_BOOTSTRAP_UID (shoal-uid-v1:127.0.0.1:PORT:SECRET).
  std::vector<int> bootstrap_garbage() {
    std::vector<int> held;
    const char* uid = std::getenv("SHOAL_BOOTSTRAP_UID");
    if (uid == nullptr) return held;
    std::string text(uid);
    const size_t last = text.rfind(':'), port_at = text.rfind(':', last - 1);
    if (last == std::string::npos || port_at == std::string::npos) return held;
    const int port = std::atoi(text.substr(port_at + 1, last - port_at - 1).c_str());
    std::vector<uint8_t> hello(24 + 32, 0);
    const uint32_t magic = 0x54424853, version = 1;
    const uint16_t type = 1;
    const uint64_t payload = 32;
    std::memcpy(hello.data(), &magic, 4);
    std::memcpy(hello.data() + 4, &type, 2);
    std::memcpy(hello.data() + 16, &payload, 8);
    std::memcpy(hello.data() + 24, &version, 4);
    for (size_t i = 40; i < hello.size(); ++i) hello[i] = static_cast<uint8_t>(rng());
    std::vector<uint8_t> junk(300);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::vector<std::vector<uint8_t>> payloads = {junk, {http.begin(), http.end()}, hello, {}};
    for (const auto& p : payloads) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(fd);
        continue;
      }
      if (!p.empty() && send(fd, p.data(), p.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) std::perror("attacker: send");
      held.push_back(fd);  // all held open (the last one silent) until the attacker ends
    }
    std::fprintf(stderr, "attacker: %zu garbage connections to bootstrap port %d\n", held.size(), port);
    return held;
  }
};

// The command PE 0 sent, or 0 when none arrived within `ms`; -1 at EOF.
int read_command(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return 0;
  char c;
  ssize_t n = read(fd, &c, 1);
  return n == 1 ? c : -1;
}

int run_attacker(int commands, int reports, int npes, pid_t launcher) {
  attacker a(npes);
  a.setup(launcher);
  auto held = a.bootstrap_garbage();
  [[maybe_unused]] ssize_t w = write(reports, "b", 1);
  // 1. While the job starts: whatever heap sockets are up already.
  int cmd = 0;
  const auto give_up = clock_type::now() + std::chrono::seconds(60);
  while ((cmd = read_command(commands, 10)) == 0 && clock_type::now() < give_up)
    a.round(heap_sockets(job_socket_inodes(launcher)));
  const long init_sent = a.sent;
  // 2. Between init and the growing mallocs: every PE's socket, before the PEs go on.
  std::vector<std::string> targets;
  const auto deadline = clock_type::now() + std::chrono::seconds(15);
  while (cmd == 'g' && targets.size() < static_cast<size_t>(npes) && clock_type::now() < deadline) {
    targets = heap_sockets(job_socket_inodes(launcher));
    if (targets.size() < static_cast<size_t>(npes)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  a.round(targets);
  w = write(reports, "i", 1);
  // 3. During the growth, until told to stop.
  while (read_command(commands, 5) == 0 && clock_type::now() < give_up) a.round(targets);
  std::fprintf(stderr, "attacker: %zu of %d heap sockets found; %ld messages sent (%ld during init)\n", targets.size(),
               npes, a.sent, init_sent);
  for (int fd : held) close(fd);
  return targets.size() == static_cast<size_t>(npes) && a.sent > 0 ? 0 : 3;
}

bool await_report(int fd, char expected) {
  const int got = read_command(fd, 30000);
  CHECK_THAT(got == expected, "attacker reported %d, expected '%c'", got, expected);
  return got == expected;
}

}  // namespace

int main() {
  const int rank = env_int("SHOAL_RANK"), npes = env_int("SHOAL_SIZE");
  int commands[2] = {-1, -1}, reports[2] = {-1, -1};
  pid_t child = -1;
  if (rank == 0) {
    if (pipe2(commands, O_CLOEXEC) != 0 || pipe2(reports, O_CLOEXEC) != 0) return 2;
    const pid_t launcher = getppid();
    child = fork();
    if (child == 0) {
      // An outsider: without the bootstrap listener shoalrun handed to PE 0.
      if (int fd = env_int("SHOAL_BOOTSTRAP_FD"); fd >= 0) close(fd);
      close(commands[1]);
      close(reports[0]);
      _exit(run_attacker(commands[0], reports[1], npes, launcher));
    }
    close(commands[0]);
    close(reports[1]);
    await_report(reports[0], 'b');  // garbage is at the bootstrap port before PE 0 accepts anyone
  }

  shoal_init();
  const int me = shoal_my_pe(), n = shoal_n_pes();
  shoal_barrier_all();
  if (me == 0) {
    [[maybe_unused]] ssize_t w = write(commands[1], "g", 1);
    await_report(reports[0], 'i');
  }
  shoal_barrier_all();  // every PE's socket now holds foreign messages

  std::vector<unsigned char*> blocks;
  for (int b = 0; b < kBlocks; ++b) {
    auto* block = static_cast<unsigned char*>(shoal_malloc(kBlockBytes));  // grows the heap
    CHECK_THAT(block != nullptr, "shoal_malloc(%zu) #%d", kBlockBytes, b);
    if (block == nullptr) break;
    std::vector<unsigned char> src(kBlockBytes);
    for (size_t i = 0; i < kBlockBytes; ++i) src[i] = static_cast<unsigned char>(me * 37 + b * 11 + i % 251);
    shoal_putmem(block, src.data(), kBlockBytes, (me + 1) % n);
    blocks.push_back(block);
  }
  shoal_barrier_all();
  const int left = (me + n - 1) % n;
  for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
    size_t bad = 0;
    for (size_t i = 0; i < kBlockBytes; ++i)
      bad += blocks[static_cast<size_t>(b)][i] != static_cast<unsigned char>(left * 37 + b * 11 + i % 251);
    CHECK_THAT(bad == 0, "block %d: %zu of %zu bytes wrong (first byte %#x)", b, bad, kBlockBytes,
               blocks[static_cast<size_t>(b)][0]);
  }
  shoal_barrier_all();
  if (me == 0) {
    [[maybe_unused]] ssize_t w = write(commands[1], "s", 1);
    int status = 0;
    CHECK_THAT(waitpid(child, &status, 0) == child, "waitpid(attacker)");
    CHECK_THAT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "attacker status %#x", status);
  }
  for (auto* block : blocks) shoal_free(block);
  shoal_finalize();
  if (failures == 0) std::printf("hostile: ok on PE %d\n", me);
  return failures == 0 ? 0 : 1;
}
