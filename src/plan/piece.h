// What the copy loops are handed: a range of the image and what to do with
// it, one meaning per kind. The work map decides the kind from what the
// source says of the range (Extent: data, zero, clean in a dirty bitmap)
// and from what the copy covers (plan/coverage.h); the loops only act on it.
#ifndef NBDCOPY_PLAN_PIECE_H_
#define NBDCOPY_PLAN_PIECE_H_

#include <cstdint>

namespace nbdcopy {

enum class PieceKind : uint8_t {
  // Read, then each run written, zeroed or skipped (engine/piece_policy.h).
  kData,
  // The source says it reads as zeroes: one zero operation, or nothing
  // where the destination already reads as zero.
  kZero,
  // Already on the destination (a resumed copy's done ranges, when the
  // checksum covers the whole source): read and hashed, never written.
  kHashOnly,
  // Counted by the checksum as zeroes: neither read nor written (done zero
  // ranges; what a --ranges list leaves out, when --verify compares only
  // the list).
  kHashAsZero,
  // Copied before, but a destination restart may have lost it (--retry):
  // read and written again, not hashed or counted a second time.
  kCopyAgain,
};

struct Piece {
  uint64_t offset = 0;
  uint64_t length = 0;
  PieceKind kind = PieceKind::kData;

  uint64_t end() const { return offset + length; }
  // Its bytes are read from the source.
  bool reads() const {
    return kind == PieceKind::kData || kind == PieceKind::kHashOnly ||
           kind == PieceKind::kCopyAgain;
  }
  bool operator==(const Piece&) const = default;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PLAN_PIECE_H_
