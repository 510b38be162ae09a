// NullEndpoint: "null:", a destination that discards everything.
#ifndef NBDCOPY_NULL_ENDPOINT_H_
#define NBDCOPY_NULL_ENDPOINT_H_

#include <memory>
#include <string>

#include "nbdcopy/endpoint.h"

namespace nbdcopy {

class NullEndpoint : public Endpoint {
 public:
  NullEndpoint();

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override { return Status::Ok(); }
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override { return Status::Ok(); }
  Status Flush() override { return Status::Ok(); }
  Result<std::unique_ptr<Endpoint>> Connect() override {
    return std::unique_ptr<Endpoint>(new NullEndpoint());
  }

 private:
  std::string name_ = "null:";
  EndpointInfo info_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NULL_ENDPOINT_H_
