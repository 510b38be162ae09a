// Clang's thread-safety analysis (-Wthread-safety): which mutex guards
// which state, checked at compile time. Under other compilers the
// annotations expand to nothing. Use base/mutex.h's Mutex and MutexLock:
// libstdc++'s std::mutex carries no annotations.
#ifndef NBDCOPY_BASE_THREAD_ANNOTATIONS_H_
#define NBDCOPY_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define NBDCOPY_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define NBDCOPY_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) NBDCOPY_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY NBDCOPY_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) NBDCOPY_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) NBDCOPY_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) NBDCOPY_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) NBDCOPY_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) NBDCOPY_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) NBDCOPY_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS NBDCOPY_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // NBDCOPY_BASE_THREAD_ANNOTATIONS_H_
