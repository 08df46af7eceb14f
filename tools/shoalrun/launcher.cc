#include "launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "line_relay.hpp"
#include "shoal/error.hpp"
#include "shoal/launch.hpp"

extern char** environ;

namespace shoal::run {
namespace {

using steady = std::chrono::steady_clock;

/// Reads of one pipe per poll wake-up, and of one pipe when draining a PE that has ended.
constexpr size_t read_chunk_bytes = 64 * 1024;
/// Bound on the reads when draining a pipe that a PE's leftover child may still be writing to.
constexpr int max_drain_reads = 64;
/// How long a stopped job's pipes are read after its PEs (and what they started) were killed, for
/// the last bytes still on the way; a job that ended by itself gets no extra wait.
constexpr std::chrono::milliseconds stopped_drain_window{1000};

/// Throws the error for a failed system call `what` (errno `err`).
[[noreturn]] void throw_system(const std::string& what, int err) {
  throw error(errc::system, "shoalrun", fmt::format("{} failed: {} (errno {})", what, std::strerror(err), err));
}

/// After the first PE that fails, how long the others get to end by themselves before SIGTERM: a PE failing for the
/// same reason (a bad setting every PE reads at init) may still be on its way to saying why, and a SIGTERM at once
/// loses those words (a peer that sees the failing PE's connection close can stop before that PE prints).
constexpr std::chrono::milliseconds failed_pe_grace{500};

/// A second SIGINT/SIGTERM/SIGHUP skips the rest of the kill grace only if it comes at least this
/// long after the first: wrappers such as timeout(1) deliver one signal twice at once (to us and to
/// our process group), which is not a user asking twice.
constexpr std::chrono::milliseconds repeat_signal_gap{500};

steady::duration to_duration(double seconds) {
  return std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
}

/// "1 3 5-9": ranks in order, runs of three or more as a range, so 1024 PEs still fit on a line.
std::string format_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text.push_back(' ');
    if (j - i >= 2) {
      text += fmt::format("{}-{}", ranks[i], ranks[j]);
    } else {
      for (size_t k = i; k <= j; ++k) text += fmt::format("{}{}", k == i ? "" : " ", ranks[k]);
    }
    i = j + 1;
  }
  return text;
}

/// A PE's stdout: the read end for shoalrun, the write end for the PE (both close-on-exec).
/// A pseudo-terminal in raw mode where the system has one, else a pipe. On a terminal the C library
/// line-buffers stdout, so each line a PE prints reaches shoalrun when printed; through a pipe it is
/// block-buffered and a PE stopped by a signal (its peer failed) loses what it had not flushed.
/// Raw mode passes the bytes unchanged ("\n" stays "\n").
void open_stdout_channel(int fds[2]) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master >= 0) {
    char name[128];
    int slave = -1;
    termios mode{};
    if (grantpt(master) == 0 && unlockpt(master) == 0 && ptsname_r(master, name, sizeof name) == 0 &&
        (slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0 && tcgetattr(slave, &mode) == 0) {
      cfmakeraw(&mode);
      if (tcsetattr(slave, TCSANOW, &mode) == 0) {
        fds[0] = master;
        fds[1] = slave;
        return;
      }
    }
    if (slave >= 0) close(slave);
    close(master);
  }
  if (pipe2(fds, O_CLOEXEC) < 0) throw_system("pipe2", errno);
}

/// Everything a child needs between fork and exec, prepared before fork so that the child does not
/// allocate or use stdio in between.
struct child_plan {
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int listen_fd = -1;  ///< PE 0 only: the bootstrap listener to keep across exec; -1 for the others
  const sigset_t* signal_mask = nullptr;
  const rlimit* nofile = nullptr;
};

