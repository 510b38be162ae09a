#include "nbdcopy/progress.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

namespace nbdcopy {
namespace {

using namespace std::chrono_literals;
using Clock = Progress::Clock;

constexpr uint64_t kMiB = 1024 * 1024;

TEST(FormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(12 * kMiB + kMiB / 4), "12.2 MiB");
  EXPECT_EQ(FormatBytes(300 * kMiB), "300 MiB");
  EXPECT_EQ(FormatBytes(3 * 1024 * kMiB), "3.00 GiB");
  EXPECT_EQ(FormatBytes(UINT64_MAX), "16.0 EiB");
}

TEST(FormatTest, Duration) {
  EXPECT_EQ(FormatDuration(0s), "0:00");
  EXPECT_EQ(FormatDuration(7s), "0:07");
  EXPECT_EQ(FormatDuration(754s), "12:34");
  EXPECT_EQ(FormatDuration(3723s), "1:02:03");
}

ProgressSnapshot Snapshot(uint64_t done, std::optional<uint64_t> total, double rate = 0,
                          std::optional<std::chrono::seconds> elapsed = std::nullopt) {
  ProgressSnapshot snapshot;
  snapshot.done = done;
  snapshot.total = total;
  snapshot.rate = rate;
  snapshot.elapsed = elapsed;
  return snapshot;
}

TEST(RenderTest, BarShowsPercentAmountsRateAndEta) {
  ProgressSnapshot snapshot = Snapshot(1024 * kMiB, 4096 * kMiB, 256.0 * kMiB);
  EXPECT_EQ(RenderBar(snapshot),
            " 25% [#####...............]  1.00 GiB of 4.00 GiB  256 MiB/s  ETA 0:12");
  snapshot.rate = 0;
  EXPECT_EQ(RenderBar(snapshot), " 25% [#####...............]  1.00 GiB of 4.00 GiB  --/s");
}

TEST(RenderTest, FinalFrameShowsElapsedAndHundred) {
  ProgressSnapshot snapshot = Snapshot(4 * kMiB, 4 * kMiB, 2.0 * kMiB, 2s);
  EXPECT_EQ(RenderBar(snapshot),
            "100% [####################]  4.00 MiB of 4.00 MiB  2.00 MiB/s  in 0:02");
  EXPECT_EQ(RenderLine(snapshot), "nbdcopy: 100% 4.00 MiB of 4.00 MiB, 2.00 MiB/s, in 0:02");
}

TEST(RenderTest, UnfinishedCopyNeverShowsHundred) {
  ProgressSnapshot snapshot = Snapshot(4 * kMiB, 4 * kMiB);
  EXPECT_EQ(RenderLine(snapshot), "nbdcopy: 99% 4.00 MiB of 4.00 MiB, --/s");
}

TEST(RenderTest, StreamHasNoPercent) {
  ProgressSnapshot snapshot = Snapshot(5 * kMiB, std::nullopt, 1.0 * kMiB);
  EXPECT_EQ(RenderBar(snapshot), "5.00 MiB  1.00 MiB/s");
}

// Captures what a Progress writes, with a clock the test moves.
class Capture {
 public:
  Capture() { EXPECT_EQ(pipe2(fds_, O_NONBLOCK), 0); }
  ~Capture() {
    close(fds_[0]);
    close(fds_[1]);
  }
  int fd() const { return fds_[1]; }
  std::string Take() {
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fds_[0], buffer, sizeof buffer)) > 0) text.append(buffer, n);
    return text;
  }
  std::function<Clock::time_point()> clock() {
    return [this] { return now; };
  }
  Clock::time_point now{1h};

 private:
  int fds_[2];
};

TEST(ProgressTest, PercentProtocolNeverReportsHundredUnlessFinished) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kPercent, capture.fd(), 100, capture.clock());
    progress.Start();
    progress.Add(50);
    progress.Add(50);  // every byte counted, but the copy has not finished
  }
  EXPECT_EQ(capture.Take(), "0/100\n50/100\n99/100\n");

  Progress progress(ProgressStyle::kPercent, capture.fd(), 100, capture.clock());
  progress.Start();
  progress.Add(100);
  progress.Finish();
  EXPECT_EQ(capture.Take(), "0/100\n99/100\n100/100\n");
}

