// A mutex and its scoped lock that clang's thread-safety analysis knows
// (base/thread_annotations.h): state declared GUARDED_BY(mutex_) can only
// be touched while a MutexLock on it is alive, or the build fails.
#ifndef NBDCOPY_BASE_MUTEX_H_
#define NBDCOPY_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace nbdcopy {

class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mutex_.lock(); }
  void Unlock() RELEASE() { mutex_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// A condition variable for a Mutex: Wait() is called with the mutex held
// and returns with it held, as the analysis sees it.
class CondVar {
 public:
  // Releases mutex while it waits; spurious wake-ups happen: loop on the
  // condition.
  void Wait(Mutex& mutex) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    changed_.wait(lock);
    lock.release();  // still held: the caller's MutexLock unlocks it
  }
  void NotifyAll() { changed_.notify_all(); }

 private:
  std::condition_variable changed_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.Lock(); }
  ~MutexLock() RELEASE() { mutex_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_MUTEX_H_
