// Which of libnbd's notifications answers what poll(2) reported for its
// socket. libnbd accepts a notification only in a state that waits for
// it: while connect() is in progress (CONNECT.START, CONNECT.CONNECTING)
// it waits to write, and a read notice there is refused ("external event
// is invalid in state") and changes nothing. A hang-up or an error
// (POLLHUP, POLLERR) must therefore wake the side libnbd waits on: the
// read side when it reads (it then meets the end of the stream), else the
// write side (it then reads the socket's error). Answering a hang-up with
// the wrong side left the handle as it was, poll(2) reporting the hang-up
// again at once: a loop at full CPU that no --timeout ended.
#ifndef NBDCOPY_NBD_POLL_EVENTS_H_
#define NBDCOPY_NBD_POLL_EVENTS_H_

namespace nbdcopy {

enum class PollNotice { kNone, kRead, kWrite };

// revents: what poll(2) reported; direction: nbd_aio_get_direction's bits
// (LIBNBD_AIO_DIRECTION_READ, LIBNBD_AIO_DIRECTION_WRITE).
PollNotice NoticeFor(short revents, unsigned direction);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_POLL_EVENTS_H_
