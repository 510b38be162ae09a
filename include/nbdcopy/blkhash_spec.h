// Which blkhash to compute (--blkhash[=ALGO[/SIZE]]): part of the options,
// and all the checksum layer needs of them.
#ifndef NBDCOPY_BLKHASH_SPEC_H_
#define NBDCOPY_BLKHASH_SPEC_H_

#include <cstdint>
#include <string>

namespace nbdcopy {

struct BlkhashSpec {
  std::string algorithm = "sha256";  // md5, sha1, sha256 or sha512
  uint64_t block_size = 64 * 1024;   // a power of 2
};

}  // namespace nbdcopy

#endif  // NBDCOPY_BLKHASH_SPEC_H_
