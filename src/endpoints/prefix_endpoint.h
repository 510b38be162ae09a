// An Endpoint showing only the first `size` bytes of another (reading a
// destination back for --verify when it is larger than the source).
// Everything else is forwarded. Owns the inner endpoint only when given
// ownership.
#ifndef NBDCOPY_PREFIX_ENDPOINT_H_
#define NBDCOPY_PREFIX_ENDPOINT_H_

#include <memory>

#include "nbdcopy/endpoint.h"

namespace nbdcopy {

class PrefixEndpoint : public Endpoint {
 public:
  // REQUIRES size <= inner's size; inner outlives this.
  PrefixEndpoint(Endpoint& inner, uint64_t size) : inner_(inner), info_(inner.info()) {
    info_.size = size;
  }
  PrefixEndpoint(std::unique_ptr<Endpoint> owned, uint64_t size)
      : PrefixEndpoint(*owned, size) {
    owned_ = std::move(owned);
  }

  const std::string& name() const override { return inner_.name(); }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override {
    return inner_.Read(offset, buffer);
  }
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    return inner_.Write(offset, data);
  }
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override {
    return inner_.Zero(offset, length, allocate);
  }
  Status Flush() override { return inner_.Flush(); }
  Status Settle() override { return inner_.Settle(); }
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    return inner_.Extents(offset, length, out);
  }
  Result<std::unique_ptr<Endpoint>> Connect() override {
    auto other = inner_.Connect();
    if (!other.ok()) return other.status();
    return std::unique_ptr<Endpoint>(new PrefixEndpoint(std::move(other).value(), *info_.size));
  }
  void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) override {
    inner_.StartRead(offset, buffer, tag);
  }
  void StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) override {
    inner_.StartWrite(offset, data, tag);
  }
  void StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) override {
    inner_.StartZero(offset, length, allocate, tag);
  }
  void TakeCompletions(std::vector<Completion>* out) override { inner_.TakeCompletions(out); }
  PollInterest poll_interest() const override { return inner_.poll_interest(); }
  void OnPollEvents(short revents) override { inner_.OnPollEvents(revents); }

 private:
  std::unique_ptr<Endpoint> owned_;
  Endpoint& inner_;
  EndpointInfo info_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PREFIX_ENDPOINT_H_
