// FileEndpoint's direct writes to a block device: a second open file
// description of the device with O_DIRECT, so that written bytes go from
// the copy's buffers to the device instead of into its page cache.
//
// Why: through the page cache a block device takes the writes at memory
// speed and writes them back later, and its last close waits for all of
// that writeback: on a loop device over tmpfs our close waited 0.25 s of a
// 0.39 s copy, while nbdcopy starts the writeback after every write
// (sync_file_range) and drops what was written. Direct writes reach the
// device while the copy runs, copy each byte once less, and leave no page
// cache behind; a worker keeps several in flight through io_uring, since
// each waits for the device (performance-history.md, "Direct writes to
// block devices").
//
// Direct I/O takes only offsets, lengths and buffers aligned to the
// device's logical sector. The copy plan aligns every request to it
// (EndpointInfo::min_block_size) but the last of an image whose size is
// not a multiple; that write, and any buffer off the alignment, goes
// through an aligned bounce buffer, reading first the sectors it covers in
// part. Reads, zeroes and flushes keep the ordinary descriptor: fallocate
// and BLKZEROOUT drop the cached pages they cover, and a direct write
// drops the pages it wrote, so the two descriptors never disagree.
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "endpoints/file_endpoint.h"
#include "endpoints/pwrite_all.h"

namespace nbdcopy {

void FileEndpoint::EnableDirectWrites() {
  // The bounce buffer reads the sectors a write covers in part.
  if ((fcntl(fd_.get(), F_GETFL) & O_ACCMODE) != O_RDWR) return;
  // The same device, whatever name (or stdout) it came by.
  const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
  UniqueFd direct(open(self.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC | O_NOCTTY));
  if (!direct.valid()) return;  // no O_DIRECT here (or no /proc): the page cache
  direct_fd_ = std::move(direct);
  info_.direct_writes = true;
}

bool FileEndpoint::DirectAligned(uint64_t offset, uint64_t length, const void* data) const {
  const uint64_t mask = info_.min_block_size - 1;  // a power of 2
  return ((offset | length | reinterpret_cast<uintptr_t>(data)) & mask) == 0;
}

Status FileEndpoint::WriteDirect(uint64_t offset, std::span<const std::byte> data) {
  if (!DirectAligned(offset, data.size(), data.data())) return WriteThroughBounce(offset, data);
  // (A direct write to a block device transfers whole sectors, so what a
  // short one leaves stays aligned.)
  if (int error = PwriteAll(direct_fd_.get(), data, offset); error != 0) {
    return IoError(name_, "write", offset, data.size(), error);
  }
  return Status::Ok();
}

Status FileEndpoint::WriteThroughBounce(uint64_t offset, std::span<const std::byte> data) {
  const uint64_t alignment = info_.min_block_size;
  const uint64_t start = offset / alignment * alignment;
  const uint64_t end = (offset + data.size() + alignment - 1) / alignment * alignment;
  if (info_.size && end > *info_.size) {  // a device's size is whole sectors
    return IoError(name_, "write", offset, data.size(), "beyond the end of the device");
  }
  void* memory = nullptr;
  if (posix_memalign(&memory, alignment, end - start) != 0) {
    return IoError(name_, "write", offset, data.size(), ENOMEM);
  }
  std::unique_ptr<std::byte, decltype(&std::free)> bounce(static_cast<std::byte*>(memory),
                                                          &std::free);
  // The sectors at either end that the write covers in part keep their
  // other bytes: read them from the device first.
  auto read_sector = [&](uint64_t at) -> Status {
    size_t got = 0;
    while (got < alignment) {
      ssize_t n = pread(direct_fd_.get(), bounce.get() + (at - start) + got, alignment - got,
                        static_cast<off_t>(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return IoError(name_, "write", offset, data.size(),
                       fmt::format("reading its first or last sector: {}", std::strerror(errno)));
      }
      if (n == 0) return IoError(name_, "write", offset, data.size(), "unexpected end of device");
      got += static_cast<size_t>(n);
    }
    return Status::Ok();
  };
  const bool head_partial = offset != start;
  const bool tail_partial = offset + data.size() != end;
  if (head_partial) {
    if (Status status = read_sector(start); !status.ok()) return status;
  }
  if (tail_partial && !(head_partial && end - alignment == start)) {
    if (Status status = read_sector(end - alignment); !status.ok()) return status;
  }
  std::memcpy(bounce.get() + (offset - start), data.data(), data.size());
  if (int error = PwriteAll(direct_fd_.get(), {bounce.get(), end - start}, start); error != 0) {
    return IoError(name_, "write", offset, data.size(), error);
  }
  return Status::Ok();
}

}  // namespace nbdcopy
