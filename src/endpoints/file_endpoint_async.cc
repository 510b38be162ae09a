// FileEndpoint's overlapped I/O: reads, writes and zeroes go through an
// io_uring, so a worker's poll loop never blocks in pread/pwrite/fallocate
// (the kernel's own workers take whatever would block). Zeroes use
// fallocate (punch a hole, or zero a range; on block devices the latter is
// BLKZEROOUT's zeroout); where the file system lacks a mode, the
// synchronous fallbacks of FileEndpoint::Zero take over.
#include <linux/falloc.h>
#include <poll.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "endpoints/file_endpoint.h"

namespace nbdcopy {

namespace {

constexpr unsigned kRingEntries = 128;

// Writes below this size go inline on files without nonblocking I/O: handing
// a 4 KiB write to io_uring's kernel thread and back costs about 2 us of CPU,
// as much as the write; larger writes gain from running beside the worker.
constexpr uint32_t kInlineWriteLimit = 64 * 1024;

// Whether the kernel can try I/O on fd without blocking (RWF_NOWAIT): io_uring
// then does a cached read or write in the submitting call, and hands the
// operation to a kernel thread only when it would block. Without it, every
// operation is handed over. A one-byte read asks; a write-only descriptor
// cannot, and counts as able.
bool HasNonblockingIo(int fd) {
  std::byte probe;
  iovec vector{&probe, 1};
  ssize_t got = preadv2(fd, &vector, 1, 0, RWF_NOWAIT);
  return !(got == -1 && errno == EOPNOTSUPP);
}

bool IsUnsupportedMode(int error_number) {
  return error_number == EOPNOTSUPP || error_number == ENOTSUP || error_number == ENOSYS ||
         error_number == EINVAL || error_number == ENOTTY;
}

}  // namespace

void FileEndpoint::EnableOverlappedIo() {
  auto uring = Uring::Create(kRingEntries);
  if (!uring.ok()) return;  // synchronous I/O it is
  uring_ = std::move(uring).value();
  info_.overlapped_io = true;
  // Without nonblocking I/O (tmpfs, for one) io_uring hands every operation
  // to a kernel thread, which costs more than copying a few pages.
  if (!is_block_device_ && !HasNonblockingIo(fd_.get())) {
    info_.inline_writes_below = kInlineWriteLimit;
  }
}

FileEndpoint::AsyncOp* FileEndpoint::NewOp(AsyncOp::Kind kind, uint64_t offset, uint64_t length,
                                           std::byte* data, uint64_t tag) {
  if (free_ops_.empty()) {
    ops_.push_back(std::make_unique<AsyncOp>());
    free_ops_.push_back(ops_.back().get());
  }
  AsyncOp* op = free_ops_.back();
  free_ops_.pop_back();
  *op = AsyncOp{kind, offset, length, data, 0, false, tag};
  return op;
}

void FileEndpoint::Queue(AsyncOp* op) {
  if (uring_failed_) {
    return Complete(
        op, IoError(name_, "submit", op->offset, op->length, "io_uring submission failed earlier"));
  }
  uint64_t cookie = reinterpret_cast<uintptr_t>(op);
  uint64_t offset = op->offset + op->done;
  uint64_t length = op->length - op->done;
  switch (op->kind) {
    case AsyncOp::Kind::kRead:
      uring_->QueueRead(fd_.get(), op->data + op->done, length, offset, cookie);
      break;
    case AsyncOp::Kind::kWrite:
      if (!direct_fd_.valid()) {
        uring_->QueueWrite(fd_.get(), op->data + op->done, length, offset, cookie);
      } else if (DirectAligned(offset, length, op->data + op->done)) {
        uring_->QueueWrite(direct_fd_.get(), op->data + op->done, length, offset, cookie);
      } else {  // what direct I/O cannot take as it is: the bounce buffer, now
        return Complete(op, WriteThroughBounce(offset, {op->data + op->done, length}));
      }
      break;
    case AsyncOp::Kind::kZero:
      uring_->QueueFallocate(fd_.get(), ZeroMode(op->allocate), offset, length, cookie);
      break;
  }
}

int FileEndpoint::ZeroMode(bool allocate) const {
  if (!allocate && punch_hole_works_) return FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
  bool zero_range = is_block_device_ ? block_zero_out_works_ : zero_range_works_;
  if (zero_range) return FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
  return -1;
}

void FileEndpoint::StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) {
  if (!uring_) return Endpoint::StartRead(offset, buffer, tag);
  Queue(NewOp(AsyncOp::Kind::kRead, offset, buffer.size(), buffer.data(), tag));
}