[[noreturn]] void exec_pe(const child_plan& plan) {
  // A group of its own, so that stopping the PE also reaches processes it started; the parent
  // sets it too, so it holds before either side goes on.
  setpgid(0, 0);
  if (dup2(plan.stdin_fd, STDIN_FILENO) < 0 || dup2(plan.stdout_fd, STDOUT_FILENO) < 0 ||
      dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  // Every fd shoalrun opened is close-on-exec; only PE 0 keeps the listener.
  if (plan.listen_fd >= 0) {
    int flags = fcntl(plan.listen_fd, F_GETFD);
    if (flags < 0 || fcntl(plan.listen_fd, F_SETFD, flags & ~FD_CLOEXEC) < 0) _exit(127);
  }
  // Undo what shoalrun changed for itself: the fd limit, ignored SIGPIPE, blocked signals.
  setrlimit(RLIMIT_NOFILE, plan.nofile);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, plan.signal_mask, nullptr);

  execvpe(plan.argv[0], plan.argv, plan.envp);

  int err = errno;
  // No stdio between fork and exec: assemble the message by hand and write it in one call.
  char message[1024];
  size_t len = 0;
  for (const char* part : {"shoalrun: cannot execute '", static_cast<const char*>(plan.argv[0]),
                           "': ", static_cast<const char*>(std::strerror(err)), "\n"}) {
    for (; *part != '\0' && len < sizeof message; ++part) message[len++] = *part;
  }
  ssize_t ignored = write(STDERR_FILENO, message, len);
  (void)ignored;
  // The shell's convention: 127 when there is no such program, 126 when it exists but won't run.
  _exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

/// One PE from fork to reaping.
struct pe_process {
  int rank = 0;
  pid_t pid = -1;          ///< also the id of its process group
  bool ended = false;      ///< it has exited; it stays a zombie until the job ends (see check_children)
  bool signalled = false;  ///< shoalrun sent it a signal while it ran: its end is not its own failure
  int status = 0;          ///< exit status, 128+N for signal N
  int out_fd = -1;         ///< read ends of its stdout and stderr pipes; -1 once at end of file
  int err_fd = -1;
  std::optional<line_relay> out;
  std::optional<line_relay> err;
};

class job {
 public:
  explicit job(const launch_options& options) : options_(options) {}
  job(const job&) = delete;
  job& operator=(const job&) = delete;
  ~job();

  int run();

 private:
  void prepare_process();
  void open_bootstrap_listener();
  void spawn_all();
  void spawn(pe_process& pe, const std::vector<std::string>& base_env);
  void supervise();
  void finish();
  int exit_status() const;

  bool read_pipe(pe_process& pe, bool is_stderr);  ///< one read; true if it got bytes
  void drain(pe_process& pe);
  void drain_until(steady::time_point deadline);  ///< every PE's pipes, until end of file or `deadline`
  void close_stream(pe_process& pe, bool is_stderr);
  void handle_signals();
  void check_children();
  void on_pe_end(pe_process& pe, const siginfo_t& info);
  void on_deadlines();
  void begin_stop(int sig);
  void signal_all(int sig);
  std::vector<int> running_ranks() const;
  int poll_timeout_ms() const;
  void say(const std::string& message);

  const launch_options& options_;
  std::vector<pe_process> pes_;
  int running_ = 0;

  output_sink stdout_sink_{STDOUT_FILENO};
  output_sink stderr_sink_{STDERR_FILENO};

  int signal_fd_ = -1;
  int listen_fd_ = -1;
  int devnull_fd_ = -1;
  std::string uid_text_;
  sigset_t original_mask_{};
  rlimit original_nofile_{};

  std::optional<steady::time_point> timeout_at_;  ///< while the job runs normally
  std::optional<steady::time_point> kill_at_;     ///< once stopping: when SIGTERM becomes SIGKILL
  std::optional<steady::time_point> stop_at_;     ///< after a PE failed: when the others get SIGTERM
  bool stopping_ = false;                         ///< SIGTERM (or the forwarded signal) has gone out to every PE
  bool killed_ = false;                           ///< SIGKILL has gone out to every PE
  bool timed_out_ = false;
  int interrupted_by_ = 0;  ///< first signal that stopped shoalrun itself
  steady::time_point interrupted_at_;
  int first_failure_status_ = 0;  ///< status of the first PE that ended on its own with a failure (mpirun's rule)
};

job::~job() {
  for (pe_process& pe : pes_) {
    if (pe.out_fd >= 0) close(pe.out_fd);
    if (pe.err_fd >= 0) close(pe.err_fd);
  }
  for (int fd : {signal_fd_, listen_fd_, devnull_fd_}) {
    if (fd >= 0) close(fd);
  }
}

void job::say(const std::string& message) { stderr_sink_.write(fmt::format("shoalrun: {}\n", message)); }

void job::prepare_process() {
  // If we were started with fd 0, 1 or 2 closed, a pipe or the listener could land there and be
  // clobbered by dup2() in the child; fill the gaps with /dev/null first.
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) < 0)
      throw_system("open(/dev/null)", errno);
  }
  // SIGCHLD set to SIG_IGN by our caller would make the kernel reap the PEs before we could read
  // their status.
  signal(SIGCHLD, SIG_DFL);
  // A closed stdout must cost us our output, not our life (see output_sink).
  signal(SIGPIPE, SIG_IGN);

  // Signals arrive through a signalfd in the poll loop: no handlers, no races with poll.
  // A signal our caller ignores (SIGINT for a background job of a script, SIGHUP under nohup)
  // stays ignored: ignored signals are never queued to the signalfd, and the PEs inherit it.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  if (sigprocmask(SIG_BLOCK, &handled, &original_mask_) < 0) throw_system("sigprocmask", errno);
  signal_fd_ = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) throw_system("signalfd", errno);

  // Two pipes per PE stay open in shoalrun; the usual soft limit of 1024 fds is too few for 1024
  // PEs. The PEs get the original limit back (programs using select() rely on it).
  if (getrlimit(RLIMIT_NOFILE, &original_nofile_) < 0) throw_system("getrlimit", errno);
  rlim_t needed = static_cast<rlim_t>(2 * options_.num_pes + 64);
  if (original_nofile_.rlim_cur != RLIM_INFINITY && original_nofile_.rlim_cur < needed) {
    rlimit raised = original_nofile_;
    raised.rlim_cur = original_nofile_.rlim_max == RLIM_INFINITY ? needed : std::min(needed, original_nofile_.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) < 0 || raised.rlim_cur < needed) {
      throw error(errc::invalid_argument, "shoalrun",
                  fmt::format("-n {} needs about {} open files, but the limit (ulimit -n) is {} and cannot be raised",
                              options_.num_pes, needed, original_nofile_.rlim_max));
    }
  }

  devnull_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull_fd_ < 0) throw_system("open(/dev/null)", errno);
}

