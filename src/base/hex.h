// Bytes as lowercase hex, as digests are printed.
#ifndef NBDCOPY_BASE_HEX_H_
#define NBDCOPY_BASE_HEX_H_

#include <cstddef>
#include <string>

namespace nbdcopy {

inline std::string LowercaseHex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 15];
  }
  return text;
}

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_HEX_H_
