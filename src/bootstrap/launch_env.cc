#include "bootstrap/launch_env.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <thread>

#include "bootstrap/net.hpp"
#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"

namespace shoal::detail {

namespace {

constexpr std::string_view kCall = "shoal_init";

// A launcher's variable as a non-negative int; nullopt when unset.
std::optional<int> int_var(const char* name) {
  auto text = env::raw(name);
  if (!text) return std::nullopt;
  auto value = env::parse_int(*text);
  if (!value || *value < 0 || *value > INT_MAX)
    SHOAL_THROW(errc::invalid_argument, kCall, "{}='{}' is not a non-negative integer", name, *text);
  return static_cast<int>(*value);
}

int required_int(const char* name, const char* because) {
  auto value = int_var(name);
  if (!value) SHOAL_THROW(errc::invalid_argument, kCall, "{} is not set although {} is", name, because);
  return *value;
}

// Slurm's "2(x3),1": tasks per node, run-length encoded; the entry for node `node`.
std::optional<int> slurm_tasks_on_node(std::string_view text, int node) {
  int seen = 0;
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    int count = 0, repeat = 1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), count);
    if (ec != std::errc()) return std::nullopt;
    std::string_view rest(end, item.data() + item.size() - end);
    if (!rest.empty()) {
      if (rest.size() < 4 || !rest.starts_with("(x") || rest.back() != ')') return std::nullopt;
      auto [e2, ec2] = std::from_chars(rest.data() + 2, rest.data() + rest.size() - 1, repeat);
      if (ec2 != std::errc() || e2 != rest.data() + rest.size() - 1) return std::nullopt;
    }
    if (node < seen + repeat) return count;
    seen += repeat;
  }
  return std::nullopt;
}

std::optional<std::string> first_set(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto v = env::raw(n)) return v;
  return std::nullopt;
}

std::optional<std::string> slurm_job_id() {
  auto job = env::raw("SLURM_JOB_ID");
  if (!job) job = env::raw("SLURM_JOBID");
  if (!job) return std::nullopt;
  auto step = first_set({"SLURM_STEP_ID", "SLURM_STEPID"});
  return step ? *job + "." + *step : *job;
}

// The job id of the launcher that started us, else of any launcher around us.
std::optional<std::string> job_id_for(std::string_view source) {
  auto ompi = [] { return first_set({"OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}); };
  auto pmi = [] { return first_set({"PMI_KVSNAME", "PMIX_NAMESPACE"}); };
  std::optional<std::string> id;
  if (source == "ompi")
    id = ompi();
  else if (source == "pmi")
    id = pmi();
  else if (source == "slurm")
    id = slurm_job_id();
  else if (source == "torchrun")
    id = env::raw("TORCHELASTIC_RUN_ID");
  if (!id) id = ompi();
  if (!id) id = pmi();
  if (!id) id = slurm_job_id();
  return id;
}

void validate(const launch_env& e, std::string_view vars) {
  if (e.size < 1)
    SHOAL_THROW(errc::invalid_argument, kCall, "{}: the job size must be at least 1 (got {})", vars, e.size);
  if (e.rank < 0 || e.rank >= e.size)
    SHOAL_THROW(errc::invalid_argument, kCall, "{}: rank {} is outside 0..{}", vars, e.rank, e.size - 1);
  if (e.local_size >= 0 && (e.local_size < 1 || e.local_size > e.size))
    SHOAL_THROW(errc::invalid_argument, kCall, "{}: local size {} is outside 1..{}", vars, e.local_size, e.size);
  if (e.local_rank >= 0 && e.local_size >= 0 && e.local_rank >= e.local_size)
    SHOAL_THROW(errc::invalid_argument, kCall, "{}: local rank {} is outside 0..{}", vars, e.local_rank,
                e.local_size - 1);
}

// Not a secret in the cryptographic sense (every PE computes it from what every PE sees): it keeps
// a PE of another job, or of an earlier run on the same port, from joining ours.
std::array<uint8_t, 16> derived_secret(std::string_view job, std::string_view addr) {
  std::string text = fmt::format("shoal-bootstrap|{}|{}", job, addr);
  std::array<uint8_t, 16> out{};
  for (int half = 0; half < 2; ++half) {
    uint64_t h = 14695981039346656037ull ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(half + 1));
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) out[half * 8 + i] = static_cast<uint8_t>(h >> (8 * i));
  }
  return out;
}

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  // O_EXCL | O_NOFOLLOW: never write through a file or link that someone else put at this name.
  net::unique_fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid())
    SHOAL_THROW(errc::system, kCall, "cannot create the rendezvous file {}: {}", tmp, std::strerror(errno));
  std::string line = text + "\n";
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd.get(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      SHOAL_THROW(errc::system, kCall, "cannot write the rendezvous file {}: {}", tmp, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  fd.reset();
  // rename() is atomic: a reader sees no file or the whole id, never half of one.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    SHOAL_THROW(errc::system, kCall, "cannot publish the rendezvous file {}: {}", path, std::strerror(err));
  }
}