void job::open_bootstrap_listener() {
  if (!options_.bootstrap_addr.empty()) return;  // PE 0 opens it (SHOAL_BOOTSTRAP_ADDR), maybe on another host
  // shoalrun binds the listener itself and hands the fd to PE 0, so the port in the unique id is
  // already taken by us: no window in which another process could grab it. The fd is close-on-exec
  // in every child but PE 0 (exec_pe clears it there).
  launch::listener listener = launch::open_listener(options_.bind_host);
  listen_fd_ = listener.fd;
  uid_text_ = std::move(listener.unique_id);
}

void job::spawn_all() {
  // The environment every PE shares: ours without the variables shoalrun sets per PE (a stale
  // SHOAL_BOOTSTRAP_FD from an outer job must not reach PEs 1..N-1) and without those -x replaces.
  std::vector<std::string> base_env;
  const bool multi_host = !options_.bootstrap_addr.empty();
  auto replaced = [&](std::string_view entry) {
    std::string_view name = entry.substr(0, entry.find('='));
    if (std::find(managed_env_names.begin(), managed_env_names.end(), name) != managed_env_names.end()) return true;
    if (multi_host && name == "SHOAL_BOOTSTRAP_ADDR") return true;
    return std::any_of(options_.extra_env.begin(), options_.extra_env.end(),
                       [&](const std::string& x) { return std::string_view(x).substr(0, x.find('=')) == name; });
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!replaced(*e)) base_env.emplace_back(*e);
  }
  // The last -x for a name wins; getenv() would see the first of two entries, so keep only one.
  for (size_t i = 0; i < options_.extra_env.size(); ++i) {
    const std::string& x = options_.extra_env[i];
    std::string_view name = std::string_view(x).substr(0, x.find('='));
    bool set_again =
        std::any_of(options_.extra_env.begin() + static_cast<std::ptrdiff_t>(i) + 1, options_.extra_env.end(),
                    [&](const std::string& y) { return std::string_view(y).substr(0, y.find('=')) == name; });
    if (!set_again) base_env.push_back(x);
  }
  base_env.push_back(fmt::format("SHOAL_SIZE={}", options_.job_pes));
  base_env.push_back(fmt::format("SHOAL_LOCAL_SIZE={}", options_.num_pes));
  if (multi_host)
    base_env.push_back("SHOAL_BOOTSTRAP_ADDR=" + options_.bootstrap_addr);
  else
    base_env.push_back("SHOAL_BOOTSTRAP_UID=" + uid_text_);

  pes_.resize(static_cast<size_t>(options_.num_pes));
  try {
    for (int local = 0; local < options_.num_pes; ++local) {
      pes_[static_cast<size_t>(local)].rank = options_.first_rank + local;
      spawn(pes_[static_cast<size_t>(local)], base_env);
    }
  } catch (...) {
    // A half-started job is no job: the PEs already running would only wait for the missing ones.
    for (pe_process& pe : pes_) {
      if (pe.pid > 0) kill(-pe.pid, SIGKILL);
    }
    for (pe_process& pe : pes_) {
      if (pe.pid > 0) waitpid(pe.pid, nullptr, 0);
    }
    throw;
  }
  // PE 0 has its own copy now; ours would keep the port open after PE 0 is gone.
  close(listen_fd_);
  listen_fd_ = -1;
}

