// Progress reporting. Counts the bytes that reached the destination (zeroed
// and skipped ranges count once done) and shows them in one of three
// styles:
//   kBar     -p on a terminal: a frame redrawn with "\r" at most ten times
//            a second, the last one ended by "\n".
//   kLines   -p when stderr is not a terminal (a pipe, a log file): one
//            frame per line, when the whole percent rises but at most one
//            a second (and every 10 s while it does not), and a final one.
//   kPercent --progress=FD: libnbd's protocol, "N/100" lines and nothing
//            else; 100/100 only from Finish(), i.e. for a finished copy.
// A frame starts with exactly what libnbd's nbdcopy prints, which programs
// parse (Forklift matches ".+ (\d+)% \[[*-]+\]"): a spinner, a space, the
// percent as "%3d%%", a space and a bar of 40 '*' (done) and '-' (to do) in
// brackets. Our extras follow it: bytes done of total, rate, ETA (or the
// time taken, in the final frame). Only Finish() draws 100 %, so a copy
// that fails or is interrupted never shows it.
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
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"
#include "engine/progress_sink.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

enum class ProgressStyle { kNone, kBar, kLines, kPercent };

// kBar when -p and the descriptor is a terminal, kLines for -p otherwise.
ProgressStyle StyleFor(ProgressMode mode, int stderr_fd);

// "0 B", "512 B", "1.5 KiB", "12.3 MiB", "1.00 GiB": three significant digits.
std::string FormatBytes(uint64_t bytes);
// "0:07", "12:34", "1:02:03".
std::string FormatDuration(std::chrono::seconds duration);

// What one frame shows. rate is bytes per second, 0 while unknown; total
// nullopt for a stream of unknown length.
struct ProgressSnapshot {
  uint64_t done = 0;
  std::optional<uint64_t> total;
  double rate = 0;
  // Set for the final report: the whole copy's duration (shown instead of
  // the ETA); rate is then the average.
  std::optional<std::chrono::seconds> elapsed;
};

// One frame, without "\r" or newline, e.g.
// "▐  25% [**********------------------------------] 1.00 GiB of 4.00 GiB, 256 MiB/s, ETA 0:12".
// spin picks the spinner character (any number; the final frame has "█").
// columns: the terminal's width, or 0 for no limit. The frame then takes at
// most columns - 1 columns: the extras that do not fit are left out (the
// bytes first kept, then the time, then the rate), and on a terminal
// narrower than libnbd's own frame the bar is shortened, never wrapped.
// A stream's frames have no percent or bar until the final one (100 %).
std::string RenderFrame(const ProgressSnapshot& snapshot, unsigned spin, size_t columns);
// How many terminal columns a frame from RenderFrame takes.
size_t FrameColumns(const std::string& frame);

class Progress final : public ProgressSink {
 public:
  // The command line's choice: -p draws on stderr, --progress=FD on fd.
  // total: bytes the copy will complete, or nullopt for a stream of unknown
  // length.
  Progress(ProgressMode mode, int fd, std::optional<uint64_t> total);
  // For tests: an explicit style, output descriptor and clock.
  Progress(ProgressStyle style, int fd, std::optional<uint64_t> total,
           NowFunction now);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // already_done: bytes an earlier run copied (a resumed --checkpoint);
  // the display starts there and the rate counts only this job's.
  void Start(uint64_t already_done = 0);
  void Add(uint64_t bytes) override;
  // The copy finished: reports 100 % and ends the line.
  void Finish();

  // A line for the user between frames ("reconnecting in 2 s"), on stderr
  // with "nbdcopy: " before it: the bar's line is cleared first and redrawn
  // at the next frame. False for styles that show no such lines (none,
  // --progress=FD): the caller decides.
  bool Note(const std::string& line) EXCLUDES(mutex_);

  // Bytes counted so far (every style, kNone included).
  uint64_t copied() const { return done_.load(std::memory_order_relaxed); }

 private:
  void Report(bool final) EXCLUDES(mutex_);
  void ReportPercent(int percent) EXCLUDES(mutex_);
  void UpdateRate(Clock::time_point now, uint64_t done) REQUIRES(mutex_);
  bool LineDue(Clock::time_point now, uint64_t done) const REQUIRES(mutex_);
  void Write(const std::string& text) REQUIRES(mutex_);

  const ProgressStyle style_;
  const int fd_;
  const std::optional<uint64_t> total_;
  const NowFunction now_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> next_report_ns_{0};  // Clock ticks; skip Report() before this
  Mutex mutex_;                             // serialises output
  Clock::time_point start_ GUARDED_BY(mutex_);
  Clock::time_point window_start_ GUARDED_BY(mutex_);
  uint64_t window_done_ GUARDED_BY(mutex_) = 0;
  uint64_t already_done_ GUARDED_BY(mutex_) = 0;  // by earlier runs (Start)
  double rate_ GUARDED_BY(mutex_) = 0;
  // kPercent: reported; kLines: in the last line. Written under mutex_,
  // read without it by Add()'s fast path.
  std::atomic<int> last_percent_{-1};
  Clock::time_point last_line_ GUARDED_BY(mutex_);  // kLines: when the last line was written
  unsigned spin_ GUARDED_BY(mutex_) = 0;            // frames drawn, to turn the spinner
  bool line_open_ GUARDED_BY(mutex_) = false;    // kBar: a frame is on screen without its newline
  size_t frame_columns_ GUARDED_BY(mutex_) = 0;  // kBar: the widest frame drawn, to blank it out
  bool finished_ GUARDED_BY(mutex_) = false;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PROGRESS_H_
