#include "nbdcopy/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <string>

namespace nbdcopy {

namespace {

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;  // Progress is advisory: never fail the copy over it.
    done += static_cast<size_t>(n);
  }
}

}  // namespace

Progress::Progress(ProgressMode mode, int fd, std::optional<uint64_t> total)
    : mode_(mode), fd_(fd), total_(total) {}

void Progress::Start() { Report(0); }

void Progress::Add(uint64_t bytes) {
  if (mode_ == ProgressMode::kNone) return;
  uint64_t done = done_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (!total_ || *total_ == 0) return;
  // 100 is kept for Finish(), after flushing.
  int percent = static_cast<int>(std::min<uint64_t>(99, done * 100 / *total_));
  if (percent > last_percent_.load(std::memory_order_relaxed)) Report(percent);
}

void Progress::Finish() { Report(100); }

void Progress::Report(int percent) {
  if (mode_ == ProgressMode::kNone) return;
  std::lock_guard lock(mutex_);
  if (percent <= last_percent_.load()) return;
  last_percent_.store(percent);
  if (mode_ == ProgressMode::kFd) {
    WriteAll(fd_, fmt::format("{}/100\n", percent));
    return;
  }
  constexpr int kWidth = 50;
  int filled = percent * kWidth / 100;
  WriteAll(STDERR_FILENO, fmt::format("\r[{}{}] {:3}%{}", std::string(filled, '#'),
                                      std::string(kWidth - filled, '.'), percent,
                                      percent == 100 ? "\n" : ""));
}

}  // namespace nbdcopy
