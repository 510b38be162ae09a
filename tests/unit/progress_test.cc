#include "job/progress.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <vector>

#include "support/fake_clock.h"

namespace nbdcopy {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1024 * 1024;

TEST(ProgressFormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(12 * kMiB + kMiB / 4), "12.2 MiB");
  EXPECT_EQ(FormatBytes(300 * kMiB), "300 MiB");
  EXPECT_EQ(FormatBytes(3 * 1024 * kMiB), "3.00 GiB");
  EXPECT_EQ(FormatBytes(UINT64_MAX), "16.0 EiB");
}

TEST(ProgressFormatTest, Duration) {
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

// libnbd's frame, which programs parse: the part every frame starts with.
std::string Upstream(const char* spinner, int percent, int stars) {
  return fmt::format("{} {:3}% [{}{}]", spinner, percent, std::string(stars, '*'),
                     std::string(40 - stars, '-'));
}

// Forklift's expression, as its Go monitor applies it to a line.
bool ForkliftMatches(const std::string& line, int* percent) {
  static const std::regex expression(R"(.+ (\d+)% \[[*-]+\])");
  std::smatch match;
  if (!std::regex_search(line, match, expression)) return false;
  *percent = std::stoi(match[1]);
  return true;
}

TEST(ProgressRenderTest, FrameOnA200ColumnTerminalHasEverything) {
  ProgressSnapshot snapshot = Snapshot(1024 * kMiB, 4096 * kMiB, 256.0 * kMiB);
  std::string frame = RenderFrame(snapshot, 1, 200);
  EXPECT_EQ(frame, Upstream("▐", 25, 10) + " 1.00 GiB of 4.00 GiB, 256 MiB/s, ETA 0:12");
  int percent = -1;
  EXPECT_TRUE(ForkliftMatches(frame, &percent));
  EXPECT_EQ(percent, 25);
  snapshot.rate = 0;  // not known yet: no ETA either
  EXPECT_EQ(RenderFrame(snapshot, 0, 200), Upstream("▝", 25, 10) + " 1.00 GiB of 4.00 GiB, --/s");
}

TEST(ProgressRenderTest, FrameOnAn80ColumnTerminalKeepsTheBytes) {
  ProgressSnapshot snapshot = Snapshot(1024 * kMiB, 4096 * kMiB, 256.0 * kMiB);
  std::string frame = RenderFrame(snapshot, 2, 80);
  EXPECT_EQ(frame, Upstream("▗", 25, 10) + " 1.00 GiB of 4.00 GiB");
  EXPECT_LE(FrameColumns(frame), 79u);
  // Shorter amounts leave room for the ETA, still not for the rate.
  snapshot = Snapshot(512 * 1024, 2 * kMiB, 512.0 * 1024);
  frame = RenderFrame(snapshot, 2, 80);
  EXPECT_EQ(frame, Upstream("▗", 25, 10) + " 512 KiB of 2.00 MiB, ETA 0:03");
  EXPECT_LE(FrameColumns(frame), 79u);
}

TEST(ProgressRenderTest, FrameOnA40ColumnTerminalShortensTheBarWithoutWrapping) {
  ProgressSnapshot snapshot = Snapshot(1024 * kMiB, 4096 * kMiB, 256.0 * kMiB);
  std::string frame = RenderFrame(snapshot, 3, 40);
  // 39 columns: the frame's fixed part and 30 cells, no extras.
  EXPECT_EQ(frame, "▃  25% [********----------------------]");
  EXPECT_EQ(FrameColumns(frame), 39u);
  int percent = -1;
  EXPECT_TRUE(ForkliftMatches(frame, &percent));
  EXPECT_EQ(percent, 25);
}

TEST(ProgressRenderTest, CellsAreCountedAsLibnbdCountsThem) {
  // One cell for each started fortieth of the copy.
  EXPECT_EQ(RenderFrame(Snapshot(0, 4000), 0, 0), Upstream("▝", 0, 0) + " 0 B of 3.91 KiB, --/s");
  EXPECT_EQ(RenderFrame(Snapshot(1, 4000), 0, 0).substr(0, 51), Upstream("▝", 0, 1));
  EXPECT_EQ(RenderFrame(Snapshot(3999, 4000), 0, 0).substr(0, 51), Upstream("▝", 99, 40));
}

TEST(ProgressRenderTest, FinalFrameIsLibnbdsHundredFrameThenElapsed) {
  ProgressSnapshot snapshot = Snapshot(4 * kMiB, 4 * kMiB, 2.0 * kMiB, 2s);
  EXPECT_EQ(RenderFrame(snapshot, 5, 0),
            Upstream("█", 100, 40) + " 4.00 MiB of 4.00 MiB, 2.00 MiB/s, in 0:02");
  EXPECT_EQ(RenderFrame(snapshot, 5, 80),
            Upstream("█", 100, 40) + " 4.00 MiB of 4.00 MiB, in 0:02");
}

TEST(ProgressRenderTest, UnfinishedCopyNeverShowsHundred) {
  ProgressSnapshot snapshot = Snapshot(4 * kMiB, 4 * kMiB);
  EXPECT_EQ(RenderFrame(snapshot, 0, 0), Upstream("▝", 99, 40) + " 4.00 MiB of 4.00 MiB, --/s");
}

TEST(ProgressRenderTest, SpinnerTurnsThroughLibnbdsEightCharacters) {
  std::string spinners;
  for (unsigned spin = 0; spin < 9; ++spin)
    spinners += RenderFrame(Snapshot(0, 1), spin, 0).substr(0, 3);
  EXPECT_EQ(spinners, "▝▐▗▃▖▍▘▀▝");
}

TEST(ProgressRenderTest, StreamHasNoPercentUntilItEnds) {
  ProgressSnapshot snapshot = Snapshot(5 * kMiB, std::nullopt, 1.0 * kMiB);
  EXPECT_EQ(RenderFrame(snapshot, 0, 0), "▝ 5.00 MiB, 1.00 MiB/s");
  snapshot.elapsed = 5s;
  EXPECT_EQ(RenderFrame(snapshot, 0, 0), Upstream("█", 100, 40) + " 5.00 MiB, 1.00 MiB/s, in 0:05");
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
  fakes::FakeClock clock;  // what the Progress reads, moved by the test

 private:
  int fds_[2];
};

TEST(ProgressTest, PercentProtocolNeverReportsHundredUnlessFinished) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kPercent, capture.fd(), 100, capture.clock.now());
    progress.Start();
    progress.Add(50);
    progress.Add(50);  // every byte counted, but the copy has not finished
  }
  EXPECT_EQ(capture.Take(), "0/100\n50/100\n99/100\n");

  Progress progress(ProgressStyle::kPercent, capture.fd(), 100, capture.clock.now());
  progress.Start();
  progress.Add(100);
  progress.Finish();
  EXPECT_EQ(capture.Take(), "0/100\n99/100\n100/100\n");
}

