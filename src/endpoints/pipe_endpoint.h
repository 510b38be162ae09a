// PipeEndpoint: stdin/stdout, FIFOs, character devices, sockets
// (sequential; the size is found by reading to the end).
#ifndef NBDCOPY_PIPE_ENDPOINT_H_
#define NBDCOPY_PIPE_ENDPOINT_H_

#include <string>

#include "base/unique_fd.h"
#include "nbdcopy/endpoint.h"

namespace nbdcopy {

class PipeEndpoint : public Endpoint {
 public:
  PipeEndpoint(std::string name, UniqueFd fd);

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override;
  Status Flush() override { return Status::Ok(); }

 private:
  std::string name_;
  UniqueFd fd_;
  EndpointInfo info_;
  uint64_t position_ = 0;  // bytes read or written so far
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PIPE_ENDPOINT_H_
