// A mutex and its scoped lock that clang's thread-safety analysis knows
// (base/thread_annotations.h): state declared GUARDED_BY(mutex_) can only
// be touched while a MutexLock on it is alive, or the build fails.
#ifndef NBDCOPY_BASE_MUTEX_H_
#define NBDCOPY_BASE_MUTEX_H_

#include <mutex>

#include "base/thread_annotations.h"

namespace nbdcopy {

class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mutex_.lock(); }
  void Unlock() RELEASE() { mutex_.unlock(); }

 private:
  std::mutex mutex_;
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
