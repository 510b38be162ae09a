// Which plain digest to compute (--checksum[=ALGO[:HEX]]): the digest of
// the source's whole content as one byte stream, what `sha256sum` of the
// same bytes prints; part of the options.
#ifndef NBDCOPY_CHECKSUM_SPEC_H_
#define NBDCOPY_CHECKSUM_SPEC_H_

#include <cstddef>
#include <optional>
#include <string>

#include "nbdcopy/blkhash_spec.h"

namespace nbdcopy {

// The algorithms are the blkhash ones (libcrypto's names): md5, sha1,
// sha256 and sha512, the digests publishers print next to their images.
inline bool IsChecksumAlgorithm(std::string_view name) { return IsBlkhashAlgorithm(name); }

// Hex digits of the algorithm's digest; 0 for an unknown one.
inline size_t ChecksumHexLength(std::string_view algorithm) {
  if (algorithm == "md5") return 32;
  if (algorithm == "sha1") return 40;
  if (algorithm == "sha256") return 64;
  if (algorithm == "sha512") return 128;
  return 0;
}

struct ChecksumSpec {
  std::string algorithm = "sha256";     // lowercase, IsChecksumAlgorithm
  std::optional<std::string> expected;  // lowercase hex of ChecksumHexLength digits
};

}  // namespace nbdcopy

#endif  // NBDCOPY_CHECKSUM_SPEC_H_
