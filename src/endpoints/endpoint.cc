#include "nbdcopy/endpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

namespace nbdcopy {

Status Endpoint::Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  out->push_back(Extent{offset, length, false});
  return Status::Ok();
}

Status Endpoint::Truncate(uint64_t size) { return Status::Error(name() + ": cannot be resized"); }

Result<std::unique_ptr<Endpoint>> Endpoint::Connect() {
  return Status::Error(name() + ": cannot open another connection");
}

void Endpoint::StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) {
  Result<size_t> got = Read(offset, buffer);
  Status status = got.ok() ? Status::Ok() : got.status();
  if (status.ok() && *got != buffer.size()) {
    status = IoError(name(), "read", offset, buffer.size(), "unexpected end of data");
  }
  completions_.push_back(Completion{tag, std::move(status)});
}

void Endpoint::StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) {
  completions_.push_back(Completion{tag, Write(offset, data)});
}

void Endpoint::StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) {
  completions_.push_back(Completion{tag, Zero(offset, length, allocate)});
}

void Endpoint::TakeCompletions(std::vector<Completion>* out) {
  for (Completion& completion : completions_) out->push_back(std::move(completion));
  completions_.clear();
}

Status WriteZeroBytes(Endpoint& endpoint, uint64_t offset, uint64_t length) {
  constexpr uint64_t kChunk = 1024 * 1024;
  // Page-aligned, so that a block device's direct writes take it as it is.
  alignas(4096) static const std::byte zeroes[kChunk] = {};
  // Within the endpoint's largest write; offsets stay aligned as they came.
  uint64_t chunk = kChunk;
  if (uint32_t maximum = endpoint.info().max_block_size; maximum != 0) {
    chunk = std::min<uint64_t>(chunk, std::bit_floor(maximum));
  }
  while (length > 0) {
    uint64_t n = std::min(length, chunk);
    Status status = endpoint.Write(offset, std::span(zeroes, n));
    if (!status.ok()) return status;
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status IoError(const std::string& name, const char* op, uint64_t offset, uint64_t length,
               const std::string& why) {
  return Status::Error(
      fmt::format("{}: {} at offset {} length {}: {}", name, op, offset, length, why));
}

Status IoError(const std::string& name, const char* op, uint64_t offset, uint64_t length,
               int error_number) {
  return Status::ErrorWithErrno(
      IoError(name, op, offset, length, std::strerror(error_number)).message(), error_number);
}

}  // namespace nbdcopy
