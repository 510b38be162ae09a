// --ranges=FILE in one job: the list read (from FILE or standard input)
// and parsed against the source's size (plan/range_list.h), and what the
// plan skips because of it. The copy is then an incremental one
// (plan/incremental.h), exactly as for --dirty-bitmap.
// Thread safety: one thread.
#ifndef NBDCOPY_JOB_RANGES_JOB_H_
#define NBDCOPY_JOB_RANGES_JOB_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/file_system.h"
#include "base/range_set.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

// REQUIRES options.ranges. Reads the list whole ("-": standard input).
// Errors: "--ranges=FILE: <why>".
[[nodiscard]] Result<std::string> ReadRangesText(const Options& options,
                                                 FileSystem& files = RealFileSystem());

// REQUIRES options.ranges. The listed ranges of an image of `size` bytes.
[[nodiscard]] Result<RangeSet> ParseListedRanges(const Options& options, const std::string& text,
                                                 uint64_t size);

// What a copy of `listed` leaves alone: everything else of an image of
// `size` bytes (the work map shrinks it to whole blocks: a block with a
// listed byte is copied whole).
RangeSet UnlistedRanges(const RangeSet& listed, uint64_t size);

// A short digest of the list, for a checkpoint's identity: another list is
// another copy.
std::string RangesDigest(const RangeSet& listed);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_RANGES_JOB_H_
