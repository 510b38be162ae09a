// Turns an EndpointSpec into an open Endpoint of the right kind. The only
// place that knows which kinds exist.
#ifndef NBDCOPY_OPEN_ENDPOINT_H_
#define NBDCOPY_OPEN_ENDPOINT_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/file_system.h"  // kNewFileMode
#include "endpoints/endpoint_spec.h"
#include "endpoints/reconnect_notices.h"
#include "nbdcopy/endpoint.h"

namespace nbdcopy {

struct OpenFlags {
  bool debug = false;  // libnbd debug messages on stderr
  // Source: ask an NBD server for this dirty bitmap (NbdEndpoint::Connect).
  std::string dirty_bitmap;
  // Destination: a missing file is an error instead of being created.
  bool must_exist = false;
  unsigned timeout = 0;  // NBD: seconds a server may stay silent; 0: forever
  unsigned retry = 0;    // NBD by URI: attempts to re-establish a dropped connection
  std::shared_ptr<ReconnectNotices> notices;  // NBD: told of reconnects; may be null
};

// Opening a destination never writes to it: a missing regular file is
// created empty (unless flags.must_exist), an existing one keeps its
// contents until Truncate().
Result<std::unique_ptr<Endpoint>> OpenEndpoint(const EndpointSpec& spec, Role role,
                                               const OpenFlags& flags);

}  // namespace nbdcopy

#endif  // NBDCOPY_OPEN_ENDPOINT_H_
