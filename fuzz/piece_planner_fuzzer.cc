// The extent-to-operation planner (piece_planner.h) with random extent lists
// and block-size rules. Checks every invariant the header promises:
// progress and the documented end, full coverage of [start, end) in order
// without gaps or overlap, alignment (only the image's end may be
// unaligned), the size limits, zero operations only inside ranges the
// source called zero, and no zero run shorter than coalesce_below.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <vector>

#include "fuzz_check.h"
#include "plan/piece_planner.h"

namespace {

using nbdcopy::Extent;
using nbdcopy::PlanRules;

// True if every byte of [offset, offset + length) lies in a zero extent.
bool SourceSaidZero(const std::vector<Extent>& extents, uint64_t offset, uint64_t length) {
  for (const Extent& e : extents) {
    uint64_t lo = std::max(offset, e.offset), hi = std::min(offset + length, e.offset + e.length);
    if (lo < hi && !e.zero) return false;
  }
  const Extent& last = extents.back();
  return offset + length <= last.offset + last.length;  // nothing past the description
}

uint64_t ExpectedEnd(uint64_t start, const std::vector<Extent>& extents, const PlanRules& rules) {
  uint64_t end = std::min(rules.image_size, extents.back().offset + extents.back().length);
  if (end == rules.image_size) return end;
  uint64_t aligned = end / rules.alignment * rules.alignment;
  return aligned > start ? aligned : std::min(rules.image_size, start + rules.alignment);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  PlanRules rules;
  rules.alignment = uint64_t{1} << input.ConsumeIntegralInRange(0, 16);
  rules.max_data = rules.alignment * input.ConsumeIntegralInRange<uint64_t>(1, 1024);
  rules.max_zero = rules.alignment * input.ConsumeIntegralInRange<uint64_t>(1, 4096);
  rules.coalesce_below =
      input.ConsumeBool() ? 0 : input.ConsumeIntegralInRange<uint64_t>(1, 1 << 18);
  rules.image_size = input.ConsumeIntegralInRange<uint64_t>(1, uint64_t{1} << 40);
  const uint64_t blocks = (rules.image_size - 1) / rules.alignment;  // start < image_size
  const uint64_t start = rules.alignment * input.ConsumeIntegralInRange<uint64_t>(0, blocks);

  // Contiguous extents from start, short and long ones; the description may
  // end before or after the image does. An extent is at most 128 of the
  // smaller operation limit, so one input plans at most some 10^4
  // operations (memory and speed, not coverage: the limits are random too).
  const uint64_t longest = 128 * std::min(rules.max_data, rules.max_zero);
  std::vector<Extent> extents;
  uint64_t offset = start;
  const size_t count = input.ConsumeIntegralInRange<size_t>(1, 64);
  for (size_t i = 0; i < count; ++i) {
    uint64_t length = input.ConsumeBool()
                          ? input.ConsumeIntegralInRange<uint64_t>(1, rules.alignment * 4)
                          : input.ConsumeIntegralInRange<uint64_t>(1, longest);
    extents.push_back(Extent{offset, length, input.ConsumeBool()});
    offset += length;
  }

  std::vector<Extent> operations;
  const uint64_t end = nbdcopy::PlanPieces(start, extents, rules, &operations);

  FUZZ_CHECK(end > start && end <= rules.image_size, "end %" PRIu64 " for start %" PRIu64, end,
             start);
  FUZZ_CHECK(end == ExpectedEnd(start, extents, rules), "end %" PRIu64 ", documented %" PRIu64, end,
             ExpectedEnd(start, extents, rules));
  uint64_t position = start;
  uint64_t zero_run = 0;  // length of the zero run the current operation belongs to
  for (size_t i = 0; i < operations.size(); ++i) {
    const Extent& op = operations[i];
    const uint64_t op_end = op.offset + op.length;
    FUZZ_CHECK(op.offset == position,
               "operation %zu at %" PRIu64 ", expected %" PRIu64 " (gap or overlap)", i, op.offset,
               position);
    FUZZ_CHECK(op.length > 0, "empty operation %zu", i);
    FUZZ_CHECK(op.offset % rules.alignment == 0,
               "operation %zu at %" PRIu64 " not aligned to %" PRIu64, i, op.offset,
               rules.alignment);
    FUZZ_CHECK(op_end % rules.alignment == 0 || op_end == rules.image_size,
               "operation %zu ends at %" PRIu64 ", unaligned and not the image end", i, op_end);
    FUZZ_CHECK(op.length <= (op.zero ? rules.max_zero : rules.max_data),
               "operation %zu: %" PRIu64 " bytes, over the limit", i, op.length);
    if (op.zero) {
      FUZZ_CHECK(SourceSaidZero(extents, op.offset, op.length),
                 "zero operation %zu [%" PRIu64 ", +%" PRIu64 ") where the source said data", i,
                 op.offset, op.length);
      zero_run += op.length;
    }
    const bool run_ends = !op.zero || i + 1 == operations.size() || !operations[i + 1].zero;
    if (op.zero && run_ends) {
      FUZZ_CHECK(zero_run >= rules.coalesce_below, "zero run of %" PRIu64 " bytes, below %" PRIu64,
                 zero_run, rules.coalesce_below);
    }
    if (run_ends) zero_run = 0;
    position = op_end;
  }
  FUZZ_CHECK(position == end, "operations end at %" PRIu64 ", not %" PRIu64 " (not covered)",
             position, end);
  return 0;
}