void job::spawn(pe_process& pe, const std::vector<std::string>& base_env) {
  std::vector<std::string> env = base_env;
  env.push_back(fmt::format("SHOAL_RANK={}", pe.rank));
  env.push_back(fmt::format("SHOAL_LOCAL_RANK={}", pe.rank - options_.first_rank));
  if (pe.rank == 0 && listen_fd_ >= 0) env.push_back(fmt::format("SHOAL_BOOTSTRAP_FD={}", listen_fd_));
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : options_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  open_stdout_channel(out_pipe);
  if (pipe2(err_pipe, O_CLOEXEC) < 0) {
    int saved = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw_system("pipe2", saved);
  }

  // Only PE 0 reads shoalrun's stdin, as with mpirun; not a terminal, though: PEs run in their own
  // process groups, and a background group that reads the terminal is stopped by SIGTTIN.
  int stdin_fd = (pe.rank == 0 && isatty(STDIN_FILENO) == 0) ? STDIN_FILENO : devnull_fd_;
  child_plan plan{argv.data(),     envp.data(),      stdin_fd, out_pipe[1], err_pipe[1], pe.rank == 0 ? listen_fd_ : -1,
                  &original_mask_, &original_nofile_};

  pid_t pid = fork();
  if (pid == 0) exec_pe(plan);
  int fork_errno = errno;
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw_system(fmt::format("fork for PE {}", pe.rank), fork_errno);
  }
  // Also here, so the group exists before we might signal it (EACCES: the child already exec'd,
  // after setting it itself).
  setpgid(pid, pid);
  pe.pid = pid;
  ++running_;
  pe.out_fd = out_pipe[0];
  pe.err_fd = err_pipe[0];
  // Non-blocking so that draining a PE that has ended stops when its pipe is empty.
  for (int fd : {pe.out_fd, pe.err_fd}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string prefix = options_.prefix ? fmt::format("[{}] ", pe.rank) : std::string();
  pe.out.emplace(&stdout_sink_, prefix);
  pe.err.emplace(&stderr_sink_, prefix);
}

void job::close_stream(pe_process& pe, bool is_stderr) {
  int& fd = is_stderr ? pe.err_fd : pe.out_fd;
  if (fd < 0) return;
  (is_stderr ? pe.err : pe.out)->finish();
  close(fd);
  fd = -1;
}

