#include "job/ranges_job.h"

#include <fmt/format.h>

#include "plan/range_list.h"

namespace nbdcopy {

Result<std::string> ReadRangesText(const Options& options, FileSystem& files) {
  const std::string& name = *options.ranges;
  std::string text;
  // Any file, a pipe too (--ranges=<(command)), read to its end.
  const FileError error = name == "-" ? files.ReadStandardInput(&text)
                                      : files.ReadWhole(name, /*regular_only=*/false, &text);
  if (error.failed()) return Status::FromErrno("--ranges=" + name, error.error);
  return text;
}

Result<RangeSet> ParseListedRanges(const Options& options, const std::string& text, uint64_t size) {
  return ParseRangeList(text, size, options.ranges_type, *options.ranges);
}

RangeSet UnlistedRanges(const RangeSet& listed, uint64_t size) {
  RangeSet unlisted;
  for (const RangeSet::Range& gap : listed.Gaps(size)) unlisted.Add(gap.offset, gap.length);
  return unlisted;
}

std::string RangesDigest(const RangeSet& listed) {
  // FNV-1a over the runs: enough to tell two lists apart.
  uint64_t hash = 14695981039346656037ULL;
  auto mix = [&](uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xff;
      hash *= 1099511628211ULL;
    }
  };
  for (const RangeSet::Range& run : listed.Runs()) {
    mix(run.offset);
    mix(run.length);
  }
  return fmt::format("{}/{}/{:016x}", listed.size(), listed.bytes(), hash);
}

}  // namespace nbdcopy
