// Turns the source's extents into the copy's pieces, obeying the
// endpoints' block-size rules. A pure function (no I/O, no state): both
// engines get their work from it through WorkMap, and the unit tests and the
// fuzz target check its invariants directly.
//
// Invariants of the pieces PlanPieces appends (each an Extent:
// clean == true leaves the destination alone (no I/O at all); otherwise
// zero == true is one zero operation on the destination, false is data to
// read and write):
//  - they cover [start, returned end) in order, without gaps or overlap;
//  - every offset and length is a multiple of rules.alignment, except that
//    the last piece may end at image_size;
//  - a data piece is at most rules.max_data bytes, a zero piece at
//    most rules.max_zero;
//  - a zero piece lies wholly inside ranges the source called zero;
//  - clean pieces appear only with rules.skip_clean. One lies wholly
//    inside ranges the source called clean, and every aligned block (or the
//    short last block) lying wholly inside such ranges is in one: clean
//    ranges shrink to whole blocks, the partial blocks at their edges are
//    copied like any other. Zero and data pieces never overlap a clean
//    one, so inside dirty ranges holes still become zero pieces;
//  - without rules.zero_extents the source's zero ranges are planned as
//    data;
//  - zero ranges shorter than rules.coalesce_below become data (they ride
//    along with the neighbouring data; zero detection finds them again),
//    so the number of pieces follows the amount of data and the number
//    of large holes, not the number of extents.
#ifndef NBDCOPY_PIECE_PLANNER_H_
#define NBDCOPY_PIECE_PLANNER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "nbdcopy/endpoint.h"

namespace nbdcopy {

struct PlanRules {
  uint64_t image_size = 0;
  uint64_t alignment = 1;               // power of 2
  uint64_t max_data = 1 << 20;          // multiple of alignment
  uint64_t max_zero = kMaxZeroLength;   // multiple of alignment
  uint64_t coalesce_below = 64 * 1024;  // shorter zero ranges are data
  bool zero_extents = true;             // plan the source's zero ranges as zero
  bool skip_clean = false;              // incremental copy: clean ranges are skipped
};

// extents: the source's description of a range starting at `start`,
// contiguous (the caller checks), possibly ending before or after where the
// caller asked. REQUIRES start < rules.image_size, start is a multiple of
// rules.alignment, extents non-empty and extents[0].offset == start.
// Appends pieces and returns where they end: the extents' end (capped at
// image_size) rounded down to the alignment; or, when the extents cover less
// than one aligned block, the end of that block (capped at image_size), the
// undescribed part being data.
uint64_t PlanPieces(uint64_t start, std::span<const Extent> extents, const PlanRules& rules,
                    std::vector<Extent>* pieces);

}  // namespace nbdcopy

#endif  // NBDCOPY_PIECE_PLANNER_H_
