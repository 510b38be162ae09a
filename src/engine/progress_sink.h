// Where the engines report the bytes that reached the destination (zeroed,
// skipped and cloned ranges once done). The job's progress display
// implements it; the engines know nothing of how it is shown.
#ifndef NBDCOPY_ENGINE_PROGRESS_SINK_H_
#define NBDCOPY_ENGINE_PROGRESS_SINK_H_

#include <cstdint>

namespace nbdcopy {

class ProgressSink {
 public:
  // Thread safety: called from every worker thread at once.
  virtual void Add(uint64_t bytes) = 0;

 protected:
  ~ProgressSink() = default;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENGINE_PROGRESS_SINK_H_
