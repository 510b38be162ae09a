// Regular files and block devices: pread/pwrite, SEEK_DATA/SEEK_HOLE
// extents, and fallocate/BLKZEROOUT for zeroes.
#include "endpoints/file_endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "endpoints/pwrite_all.h"

namespace nbdcopy {

namespace {

bool IsUnsupported(int error_number) {
  return error_number == EOPNOTSUPP || error_number == ENOTSUP || error_number == ENOSYS ||
         error_number == EINVAL || error_number == ENOTTY;
}

}  // namespace

Result<std::unique_ptr<FileEndpoint>> FileEndpoint::Create(std::string name, UniqueFd fd,
                                                           const struct stat& st, bool writable,
                                                           bool overlapped, bool io_uring) {
  bool block = S_ISBLK(st.st_mode);
  std::unique_ptr<FileEndpoint> endpoint(new FileEndpoint(std::move(name), std::move(fd), block));
  EndpointInfo& info = endpoint->info_;
  info.read_only = !writable;
  if (block) {
    uint64_t size = 0;
    if (ioctl(endpoint->fd_.get(), BLKGETSIZE64, &size) == -1) {
      return Status::FromErrno(endpoint->name_ + ": BLKGETSIZE64", errno);
    }
    info.size = size;
    // The logical sector is the smallest unit the device takes (with
    // BLKZEROOUT and discard); BLKIOMIN its optimal one.
    int logical_sector = 0;
    if (ioctl(endpoint->fd_.get(), BLKSSZGET, &logical_sector) == 0 && logical_sector >= 512) {
      info.min_block_size = static_cast<uint32_t>(logical_sector);
    } else {
      info.min_block_size = 512;
    }
    unsigned int io_min = 0;
    if (ioctl(endpoint->fd_.get(), BLKIOMIN, &io_min) == 0 && io_min >= 512) {
      info.preferred_block_size = io_min;
    }
    info.preferred_block_size = std::max(info.preferred_block_size, info.min_block_size);
    // Reads are buffered; direct writes take a part-sector through a
    // bounce buffer.
    info.partial_blocks_ok = true;
    // A device set read-only (losetup -r, blockdev --setro) still opens for
    // writing; every write would then fail with EPERM. Say so up front.
    int device_read_only = 0;
    if (ioctl(endpoint->fd_.get(), BLKROGET, &device_read_only) == 0 && device_read_only != 0) {
      info.read_only = true;
    }
  } else {
    info.size = static_cast<uint64_t>(st.st_size);
    endpoint->end_of_file_ = *info.size;
    info.resizable = writable;
    info.can_extents = true;
    if (st.st_blksize >= 512) info.preferred_block_size = static_cast<uint32_t>(st.st_blksize);
  }
  info.efficient_zero = true;
  info.can_flush = true;
  info.can_multi_conn = true;
  if (!io_uring) return endpoint;  // plain system calls
  if (block && writable) {
    // Direct writes wait for the device: a worker keeps several in flight
    // through the ring, whatever the other endpoint is.
    endpoint->EnableOverlappedIo();
    if (endpoint->uring_) endpoint->EnableDirectWrites();
  } else if (overlapped) {
    endpoint->EnableOverlappedIo();
  }
  return endpoint;
}

Result<size_t> FileEndpoint::Read(uint64_t offset, std::span<std::byte> buffer) {
  size_t done = 0;
  while (done < buffer.size()) {
    ssize_t n = pread(fd_.get(), buffer.data() + done, buffer.size() - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(name_, "read", offset, buffer.size(), errno);
    if (n == 0) {
      return IoError(name_, "read", offset, buffer.size(), "unexpected end of file");
    }
    done += static_cast<size_t>(n);
  }
  return done;
}

Status FileEndpoint::Write(uint64_t offset, std::span<const std::byte> data) {
  if (direct_fd_.valid()) return WriteDirect(offset, data);
  if (int error = PwriteAll(fd_.get(), data, offset); error != 0) {
    return IoError(name_, "write", offset, data.size(), error);
  }
  end_of_file_ = std::max(end_of_file_, offset + data.size());
  return Status::Ok();
}

bool FileEndpoint::TryPunchHole(uint64_t offset, uint64_t length) {
  if (!punch_hole_works_) return false;
  if (fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length) == 0) {
    return true;
  }
  if (IsUnsupported(errno)) punch_hole_works_ = false;
  return false;
}

bool FileEndpoint::TryZeroRange(uint64_t offset, uint64_t length) {
  if (!zero_range_works_) return false;
  if (fallocate(fd_.get(), FALLOC_FL_ZERO_RANGE, offset, length) == 0) return true;
  if (IsUnsupported(errno)) zero_range_works_ = false;
  return false;
}

bool FileEndpoint::TryBlockZeroOut(uint64_t offset, uint64_t length) {
  if (!block_zero_out_works_) return false;
  uint64_t range[2] = {offset, length};
  if (ioctl(fd_.get(), BLKZEROOUT, range) == 0) return true;
  if (IsUnsupported(errno)) block_zero_out_works_ = false;
  return false;
}

Status FileEndpoint::Zero(uint64_t offset, uint64_t length, bool allocate) {
  if (length == 0) return Status::Ok();
  if (!is_block_device_ && offset + length > end_of_file_) {
    // Growing the file makes the new part read as zero: only the part
    // below the old end needs zeroing.
    uint64_t old_size = end_of_file_;
    if (ftruncate(fd_.get(), static_cast<off_t>(offset + length)) == -1) {
      return IoError(name_, "zero", offset, length, errno);
    }
    end_of_file_ = offset + length;
    if (offset >= old_size) return Status::Ok();
    length = old_size - offset;
  }
  if (is_block_device_) {
    // Punching a hole in a block device discards with guaranteed zeroes.
    if (!allocate && TryPunchHole(offset, length)) return Status::Ok();
    if (TryBlockZeroOut(offset, length)) return Status::Ok();
  } else {
    if (!allocate && TryPunchHole(offset, length)) return Status::Ok();
    if (TryZeroRange(offset, length)) return Status::Ok();
  }
  return WriteZeroBytes(*this, offset, length);
}

Status FileEndpoint::Flush() {
  if (fsync(fd_.get()) == -1) {
    return Status::FromErrno(name_ + ": flush", errno);
  }
  return Status::Ok();
}

// Regular files keep their write-back to the kernel (--flush asks for it):
// waiting for it costs ext4 more than the copy. A block device's last close
// waits for its write-back anyway, but reports no failure of it.
Status FileEndpoint::Settle() {
  if (!is_block_device_ || direct_fd_.valid()) return Status::Ok();
  if (sync_file_range(fd_.get(), 0, 0,
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                          SYNC_FILE_RANGE_WAIT_AFTER) == -1) {
    return Status::FromErrno(name_ + ": writing back the device's page cache", errno);
  }
  return Status::Ok();
}

Status FileEndpoint::Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) {
  if (!info_.can_extents) return Endpoint::Extents(offset, length, out);
  const uint64_t end = offset + length;
  uint64_t position = offset;
  while (position < end) {
    off_t data = lseek(fd_.get(), static_cast<off_t>(position), SEEK_DATA);
    if (data == -1) {
      if (errno == ENXIO) {  // No data after position: the rest is a hole.
        out->push_back(Extent{position, end - position, true});
        return Status::Ok();
      }
      if (position > offset) return Status::Ok();  // Report what we have.
      return IoError(name_, "extents", offset, length, errno);
    }
    uint64_t data_start = static_cast<uint64_t>(data);
    if (data_start > position) {
      uint64_t hole_end = std::min(data_start, end);
      out->push_back(Extent{position, hole_end - position, true});
      position = hole_end;
      continue;
    }
    off_t hole = lseek(fd_.get(), static_cast<off_t>(position), SEEK_HOLE);
    if (hole == -1 || static_cast<uint64_t>(hole) <= position) {
      out->push_back(Extent{position, end - position, false});
      return Status::Ok();
    }
    uint64_t data_end = std::min(static_cast<uint64_t>(hole), end);
    out->push_back(Extent{position, data_end - position, false});
    position = data_end;
  }
  return Status::Ok();
}