unique_id wait_for_file(const std::string& path, int rank, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + timeout;
  // A file left by a crashed run with the same job id is older than anything PE 0 of this run can
  // have written; ignore it rather than chase a dead address until the timeout.
  auto oldest = std::chrono::system_clock::now() - timeout - std::chrono::seconds(10);
  auto backoff = std::chrono::milliseconds(5);
  bool warned = false;
  for (;;) {
    struct stat st {};
    net::unique_fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.valid() && ::fstat(fd.get(), &st) == 0) {
      // /tmp is shared: a file another user put there (to point us at their listener) is not PE 0's.
      if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
        if (!warned)
          SHOAL_LOG(warn, bootstrap, "ignoring rendezvous file {}: owned by uid {} with mode {:o}, not written by PE 0",
                    path, static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 07777));
        warned = true;
      } else if (std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec)) >= oldest) {
        char buf[256];
        ssize_t n = ::pread(fd.get(), buf, sizeof(buf), 0);
        std::string text(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
        text = text.substr(0, text.find('\n'));
        if (!text.empty()) return unique_id::parse(text, path);
      }
    }
    if (clock::now() >= deadline)
      SHOAL_THROW(errc::timeout, kCall,
                  "PE {} waited {} ms for PE 0's rendezvous file {}; is PE 0 running on this node? (PEs on several "
                  "nodes need SHOAL_BOOTSTRAP_ADDR=HOST:PORT)",
                  rank, timeout.count(), path);
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

}  // namespace

std::string rendezvous_file_path(std::string_view job_id) {
  std::string safe(job_id);
  for (char& c : safe)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return "/tmp/shoal-" + safe + ".uid";
}

