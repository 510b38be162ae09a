#include "plan/work_map.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/described_image.h"
#include "support/memory_endpoint.h"

namespace nbdcopy {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

using fakes::DescribedImage;

// Describes a huge image without holding it: clean everywhere except
// [dirty_offset, dirty_offset + dirty_length).
class CleanImage : public DescribedImage {
 public:
  CleanImage(uint64_t size, uint64_t dirty_offset, uint64_t dirty_length)
      : DescribedImage(size), dirty_offset_(dirty_offset), dirty_length_(dirty_length) {}
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    ++queries;
    const uint64_t end = offset + length, dirty_end = dirty_offset_ + dirty_length_;
    for (uint64_t position = offset; position < end;) {
      bool dirty = position >= dirty_offset_ && position < dirty_end;
      uint64_t next = dirty ? dirty_end : position < dirty_offset_ ? dirty_offset_ : end;
      next = std::min(next, end);
      out->push_back(Extent{position, next - position, false, !dirty});
      position = next;
    }
    return Status::Ok();
  }
  int queries = 0;

 private:
  uint64_t dirty_offset_, dirty_length_;
};

PlanRules IncrementalRules(uint64_t size) {
  PlanRules rules;
  rules.image_size = size;
  rules.alignment = 4096;
  rules.max_data = kMiB;
  rules.skip_clean = true;
  return rules;
}

TEST(WorkMapTest, AllCleanWindowsAreCrossedNotTheEnd) {
  // Two whole clean windows before the only dirty range.
  CleanImage source(4 * kGiB, 2 * kGiB + 3 * kMiB, 2 * kMiB);
  WorkMap map(IncrementalRules(4 * kGiB));
  std::deque<Piece> pieces;
  ASSERT_TRUE(map.TakeBatch(source, true, 8 * kMiB, &pieces));
  EXPECT_EQ(pieces, (std::deque<Piece>{{2 * kGiB + 3 * kMiB, kMiB, PieceKind::kData},
                                       {2 * kGiB + 4 * kMiB, kMiB, PieceKind::kData}}));
  pieces.clear();
  EXPECT_FALSE(map.TakeBatch(source, true, 8 * kMiB, &pieces));
  EXPECT_TRUE(pieces.empty());
  EXPECT_EQ(map.clean_bytes(), 4 * kGiB - 2 * kMiB);
  // A 1 GiB window, all clean: the next one may be 8 GiB, and covers the rest.
  EXPECT_EQ(source.queries, 2);
}

TEST(WorkMapTest, FailedExtentsOfADirtySourceAreCopied) {
  // No answer must never read as "clean": the range is copied.
  auto source = fakes::MemoryEndpoint::Zeroes(2 * kMiB);
  source.AddCleanExtent(0, 2 * kMiB);
  source.FailOn("extents");
  WorkMap map(IncrementalRules(2 * kMiB));
  std::deque<Piece> pieces;
  ASSERT_TRUE(map.TakeBatch(source, true, 8 * kMiB, &pieces));
  EXPECT_EQ(pieces,
            (std::deque<Piece>{{0, kMiB, PieceKind::kData}, {kMiB, kMiB, PieceKind::kData}}));
  EXPECT_EQ(map.clean_bytes(), 0u);
}

// Describes a huge image by rule, answering every extents query in full as
// a server does, and records the queries: alternating 4 KiB data and hole
// below dense_end, one hole from there to data_start, data from there on.
class RuleImage : public DescribedImage {
 public:
  RuleImage(uint64_t size, uint64_t dense_end, uint64_t data_start)
      : DescribedImage(size), dense_end_(dense_end), data_start_(data_start) {}
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    queries.push_back(Extent{offset, length, false});
    const uint64_t end = offset + length;
    for (uint64_t position = offset; position < end;) {
      uint64_t next;
      bool zero;
      if (position < dense_end_) {
        next = std::min((position / 4096 + 1) * 4096, dense_end_);
        zero = (position / 4096) % 2 == 1;
      } else if (position < data_start_) {
        next = data_start_;
        zero = true;
      } else {
        next = end;
        zero = false;
      }
      next = std::min(next, end);
      out->push_back(Extent{position, next - position, zero});
      position = next;
    }
    return Status::Ok();
  }
  uint64_t asked_bytes() const {
    uint64_t total = 0;
    for (const Extent& query : queries) total += query.length;
    return total;
  }
  std::vector<Extent> queries;

 private:
  uint64_t dense_end_, data_start_;
};