CloneResult FileEndpoint::CloneRangeFrom(Endpoint& source, uint64_t offset, uint64_t length) {
  auto* file = dynamic_cast<FileEndpoint*>(&source);
  if (is_block_device_ || file == nullptr || file->is_block_device_) {
    return CloneResult::kUnsupported;
  }
  file_clone_range range{};
  range.src_fd = file->fd_.get();
  range.src_offset = offset;
  range.src_length = length;  // never 0: that would mean "to the end of the file"
  range.dest_offset = offset;
  if (ioctl(fd_.get(), FICLONERANGE, &range) == 0) {
    end_of_file_ = std::max(end_of_file_, offset + length);
    return CloneResult::kCloned;
  }
  // EINVAL: this range (not block-aligned, say). Any other answer (no
  // reflink here, another file system, no space...) holds for every range;
  // the caller's copy reports real errors.
  return errno == EINVAL ? CloneResult::kRangeRefused : CloneResult::kUnsupported;
}

// Called from other workers' threads: reads only what is fixed once the
// copy starts.
Result<std::unique_ptr<Endpoint>> FileEndpoint::Connect() {
  // pread/pwrite carry their own offsets, so workers can share the file.
  UniqueFd fd(fcntl(fd_.get(), F_DUPFD_CLOEXEC, 3));
  if (!fd.valid()) return Status::FromErrno(name_ + ": dup", errno);
  std::unique_ptr<FileEndpoint> other(new FileEndpoint(name_, std::move(fd), is_block_device_));
  other->info_ = info_;
  other->end_of_file_ = info_.size.value_or(0);
  other->info_.overlapped_io = false;
  other->info_.inline_writes_below = 0;
  if (uring_) other->EnableOverlappedIo();
  if (direct_fd_.valid()) {
    other->direct_fd_.reset(fcntl(direct_fd_.get(), F_DUPFD_CLOEXEC, 3));
    if (!other->direct_fd_.valid()) return Status::FromErrno(name_ + ": dup", errno);
  }
  return std::unique_ptr<Endpoint>(std::move(other));
}

Status FileEndpoint::Truncate(uint64_t size) {
  if (!info_.resizable) return Endpoint::Truncate(size);
  // The old contents go first (the whole file a hole), then the size is
  // set. Not by cutting the file to zero where a hole can be punched: ext4
  // takes a file cut to zero for one being replaced (auto_da_alloc), and
  // closing it then starts writing all of the copy back before close
  // returns (bench/ab.sh's ext4 image into a new ext4 file: 0.41 s, the
  // CPUs half idle, instead of 0.21 s). --flush is how a copy asks to be
  // on disk; a new, empty file needs no cutting at all.
  if (end_of_file_ > 0 && !TryPunchHole(0, end_of_file_) && ftruncate(fd_.get(), 0) == -1) {
    return Status::FromErrno(name_ + ": truncate", errno);
  }
  if (ftruncate(fd_.get(), static_cast<off_t>(size)) == -1) {
    return Status::FromErrno(name_ + ": truncate", errno);
  }
  info_.size = size;
  end_of_file_ = size;
  info_.reads_as_zero = true;
  return Status::Ok();
}

}  // namespace nbdcopy
