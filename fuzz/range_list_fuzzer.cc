// The --ranges list parser (plan/range_list.h) with arbitrary text, read
// whole as the list (so the seeds are plain JSON and text files), against
// several image sizes and with and without a type filter. Checks: it never
// crashes; an error is one line (no control characters) starting
// "--ranges=NAME: "; a success is a non-empty set of sorted, disjoint,
// non-touching runs inside the image whose lengths add up to bytes(); and
// the size only decides whether a list is accepted: a list accepted for an
// image is accepted, as the same set, for any larger image.
#include <cinttypes>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/range_set.h"
#include "fuzz_check.h"
#include "plan/range_list.h"

namespace {

using nbdcopy::RangeSet;
using nbdcopy::Result;

constexpr uint64_t kImageSizes[] = {0, 4096, uint64_t{16} << 20, uint64_t{1} << 40, UINT64_MAX};
const std::optional<int64_t> kFilters[] = {std::nullopt, 0, 1, -1};
const std::string kName = "list";

void CheckError(const std::string& message) {
  const std::string prefix = "--ranges=" + kName + ": ";
  FUZZ_CHECK(message.compare(0, prefix.size(), prefix) == 0 && message.size() > prefix.size(),
             "message without the prefix: %s", message.c_str());
  for (char c : message) {
    FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f,
               "control character 0x%02x in the message: %s", static_cast<unsigned char>(c),
               message.c_str());
  }
}

void CheckSet(const RangeSet& set, uint64_t image_size) {
  const std::vector<RangeSet::Range> runs = set.Runs();
  FUZZ_CHECK(!runs.empty() && !set.empty(), "an accepted list with no ranges");
  FUZZ_CHECK(runs.size() == set.size(), "%zu runs, size() %zu", runs.size(), set.size());
  uint64_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RangeSet::Range& run = runs[i];
    FUZZ_CHECK(run.length > 0, "empty run %zu at %" PRIu64, i, run.offset);
    FUZZ_CHECK(run.length <= image_size && run.offset <= image_size - run.length,
               "run %zu [%" PRIu64 ", +%" PRIu64 ") past the image (%" PRIu64 " bytes)", i,
               run.offset, run.length, image_size);
    if (i > 0) {
      FUZZ_CHECK(runs[i - 1].end() < run.offset,
                 "run %zu at %" PRIu64 " does not follow the last one (ends %" PRIu64 ")", i,
                 run.offset, runs[i - 1].end());
    }
    total += run.length;
  }
  FUZZ_CHECK(total == set.bytes(), "runs add up to %" PRIu64 ", bytes() %" PRIu64, total,
             set.bytes());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const std::optional<int64_t>& filter : kFilters) {
    std::optional<RangeSet> smaller;  // accepted for a smaller image
    for (uint64_t image_size : kImageSizes) {
      Result<RangeSet> set = nbdcopy::ParseRangeList(text, image_size, filter, kName);
      if (!set.ok()) {
        CheckError(set.status().message());
        FUZZ_CHECK(!smaller, "accepted for a smaller image, refused for %" PRIu64 " bytes: %s",
                   image_size, set.status().message().c_str());
        continue;
      }
      CheckSet(*set, image_size);
      FUZZ_CHECK(!smaller || *smaller == *set, "a larger image (%" PRIu64 ") gave another set",
                 image_size);
      smaller = std::move(set).value();
    }
  }
  return 0;
}