PlanRules CopyRules(uint64_t size) {
  PlanRules rules;
  rules.image_size = size;
  rules.max_data = kMiB;
  return rules;
}

struct Drained {
  uint64_t data_bytes = 0;
  uint64_t zero_bytes = 0;
};

// Takes every piece, checking that they cover [0, size) in order.
Drained Drain(WorkMap& map, Endpoint& source, uint64_t size) {
  Drained drained;
  std::deque<Piece> pieces;
  uint64_t expected = 0;
  while (map.TakeBatch(source, true, 8 * kMiB, &pieces)) {
    for (const Piece& piece : pieces) {
      EXPECT_EQ(piece.offset, expected);
      expected += piece.length;
      (piece.kind == PieceKind::kZero ? drained.zero_bytes : drained.data_bytes) += piece.length;
    }
    pieces.clear();
  }
  EXPECT_EQ(expected, size);
  return drained;
}

TEST(WorkMapTest, DenseMapsAreAskedForOnlyInSmallWindows) {
  // 4 KiB runs: every hole rides along with the data, so the map saves
  // nothing, and describing 262,144 extents costs more than reading.
  RuleImage source(kGiB, kGiB, kGiB);
  WorkMap map(CopyRules(kGiB), /*skip_costly_maps=*/true);
  Drained drained = Drain(map, source, kGiB);
  EXPECT_EQ(drained.data_bytes, kGiB);
  ASSERT_FALSE(source.queries.empty());
  EXPECT_EQ(source.queries[0], (Extent{0, 16 * kMiB, false}));
  EXPECT_LE(source.asked_bytes(), kGiB / 8);
  WorkMap::Stats stats = map.stats();
  EXPECT_EQ(stats.windows_asked, source.queries.size());
  EXPECT_EQ(stats.bytes_unasked + source.asked_bytes(), kGiB);
}

TEST(WorkMapTest, WithoutSkippingEveryWindowIsAsked) {
  RuleImage source(kGiB, kGiB, kGiB);
  WorkMap map(CopyRules(kGiB));
  Drained drained = Drain(map, source, kGiB);
  EXPECT_EQ(drained.data_bytes, kGiB);
  EXPECT_EQ(source.queries, (std::vector<Extent>{{0, kGiB, false}}));
  EXPECT_EQ(map.stats().bytes_unasked, 0u);
}

TEST(WorkMapTest, MapsThatPayAreAlwaysAskedInGrowingWindows) {
  // A 3 GiB hole, then data: the map saves reading most of the image.
  RuleImage source(4 * kGiB, 0, 3 * kGiB);
  WorkMap map(CopyRules(4 * kGiB), true);
  Drained drained = Drain(map, source, 4 * kGiB);
  EXPECT_EQ(map.stats().bytes_unasked, 0u);
  EXPECT_EQ(source.asked_bytes(), 4 * kGiB);
  ASSERT_GE(source.queries.size(), 3u);
  EXPECT_EQ(source.queries[0].length, 16 * kMiB);
  EXPECT_EQ(source.queries[1].length, 128 * kMiB);
  EXPECT_EQ(source.queries[2].length, kGiB);
  // That 1 GiB window was all hole: the next asks for up to 8 GiB, the rest.
  ASSERT_EQ(source.queries.size(), 4u);
  EXPECT_EQ(source.queries[3], (Extent{1168 * kMiB, 4 * kGiB - 1168 * kMiB, false}));
  EXPECT_EQ(drained.data_bytes, kGiB);
  EXPECT_EQ(drained.zero_bytes, 3 * kGiB);
}

TEST(WorkMapTest, ACheapMapOfAllDataKeepsBeingAsked) {
  RuleImage source(2 * kGiB, 0, 0);
  WorkMap map(CopyRules(2 * kGiB), true);
  Drained drained = Drain(map, source, 2 * kGiB);
  EXPECT_EQ(drained.data_bytes, 2 * kGiB);
  EXPECT_EQ(map.stats().bytes_unasked, 0u);
  EXPECT_EQ(source.asked_bytes(), 2 * kGiB);
}

