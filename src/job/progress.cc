#include "job/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace nbdcopy {

namespace {

using std::chrono::duration;
using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kRedrawInterval = milliseconds(100);
constexpr auto kLineMinInterval = seconds(1);     // kLines: at most a line a second
constexpr auto kLineQuietInterval = seconds(10);  // kLines: a line even without a new percent
constexpr auto kRateWindow = seconds(2);

// libnbd's frame: its spinner, its final character and its bar's width.
constexpr std::array<const char*, 8> kSpinner = {"▝", "▐", "▗", "▃", "▖", "▍", "▘", "▀"};
constexpr const char* kSpinnerDone = "█";
constexpr size_t kBarCells = 40;
// Spinner, space, "%3d%%", space, the two brackets: the frame without its cells.
constexpr size_t kFrameFixedColumns = 9;

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // Progress is advisory: never fail the copy over it.
    done += static_cast<size_t>(n);
  }
}

// The terminal's width, or 0 when unknown. Asked at every redraw: the
// window may be resized during a long copy.
size_t TerminalColumns(int fd) {
  winsize size{};
  return ioctl(fd, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

// The percent of a copy still running: 0..99, whatever was counted; 100
// is only for the final report.
int RunningPercent(uint64_t done, uint64_t total) {
  if (total == 0) return 0;
  return static_cast<int>(std::min<uint64_t>(99, done * 100 / total));
}

std::optional<int> Percent(const ProgressSnapshot& snapshot) {
  if (snapshot.elapsed) return 100;
  if (!snapshot.total) return std::nullopt;
  return RunningPercent(snapshot.done, *snapshot.total);
}

// As libnbd counts them: a cell for each started 1/40 of the copy.
size_t DoneCells(const ProgressSnapshot& snapshot, size_t cells) {
  if (snapshot.elapsed) return cells;
  if (!snapshot.total || *snapshot.total == 0) return 0;
  double fraction = std::min(1.0, static_cast<double>(snapshot.done) / *snapshot.total);
  return std::min(cells, static_cast<size_t>(std::ceil(fraction * cells)));
}

std::string FormatRate(double rate) {
  return rate > 0 ? FormatBytes(static_cast<uint64_t>(rate)) + "/s" : "--/s";
}

// "1.26 GiB of 3.00 GiB" or, for a stream, "1.26 GiB".
std::string Amounts(const ProgressSnapshot& snapshot) {
  std::string text = FormatBytes(snapshot.done);
  if (snapshot.total) text += " of " + FormatBytes(*snapshot.total);
  return text;
}

std::string TimeField(const ProgressSnapshot& snapshot) {
  if (snapshot.elapsed) return "in " + FormatDuration(*snapshot.elapsed);
  if (!snapshot.total || snapshot.rate <= 0 || snapshot.done > *snapshot.total) return "";
  double left = static_cast<double>(*snapshot.total - snapshot.done) / snapshot.rate;
  return "ETA " + FormatDuration(seconds(static_cast<int64_t>(std::ceil(left))));
}

// Our extras, shown in this order, each kept only if it fits in `room`
// columns: the bytes first, then the time, then the rate.
std::string Extras(const ProgressSnapshot& snapshot, size_t room) {
  enum { kAmounts, kRate, kTime };
  const std::array<std::string, 3> fields = {Amounts(snapshot), FormatRate(snapshot.rate),
                                             TimeField(snapshot)};
  std::array<bool, 3> shown{};
  size_t used = 0;
  for (int field : {kAmounts, kTime, kRate}) {
    if (fields[field].empty()) continue;
    size_t cost = fields[field].size() + (used == 0 ? 0 : 2);  // ", " between fields
    if (used + cost > room) continue;
    shown[field] = true;
    used += cost;
  }
  std::string text;
  for (int field : {kAmounts, kRate, kTime}) {
    if (!shown[field]) continue;
    if (!text.empty()) text += ", ";
    text += fields[field];
  }
  return text;
}

}  // namespace

ProgressStyle StyleFor(ProgressMode mode, int stderr_fd) {
  switch (mode) {
    case ProgressMode::kNone:
      return ProgressStyle::kNone;
    case ProgressMode::kFd:
      return ProgressStyle::kPercent;
    case ProgressMode::kBar:
      return isatty(stderr_fd) ? ProgressStyle::kBar : ProgressStyle::kLines;
  }
  return ProgressStyle::kNone;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
  return fmt::format("{:.{}f} {}", value, decimals, kUnits[unit]);
}

std::string FormatDuration(seconds duration) {
  int64_t total = std::max<int64_t>(0, duration.count());
  int64_t hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  if (hours > 0) return fmt::format("{}:{:02}:{:02}", hours, minutes, secs);
  return fmt::format("{}:{:02}", minutes, secs);
}

std::string RenderFrame(const ProgressSnapshot& snapshot, unsigned spin, size_t columns) {
  const size_t limit = columns > 0 ? columns - 1 : SIZE_MAX;  // the last column would wrap
  const char* spinner = snapshot.elapsed ? kSpinnerDone : kSpinner[spin % kSpinner.size()];
  std::optional<int> percent = Percent(snapshot);
  if (!percent) {  // a stream: no percent to show until it ends
    std::string text = std::string(spinner) + " ";
    return text + Extras(snapshot, limit > 2 ? limit - 2 : 0);
  }
  size_t cells = kBarCells;
  if (limit < kFrameFixedColumns + cells) {
    cells = limit > kFrameFixedColumns ? limit - kFrameFixedColumns : 1;
  }
  size_t done = DoneCells(snapshot, cells);
  std::string text = fmt::format("{} {:3}% [{}{}]", spinner, *percent, std::string(done, '*'),
                                 std::string(cells - done, '-'));
  size_t used = kFrameFixedColumns + cells;
  if (limit > used + 1) {
    std::string extras = Extras(snapshot, limit - used - 1);
    if (!extras.empty()) text += " " + extras;
  }
  return text;
}

size_t FrameColumns(const std::string& frame) {
  // One column per character: UTF-8 continuation bytes take none.
  return static_cast<size_t>(std::count_if(frame.begin(), frame.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

Progress::Progress(ProgressMode mode, int fd, std::optional<uint64_t> total)
    : Progress(StyleFor(mode, STDERR_FILENO), mode == ProgressMode::kFd ? fd : STDERR_FILENO, total,
               Clock::now) {}

Progress::Progress(ProgressStyle style, int fd, std::optional<uint64_t> total,
                   NowFunction now)
    : style_(style), fd_(fd), total_(total), now_(std::move(now)) {
  start_ = window_start_ = last_line_ = now_();
}

Progress::~Progress() {
  MutexLock lock(mutex_);
  if (line_open_) Write("\n");
}

void Progress::Start(uint64_t already_done) {
  {
    MutexLock lock(mutex_);
    start_ = window_start_ = last_line_ = now_();
    done_.store(already_done, std::memory_order_relaxed);
    window_done_ = already_done_ = already_done;
  }
  if (style_ == ProgressStyle::kPercent) {
    ReportPercent(total_ && *total_ > 0 ? RunningPercent(already_done, *total_) : 0);
  }
  if (style_ == ProgressStyle::kBar || style_ == ProgressStyle::kLines) Report(false);
}

void Progress::Add(uint64_t bytes) {
  uint64_t done = done_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  switch (style_) {
    case ProgressStyle::kNone:
      return;
    case ProgressStyle::kPercent:
      if (total_ && *total_ > 0) {
        int percent = RunningPercent(done, *total_);
        if (percent > last_percent_.load(std::memory_order_relaxed)) ReportPercent(percent);
      }
      return;
    case ProgressStyle::kBar:
    case ProgressStyle::kLines: {
      // One thread at a time, at most ten times a second, redraws.
      int64_t now = now_().time_since_epoch().count();
      int64_t due = next_report_ns_.load(std::memory_order_relaxed);
      if (now < due) return;
      int64_t next = now + duration_cast<Clock::duration>(kRedrawInterval).count();
      if (!next_report_ns_.compare_exchange_strong(due, next)) return;
      Report(false);
      return;
    }
  }
}

void Progress::Finish() {
  if (style_ == ProgressStyle::kPercent) ReportPercent(100);
  if (style_ == ProgressStyle::kBar || style_ == ProgressStyle::kLines) Report(true);
}

void Progress::UpdateRate(Clock::time_point now, uint64_t done) {
  if (now - window_start_ >= kRateWindow) {
    rate_ =
        static_cast<double>(done - window_done_) / duration<double>(now - window_start_).count();
    window_start_ = now;
    window_done_ = done;
  } else if (rate_ == 0 && now - start_ >= milliseconds(250)) {
    rate_ = static_cast<double>(done) / duration<double>(now - start_).count();
  }
}

void Progress::Report(bool final) {
  MutexLock lock(mutex_);
  if (finished_) return;
  Clock::time_point now = now_();
  ProgressSnapshot snapshot;
  snapshot.done = copied();
  snapshot.total = total_;
  UpdateRate(now, snapshot.done);
  snapshot.rate = rate_;
  if (final) {
    finished_ = true;
    double elapsed = duration<double>(now - start_).count();
    snapshot.elapsed = seconds(static_cast<int64_t>(std::round(elapsed)));
    snapshot.rate =
        elapsed > 0 ? static_cast<double>(snapshot.done - already_done_) / elapsed : 0;
  }
  if (style_ == ProgressStyle::kBar) {
    size_t columns = TerminalColumns(fd_);
    std::string frame = RenderFrame(snapshot, spin_++, columns);
    // Blank out what is left of a wider frame, without wrapping.
    size_t width = FrameColumns(frame);
    if (columns > 1) frame_columns_ = std::min(frame_columns_, columns - 1);
    frame_columns_ = std::max(frame_columns_, width);
    frame.append(frame_columns_ - width, ' ');
    Write("\r" + frame + (final ? "\n" : ""));
    line_open_ = !final;
    return;
  }
  if (!final && !LineDue(now, snapshot.done)) return;
  last_percent_ = Percent(snapshot).value_or(0);
  last_line_ = now;
  Write(RenderFrame(snapshot, spin_++, 0) + "\n");
}

// kLines, REQUIRES mutex_: the first line, then a line when the whole
// percent rose, at most one a second, or after a quiet while.
bool Progress::LineDue(Clock::time_point now, uint64_t done) const {
  if (last_percent_ < 0) return true;
  if (now - last_line_ >= kLineQuietInterval) return true;
  if (now - last_line_ < kLineMinInterval || !total_) return false;
  return RunningPercent(done, *total_) > last_percent_;
}

void Progress::ReportPercent(int percent) {
  MutexLock lock(mutex_);
  if (percent <= last_percent_) return;
  last_percent_ = percent;
  Write(fmt::format("{}/100\n", percent));
}

bool Progress::Note(const std::string& line) {
  if (style_ != ProgressStyle::kBar && style_ != ProgressStyle::kLines) return false;
  MutexLock lock(mutex_);
  std::string text;
  if (line_open_) text.append("\r").append(frame_columns_, ' ').append("\r");
  text.append("nbdcopy: ").append(line).append("\n");
  line_open_ = false;
  Write(text);
  return true;
}

void Progress::Write(const std::string& text) { WriteAll(fd_, text); }

}  // namespace nbdcopy
