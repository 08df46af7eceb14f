// What a launcher needs from shoal to start the PEs of one job: a bootstrap listener for PE 0 and the
// unique id that names it. shoalrun uses this header alone and links the archive shoal_launch, so it never
// loads libshoal; libshoal exports the same call for other launchers.
#pragma once

#include <string>

#include "shoal/types.h"

namespace shoal::launch {

/// A bootstrap listener opened for one job, and the unique id that names it.
struct listener {
  int fd = -1;            ///< listening TCP socket, close-on-exec; the caller owns it
  std::string unique_id;  ///< text form "shoal-uid-v1:ADDR:PORT:SECRET": the bound address and a fresh secret
};

/// Opens a TCP listener on `bind_host` (a numeric address or a host name that the PEs can reach) at a port
/// the system picks, and makes the unique id for it with a new 128-bit random secret. A launcher gives every
/// PE the id (SHOAL_BOOTSTRAP_UID) and PE 0 the fd (SHOAL_BOOTSTRAP_FD, with close-on-exec cleared in PE 0's
/// child only); PE 0's init accepts the others on it, so no other process can take the port between the id
/// and the init. Not collective; thread-safe. Throws shoal::error (errc::invalid_argument when `bind_host`
/// does not resolve, errc::system when a socket call fails, naming "shoal bootstrap listener"); no fd stays
/// open then.
SHOAL_API listener open_listener(const std::string& bind_host);

}  // namespace shoal::launch