TEST(WorkMapTest, ALargeHoleAfterADenseRangeIsFoundWithinTheBound) {
  // 600 MiB of 4 KiB runs, then a hole to the end: at most one unasked
  // stretch of the hole is read.
  const uint64_t size = 8 * kGiB, dense = 600 * kMiB;
  RuleImage source(size, dense, size);
  WorkMap map(CopyRules(size), true);
  Drained drained = Drain(map, source, size);
  EXPECT_GT(map.stats().bytes_unasked, 0u);
  EXPECT_LE(drained.data_bytes, dense + 256 * kMiB);
  EXPECT_GE(drained.zero_bytes, size - dense - 256 * kMiB);
}

// Describes a huge image of holes with a few data ranges, answering every
// query in full as a server with wide block status does.
class HolesImage : public DescribedImage {
 public:
  HolesImage(uint64_t size, std::vector<Extent> data)
      : DescribedImage(size), data_(std::move(data)) {}
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    queries.push_back(Extent{offset, length, false});
    const uint64_t end = offset + length;
    for (uint64_t position = offset; position < end;) {
      auto next_data = std::find_if(data_.begin(), data_.end(), [&](const Extent& d) {
        return d.offset + d.length > position;
      });
      uint64_t next;
      bool zero = true;
      if (next_data == data_.end()) {
        next = end;
      } else if (next_data->offset <= position) {
        next = next_data->offset + next_data->length;
        zero = false;
      } else {
        next = next_data->offset;
      }
      next = std::min(next, end);
      out->push_back(Extent{position, next - position, zero});
      position = next;
    }
    return Status::Ok();
  }
  std::vector<Extent> queries;

 private:
  std::vector<Extent> data_;
};

TEST(WorkMapTest, LongHolesAreMappedInFewGrowingWindows) {
  // A 64 TiB disk with 1 MiB of data at its start, middle and end: asked in
  // 1 GiB windows, 65,537 queries; growing into the holes, a few dozen.
  const uint64_t size = 64 * 1024 * kGiB, middle = size / 2;
  HolesImage source(size, {{0, kMiB, false}, {middle, kMiB, false}, {size - kMiB, kMiB, false}});
  for (bool skip_costly_maps : {false, true}) {
    SCOPED_TRACE(skip_costly_maps);
    source.queries.clear();
    WorkMap map(CopyRules(size), skip_costly_maps);
    Drained drained = Drain(map, source, size);
    EXPECT_EQ(drained.data_bytes, 3 * kMiB);
    EXPECT_EQ(drained.zero_bytes, size - 3 * kMiB);
    EXPECT_LE(source.queries.size(), 50u);
    for (const Extent& query : source.queries) EXPECT_LE(query.length, 4096 * kGiB);
  }
}

TEST(WorkMapTest, WindowsGrowOnlyIntoHolesOfAtLeastAWindow) {
  // Data every 512 MiB: no answer ends in a hole of 1 GiB, every window is 1 GiB.
  const uint64_t size = 16 * kGiB;
  std::vector<Extent> data;
  for (uint64_t offset = 0; offset < size; offset += 512 * kMiB)
    data.push_back({offset, kMiB, false});
  HolesImage source(size, data);
  WorkMap map(CopyRules(size));
  Drained drained = Drain(map, source, size);
  EXPECT_EQ(drained.data_bytes, 32 * kMiB);
  EXPECT_EQ(source.queries.size(), 16u);
  for (const Extent& query : source.queries) EXPECT_EQ(query.length, kGiB);
}

// Every piece the map hands out, in order.
std::vector<Piece> TakeAll(WorkMap& map, Endpoint& source) {
  std::vector<Piece> all;
  std::deque<Piece> pieces;
  while (map.TakeBatch(source, true, 8 * kMiB, &pieces)) {
    all.insert(all.end(), pieces.begin(), pieces.end());
    pieces.clear();
  }
  return all;
}

