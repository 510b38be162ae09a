// A fake source that only describes itself: subclasses answer Extents();
// reading, writing and zeroing fail. For the work map's unit tests and
// fuzz target, which must never touch data.
#ifndef NBDCOPY_TESTS_SUPPORT_DESCRIBED_IMAGE_H_
#define NBDCOPY_TESTS_SUPPORT_DESCRIBED_IMAGE_H_

#include <string>

#include "nbdcopy/endpoint.h"

namespace nbdcopy::fakes {

class DescribedImage : public Endpoint {
 public:
  explicit DescribedImage(uint64_t size) {
    info_.size = size;
    info_.can_extents = true;
  }
  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t, std::span<std::byte>) override { return Status::Error("no"); }
  Status Write(uint64_t, std::span<const std::byte>) override { return Status::Error("no"); }
  Status Zero(uint64_t, uint64_t, bool) override { return Status::Error("no"); }
  Status Flush() override { return Status::Ok(); }

 private:
  std::string name_ = "described";
  EndpointInfo info_;
};

}  // namespace nbdcopy::fakes

#endif  // NBDCOPY_TESTS_SUPPORT_DESCRIBED_IMAGE_H_