TEST(ProgressTest, BarRedrawsAtMostTenTimesASecondAndEndsItsLine) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kBar, capture.fd(), 100 * kMiB, capture.clock.now());
    progress.Start();
    for (int i = 0; i < 50; ++i) progress.Add(kMiB);  // all in the same instant
    capture.clock.time += 150ms;
    progress.Add(kMiB);
  }  // destroyed unfinished, as on an error or interrupt
  std::string text = capture.Take();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 3) << text;  // Start, first Add, later Add
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find("100%"), std::string::npos);
  EXPECT_NE(text.find(Upstream("▗", 51, 21)), std::string::npos) << text;
}

TEST(ProgressTest, BarFinishDrawsHundredOnceWithNewline) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kBar, capture.fd(), 4 * kMiB, capture.clock.now());
    progress.Start();
    capture.clock.time += 2s;
    progress.Add(4 * kMiB);
    progress.Finish();
  }
  std::string text = capture.Take();
  ASSERT_TRUE(text.ends_with("\n"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  std::string last = text.substr(text.rfind('\r') + 1);
  last.erase(last.find_last_not_of(" \n") + 1);  // frames are padded to blank longer ones
  EXPECT_EQ(last, Upstream("█", 100, 40) + " 4.00 MiB of 4.00 MiB, 2.00 MiB/s, in 0:02");
}

// The lines Progress wrote, each checked against Forklift's expression;
// returns the percents in order.
std::vector<int> ForkliftPercents(const std::string& text) {
  std::vector<int> percents;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    int percent = -1;
    EXPECT_TRUE(ForkliftMatches(text.substr(begin, end - begin), &percent))
        << text.substr(begin, end - begin);
    percents.push_back(percent);
  }
  EXPECT_EQ(begin, text.size()) << "an unfinished line";
  return percents;
}

