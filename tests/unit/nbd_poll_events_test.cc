#include "endpoints/nbd/nbd_poll_events.h"

#include <gtest/gtest.h>
#include <libnbd.h>
#include <poll.h>

namespace nbdcopy {
namespace {

constexpr unsigned kRead = LIBNBD_AIO_DIRECTION_READ;
constexpr unsigned kWrite = LIBNBD_AIO_DIRECTION_WRITE;
constexpr unsigned kBoth = LIBNBD_AIO_DIRECTION_BOTH;

TEST(NbdPollEventsTest, ReadyToReadOrWriteWakesThatSide) {
  EXPECT_EQ(NoticeFor(POLLIN, kRead), PollNotice::kRead);
  EXPECT_EQ(NoticeFor(POLLOUT, kWrite), PollNotice::kWrite);
  EXPECT_EQ(NoticeFor(POLLOUT, kBoth), PollNotice::kWrite);
  EXPECT_EQ(NoticeFor(POLLIN | POLLOUT, kBoth), PollNotice::kRead);
}

// The hang: connect() in progress waits to write; the command behind
// "[ CMD ]" (or a remote host refusing late) ends the socket, and poll(2)
// says POLLOUT|POLLERR|POLLHUP. A read notice there is refused by libnbd.
TEST(NbdPollEventsTest, AHangUpWhileWaitingToWriteWakesTheWriteSide) {
  EXPECT_EQ(NoticeFor(POLLOUT | POLLERR | POLLHUP, kWrite), PollNotice::kWrite);
  EXPECT_EQ(NoticeFor(POLLHUP, kWrite), PollNotice::kWrite);
  EXPECT_EQ(NoticeFor(POLLERR, kWrite), PollNotice::kWrite);
}

TEST(NbdPollEventsTest, AHangUpWhileReadingWakesTheReadSide) {
  EXPECT_EQ(NoticeFor(POLLHUP, kRead), PollNotice::kRead);
  EXPECT_EQ(NoticeFor(POLLERR, kRead), PollNotice::kRead);
  EXPECT_EQ(NoticeFor(POLLOUT | POLLHUP, kBoth), PollNotice::kRead);
}

TEST(NbdPollEventsTest, NothingReportedIsNoNotice) {
  EXPECT_EQ(NoticeFor(0, kRead), PollNotice::kNone);
  EXPECT_EQ(NoticeFor(0, kBoth), PollNotice::kNone);
}

}  // namespace
}  // namespace nbdcopy
