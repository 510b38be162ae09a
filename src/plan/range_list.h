// --ranges=FILE: the byte ranges an incremental copy copies, as a change
// tracker or `nbdinfo --map --json` lists them. The caller reads FILE (or
// standard input for "-"); this parses the text into a RangeSet.
//
// The form is told from the content: after leading whitespace (and a UTF-8
// byte order mark), "[" or "{" means JSON, anything else text.
//
// JSON: an array of objects, each with "offset" (or "start", not both) and
// "length"; other keys are ignored. Numbers must be JSON integers from 0 to
// 2^64 - 1: no fractions or exponents (4096.0, 1e3), no strings ("4096").
// Rows that carry "type", as `nbdinfo --map --json` prints them, e.g.
//   { "offset": 1048576, "length": 65536, "type": 1, "description": "dirty"}
// describe the whole image, one row per kind, so the caller must choose the
// rows with type_filter (--ranges-type=N): a row is copied when its "type"
// equals N exactly (a JSON integer; no bit test). If any row has a "type"
// and no filter is given, the list is refused; if a filter is given, every
// row must have a "type". Every row, copied or not, must be a valid range
// of the image. Messages name a row by its 0-based index: "element [2]".
//
// Text: one "OFFSET LENGTH" pair a line, separated by spaces or tabs and
// optionally one comma ("0 4096", "1M,64K", "0x1000 , 4K"). Each number is
// a size as the command line writes them (ParseSizeText: "4096", "64K",
// "1MiB") or hexadecimal with a "0x" prefix and no suffix ("0x10000").
// "#" starts a comment, to the end of the line; blank lines are ignored;
// a line may end in "\r". Messages name a line by its 1-based number:
// "line 7". A text list has no types: a type_filter is refused.
//
// Both forms: ranges may come in any order, overlap or touch; they are
// merged. A zero length is accepted and adds nothing (but its offset must
// still lie within the image).
//
// Errors, one line each, all starting "--ranges=NAME: " (NAME as given):
// invalid JSON (with the parser's line and column), a JSON that is not an
// array of objects, a missing field, a number that is negative, fractional,
// not a number or too large, offset + length overflowing 64 bits or past
// image_size (both numbers given), a line that is not two numbers, "type"
// rows without a filter or a filter without "type" rows, and a list that
// names no ranges at all: an empty file, only comments or zero lengths, or
// no row of the chosen type.
// Thread safety: a pure function. REQUIRES nothing; never touches the OS.
#ifndef NBDCOPY_PLAN_RANGE_LIST_H_
#define NBDCOPY_PLAN_RANGE_LIST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/range_set.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// `name` is FILE as the user gave it ("-" for stdin), for messages.
// On success the set is not empty and lies within [0, image_size).
[[nodiscard]] Result<RangeSet> ParseRangeList(std::string_view text, uint64_t image_size,
                                              std::optional<int64_t> type_filter,
                                              const std::string& name);

}  // namespace nbdcopy

#endif  // NBDCOPY_PLAN_RANGE_LIST_H_