void FileEndpoint::StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) {
  if (!uring_) return Endpoint::StartWrite(offset, data, tag);
  if (data.size() < info_.inline_writes_below) return Endpoint::StartWrite(offset, data, tag);
  // The ring only reads from this buffer.
  Queue(
      NewOp(AsyncOp::Kind::kWrite, offset, data.size(), const_cast<std::byte*>(data.data()), tag));
}

void FileEndpoint::StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) {
  // Growing a file, and modes the file system lacks, take the synchronous way.
  bool grows = !is_block_device_ && offset + length > end_of_file_;
  if (!uring_ || length == 0 || grows || ZeroMode(allocate) < 0) {
    return Endpoint::StartZero(offset, length, allocate, tag);
  }
  AsyncOp* op = NewOp(AsyncOp::Kind::kZero, offset, length, nullptr, tag);
  op->allocate = allocate;
  Queue(op);
}

void FileEndpoint::Complete(AsyncOp* op, Status status) {
  completions_.push_back(Completion{op->tag, std::move(status)});
  free_ops_.push_back(op);
}

void FileEndpoint::OnOpDone(AsyncOp* op, int result) {
  static const char* const kNames[] = {"read", "write", "zero"};
  const char* name = kNames[static_cast<int>(op->kind)];
  if (result == -EINTR || result == -EAGAIN) return Queue(op);
  if (op->kind == AsyncOp::Kind::kZero) {
    if (result == 0) return Complete(op, Status::Ok());
    if (!IsUnsupportedMode(-result)) {
      return Complete(op, IoError(name_, name, op->offset, op->length, -result));
    }
    // This mode is not there after all: remember, and fall back now.
    int mode = ZeroMode(op->allocate);
    if (mode & FALLOC_FL_PUNCH_HOLE) {
      punch_hole_works_ = false;
    } else if (is_block_device_) {
      block_zero_out_works_ = false;
    } else {
      zero_range_works_ = false;
    }
    return Complete(op, Zero(op->offset, op->length, op->allocate));
  }
  if (result < 0) {
    return Complete(op, IoError(name_, name, op->offset, op->length, -result));
  }
  if (result == 0 && op->kind == AsyncOp::Kind::kRead) {
    return Complete(op, IoError(name_, name, op->offset, op->length, "unexpected end of file"));
  }
  op->done += static_cast<uint64_t>(result);
  if (op->done < op->length) return Queue(op);  // a short transfer: the rest
  if (op->kind == AsyncOp::Kind::kWrite) {
    end_of_file_ = std::max(end_of_file_, op->offset + op->length);
  }
  Complete(op, Status::Ok());
}

void FileEndpoint::TakeCompletions(std::vector<Completion>* out) {
  if (uring_ && !uring_failed_) {
    // Submit what was started, take what finished, and submit again what
    // finishing queued (the rest of short transfers).
    for (int round = 0; round < 2; ++round) {
      if (uring_->has_unsubmitted() && !uring_->Submit()) {
        uring_failed_ = true;
        int error_number = errno;
        // Whatever is queued is lost with the ring: fail every operation
        // still out (their memory stays owned by ops_).
        for (const auto& op : ops_) {
          if (std::find(free_ops_.begin(), free_ops_.end(), op.get()) == free_ops_.end()) {
            Complete(op.get(), Status::FromErrno(name_ + ": io_uring submit", error_number));
          }
        }
        break;
      }
      uring_->Reap([this](uint64_t cookie, int result) {
        OnOpDone(reinterpret_cast<AsyncOp*>(static_cast<uintptr_t>(cookie)), result);
      });
    }
  }
  Endpoint::TakeCompletions(out);
}

PollInterest FileEndpoint::poll_interest() const {
  if (!uring_) return {};
  return PollInterest{uring_->fd(), POLLIN};
}

}  // namespace nbdcopy