launch_env detect_launch_env() {
  launch_env e;
  std::string_view vars;
  auto shoal_rank = env::get_int("SHOAL_RANK");
  auto shoal_size = env::get_int("SHOAL_SIZE");
  if (shoal_rank >= 0 || shoal_size >= 0) {
    if (shoal_rank < 0 || shoal_size < 0)
      SHOAL_THROW(errc::invalid_argument, kCall, "SHOAL_RANK and SHOAL_SIZE must be set together (got {} and {})",
                  env::effective("SHOAL_RANK"), env::effective("SHOAL_SIZE"));
    if (shoal_rank > INT_MAX || shoal_size > INT_MAX)
      SHOAL_THROW(errc::invalid_argument, kCall, "SHOAL_RANK/SHOAL_SIZE out of range");
    e.source = "shoalrun";
    vars = "SHOAL_RANK/SHOAL_SIZE";
    e.rank = static_cast<int>(shoal_rank);
    e.size = static_cast<int>(shoal_size);
    // shoalrun starts every PE on this node; a hand-set rank may say otherwise.
    auto local_rank = env::get_int("SHOAL_LOCAL_RANK");
    auto local_size = env::get_int("SHOAL_LOCAL_SIZE");
    e.local_rank = local_rank >= 0 ? static_cast<int>(std::min<int64_t>(local_rank, INT_MAX)) : e.rank;
    e.local_size = local_size >= 0 ? static_cast<int>(std::min<int64_t>(local_size, INT_MAX)) : e.size;
  } else if (env::raw("OMPI_COMM_WORLD_RANK")) {
    e.source = "ompi";
    vars = "OMPI_COMM_WORLD_*";
    e.rank = *int_var("OMPI_COMM_WORLD_RANK");
    e.size = required_int("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK");
    e.local_rank = int_var("OMPI_COMM_WORLD_LOCAL_RANK").value_or(-1);
    e.local_size = int_var("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(-1);
  } else if (env::raw("PMI_RANK")) {
    e.source = "pmi";
    vars = "PMI_RANK/PMI_SIZE";
    e.rank = *int_var("PMI_RANK");
    e.size = required_int("PMI_SIZE", "PMI_RANK");
    e.local_rank = int_var("MPI_LOCALRANKID").value_or(-1);
    e.local_size = int_var("MPI_LOCALNRANKS").value_or(-1);
  } else if (env::raw("TORCHELASTIC_RUN_ID") && env::raw("RANK")) {
    e.source = "torchrun";
  } else if (env::raw("SLURM_PROCID") && first_set({"SLURM_STEP_ID", "SLURM_STEPID"})) {
    e.source = "slurm";
    vars = "SLURM_PROCID/SLURM_NTASKS";
    e.rank = *int_var("SLURM_PROCID");
    auto size = int_var("SLURM_STEP_NUM_TASKS");
    if (!size) size = int_var("SLURM_NTASKS");
    if (!size) size = int_var("SLURM_NPROCS");
    if (!size) SHOAL_THROW(errc::invalid_argument, kCall, "SLURM_PROCID is set but SLURM_NTASKS is not");
    e.size = *size;
    e.local_rank = int_var("SLURM_LOCALID").value_or(-1);
    e.local_size = -1;
    int node = int_var("SLURM_NODEID").value_or(0);
    for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
      auto text = env::raw(name);
      if (!text) continue;
      // SLURM_NTASKS_PER_NODE is one number for every node; the others are run-length lists.
      auto count = std::string_view(name) == "SLURM_NTASKS_PER_NODE" ? int_var(name) : slurm_tasks_on_node(*text, node);
      if (!count)
        SHOAL_THROW(errc::invalid_argument, kCall, "{}='{}' has no entry for node {} (SLURM_NODEID)", name, *text,
                    node);
      e.local_size = *count;
      break;
    }
  } else if (env::raw("RANK") && env::raw("WORLD_SIZE") && env::raw("MASTER_ADDR")) {
    e.source = "torchrun";
  }
  if (e.source == "torchrun") {
    vars = "RANK/WORLD_SIZE";
    e.rank = required_int("RANK", "torchrun's variables");
    e.size = required_int("WORLD_SIZE", "RANK");
    e.local_rank = int_var("LOCAL_RANK").value_or(-1);
    e.local_size = int_var("LOCAL_WORLD_SIZE").value_or(-1);
  }
  if (e.source == "single") vars = "no launcher";
  validate(e, vars);

  e.uid_text = env::raw("SHOAL_BOOTSTRAP_UID");
  int64_t fd = env::get_int("SHOAL_BOOTSTRAP_FD");
  e.listen_fd = fd >= 0 && fd <= INT_MAX ? static_cast<int>(fd) : -1;
  e.rendezvous_addr = env::raw("SHOAL_BOOTSTRAP_ADDR");
  if (!e.rendezvous_addr && e.source == "torchrun") {
    // torchrun's own store listens on MASTER_PORT; PE 0 takes the next port.
    auto addr = env::raw("MASTER_ADDR");
    auto port = int_var("MASTER_PORT");
    if (addr && port) {
      if (*port >= 65535)
        SHOAL_THROW(errc::invalid_argument, kCall, "MASTER_PORT={} leaves no port for shoal (it uses MASTER_PORT+1)",
                    *port);
      bool v6 = addr->find(':') != std::string::npos && addr->front() != '[';
      e.rendezvous_addr = v6 ? fmt::format("[{}]:{}", *addr, *port + 1) : fmt::format("{}:{}", *addr, *port + 1);
    }
  }
  e.job_id = job_id_for(e.source);
  return e;
}