bool job::read_pipe(pe_process& pe, bool is_stderr) {
  static char buffer[read_chunk_bytes];
  int fd = is_stderr ? pe.err_fd : pe.out_fd;
  if (fd < 0) return false;
  ssize_t n = read(fd, buffer, sizeof buffer);
  if (n > 0) {
    (is_stderr ? pe.err : pe.out)->feed(std::string_view(buffer, static_cast<size_t>(n)));
    return true;
  }
  // A pseudo-terminal reports EIO, not end of file, once the PE and its children closed it.
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) close_stream(pe, is_stderr);
  return false;
}

void job::drain(pe_process& pe) {
  // Everything a PE wrote before it exited is in its pipes now (a pipe write completes before
  // write() returns), so reading until a pipe is empty (EAGAIN) gets all of it. Bounded, for a
  // pipe that something the PE started keeps filling.
  for (bool is_stderr : {false, true}) {
    for (int i = 0; i < max_drain_reads && read_pipe(pe, is_stderr); ++i) {
    }
  }
}

std::vector<int> job::running_ranks() const {
  std::vector<int> ranks;
  for (const pe_process& pe : pes_) {
    if (!pe.ended) ranks.push_back(pe.rank);
  }
  return ranks;
}

void job::signal_all(int sig) {
  for (pe_process& pe : pes_) {
    if (pe.pid <= 0) continue;
    // The group reaches whatever the PE started, also after the PE itself has exited: it is still
    // an unreaped zombie, so its pid (the group id) cannot have been reused.
    kill(-pe.pid, sig);
    if (!pe.ended) {
      // Only when the PE has moved itself to another group: a second copy of the signal would run
      // a PE's handler twice (a shell's trap does).
      if (getpgid(pe.pid) != pe.pid) kill(pe.pid, sig);
      pe.signalled = true;
    }
  }
}

void job::begin_stop(int sig) {
  stopping_ = true;
  timeout_at_.reset();
  signal_all(sig);
  kill_at_ = steady::now() + to_duration(options_.kill_grace_s);
}

void job::on_pe_end(pe_process& pe, const siginfo_t& info) {
  pe.ended = true;
  --running_;
  bool by_signal = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  pe.status = by_signal ? 128 + info.si_status : info.si_status;
  // Its last words before our verdict on it.
  drain(pe);
  if (pe.signalled || pe.status == 0) return;  // exiting 0 early is the library's business

  if (by_signal) {
    const char* name = strsignal(info.si_status);
    say(fmt::format("PE {} killed by signal {} ({})", pe.rank, info.si_status, name != nullptr ? name : "unknown"));
  } else {
    say(fmt::format("PE {} exited with status {}", pe.rank, pe.status));
  }
  if (first_failure_status_ == 0) first_failure_status_ = pe.status;
  if (!stopping_ && running_ > 0 && !stop_at_) stop_at_ = steady::now() + failed_pe_grace;
}

void job::check_children() {
  // WNOWAIT: note the exit but leave the PE a zombie until the whole job is over, so that its pid
  // -- which is also its process group id -- stays ours and kill(-pid) can never hit a stranger.
  for (pe_process& pe : pes_) {
    if (pe.ended || pe.pid <= 0) continue;
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pe.pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0 || info.si_pid == 0) {
      continue;
    }
    on_pe_end(pe, info);
  }
}

void job::handle_signals() {
  signalfd_siginfo info{};
  bool child_event = false;
  while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      child_event = true;  // SIGCHLDs coalesce: check every PE once below
      continue;
    }
    if (interrupted_by_ == 0) {
      interrupted_by_ = sig;
      interrupted_at_ = steady::now();
    }
    const char* name = strsignal(sig);
    if (!stopping_) {
      say(fmt::format("got signal {} ({}); passing it on to the PEs", sig, name != nullptr ? name : "unknown"));
      begin_stop(sig);
    } else if (!killed_ && steady::now() - interrupted_at_ >= repeat_signal_gap) {
      // Asked again while the PEs are still stopping: no more grace.
      say("got another signal; sending SIGKILL to the PEs");
      signal_all(SIGKILL);
      killed_ = true;
    }
  }
  if (child_event) check_children();
}

