// null: a destination that discards everything and zeroes instantly.
#include "endpoints/null_endpoint.h"

#include <errno.h>

namespace nbdcopy {

NullEndpoint::NullEndpoint() {
  info_.ops_name = "null_ops";
  info_.efficient_zero = true;
  info_.can_multi_conn = true;
}

Result<size_t> NullEndpoint::Read(uint64_t offset, std::span<std::byte> buffer) {
  return IoError(name_, "read", offset, buffer.size(), "null: cannot be read");
}

}  // namespace nbdcopy
