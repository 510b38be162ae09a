#include "nbdcopy/endpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace nbdcopy {

Status Endpoint::Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  out->push_back(Extent{offset, length, false});
  return Status::Ok();
}

Status Endpoint::Truncate(uint64_t size) {
  return Status::Error(name() + ": cannot be resized", EINVAL);
}

Status WriteZeroBytes(Endpoint& endpoint, uint64_t offset, uint64_t length) {
  constexpr uint64_t kChunk = 1024 * 1024;
  static const std::vector<std::byte> zeroes(kChunk);
  while (length > 0) {
    uint64_t n = std::min(length, kChunk);
    Status status = endpoint.Write(offset, std::span(zeroes.data(), n));
    if (!status.ok()) return status;
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status IoError(const std::string& name, const char* op, uint64_t offset, uint64_t length,
               const std::string& why, int error_number) {
  return Status::Error(
      fmt::format("{}: {} at offset {} length {}: {}", name, op, offset, length, why),
      error_number);
}

}  // namespace nbdcopy
