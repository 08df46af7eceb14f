// <shoal/launch.hpp>: the launcher's side of the bootstrap (the PE's side reads the environment in
// launch_env.cc). Also built into the archive shoal_launch, which shoalrun links instead of libshoal.
#include "shoal/launch.hpp"

#include <sys/socket.h>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/net.hpp"

namespace shoal::launch {

listener open_listener(const std::string& bind_host) {
  sockaddr_storage bound{};
  detail::net::unique_fd fd(detail::open_listener(bind_host, 0, &bound));
  listener out;
  out.unique_id = detail::unique_id::generate(bound).to_string();
  out.fd = fd.release();
  return out;
}

}  // namespace shoal::launch
