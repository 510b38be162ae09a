#include "endpoints/nbd/nbd_notify_watchdog.h"

#include <sys/socket.h>
#include <sys/stat.h>

namespace nbdcopy {

namespace {

ino_t InodeOf(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

}  // namespace

NotifyWatchdog::NotifyWatchdog(std::chrono::milliseconds limit)
    : limit_(limit), thread_([this] { Watch(); }) {}

NotifyWatchdog::~NotifyWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_one();
  thread_.join();
}

void NotifyWatchdog::Begin(int fd) {
  const ino_t inode = InodeOf(fd);
  {
    std::lock_guard lock(mutex_);
    fd_ = fd;
    inode_ = inode;
    since_ = Clock::now();
    fired_ = false;
  }
  changed_.notify_one();
}

bool NotifyWatchdog::End() {
  std::lock_guard lock(mutex_);
  fd_ = -1;
  return fired_;
}

void NotifyWatchdog::Watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (fd_ < 0 || fired_) {
      changed_.wait(lock);
      continue;
    }
    const auto deadline = since_ + limit_;
    if (Clock::now() < deadline) {
      changed_.wait_until(lock, deadline);
      continue;
    }
    // Still inside the same notification (End takes the lock), on the
    // socket it began with.
    if (InodeOf(fd_) == inode_) shutdown(fd_, SHUT_RDWR);
    fired_ = true;
  }
}

}  // namespace nbdcopy
