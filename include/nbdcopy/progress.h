// Progress reporting. Counts the bytes that reached the destination (zeroed
// and skipped ranges count once done) and shows them in one of three
// styles:
//   kBar     -p on a terminal: "\r"-redrawn bar with percent, bytes copied
//            of total, current rate and ETA, at most ten times a second.
//   kLines   -p when stderr is not a terminal: a plain line at every 10 %
//            or every 5 seconds, whichever comes first, and a final line.
//   kPercent --progress=FD: libnbd's protocol, "N/100" lines and nothing
//            else; 100/100 only from Finish(), i.e. for a finished copy.
// Whatever the style, the bar's line is ended (a newline) by Finish() or,
// at the latest, by the destructor, so an error message or the interrupt
// line starts on a line of its own.
// Thread safety: Add() and copied() may be called from any thread.
#ifndef NBDCOPY_PROGRESS_H_
#define NBDCOPY_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "nbdcopy/options.h"

namespace nbdcopy {

enum class ProgressStyle { kNone, kBar, kLines, kPercent };

// kBar when -p and the descriptor is a terminal, kLines for -p otherwise.
ProgressStyle StyleFor(ProgressMode mode, int stderr_fd);

// "0 B", "512 B", "1.5 KiB", "12.3 MiB", "1.00 GiB": three significant digits.
std::string FormatBytes(uint64_t bytes);
// "0:07", "12:34", "1:02:03".
std::string FormatDuration(std::chrono::seconds duration);

// What one redraw of the terminal bar shows. rate is bytes per second, 0
// while unknown; total nullopt for a stream of unknown length.
struct ProgressSnapshot {
  uint64_t done = 0;
  std::optional<uint64_t> total;
  double rate = 0;
  // Set for the final report: the whole copy's duration (shown instead of
  // the ETA); rate is then the average.
  std::optional<std::chrono::seconds> elapsed;
};
// One frame of the terminal bar, without "\r" or newline, e.g.
// " 42% [########...........]  1.26 GiB of 3.00 GiB  250 MiB/s  ETA 0:07".
std::string RenderBar(const ProgressSnapshot& snapshot);
// One plain line for kLines, e.g. "nbdcopy: 40% 1.20 GiB of 3.00 GiB, 250 MiB/s".
std::string RenderLine(const ProgressSnapshot& snapshot);

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // The command line's choice: -p draws on stderr, --progress=FD on fd.
  // total: bytes the copy will complete, or nullopt for a stream of unknown
  // length.
  Progress(ProgressMode mode, int fd, std::optional<uint64_t> total);
  // For tests: an explicit style, output descriptor and clock.
  Progress(ProgressStyle style, int fd, std::optional<uint64_t> total,
           std::function<Clock::time_point()> now);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Start();
  void Add(uint64_t bytes);
  // The copy finished: reports 100 % and ends the line.
  void Finish();

  // Bytes counted so far (every style, kNone included).
  uint64_t copied() const { return done_.load(std::memory_order_relaxed); }

 private:
  void Report(bool final);
  void ReportPercent(int percent);
  void UpdateRate(Clock::time_point now, uint64_t done);
  void Write(const std::string& text);

  const ProgressStyle style_;
  const int fd_;
  const std::optional<uint64_t> total_;
  const std::function<Clock::time_point()> now_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> next_report_ns_{0};  // Clock ticks; skip Report() before this
  std::mutex mutex_;                        // guards the rest; serialises output
  Clock::time_point start_;
  Clock::time_point window_start_;
  uint64_t window_done_ = 0;
  double rate_ = 0;
  std::atomic<int> last_percent_{-1};  // kPercent: reported; kLines: 10 % step printed
  Clock::time_point last_line_;
  bool line_open_ = false;   // kBar: a frame is on screen without its newline
  size_t frame_length_ = 0;  // kBar: the longest frame drawn, to blank it out
  bool finished_ = false;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PROGRESS_H_
