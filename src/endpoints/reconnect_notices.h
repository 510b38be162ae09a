// What endpoints that re-establish dropped connections (NBD with --retry)
// tell the run: how many times they did, and a line to show the user
// while they do ("reconnecting in 2 s"). One instance is shared by every
// connection of a run.
// Thread safety: reconnections is atomic; notice is called from any
// worker thread and must be safe for that.
#ifndef NBDCOPY_ENDPOINTS_RECONNECT_NOTICES_H_
#define NBDCOPY_ENDPOINTS_RECONNECT_NOTICES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace nbdcopy {

struct ReconnectNotices {
  std::atomic<uint64_t> reconnections{0};
  // One line without the "nbdcopy: " prefix or a newline; empty: nothing shown.
  std::function<void(const std::string& line)> notice;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ENDPOINTS_RECONNECT_NOTICES_H_
