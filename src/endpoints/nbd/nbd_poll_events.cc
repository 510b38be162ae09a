#include "endpoints/nbd/nbd_poll_events.h"

#include <libnbd.h>
#include <poll.h>

namespace nbdcopy {

PollNotice NoticeFor(short revents, unsigned direction) {
  const bool reads = (direction & LIBNBD_AIO_DIRECTION_READ) != 0;
  const bool trouble = (revents & (POLLHUP | POLLERR)) != 0;
  if ((revents & POLLIN) != 0 || (trouble && reads)) return PollNotice::kRead;
  if ((revents & POLLOUT) != 0 || trouble) return PollNotice::kWrite;
  return PollNotice::kNone;
}

}  // namespace nbdcopy
