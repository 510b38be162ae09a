// Turns an EndpointSpec into an open Endpoint of the right kind. The only
// place that knows which kinds exist.
#ifndef NBDCOPY_OPEN_ENDPOINT_H_
#define NBDCOPY_OPEN_ENDPOINT_H_

#include <memory>

#include "nbdcopy/endpoint.h"
#include "nbdcopy/endpoint_spec.h"

namespace nbdcopy {

struct OpenFlags {
  bool debug = false;  // libnbd debug messages on stderr
};

// Opening a destination never writes to it: a missing regular file is
// created empty, an existing one keeps its contents until Truncate().
Result<std::unique_ptr<Endpoint>> OpenEndpoint(const EndpointSpec& spec, Role role,
                                               const OpenFlags& flags);

}  // namespace nbdcopy

#endif  // NBDCOPY_OPEN_ENDPOINT_H_
