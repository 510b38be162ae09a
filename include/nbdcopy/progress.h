// Progress reporting: a bar on stderr (-p) or "N/100" lines on a file
// descriptor (--progress=FD, read by other programs). Percentages only go up,
// and a successful copy always ends with 100.
// Thread safety: Add() may be called from any thread.
#ifndef NBDCOPY_PROGRESS_H_
#define NBDCOPY_PROGRESS_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "nbdcopy/options.h"

namespace nbdcopy {

class Progress {
 public:
  // total: bytes the copy will complete, or nullopt for a stream of
  // unknown length (then only 0 and 100 are reported).
  Progress(ProgressMode mode, int fd, std::optional<uint64_t> total);

  void Start();
  void Add(uint64_t bytes);
  // Reports 100 and ends the bar's line.
  void Finish();

 private:
  void Report(int percent);

  const ProgressMode mode_;
  const int fd_;
  const std::optional<uint64_t> total_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int> last_percent_{-1};
  std::mutex mutex_;  // serialises output
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PROGRESS_H_
