// Which blkhash to compute (--blkhash[=ALGO[/SIZE]]): part of the options,
// and all the checksum layer needs of them.
#ifndef NBDCOPY_BLKHASH_SPEC_H_
#define NBDCOPY_BLKHASH_SPEC_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace nbdcopy {

// The digests a blkhash may use (libcrypto's names).
inline constexpr std::array<std::string_view, 4> kBlkhashAlgorithms = {"md5", "sha1", "sha256",
                                                                       "sha512"};

inline bool IsBlkhashAlgorithm(std::string_view name) {
  return std::find(kBlkhashAlgorithms.begin(), kBlkhashAlgorithms.end(), name) !=
         kBlkhashAlgorithms.end();
}

struct BlkhashSpec {
  std::string algorithm = "sha256";  // md5, sha1, sha256 or sha512
  uint64_t block_size = 64 * 1024;   // a power of 2
};

}  // namespace nbdcopy

#endif  // NBDCOPY_BLKHASH_SPEC_H_
