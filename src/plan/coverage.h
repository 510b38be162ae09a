// What one copy covers, decided once before it starts: job/ builds it from
// the options, a --ranges list and a checkpoint, the plan carries it, and
// the work map alone turns it into pieces. Every range of the image is
// copied, but for two kinds of ranges a copy may leave alone:
//  - unlisted: outside a --ranges list; never written;
//  - done: copied by an earlier run (--checkpoint); never written again.
// What the checksum makes of them, if there is one: done ranges are read
// and hashed when the digest covers the whole source (hash_done), unlisted
// ranges count as zeroes when --verify compares only the list
// (unlisted_as_zero); otherwise they are skipped outright.
// Both sets are as given; the work map shrinks each inward to whole blocks
// of the copy's alignment (a partial block at an edge is copied, so no
// request breaks the block-size rules).
#ifndef NBDCOPY_PLAN_COVERAGE_H_
#define NBDCOPY_PLAN_COVERAGE_H_

#include "base/range_set.h"

namespace nbdcopy {

struct Coverage {
  RangeSet unlisted;
  RangeSet done;
  bool hash_done = false;
  bool unlisted_as_zero = false;

  // Covers everything: a plain copy.
  bool whole() const { return unlisted.empty() && done.empty(); }
};

}  // namespace nbdcopy

#endif  // NBDCOPY_PLAN_COVERAGE_H_