// 4 MiB: data, then a hole from 2 MiB.
fakes::MemoryEndpoint DataThenHole() {
  auto source = fakes::MemoryEndpoint::Zeroes(4 * kMiB);
  source.AddZeroExtent(2 * kMiB, 2 * kMiB);
  return source;
}

PlanRules BlockRules(uint64_t size) {
  PlanRules rules = CopyRules(size);
  rules.alignment = 64 * 1024;
  return rules;
}

TEST(WorkMapTest, DoneRangesAreLeftAloneInWholeBlocks) {
  auto source = DataThenHole();
  Coverage coverage;
  // Whole blocks from 64 KiB to 1 MiB; the partial blocks at its edges are copied.
  coverage.done.Add(100, kMiB - 100 + 1000);
  WorkMap map(BlockRules(4 * kMiB), false, &coverage);
  EXPECT_EQ(TakeAll(map, source), (std::vector<Piece>{{0, 64 * 1024, PieceKind::kData},
                                                      {kMiB, kMiB, PieceKind::kData},
                                                      {2 * kMiB, 2 * kMiB, PieceKind::kZero}}));
  EXPECT_EQ(map.clean_bytes(), kMiB - 64 * 1024);
}

TEST(WorkMapTest, DoneRangesAreHashedWhenTheDigestCoversTheSource) {
  auto source = DataThenHole();
  Coverage coverage;
  coverage.done.Add(kMiB, 2 * kMiB);  // data, then hole
  coverage.hash_done = true;
  WorkMap map(BlockRules(4 * kMiB), false, &coverage);
  EXPECT_EQ(TakeAll(map, source), (std::vector<Piece>{{0, kMiB, PieceKind::kData},
                                                      {kMiB, kMiB, PieceKind::kHashOnly},
                                                      {2 * kMiB, kMiB, PieceKind::kHashAsZero},
                                                      {3 * kMiB, kMiB, PieceKind::kZero}}));
  EXPECT_EQ(map.clean_bytes(), 0u);
}

TEST(WorkMapTest, UnlistedRangesAreSkippedOrCountedAsZeroes) {
  auto source = DataThenHole();
  Coverage coverage;
  coverage.unlisted.Add(0, kMiB);
  coverage.unlisted.Add(3 * kMiB, kMiB);
  coverage.done.Add(kMiB, kMiB);  // a resumed --ranges copy
  {
    WorkMap map(BlockRules(4 * kMiB), false, &coverage);
    EXPECT_EQ(TakeAll(map, source), (std::vector<Piece>{{2 * kMiB, kMiB, PieceKind::kZero}}));
    EXPECT_EQ(map.clean_bytes(), 3 * kMiB);
  }
  coverage.done.Clear();
  coverage.unlisted_as_zero = true;  // --verify of the listed ranges
  WorkMap map(BlockRules(4 * kMiB), false, &coverage);
  EXPECT_EQ(TakeAll(map, source), (std::vector<Piece>{{0, kMiB, PieceKind::kHashAsZero},
                                                      {kMiB, kMiB, PieceKind::kData},
                                                      {2 * kMiB, kMiB, PieceKind::kZero},
                                                      {3 * kMiB, kMiB, PieceKind::kHashAsZero}}));
}

TEST(WorkMapTest, RangesToCopyAgainComeFirstInRequestSizedPieces) {
  auto source = DataThenHole();
  WorkMap map(BlockRules(4 * kMiB));
  map.CopyAgain(RangeSet());
  EXPECT_FALSE(map.has_copy_again());
  RangeSet lost;
  lost.Add(kMiB, 2 * kMiB);
  map.CopyAgain(lost);
  EXPECT_TRUE(map.has_copy_again());
  std::deque<Piece> pieces;
  ASSERT_TRUE(map.TakeBatch(source, true, kMiB, &pieces));
  EXPECT_EQ(pieces, (std::deque<Piece>{{kMiB, kMiB, PieceKind::kCopyAgain}}));
  pieces.clear();
  ASSERT_TRUE(map.TakeBatch(source, true, kMiB, &pieces));
  EXPECT_EQ(pieces.front(), (Piece{2 * kMiB, kMiB, PieceKind::kCopyAgain}));
  EXPECT_FALSE(map.has_copy_again());
}

}  // namespace
}  // namespace nbdcopy
