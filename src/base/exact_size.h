// Sizes written in the largest binary unit that divides them exactly, the
// way --help shows defaults ("14M") and libnbd's -v lines show sizes
// ("32M", "3"): nothing is rounded.
#ifndef NBDCOPY_BASE_EXACT_SIZE_H_
#define NBDCOPY_BASE_EXACT_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace nbdcopy {

// units names the multiples of 1024 in order ("KMGT": K = 1 << 10, ...);
// past the last one the number just grows.
inline std::string FormatExactSize(uint64_t bytes, std::string_view units) {
  size_t unit = 0;
  while (unit < units.size() && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  std::string text = std::to_string(bytes);
  if (unit > 0) text += units[unit - 1];
  return text;
}

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_EXACT_SIZE_H_