TEST(ProgressTest, LinesOnEachWholePercentAtMostOneASecond) {
  Capture capture;
  Progress progress(ProgressStyle::kLines, capture.fd(), 100 * kMiB, capture.clock.now());
  progress.Start();
  EXPECT_EQ(ForkliftPercents(capture.Take()), std::vector<int>{0});
  for (int i = 0; i < 25; ++i) {
    capture.clock.time += 200ms;  // past the redraw interval every time
    progress.Add(kMiB);
  }
  // A percent a step, but one line a second: 5 lines in 5 seconds.
  std::string text = capture.Take();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(ForkliftPercents(text), (std::vector<int>{5, 10, 15, 20, 25})) << text;

  capture.clock.time += 3s;  // no new percent: nothing
  progress.Add(kMiB / 2);
  EXPECT_EQ(capture.Take(), "");
  capture.clock.time += 8s;  // quiet for 10 s: a line without a new percent
  progress.Add(kMiB / 4);
  // The rate is measured over the last window: 0.25 MiB in 8 s.
  EXPECT_EQ(capture.Take(),
            Upstream("▘", 25, 11) + " 25.8 MiB of 100 MiB, 32.0 KiB/s, ETA 39:36\n");

  progress.Add(74 * kMiB + kMiB / 4);
  capture.clock.time += 100ms;
  progress.Finish();
  EXPECT_EQ(capture.Take(), Upstream("█", 100, 40) + " 100 MiB of 100 MiB, 6.21 MiB/s, in 0:16\n");
}

TEST(ProgressTest, LinesOfAnUnfinishedCopyStopBelowHundred) {
  Capture capture;
  {
    Progress progress(ProgressStyle::kLines, capture.fd(), 100, capture.clock.now());
    progress.Start();
    capture.clock.time += 2s;
    progress.Add(100);  // every byte counted, but the copy failed before the end
  }
  EXPECT_EQ(ForkliftPercents(capture.Take()), (std::vector<int>{0, 99}));
}

TEST(ProgressTest, StreamOfUnknownLengthGetsQuietLinesThenAHundredFrame) {
  Capture capture;
  Progress progress(ProgressStyle::kLines, capture.fd(), std::nullopt, capture.clock.now());
  progress.Start();
  EXPECT_EQ(capture.Take(), "▝ 0 B, --/s\n");
  capture.clock.time += 5s;
  progress.Add(kMiB);
  EXPECT_EQ(capture.Take(), "");  // no percent to report, and not quiet for long
  capture.clock.time += 6s;
  progress.Add(kMiB);
  EXPECT_EQ(capture.Take(), "▐ 2.00 MiB, 171 KiB/s\n");
  progress.Finish();
  EXPECT_EQ(capture.Take(), Upstream("█", 100, 40) + " 2.00 MiB, 186 KiB/s, in 0:11\n");
}

TEST(ProgressTest, EmptyImageReportsZeroThenHundred) {
  Capture capture;
  Progress progress(ProgressStyle::kPercent, capture.fd(), 0, capture.clock.now());
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
