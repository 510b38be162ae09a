// Why a "[ CMD ]" server went away before its NBD handshake ended: libnbd
// only says the socket was reset, and its child is ours to ask about.
// libnbd 1.14 does not tell the child's pid, so it is found as the child
// of this thread that the connecting call added (/proc/thread-self/
// children), and asked with WNOWAIT: libnbd still reaps it when the
// handle closes.
#ifndef NBDCOPY_NBD_COMMAND_END_H_
#define NBDCOPY_NBD_COMMAND_END_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace nbdcopy {

// The pids of this thread's children (empty if the kernel does not say).
std::vector<pid_t> ThreadChildren();

// The one of `after` that is not in `before`, or 0.
pid_t NewChild(const std::vector<pid_t>& before, const std::vector<pid_t>& after);

// "the command CMD was not found", "CMD exited with status N before its
// NBD handshake ended", "CMD was killed by signal S (SIGNAME) before ...",
// waiting up to a second for the child `pid` (0:
// unknown) to end; "" when it still runs or nothing is known, and for a
// status 0 unless zero_is_news (ssh ends with 0 when its far side closed
// because we hung up: that says nothing about why).
std::string CommandEnd(const std::vector<std::string>& argv, pid_t pid, bool zero_is_news = true);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_COMMAND_END_H_
