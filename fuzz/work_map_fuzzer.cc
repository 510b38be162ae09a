// WorkMap (work_map.h) over random images and rules, with and without
// skip_costly_maps. The source describes a repeating pattern of data and
// zero segments, answers each extents query in full or in part, and fails
// some. Checks: the pieces cover the image in order without gaps or
// overlap; a zero piece lies wholly inside zero segments; without
// skip_costly_maps nothing is copied unasked; with it, no stretch between
// two answers (or after the last) is longer than the documented bound, and
// the unasked bytes reported never exceed the image. With a coverage
// (plan/coverage.h): done ranges skipped: no piece overlaps their whole
// blocks and only they are jumped over; done ranges hashed: exactly they
// are handed out hash-only (as zeroes only over zero segments); unlisted
// ranges hashed as zeroes (--verify of a list): exactly they, kHashAsZero.
// Huge images of long holes (to 4 TiB): no query longer than
// WorkMap::LongestWindow().
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/range_set.h"
#include "fuzz_check.h"
#include "plan/work_map.h"
#include "support/described_image.h"

namespace {

using nbdcopy::Endpoint;
using nbdcopy::EndpointInfo;
using nbdcopy::Extent;
using nbdcopy::Piece;
using nbdcopy::PieceKind;
using nbdcopy::PlanRules;
using nbdcopy::Result;
using nbdcopy::Status;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kUnaskedBound = nbdcopy::WorkMap::kMaxUnasked;

struct Segment {
  uint64_t length;
  bool zero;
};

class PatternSource : public nbdcopy::fakes::DescribedImage {
 public:
  PatternSource(uint64_t size, std::vector<Segment> segments, unsigned fail_every,
                unsigned short_every)
      : DescribedImage(size),
        segments_(std::move(segments)),
        fail_every_(fail_every),
        short_every_(short_every) {
    for (const Segment& segment : segments_) period_ += segment.length;
  }

  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    ++queries_;
    if (fail_every_ != 0 && queries_ % fail_every_ == 0) {
      answers.push_back(Extent{offset, length, false});  // asked: the map copies it as data
      return Status::Error("extents failed");
    }
    uint64_t end = offset + length;
    if (short_every_ != 0 && queries_ % short_every_ == 0) end = offset + (length + 1) / 2;
    for (uint64_t position = offset; position < end;) {
      const Segment& segment = SegmentAt(position);
      uint64_t next = std::min(end, position + segment_left_);
      out->push_back(Extent{position, next - position, segment.zero});
      position = next;
    }
    answers.push_back(Extent{offset, end - offset, false});
    return Status::Ok();
  }

  // Whether every byte of [offset, offset + length) is in a zero segment.
  bool AllZero(uint64_t offset, uint64_t length) {
    for (uint64_t position = offset; position < offset + length;) {
      if (!SegmentAt(position).zero) return false;
      position += segment_left_;
    }
    return true;
  }

  std::vector<Extent> answers;  // the ranges asked for and answered (or failed), in order

 private:
  // The segment holding position; sets segment_left_ to the bytes left in it.
  const Segment& SegmentAt(uint64_t position) {
    uint64_t within = position % period_;
    for (const Segment& segment : segments_) {
      if (within < segment.length) {
        segment_left_ = segment.length - within;
        return segment;
      }
      within -= segment.length;
    }
    segment_left_ = 1;  // not reached: the segments fill the period
    return segments_.back();
  }

  std::vector<Segment> segments_;
  uint64_t period_ = 0;
  uint64_t segment_left_ = 0;
  unsigned fail_every_, short_every_;
  unsigned queries_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  PlanRules rules;
  rules.alignment = uint64_t{1} << input.ConsumeIntegralInRange(0, 16);
  // At least 64 KiB per data operation and segments of at least 4 KiB keep
  // an input to some 10^5 extents and operations.
  rules.max_data = std::max<uint64_t>(64 * 1024, rules.alignment) *
                   input.ConsumeIntegralInRange<uint64_t>(1, 16);
  // Huge images of long holes (up to 4 TiB, holes of 1 GiB to 4 TiB, data
  // runs of at most 1 MiB): windows grow into the holes beyond 1 GiB. Their
  // zero pieces are as long as a copy's (about 1 GiB: plan/copy_plan.cc),
  // else an input would take minutes.
  const bool huge = input.ConsumeBool();
  rules.max_zero = rules.max_data * input.ConsumeIntegralInRange<uint64_t>(1, 1024);
  if (huge)
    rules.max_zero =
        std::max(rules.max_zero, (uint64_t{1} << 30) / rules.max_data * rules.max_data);
  rules.coalesce_below = input.ConsumeIntegralInRange<uint64_t>(0, 1 << 18);
  rules.image_size =
      input.ConsumeIntegralInRange<uint64_t>(1, huge ? uint64_t{1} << 42 : uint64_t{2} << 30);
  const bool skip_costly_maps = input.ConsumeBool();
  // (Huge images: every window asked and answered, or TiB of it would be
  // data pieces, millions of them.)
  const bool use_extents = input.ConsumeBool() || skip_costly_maps || huge;
  const uint64_t batch = input.ConsumeIntegralInRange<uint64_t>(1, 64 * kMiB);
  const unsigned fail_every = huge ? 0 : input.ConsumeIntegralInRange<unsigned>(0, 8);
  const unsigned short_every = input.ConsumeIntegralInRange<unsigned>(0, 8);