void job::on_deadlines() {
  steady::time_point now = steady::now();
  if (timeout_at_ && now >= *timeout_at_) {
    say(fmt::format("timeout after {} s; PEs still running: {}", options_.timeout_s, format_ranks(running_ranks())));
    timed_out_ = true;
    begin_stop(SIGTERM);
  } else if (stop_at_ && !stopping_ && now >= *stop_at_) {
    if (running_ > 0) begin_stop(SIGTERM);
  } else if (kill_at_ && !killed_ && now >= *kill_at_) {
    say(fmt::format("PEs still running {} s after SIGTERM, sending SIGKILL: {}", options_.kill_grace_s,
                    format_ranks(running_ranks())));
    signal_all(SIGKILL);
    killed_ = true;
  }
}

int job::poll_timeout_ms() const {
  std::optional<steady::time_point> next;
  if (timeout_at_) next = timeout_at_;
  if (kill_at_ && !killed_ && (!next || *kill_at_ < *next)) next = kill_at_;
  if (stop_at_ && !stopping_ && (!next || *stop_at_ < *next)) next = stop_at_;
  if (!next) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - steady::now()).count();
  return static_cast<int>(std::clamp<decltype(left)>(left, 0, 24 * 3600 * 1000));
}

void job::supervise() {
  std::vector<pollfd> fds;
  struct owner {
    size_t pe;
    bool is_stderr;
  };
  std::vector<owner> owners;
  while (running_ > 0) {
    fds.assign(1, pollfd{signal_fd_, POLLIN, 0});
    owners.assign(1, owner{0, false});
    for (size_t i = 0; i < pes_.size(); ++i) {
      if (pes_[i].out_fd >= 0) {
        fds.push_back(pollfd{pes_[i].out_fd, POLLIN, 0});
        owners.push_back(owner{i, false});
      }
      if (pes_[i].err_fd >= 0) {
        fds.push_back(pollfd{pes_[i].err_fd, POLLIN, 0});
        owners.push_back(owner{i, true});
      }
    }
    int ready = poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0 && errno != EINTR) throw_system("poll", errno);
    if (ready > 0) {
      // Output first, then exits: a PE's output is relayed before the report of its death.
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        pe_process& pe = pes_[owners[i].pe];
        // Skip an fd that a drain closed (or closed and reused) since the poll set was built.
        if ((owners[i].is_stderr ? pe.err_fd : pe.out_fd) == fds[i].fd) read_pipe(pe, owners[i].is_stderr);
      }
      if (fds[0].revents != 0) handle_signals();
    }
    on_deadlines();
  }
}

void job::drain_until(steady::time_point deadline) {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    for (pe_process& pe : pes_) {
      drain(pe);
      for (int fd : {pe.out_fd, pe.err_fd}) {
        if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
      }
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (fds.empty() || left <= 0) return;
    if (poll(fds.data(), fds.size(), static_cast<int>(left)) <= 0) return;
  }
}

void job::finish() {
  // Every PE has ended. A stopped job takes with it whatever its PEs started; their last bytes
  // are read until every pipe is at end of file or the window closes. A pipe still open after
  // that (or at once, in a job that ended by itself) belongs to something a PE left running: take
  // what is there now and stop listening rather than wait for it.
  if (stopping_) {
    for (pe_process& pe : pes_) kill(-pe.pid, SIGKILL);
  }
  drain_until(steady::now() + (stopping_ ? steady::duration(stopped_drain_window) : steady::duration::zero()));
  for (pe_process& pe : pes_) {
    close_stream(pe, false);
    close_stream(pe, true);
  }
  for (pe_process& pe : pes_) {
    while (waitpid(pe.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

int job::exit_status() const {
  if (timed_out_) return timeout_status;
  if (first_failure_status_ != 0) return first_failure_status_;
  return interrupted_by_ != 0 ? 128 + interrupted_by_ : 0;
}

int job::run() {
  prepare_process();
  open_bootstrap_listener();
  if (options_.timeout_s > 0) timeout_at_ = steady::now() + to_duration(options_.timeout_s);
  spawn_all();
  // A PE may have ended already; its SIGCHLD is waiting in the signalfd for the first poll.
  supervise();
  finish();
  return exit_status();
}

}  // namespace

int run_job(const launch_options& options) {
  job j(options);
  return j.run();
}

}  // namespace shoal::run