TEST(ProgressTest, BarRedrawsAtMostTenTimesASecondAndEndsItsLine) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kBar, capture.fd(), 100 * kMiB, capture.clock());
    progress.Start();
    for (int i = 0; i < 50; ++i) progress.Add(kMiB);  // all in the same instant
    capture.now += 150ms;
    progress.Add(kMiB);
  }  // destroyed unfinished, as on an error or interrupt
  std::string text = capture.Take();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 3) << text;  // Start, first Add, later Add
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find("100%"), std::string::npos);
  EXPECT_NE(text.find(" 51% "), std::string::npos) << text;
}

TEST(ProgressTest, BarFinishDrawsHundredOnceWithNewline) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kBar, capture.fd(), 4 * kMiB, capture.clock());
    progress.Start();
    capture.now += 2s;
    progress.Add(4 * kMiB);
    progress.Finish();
  }
  std::string text = capture.Take();
  ASSERT_TRUE(text.ends_with("\n"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  std::string last = text.substr(text.rfind('\r') + 1);
  last.erase(last.find_last_not_of(" \n") + 1);  // frames are padded to blank longer ones
  EXPECT_EQ(last, "100% [####################]  4.00 MiB of 4.00 MiB  2.00 MiB/s  in 0:02");
}

TEST(ProgressTest, LinesEveryTenPercentOrFiveSecondsAndAFinalLine) {
  Capture capture;
  Progress progress(ProgressStyle::kLines, capture.fd(), 100 * kMiB, capture.clock());
  progress.Start();
  for (int i = 0; i < 25; ++i) {
    capture.now += 200ms;  // past the redraw interval every time
    progress.Add(kMiB);
  }
  // 10 % and 20 %, no other line although Add ran 25 times.
  std::string text = capture.Take();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_NE(text.find("nbdcopy: 10% "), std::string::npos) << text;
  EXPECT_NE(text.find("nbdcopy: 20% "), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);

  capture.now += 6s;  // quiet for a while: a line without a new step
  progress.Add(kMiB);
  // The rate is measured over the last window: 6 MiB in 7 s.
  EXPECT_EQ(capture.Take(), "nbdcopy: 26% 26.0 MiB of 100 MiB, 878 KiB/s, ETA 1:27\n");

  progress.Add(74 * kMiB);
  capture.now += 100ms;
  progress.Finish();
  text = capture.Take();
  EXPECT_TRUE(text.ends_with("nbdcopy: 100% 100 MiB of 100 MiB, 9.01 MiB/s, in 0:11\n")) << text;
}

TEST(ProgressTest, StreamOfUnknownLengthGetsTimedLinesWithoutPercent) {
  Capture capture;
  Progress progress(ProgressStyle::kLines, capture.fd(), std::nullopt, capture.clock());
  progress.Start();
  capture.now += 1s;
  progress.Add(kMiB);
  EXPECT_EQ(capture.Take(), "");  // no 10 % steps to report, and not quiet for long
  capture.now += 5s;
  progress.Add(kMiB);
  EXPECT_EQ(capture.Take(), "nbdcopy: 2.00 MiB, 341 KiB/s\n");
  progress.Finish();
  EXPECT_EQ(capture.Take(), "nbdcopy: 2.00 MiB, 341 KiB/s, in 0:06\n");
}

TEST(ProgressTest, EmptyImageReportsZeroThenHundred) {
  Capture capture;
  Progress progress(ProgressStyle::kPercent, capture.fd(), 0, capture.clock());
  progress.Start();
  progress.Finish();
  EXPECT_EQ(capture.Take(), "0/100\n100/100\n");
  EXPECT_EQ(progress.copied(), 0u);
}

TEST(ProgressTest, NoneStyleStillCounts) {
  Progress progress(ProgressMode::kNone, -1, 100);
  progress.Start();
  progress.Add(40);
  progress.Add(2);
  progress.Finish();
  EXPECT_EQ(progress.copied(), 42u);  // for the interrupt message and --json
}

}  // namespace
}  // namespace nbdcopy
