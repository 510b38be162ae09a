// pwrite(2) of a whole buffer at an offset, past EINTR and short transfers:
// the loop every FileEndpoint write needs, whichever descriptor it uses.
#ifndef NBDCOPY_PWRITE_ALL_H_
#define NBDCOPY_PWRITE_ALL_H_

#include <errno.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace nbdcopy {

// Returns 0, or the errno of the call that failed (ENOSPC for one that
// wrote nothing).
inline int PwriteAll(int fd, std::span<const std::byte> data, uint64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = pwrite(fd, data.data() + done, data.size() - done,
                       static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace nbdcopy

#endif  // NBDCOPY_PWRITE_ALL_H_
