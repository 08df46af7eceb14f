// Bootstrap: how PEs find each other and exchange small host blobs before (and beside) the
// symmetric heap. A TCP star around PE 0: every other PE connects to PE 0's listener and proves
// it knows the job's 128-bit secret; PE 0 relays all-gathers, barriers and broadcasts.
// A second connection per PE carries heartbeats so a dead or silent PE stops the whole job, and the
// mail of all-gathers among a subset of the PEs (allgather_among), which PE 0's monitor thread forwards.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::detail {

/// The call name under which a PE that leaves without shoal_finalize runs its finalize: at exit with
/// status `exit_status` (>= 0), "exit(S) without shoal_finalize"; otherwise (a world destroyed without
/// finalize while the process goes on) "world destroyed without finalize". Mismatch reports phrase it
/// as what the PE did (left_without_finalize), not as a call the program made.
std::string left_without_finalize_call(int exit_status);
/// What a PE did, for a call name made by left_without_finalize_call: "exited with status S without
/// calling shoal_finalize", or "destroyed its world without calling finalize"; nullopt for any other.
std::optional<std::string> left_without_finalize(std::string_view call);
/// True for shoal_finalize and the call names of left_without_finalize_call: every PE finalizing, some
/// by call and some on the way out, is one collective, not a mismatch.
bool is_finalize_call(std::string_view call);
/// The status in a mismatch report's "PE k exited with status S without calling shoal_finalize", or
/// nullopt. A job stopped by such a PE ends with its status on every PE (mpirun's rule: the first
/// failing process's status), not with 1.
std::optional<int> left_pe_exit_status(std::string_view message);

/// Where PE 0 listens plus the job secret. Text form (env SHOAL_BOOTSTRAP_UID):
///   shoal-uid-v1:<ipv4 or [ipv6]>:<port>:<32 lowercase hex digits>
struct unique_id {
  sockaddr_storage addr{};           ///< PE 0's listener (AF_INET or AF_INET6)
  std::array<uint8_t, 16> secret{};  ///< random; a peer that can't present it is refused

  /// Random secret (from getrandom) and the given address.
  static unique_id generate(const sockaddr_storage& listen_addr);
  /// Parses the text form; throws shoal::error(invalid_argument) naming `what` on bad text.
  static unique_id parse(std::string_view text, std::string_view what = "SHOAL_BOOTSTRAP_UID");
  std::string to_string() const;
  std::string address_string() const;  ///< "127.0.0.1:4242" / "[::1]:4242"

  /// Fixed-size binary form for shoal_uniqueid_t (128 bytes); round-trips with from_bytes.
  void to_bytes(uint8_t (&out)[128]) const;
  static unique_id from_bytes(const uint8_t (&in)[128], std::string_view what);
};

/// Opens a TCP listener on `bind_addr` (port 0 = any free port), returns its fd and fills in the
/// bound address. Used by PE 0 and by shoal::launch::open_listener (<shoal/launch.hpp>: a launcher hands
/// the fd to PE 0 through exec).
int open_listener(const std::string& bind_host, uint16_t port, sockaddr_storage* bound);

struct bootstrap_options {
  int rank = -1;
  int size = -1;
  unique_id uid;
  int listen_fd = -1;  ///< PE 0 only: an already-listening socket (from shoalrun); -1: bind uid.addr.
                       ///< connect() owns it from then on and closes it once the rendezvous is over.
  std::chrono::milliseconds connect_timeout{30000};  ///< every PE must arrive within this
  std::chrono::milliseconds peer_timeout{10000};     ///< heartbeat silence after which a PE is dead
  /// Longest wait inside one collective for the other PEs to enter it; 0: unbounded (a dead PE is
  /// still caught by the liveness monitor, a live PE that never calls is waited for).
  std::chrono::milliseconds collective_timeout{0};
  std::string uid_file;  ///< PE 0 only: a rendezvous file (launch_env) to remove once every PE arrived
};

/// Exit status passed to the failure handler when a PE died or went silent (abort_job passes its own).
inline constexpr int peer_failure_status = 1;

/// Called (from the monitor thread; see abort_job for the exceptions) when the job must stop: another
/// PE died, went silent, or called global_exit. `status` is the exit status to use; `why` names the PE
/// and the cause. Called at most once per PE; it must not destroy the bootstrap.
using failure_handler = std::function<void(int status, const std::string& why)>;

class bootstrap {
 public:
  /// Collective: rendezvous with every PE; throws shoal::error(timeout) naming the ranks that
  /// never arrived, (invalid_argument) for bad rank/size, (mismatch) when sizes differ.
  /// `on_failure` may be empty: the default prints the reason and _exits with the status.
  static std::unique_ptr<bootstrap> connect(const bootstrap_options& options, failure_handler on_failure);

  virtual ~bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Collective. Every PE contributes `bytes_per_pe` bytes at `mine`; `all` receives size()*bytes_per_pe
  /// bytes in rank order. `call` names the public API call (for mismatch reports): if PEs pass a
  /// different `call` or byte count, every PE throws shoal::error(mismatch) naming both.
  /// After a mismatch the bootstrap stays usable (every PE took part in the failed round) unless one
  /// of the PEs had called finalize. Any other failure (a PE died, timeout) leaves it broken: every
  /// later collective throws shoal::error(peer_failure) repeating the first cause.
  virtual void allgather(const void* mine, void* all, size_t bytes_per_pe, std::string_view call) = 0;
  /// Collective: returns once every PE has entered.
  virtual void barrier(std::string_view call) = 0;
  /// Collective: `bytes` at `data` on `root` are copied to `data` on every PE.
  virtual void broadcast(void* data, size_t bytes, int root, std::string_view call) = 0;
  /// Collective over `members` only: distinct ranks, this PE among them, the same list in the same
  /// order on every member; the other PEs take no part and may be anywhere (in another collective,
  /// computing). Each member contributes `bytes_per_pe` bytes at `mine`; `all` receives
  /// members.size()*bytes_per_pe bytes in list order. `tag` names the exchange: the same on every
  /// member, never the same for two exchanges a member may be in at once or one after the other
  /// (disjoint groups may use one tag only if their first members differ: mail is keyed by sender).
  /// Runs as mail through PE 0 (gathered by members[0], which sends the result to each member), so
  /// it does not disturb the collective rounds. Bounded by the collective timeout: errc::timeout on
  /// the first member, naming the members it never heard from, and on the others with its message;
  /// the bootstrap stays usable. A member that dies or goes silent fails it with errc::peer_failure.
  /// Contributions of different sizes fail every member that sent one with errc::mismatch.
  virtual void allgather_among(const std::vector<int>& members, uint64_t tag, const void* mine, void* all,
                               size_t bytes_per_pe, std::string_view call);

  /// Tells every PE to stop with `status` (shoal_global_exit, or a PE stopping on an error); `why` is
  /// what every PE reports. The handler runs everywhere, this PE included: on the monitor threads, or
  /// on the caller when no monitor runs (one PE, after finalize, or PE 0 unreachable). Returns once
  /// the handler has run here (or after a bounded wait), so that a caller that exits next does not
  /// close its connections before PE 0 has taken the reason. Any thread but the monitor's may call it.
  virtual void abort_job(int status, const std::string& why) = 0;
  /// Orderly end: after this, this PE's disconnect is not a failure. Collective (reported as
  /// "shoal_finalize" in mismatches); stops the monitor thread. Throws shoal::error(peer_failure)
  /// when the bootstrap was already broken (the sockets are closed all the same).
  virtual void finalize() = 0;
};

}  // namespace shoal::detail
