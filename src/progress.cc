#include "nbdcopy/progress.h"

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
constexpr auto kLineInterval = seconds(5);
constexpr auto kRateWindow = seconds(2);
constexpr int kLineStepPercent = 10;
constexpr int kBarWidth = 20;

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

// 0..99 while copying; 100 is only for the final report.
std::optional<int> Percent(const ProgressSnapshot& snapshot) {
  if (!snapshot.total) return std::nullopt;
  if (snapshot.elapsed) return 100;
  if (*snapshot.total == 0) return 0;
  return static_cast<int>(std::min<uint64_t>(99, snapshot.done * 100 / *snapshot.total));
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

std::string RenderBar(const ProgressSnapshot& snapshot) {
  std::string text;
  if (std::optional<int> percent = Percent(snapshot)) {
    int filled = *percent * kBarWidth / 100;
    text = fmt::format("{:3}% [{}{}]  ", *percent, std::string(filled, '#'),
                       std::string(kBarWidth - filled, '.'));
  }
  text += Amounts(snapshot) + "  " + FormatRate(snapshot.rate);
  if (std::string time = TimeField(snapshot); !time.empty()) text += "  " + time;
  return text;
}

std::string RenderLine(const ProgressSnapshot& snapshot) {
  std::string text = "nbdcopy: ";
  if (std::optional<int> percent = Percent(snapshot)) text += fmt::format("{}% ", *percent);
  text += Amounts(snapshot) + ", " + FormatRate(snapshot.rate);
  if (std::string time = TimeField(snapshot); !time.empty()) text += ", " + time;
  return text;
}

Progress::Progress(ProgressMode mode, int fd, std::optional<uint64_t> total)
    : Progress(StyleFor(mode, STDERR_FILENO), mode == ProgressMode::kFd ? fd : STDERR_FILENO, total,
               [] { return Clock::now(); }) {}

Progress::Progress(ProgressStyle style, int fd, std::optional<uint64_t> total,
                   std::function<Clock::time_point()> now)
    : style_(style), fd_(fd), total_(total), now_(std::move(now)) {
  start_ = window_start_ = last_line_ = now_();
}

Progress::~Progress() {
  std::lock_guard lock(mutex_);
  if (line_open_) Write("\n");
}

void Progress::Start() {
  {
    std::lock_guard lock(mutex_);
    start_ = window_start_ = last_line_ = now_();
    if (style_ == ProgressStyle::kLines) last_percent_ = 0;  // no line for 0 %
  }
  if (style_ == ProgressStyle::kPercent) ReportPercent(0);
  if (style_ == ProgressStyle::kBar) Report(false);
}

void Progress::Add(uint64_t bytes) {
  uint64_t done = done_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  switch (style_) {
    case ProgressStyle::kNone:
      return;
    case ProgressStyle::kPercent:
      if (total_ && *total_ > 0) {
        int percent = static_cast<int>(std::min<uint64_t>(99, done * 100 / *total_));
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
  std::lock_guard lock(mutex_);
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
    snapshot.rate = elapsed > 0 ? static_cast<double>(snapshot.done) / elapsed : 0;
  }
  if (style_ == ProgressStyle::kBar) {
    std::string frame = RenderBar(snapshot);
    // A frame that wrapped could not be redrawn by "\r": cut it short.
    if (size_t columns = TerminalColumns(fd_); columns > 1 && frame.size() >= columns) {
      frame.resize(columns - 1);
      frame_length_ = std::min(frame_length_, columns - 1);
    }
    frame_length_ = std::max(frame_length_, frame.size());
    frame.resize(frame_length_, ' ');
    Write("\r" + frame + (final ? "\n" : ""));
    line_open_ = !final;
    return;
  }
  // kLines: a line per 10 % step, or after a quiet while.
  int step = total_ && *total_ > 0
                 ? static_cast<int>(snapshot.done * 100 / *total_) / kLineStepPercent
                 : -1;
  if (!final && step <= last_percent_ && now - last_line_ < kLineInterval) return;
  last_percent_ = std::max(last_percent_.load(), step);
  last_line_ = now;
  Write(RenderLine(snapshot) + "\n");
}

void Progress::ReportPercent(int percent) {
  std::lock_guard lock(mutex_);
  if (percent <= last_percent_) return;
  last_percent_ = percent;
  Write(fmt::format("{}/100\n", percent));
}

void Progress::Write(const std::string& text) { WriteAll(fd_, text); }

}  // namespace nbdcopy
