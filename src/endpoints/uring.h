// A small RAII owner of one io_uring (liburing): the queue a FileEndpoint
// uses for overlapped reads, writes and fallocate. Submission is batched:
// Queue* only fills submission entries; Submit() hands them to the kernel
// in one system call.
//
// Thread safety: none; one thread uses a ring (one ring per connection).
#ifndef NBDCOPY_URING_H_
#define NBDCOPY_URING_H_

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nbdcopy/status.h"

namespace nbdcopy {

class Uring {
 public:
  // Fails where the kernel has no io_uring, or forbids it (seccomp, sysctl).
  static Result<std::unique_ptr<Uring>> Create(unsigned entries);
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  // Each queues one operation carrying `cookie`, submitting queued ones
  // first if the submission queue is full.
  void QueueRead(int fd, std::byte* buffer, size_t length, uint64_t offset, uint64_t cookie);
  void QueueWrite(int fd, const std::byte* data, size_t length, uint64_t offset, uint64_t cookie);
  void QueueFallocate(int fd, int mode, uint64_t offset, uint64_t length, uint64_t cookie);

  // Hands queued operations to the kernel. Returns false on failure (errno
  // set); the queued operations then never complete.
  bool Submit();
  bool has_unsubmitted() const { return unsubmitted_ > 0; }

  // Calls done(cookie, result) for each finished operation (result: bytes
  // or -errno, as the system call would return). Never blocks.
  template <typename Done>
  void Reap(Done done) {
    io_uring_cqe* cqe;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      uint64_t cookie = io_uring_cqe_get_data64(cqe);
      int result = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      done(cookie, result);
    }
  }

  // Readable when completions are waiting.
  int fd() const { return ring_.ring_fd; }

 private:
  Uring() = default;
  io_uring_sqe* NextEntry();

  io_uring ring_{};
  unsigned unsubmitted_ = 0;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_URING_H_
