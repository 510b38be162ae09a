// An NBD server reached through libnbd: by URI (nbd://, nbds+unix://, vsock,
// TLS with tls-psk-file=) or as "[ CMD ARGS ... ]", a server that libnbd
// starts with systemd socket activation and stops when the handle closes.
#ifndef NBDCOPY_NBD_ENDPOINT_H_
#define NBDCOPY_NBD_ENDPOINT_H_

#include <memory>
#include <string>

#include "nbdcopy/endpoint.h"
#include "nbdcopy/endpoint_spec.h"

struct nbd_handle;

namespace nbdcopy {

struct NbdHandleCloser {
  void operator()(nbd_handle* handle) const;
};
using NbdHandle = std::unique_ptr<nbd_handle, NbdHandleCloser>;

class NbdEndpoint : public Endpoint {
 public:
  // REQUIRES spec.kind is kNbdUri or kCommand. debug turns on libnbd's
  // debug messages (stderr).
  static Result<std::unique_ptr<NbdEndpoint>> Connect(const EndpointSpec& spec, Role role,
                                                      bool debug);

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override;
  Status Flush() override;
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override;

 private:
  NbdEndpoint(std::string name, NbdHandle handle)
      : name_(std::move(name)), handle_(std::move(handle)) {}
  Status LastError(const char* op, uint64_t offset, uint64_t length) const;

  std::string name_;
  NbdHandle handle_;
  EndpointInfo info_;
  bool can_zero_ = false;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_ENDPOINT_H_
