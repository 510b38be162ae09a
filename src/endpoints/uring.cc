#include "endpoints/uring.h"

#include <algorithm>
#include <cerrno>

namespace nbdcopy {

Result<std::unique_ptr<Uring>> Uring::Create(unsigned entries) {
  std::unique_ptr<Uring> uring(new Uring());
  int rc = io_uring_queue_init(entries, &uring->ring_, 0);
  if (rc < 0) {
    uring->ring_.ring_fd = -1;
    return Status::FromErrno("io_uring_queue_init", -rc);
  }
  return uring;
}

Uring::~Uring() {
  if (ring_.ring_fd >= 0) io_uring_queue_exit(&ring_);
}

io_uring_sqe* Uring::NextEntry() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    Submit();
    sqe = io_uring_get_sqe(&ring_);
  }
  ++unsubmitted_;
  return sqe;
}

void Uring::QueueRead(int fd, std::byte* buffer, size_t length, uint64_t offset, uint64_t cookie) {
  io_uring_sqe* sqe = NextEntry();
  io_uring_prep_read(sqe, fd, buffer, static_cast<unsigned>(length), offset);
  io_uring_sqe_set_data64(sqe, cookie);
}

void Uring::QueueWrite(int fd, const std::byte* data, size_t length, uint64_t offset,
                       uint64_t cookie) {
  io_uring_sqe* sqe = NextEntry();
  io_uring_prep_write(sqe, fd, data, static_cast<unsigned>(length), offset);
  io_uring_sqe_set_data64(sqe, cookie);
}

void Uring::QueueFallocate(int fd, int mode, uint64_t offset, uint64_t length, uint64_t cookie) {
  io_uring_sqe* sqe = NextEntry();
  io_uring_prep_fallocate(sqe, fd, mode, static_cast<off_t>(offset), static_cast<off_t>(length));
  io_uring_sqe_set_data64(sqe, cookie);
}

bool Uring::Submit() {
  while (unsubmitted_ > 0) {
    int rc = io_uring_submit(&ring_);
    if (rc == -EINTR) continue;
    // Completion queue full: what is queued goes in once completions are reaped.
    if (rc == -EBUSY || rc == -EAGAIN) return true;
    if (rc < 0) {
      errno = -rc;
      return false;
    }
    unsubmitted_ -= std::min<unsigned>(unsubmitted_, static_cast<unsigned>(rc));
    if (rc == 0) break;
  }
  return true;
}

}  // namespace nbdcopy
