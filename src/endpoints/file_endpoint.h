// FileEndpoint: a regular file or a block device (random access): pread and
// pwrite, SEEK_DATA/SEEK_HOLE extents, fallocate and BLKZEROOUT for zeroes,
// FICLONERANGE (file_endpoint.cc); overlapped I/O through io_uring
// (file_endpoint_async.cc); direct writes to a block device
// (file_endpoint_direct.cc).
#ifndef NBDCOPY_FILE_ENDPOINT_H_
#define NBDCOPY_FILE_ENDPOINT_H_

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "endpoints/uring.h"
#include "nbdcopy/endpoint.h"

namespace nbdcopy {

class FileEndpoint : public Endpoint {
 public:
  // REQUIRES fd refers to a regular file or block device described by st.
  // overlapped: I/O through io_uring where the kernel allows it (and in
  // every connection made from this one). A writable block device always
  // asks for the ring and, with it, writes past its page cache
  // (file_endpoint_direct.cc). io_uring false: never the ring, plain
  // system calls only, block devices too (OpenFlags::io_uring).
  static Result<std::unique_ptr<FileEndpoint>> Create(std::string name, UniqueFd fd,
                                                      const struct stat& st, bool writable,
                                                      bool overlapped, bool io_uring = true);

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override;
  Status Flush() override;
  Status Settle() override;
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override;
  Status Truncate(uint64_t size) override;
  Result<std::unique_ptr<Endpoint>> Connect() override;
  // FICLONERANGE from another regular file (file_endpoint.cc).
  CloneResult CloneRangeFrom(Endpoint& source, uint64_t offset, uint64_t length) override;

  // Overlapped I/O through io_uring (file_endpoint_async.cc) where the
  // kernel allows it; otherwise the synchronous calls run at once. Started
  // operations reach the kernel in one batch at the next TakeCompletions().
  void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) override;
  void StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) override;
  void StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) override;
  void TakeCompletions(std::vector<Completion>* out) override;
  PollInterest poll_interest() const override;

 private:
  // One operation in the ring; its address is the ring's cookie.
  struct AsyncOp {
    enum class Kind { kRead, kWrite, kZero };
    Kind kind = Kind::kRead;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::byte* data = nullptr;  // reads and writes
    uint64_t done = 0;          // bytes transferred so far
    bool allocate = false;      // zeroes
    uint64_t tag = 0;
  };

  FileEndpoint(std::string name, UniqueFd fd, bool is_block_device)
      : name_(std::move(name)), fd_(std::move(fd)), is_block_device_(is_block_device) {}
  // The ring, if the kernel gives one; synchronous calls otherwise.
  void EnableOverlappedIo();
  // Direct writes (file_endpoint_direct.cc). REQUIRES a block device.
  void EnableDirectWrites();
  bool DirectAligned(uint64_t offset, uint64_t length, const void* data) const;
  Status WriteDirect(uint64_t offset, std::span<const std::byte> data);
  // Any write, through an aligned buffer.
  Status WriteThroughBounce(uint64_t offset, std::span<const std::byte> data);
  AsyncOp* NewOp(AsyncOp::Kind kind, uint64_t offset, uint64_t length, std::byte* data,
                 uint64_t tag);
  void Queue(AsyncOp* op);  // the next (or only) part of op
  void OnOpDone(AsyncOp* op, int result);
  void Complete(AsyncOp* op, Status status);
  // fallocate mode for a zero operation, or -1 when only the synchronous
  // fallbacks are left.
  int ZeroMode(bool allocate) const;
  // Each returns false (without error) when the kernel or file system lacks it.
  bool TryPunchHole(uint64_t offset, uint64_t length);
  bool TryZeroRange(uint64_t offset, uint64_t length);
  bool TryBlockZeroOut(uint64_t offset, uint64_t length);

  std::string name_;
  UniqueFd fd_;
  bool is_block_device_;
  EndpointInfo info_;
  uint64_t end_of_file_ = 0;  // regular files: grows as a stream is copied in
  bool punch_hole_works_ = true;
  bool zero_range_works_ = true;
  bool block_zero_out_works_ = true;
  // O_DIRECT, for writes, aligned to info_.min_block_size (the logical
  // sector); invalid: writes use fd_.
  UniqueFd direct_fd_;

  std::unique_ptr<Uring> uring_;  // null: synchronous I/O
  bool uring_failed_ = false;     // a submission failed: every later op fails
  std::vector<std::unique_ptr<AsyncOp>> ops_;
  std::vector<AsyncOp*> free_ops_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_FILE_ENDPOINT_H_
