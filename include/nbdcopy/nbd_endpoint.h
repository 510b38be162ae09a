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
  // debug messages (stderr). A non-empty dirty_bitmap asks for the meta
  // context "qemu:dirty-bitmap:NAME" as well and fails unless the server
  // offers it; Extents() then marks the unchanged ranges clean.
  static Result<std::unique_ptr<NbdEndpoint>> Connect(const EndpointSpec& spec, Role role,
                                                      bool debug,
                                                      const std::string& dirty_bitmap = "");

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override;
  Status Flush() override;
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override;
  Result<std::unique_ptr<Endpoint>> Connect() override;

  void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) override;
  void StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) override;
  void StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) override;
  PollInterest poll_interest() const override;
  void OnPollEvents(short revents) override;

  // One asynchronous command: what libnbd's completion callback needs to
  // report it. Pooled, so a steady copy allocates none.
  struct Command {
    NbdEndpoint* endpoint;
    const char* op;
    uint64_t offset;
    uint64_t length;
    uint64_t tag;
  };

 private:
  NbdEndpoint(const EndpointSpec& spec, Role role, bool debug, std::string dirty_bitmap,
              NbdHandle handle)
      : spec_(spec),
        role_(role),
        debug_(debug),
        dirty_bitmap_(std::move(dirty_bitmap)),
        name_(DisplayName(spec)),
        handle_(std::move(handle)) {}
  Status LastError(const char* op, uint64_t offset, uint64_t length) const;
  // The request covers the short last block of an export whose size is not
  // a multiple of the minimum block size: libnbd's alignment check would
  // refuse it, yet the protocol allows it.
  bool IsShortTail(uint64_t offset, uint64_t length) const;
  // Runs `start` (a libnbd call) with the alignment check off for short tails.
  template <typename Call>
  int WithTailAllowed(uint64_t offset, uint64_t length, Call start);
  Command* NewCommand(const char* op, uint64_t offset, uint64_t length, uint64_t tag);
  // Records the end of command (error_number 0 = success) and recycles it.
  void Finish(Command* command, int error_number);
  // A Start* call that libnbd refused: report it as a completion.
  void FailToStart(Command* command);
  static int OnCommandDone(void* user_data, int* error);

  const EndpointSpec spec_;
  const Role role_;
  const bool debug_;
  const std::string dirty_bitmap_;  // "" or the bitmap's NAME
  std::string dirty_context_;       // "" or "qemu:dirty-bitmap:NAME"
  std::string name_;
  EndpointInfo info_;
  bool can_zero_ = false;
  std::vector<std::unique_ptr<Command>> commands_;  // owns every Command
  std::vector<Command*> free_commands_;
  // Last, so it closes first: closing may still run completion callbacks.
  NbdHandle handle_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_ENDPOINT_H_
