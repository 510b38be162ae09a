// Whether a re-established NBD connection reaches the export the copy was
// planned with. A copy plans its requests with the first connection's
// size, flags and block sizes; every later connection (another worker's,
// or one re-established by --retry) must find the same, or it talks to
// another export and nothing it would do could be trusted.
#ifndef NBDCOPY_NBD_EXPORT_CHANGE_H_
#define NBDCOPY_NBD_EXPORT_CHANGE_H_

#include <string>

#include "nbdcopy/endpoint.h"

namespace nbdcopy {

// "" when `now` has every property the copy planned with as `was` has it;
// otherwise each property that differs, with both values, in the form
// "size 34603008, was 33554432; multi-conn no, was yes". Compared: the
// size, read-only, flush, multi-conn, block status (extents), zero, and
// the minimum and maximum block sizes (the preferred size is advice).
[[nodiscard]] std::string ExportChange(const EndpointInfo& was, const EndpointInfo& now);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_EXPORT_CHANGE_H_