  std::vector<Segment> segments;
  const size_t count = input.ConsumeIntegralInRange<size_t>(1, 8);
  for (size_t i = 0; i < count; ++i) {
    if (huge) {
      const bool zero = i == 0 || input.ConsumeBool();  // a hole in every period
      segments.push_back(
          Segment{zero ? input.ConsumeIntegralInRange<uint64_t>(1024 * kMiB, uint64_t{1} << 42)
                       : input.ConsumeIntegralInRange<uint64_t>(4096, kMiB),
                  zero});
      continue;
    }
    uint64_t length = input.ConsumeBool()
                          ? input.ConsumeIntegralInRange<uint64_t>(4096, 256 * 1024)
                          : input.ConsumeIntegralInRange<uint64_t>(4096, 512 * kMiB);
    segments.push_back(Segment{length, input.ConsumeBool()});
  }
  PatternSource source(rules.image_size, segments, fail_every, short_every);

  // The coverage: 0: none; 1: done, skipped; 2: done, hashed; 3: unlisted,
  // hashed as zeroes.
  // (Huge images: no hashed coverage, whose pieces would be data-sized.)
  const int mode = input.ConsumeIntegralInRange(0, huge ? 1 : 3);
  nbdcopy::RangeSet covered;
  for (int i = input.ConsumeIntegralInRange(0, 6); mode != 0 && i > 0; --i) {
    uint64_t offset = input.ConsumeIntegralInRange<uint64_t>(0, rules.image_size - 1);
    covered.Add(offset, input.ConsumeIntegralInRange<uint64_t>(0, rules.image_size - offset));
  }
  nbdcopy::Coverage coverage;
  (mode == 3 ? coverage.unlisted : coverage.done) = covered;
  coverage.hash_done = mode == 2;
  coverage.unlisted_as_zero = mode == 3;
  rules.skip_clean = mode != 0;
  const nbdcopy::RangeSet inward = covered.AlignedInward(rules.alignment, rules.image_size);

  nbdcopy::WorkMap map(rules, skip_costly_maps, mode != 0 ? &coverage : nullptr);
  std::deque<Piece> pieces;
  uint64_t position = 0;
  while (map.TakeBatch(source, use_extents, batch, &pieces)) {
    for (const Piece& piece : pieces) {
      FUZZ_CHECK(piece.offset == position || (mode == 1 && piece.offset > position &&
                                              inward.Contains(position, piece.offset - position)),
                 "piece at %" PRIu64 ", expected %" PRIu64 " (gap or overlap)", piece.offset,
                 position);
      FUZZ_CHECK(piece.length > 0, "empty piece at %" PRIu64, piece.offset);
      const bool hashed_only =
          piece.kind == PieceKind::kHashOnly || piece.kind == PieceKind::kHashAsZero;
      const uint64_t covered_bytes = inward.BytesIn(piece.offset, piece.length);
      FUZZ_CHECK(covered_bytes == 0 || (mode >= 2 && hashed_only && covered_bytes == piece.length),
                 "piece [%" PRIu64 ", +%" PRIu64 ") has %" PRIu64 " covered bytes (mode %d)",
                 piece.offset, piece.length, covered_bytes, mode);
      FUZZ_CHECK(!hashed_only || covered_bytes == piece.length,
                 "hash-only piece [%" PRIu64 ", +%" PRIu64 ") outside the covered blocks",
                 piece.offset, piece.length);
      FUZZ_CHECK(mode != 3 || !hashed_only || piece.kind == PieceKind::kHashAsZero,
                 "unlisted piece not hashed as zero at %" PRIu64, piece.offset);
      FUZZ_CHECK(piece.kind != PieceKind::kCopyAgain, "copy-again piece at %" PRIu64, piece.offset);
      if (piece.kind == PieceKind::kZero || (mode == 2 && piece.kind == PieceKind::kHashAsZero)) {
        FUZZ_CHECK(source.AllZero(piece.offset, piece.length),
                   "zero piece [%" PRIu64 ", +%" PRIu64 ") over data", piece.offset, piece.length);
      }
      position = piece.offset + piece.length;
    }
    pieces.clear();
  }
  FUZZ_CHECK(position == rules.image_size ||
                 (mode == 1 && inward.Contains(position, rules.image_size - position)),
             "pieces end at %" PRIu64 ", the image at %" PRIu64, position, rules.image_size);

  // No query asks for more than the longest window (so a hole's zero pieces
  // held at once stay bounded).
  for (const Extent& answer : source.answers) {
    FUZZ_CHECK(answer.length <= nbdcopy::WorkMap::LongestWindow(rules),
               "a query of %" PRIu64 " bytes at %" PRIu64, answer.length, answer.offset);
  }

  const nbdcopy::WorkMap::Stats stats = map.stats();
  FUZZ_CHECK(stats.bytes_unasked <= rules.image_size, "%" PRIu64 " bytes unasked",
             stats.bytes_unasked);
  if (!skip_costly_maps) {
    FUZZ_CHECK(stats.bytes_unasked == 0, "%" PRIu64 " bytes unasked without skip_costly_maps",
               stats.bytes_unasked);
  } else {
    // Between one answer's end and the next query (or the image's end), at
    // most one unasked stretch, plus the alignment the planner rounds to.
    uint64_t answered_end = 0;
    for (const Extent& answer : source.answers) {
      FUZZ_CHECK(answer.offset <= answered_end + kUnaskedBound + rules.alignment,
                 "%" PRIu64 " bytes unasked before %" PRIu64, answer.offset - answered_end,
                 answer.offset);
      answered_end = std::max(answered_end, answer.offset + answer.length);
    }
    FUZZ_CHECK(rules.image_size <= answered_end + kUnaskedBound + rules.alignment,
               "%" PRIu64 " bytes unasked at the end", rules.image_size - answered_end);
  }
  return 0;
}
