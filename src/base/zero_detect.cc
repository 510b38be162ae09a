#include "base/zero_detect.h"

#include <cstring>

namespace nbdcopy {

bool IsZero(std::span<const std::byte> data) {
  if (data.empty()) return true;
  // Comparing the buffer with itself shifted by one byte lets memcmp's
  // vectorised loop do the scan.
  return data[0] == std::byte{0} && std::memcmp(data.data(), data.data() + 1, data.size() - 1) == 0;
}

}  // namespace nbdcopy