bootstrap_options resolve_bootstrap(const launch_env& e) {
  bootstrap_options o;
  o.rank = e.rank;
  o.size = e.size;
  o.connect_timeout = env::get_ms("SHOAL_BOOTSTRAP_TIMEOUT");
  o.peer_timeout = env::get_ms("SHOAL_PEER_TIMEOUT");
  o.collective_timeout = env::get_ms("SHOAL_WAIT_TIMEOUT");
  SHOAL_CHECK_ARG(o.connect_timeout.count() > 0, kCall, "SHOAL_BOOTSTRAP_TIMEOUT must be positive");
  SHOAL_CHECK_ARG(o.peer_timeout.count() > 0, kCall, "SHOAL_PEER_TIMEOUT must be positive");

  if (e.uid_text) {
    o.uid = unique_id::parse(*e.uid_text, "SHOAL_BOOTSTRAP_UID");
    if (e.rank == 0) o.listen_fd = e.listen_fd;
    return o;
  }
  if (e.size == 1) {
    sockaddr_storage loopback{};
    net::parse_numeric("127.0.0.1", 0, &loopback);
    o.uid = unique_id::generate(loopback);
    o.listen_fd = e.listen_fd;
    return o;
  }
  if (e.rendezvous_addr) {
    std::string_view what = env::raw("SHOAL_BOOTSTRAP_ADDR") ? "SHOAL_BOOTSTRAP_ADDR" : "MASTER_ADDR/MASTER_PORT";
    auto [host, port] = net::split_host_port(*e.rendezvous_addr, what);
    o.uid.addr = net::resolve(host, port, what);
    o.uid.secret = derived_secret(e.job_id.value_or(""), *e.rendezvous_addr);
    if (e.rank == 0) {
      // All interfaces: the name the others use may resolve differently on PE 0's own node.
      o.listen_fd = open_listener(o.uid.addr.ss_family == AF_INET6 ? "::" : "0.0.0.0", port, nullptr);
    }
    return o;
  }
  if (e.local_size > 0 && e.local_size < e.size)
    SHOAL_THROW(errc::invalid_argument, kCall,
                "the {} PEs span several nodes ({} on this one) and no rendezvous address is known: set "
                "SHOAL_BOOTSTRAP_ADDR=HOST:PORT (a free port on PE 0's node)",
                e.size, e.local_size);
  if (!e.job_id)
    SHOAL_THROW(errc::invalid_argument, kCall,
                "launched by {} with {} PEs, but there is no job id to name a rendezvous file: set "
                "SHOAL_BOOTSTRAP_ADDR=HOST:PORT or SHOAL_BOOTSTRAP_UID",
                e.source, e.size);
  std::string path = rendezvous_file_path(*e.job_id);
  if (e.rank == 0) {
    sockaddr_storage bound{};
    net::unique_fd fd(open_listener("127.0.0.1", 0, &bound));
    o.uid = unique_id::generate(bound);
    write_atomically(path, o.uid.to_string());
    o.listen_fd = fd.release();
    o.uid_file = path;
    SHOAL_LOG(info, bootstrap, "PE 0 published its rendezvous id in {}", path);
  } else {
    o.uid = wait_for_file(path, e.rank, o.connect_timeout);
  }
  return o;
}

}  // namespace shoal::detail
