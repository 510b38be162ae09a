#include "plan/piece_planner.h"

#include <gtest/gtest.h>

#include <random>

namespace nbdcopy {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

PlanRules Rules(uint64_t size, uint64_t alignment, uint64_t max_data = kMiB,
                uint64_t coalesce_below = 0, uint64_t max_zero = 1ULL << 30,
                bool skip_clean = false) {
  PlanRules rules;
  rules.skip_clean = skip_clean;
  rules.image_size = size;
  rules.alignment = alignment;
  rules.max_data = max_data;
  rules.max_zero = max_zero;
  rules.coalesce_below = coalesce_below;
  return rules;
}

// True if [offset, offset + length) lies inside extents that pass `kind`.
template <typename Kind>
bool InsideExtents(const std::vector<Extent>& extents, uint64_t offset, uint64_t length,
                   Kind kind) {
  uint64_t position = offset;
  for (const Extent& e : extents) {
    if (position >= offset + length) break;
    if (e.offset + e.length <= position) continue;
    if (e.offset > position || !kind(e)) return false;
    position = e.offset + e.length;
  }
  return position >= offset + length;
}
bool InsideZeroes(const std::vector<Extent>& extents, uint64_t offset, uint64_t length) {
  return InsideExtents(extents, offset, length, [](const Extent& e) { return e.zero; });
}
bool InsideClean(const std::vector<Extent>& extents, uint64_t offset, uint64_t length) {
  return InsideExtents(extents, offset, length, [](const Extent& e) { return e.clean; });
}

// The whole blocks (or short last block) inside each maximal clean run.
std::vector<std::pair<uint64_t, uint64_t>> CleanBlocks(const std::vector<Extent>& extents,
                                                       const PlanRules& rules) {
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  const uint64_t a = rules.alignment;
  for (size_t i = 0; i < extents.size();) {
    if (!extents[i].clean) {
      ++i;
      continue;
    }
    uint64_t run_start = extents[i].offset, run_end = run_start;
    for (; i < extents.size() && extents[i].clean; ++i) {
      run_end = extents[i].offset + extents[i].length;
    }
    run_end = std::min(run_end, rules.image_size);
    uint64_t first = (run_start + a - 1) / a * a;
    uint64_t last = run_end == rules.image_size ? run_end : run_end / a * a;
    if (first < last) blocks.push_back({first, last});
  }
  return blocks;
}

// Checks every invariant piece_planner.h promises.
void CheckInvariants(uint64_t start, const std::vector<Extent>& extents, const PlanRules& rules,
                     uint64_t end, const std::vector<Extent>& ops) {
  ASSERT_GT(end, start);
  ASSERT_LE(end, rules.image_size);
  EXPECT_TRUE(end == rules.image_size || end % rules.alignment == 0) << end;
  uint64_t position = start;
  for (const Extent& op : ops) {
    ASSERT_EQ(op.offset, position) << "gap or overlap";
    ASSERT_GT(op.length, 0u);
    EXPECT_EQ(op.offset % rules.alignment, 0u) << op.offset;
    uint64_t op_end = op.offset + op.length;
    EXPECT_TRUE(op_end % rules.alignment == 0 || op_end == rules.image_size) << op_end;
    EXPECT_FALSE(op.zero && op.clean);
    if (op.clean) {
      EXPECT_TRUE(rules.skip_clean);
      EXPECT_TRUE(InsideClean(extents, op.offset, op.length)) << op.offset << "+" << op.length;
    } else if (!op.zero) {
      EXPECT_LE(op.length, rules.max_data);
    }
    if (!op.clean && rules.skip_clean) {
      // No block wholly inside clean ranges is copied or zeroed.
      for (const auto& [clean_start, clean_end] : CleanBlocks(extents, rules)) {
        EXPECT_TRUE(op_end <= clean_start || clean_end <= op.offset)
            << "operation " << op.offset << "+" << op.length << " touches clean blocks "
            << clean_start << ".." << clean_end;
      }
    }
    if (op.zero) {
      EXPECT_TRUE(rules.zero_extents);
      EXPECT_LE(op.length, rules.max_zero);
      EXPECT_TRUE(InsideZeroes(extents, op.offset, op.length)) << op.offset << "+" << op.length;
      EXPECT_GE(op.length, std::min(rules.coalesce_below, op.length));
    }
    position = op_end;
  }
  EXPECT_EQ(position, end);
}

std::vector<Extent> Plan(uint64_t start, const std::vector<Extent>& extents, const PlanRules& rules,
                         uint64_t* end = nullptr) {
  std::vector<Extent> ops;
  uint64_t planned_end = PlanPieces(start, extents, rules, &ops);
  CheckInvariants(start, extents, rules, planned_end, ops);
  if (end != nullptr) *end = planned_end;
  return ops;
}

TEST(PiecePlannerTest, DataIsSplitIntoRequests) {
  auto ops = Plan(0, {{0, 3 * kMiB, false}}, Rules(3 * kMiB, 512));
  EXPECT_EQ(ops,
            (std::vector<Extent>{{0, kMiB, false}, {kMiB, kMiB, false}, {2 * kMiB, kMiB, false}}));
}

TEST(PiecePlannerTest, LargeHoleIsOneZeroOperation) {
  auto ops = Plan(0, {{0, kMiB, false}, {kMiB, 64 * kMiB, true}, {65 * kMiB, kMiB, false}},
                  Rules(66 * kMiB, 512, kMiB, 64 * kKiB));
  EXPECT_EQ(ops, (std::vector<Extent>{
                     {0, kMiB, false}, {kMiB, 64 * kMiB, true}, {65 * kMiB, kMiB, false}}));
}

TEST(PiecePlannerTest, HugeHoleIsSplitAtMaxZero) {
  auto ops = Plan(0, {{0, 5 * kMiB, true}}, Rules(5 * kMiB, 4096, kMiB, 0, 2 * kMiB));
  EXPECT_EQ(ops, (std::vector<Extent>{
                     {0, 2 * kMiB, true}, {2 * kMiB, 2 * kMiB, true}, {4 * kMiB, kMiB, true}}));
}

TEST(PiecePlannerTest, SmallHolesRideAlongWithData) {
  // 4K data, 4K hole, repeated: the fragmented workload.
  std::vector<Extent> extents;
  for (uint64_t offset = 0; offset < 4 * kMiB; offset += 4 * kKiB) {
    extents.push_back({offset, 4 * kKiB, (offset / (4 * kKiB)) % 2 == 1});
  }
  auto ops = Plan(0, extents, Rules(4 * kMiB, 1, kMiB, 64 * kKiB));
  ASSERT_EQ(ops.size(), 4u);  // follows the data, not the 1024 extents
  for (const Extent& op : ops) EXPECT_FALSE(op.zero);
}

TEST(PiecePlannerTest, UnalignedHoleKeepsOnlyWholeBlocks) {
  // A hole from 10K to 200K with 64K blocks: only 64K..192K may be zeroed.
  auto ops = Plan(
      0, {{0, 10 * kKiB, false}, {10 * kKiB, 190 * kKiB, true}, {200 * kKiB, 56 * kKiB, false}},
      Rules(256 * kKiB, 64 * kKiB, kMiB, 64 * kKiB));
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 64 * kKiB, false},
                                      {64 * kKiB, 128 * kKiB, true},
                                      {192 * kKiB, 64 * kKiB, false}}));
}

TEST(PiecePlannerTest, HoleSmallerThanABlockIsData) {
  auto ops =
      Plan(0, {{0, 4 * kKiB, false}, {4 * kKiB, 60 * kKiB, true}, {64 * kKiB, 64 * kKiB, false}},
           Rules(128 * kKiB, 64 * kKiB));
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 128 * kKiB, false}}));
}

TEST(PiecePlannerTest, AdjacentZeroExtentsMergeBeforeAligning) {
  auto ops = Plan(0, {{0, 2 * kKiB, true}, {2 * kKiB, 2 * kKiB, true}, {4 * kKiB, 4 * kKiB, false}},
                  Rules(8 * kKiB, 4 * kKiB));
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 4 * kKiB, true}, {4 * kKiB, 4 * kKiB, false}}));
}

TEST(PiecePlannerTest, ShortLastBlockMayBeZeroed) {
  // Image of 100000 bytes, 64K blocks: the zero tail ends at the image end.
  auto ops = Plan(0, {{0, 65536, false}, {65536, 100000 - 65536, true}}, Rules(100000, 64 * kKiB));
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 65536, false}, {65536, 100000 - 65536, true}}));
}

TEST(PiecePlannerTest, ShortLastBlockOfData) {
  auto ops = Plan(0, {{0, 1000, false}}, Rules(1000, 4096));
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 1000, false}}));
}

TEST(PiecePlannerTest, AnswerEndingMidBlockIsCutToTheBlock) {
  uint64_t end = 0;
  auto ops = Plan(0, {{0, 100 * kKiB, true}}, Rules(kMiB, 64 * kKiB), &end);
  EXPECT_EQ(end, 64 * kKiB);
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 64 * kKiB, true}}));
}

TEST(PiecePlannerTest, AnswerShorterThanABlockMakesOneDataBlock) {
  uint64_t end = 0;
  auto ops = Plan(64 * kKiB, {{64 * kKiB, 512, true}}, Rules(kMiB, 64 * kKiB), &end);
  EXPECT_EQ(end, 128 * kKiB);
  EXPECT_EQ(ops, (std::vector<Extent>{{64 * kKiB, 64 * kKiB, false}}));
}

TEST(PiecePlannerTest, AnswerPastTheImageIsCapped) {
  uint64_t end = 0;
  auto ops = Plan(0, {{0, 4096, false}, {4096, 1ULL << 40, true}}, Rules(10000, 512), &end);
  EXPECT_EQ(end, 10000u);
  EXPECT_EQ(ops, (std::vector<Extent>{{0, 4096, false}, {4096, 10000 - 4096, true}}));
}

// Incremental copies (skip_clean): clean ranges are no operation at all.
Extent Clean(uint64_t offset, uint64_t length, bool zero = false) {
  return Extent{offset, length, zero, true};
}
Extent Dirty(uint64_t offset, uint64_t length, bool zero = false) {
  return Extent{offset, length, zero, false};
}

TEST(PiecePlannerTest, CleanRangesAreSkipped) {
  auto ops = Plan(0, {Dirty(0, kMiB), Clean(kMiB, 4 * kMiB), Dirty(5 * kMiB, kMiB)},
                  Rules(6 * kMiB, 512, kMiB, 64 * kKiB, 1ULL << 30, true));
  EXPECT_EQ(ops,
            (std::vector<Extent>{Dirty(0, kMiB), Clean(kMiB, 4 * kMiB), Dirty(5 * kMiB, kMiB)}));
}

TEST(PiecePlannerTest, CleanRangesAreDataWithoutSkipClean) {
  auto ops = Plan(0, {Dirty(0, kMiB), Clean(kMiB, kMiB)}, Rules(2 * kMiB, 512, 2 * kMiB));
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 2 * kMiB)}));
}

TEST(PiecePlannerTest, HolesInsideDirtyRangesBecomeZeroOperations) {
  // A large dirty hole is zeroed (it overwrites the old copy); a clean hole
  // is left alone, never zeroed.
  auto ops = Plan(0, {Dirty(0, 4 * kMiB, true), Clean(4 * kMiB, 4 * kMiB, true)},
                  Rules(8 * kMiB, 4096, kMiB, 64 * kKiB, 1ULL << 30, true));
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 4 * kMiB, true), Clean(4 * kMiB, 4 * kMiB)}));
}

TEST(PiecePlannerTest, UnalignedCleanRangeShrinksToWholeBlocks) {
  // Clean from 10K to 200K with 64K blocks: only 64K..192K may be skipped,
  // the partial blocks at its edges are copied.
  auto ops =
      Plan(0, {Dirty(0, 10 * kKiB), Clean(10 * kKiB, 190 * kKiB), Dirty(200 * kKiB, 56 * kKiB)},
           Rules(256 * kKiB, 64 * kKiB, kMiB, 64 * kKiB, 1ULL << 30, true));
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 64 * kKiB), Clean(64 * kKiB, 128 * kKiB),
                                      Dirty(192 * kKiB, 64 * kKiB)}));
}

TEST(PiecePlannerTest, CleanRangeSmallerThanABlockIsCopied) {
  auto ops = Plan(0, {Dirty(0, 4 * kKiB), Clean(4 * kKiB, 60 * kKiB), Dirty(64 * kKiB, 64 * kKiB)},
                  Rules(128 * kKiB, 64 * kKiB, kMiB, 0, 1ULL << 30, true));
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 128 * kKiB)}));
}

TEST(PiecePlannerTest, ZeroEdgeOfAShrunkCleanRangeStaysZero) {
  // Zero and clean from 32K to 1M, 64K blocks: 32K..64K is copied, as a hole
  // it would be zeroed, but it is shorter than coalesce_below, so it rides
  // along with the data before it; 64K..1M is skipped.
  auto ops = Plan(0, {Dirty(0, 32 * kKiB), Clean(32 * kKiB, kMiB - 32 * kKiB, true)},
                  Rules(kMiB, 64 * kKiB, kMiB, 64 * kKiB, 1ULL << 30, true));
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 64 * kKiB), Clean(64 * kKiB, kMiB - 64 * kKiB)}));
}

TEST(PiecePlannerTest, CleanShortLastBlockIsSkipped) {
  // Image of 100000 bytes, 64K blocks, clean from 64K to the end.
  auto ops = Plan(0, {Dirty(0, 65536), Clean(65536, 100000 - 65536)},
                  Rules(100000, 64 * kKiB, kMiB, 0, 1ULL << 30, true));
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 65536), Clean(65536, 100000 - 65536)}));
}

TEST(PiecePlannerTest, AllCleanWindowIsOneSkip) {
  uint64_t end = 0;
  auto ops = Plan(kMiB, {Clean(kMiB, 64 * kMiB, true)},
                  Rules(1ULL << 30, 4096, kMiB, 64 * kKiB, 1ULL << 30, true), &end);
  EXPECT_EQ(end, 65 * kMiB);
  EXPECT_EQ(ops, (std::vector<Extent>{Clean(kMiB, 64 * kMiB)}));
}

TEST(PiecePlannerTest, WithoutZeroExtentsHolesAreDataButCleanIsSkipped) {
  PlanRules rules = Rules(4 * kMiB, 4096, 4 * kMiB, 0, 1ULL << 30, true);
  rules.zero_extents = false;
  auto ops = Plan(0, {Dirty(0, 2 * kMiB, true), Clean(2 * kMiB, 2 * kMiB)}, rules);
  EXPECT_EQ(ops, (std::vector<Extent>{Dirty(0, 2 * kMiB), Clean(2 * kMiB, 2 * kMiB)}));
}

// Random extent lists crossed with block-size rules: the invariants hold,
// and the operation count follows data and large holes, not extents.
TEST(PiecePlannerTest, RandomExtentsKeepTheInvariants) {
  std::mt19937_64 rng(7);
  const uint64_t minimums[] = {1, 512, 4096, 64 * kKiB};
  const uint64_t maximums[] = {64 * kKiB, kMiB, 32 * kMiB};
  for (int round = 0; round < 3000; ++round) {
    uint64_t alignment = minimums[rng() % 4];
    uint64_t max_data = std::max(alignment, maximums[rng() % 3]);
    uint64_t coalesce = (rng() % 2) ? 0 : std::max(alignment, 64 * kKiB);
    uint64_t size = 1 + rng() % (8 * kMiB);
    uint64_t start = (rng() % size) / alignment * alignment;
    std::vector<Extent> extents;
    uint64_t position = start;
    bool zero = rng() % 2;
    uint64_t large_holes = 0;
    uint64_t clean_runs = 0;
    const bool skip_clean = rng() % 2;
    while (position < size && extents.size() < 200) {
      uint64_t length = 1 + rng() % ((rng() % 4 == 0) ? 2 * kMiB : 8 * kKiB);
      bool clean = rng() % 3 == 0;
      extents.push_back({position, length, zero, clean});
      if (zero && length >= coalesce) ++large_holes;
      if (clean) ++clean_runs;
      position += length;
      zero = !zero;
    }
    PlanRules rules = Rules(size, alignment, max_data, coalesce, 4 * kMiB, skip_clean);
    rules.zero_extents = rng() % 4 != 0;
    std::vector<Extent> ops;
    uint64_t end = PlanPieces(start, extents, rules, &ops);
    SCOPED_TRACE(testing::Message() << "round " << round << " alignment " << alignment);
    CheckInvariants(start, extents, rules, end, ops);
    if (coalesce > 0) {
      // Each clean run can split one data or zero run in two, and adds one.
      uint64_t bound = (end - start) / max_data + 2 * large_holes + 2 +
                       (end - start) / rules.max_zero + (skip_clean ? 2 * clean_runs : 0);
      EXPECT_LE(ops.size(), bound);
    }
    if (testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace nbdcopy

namespace nbdcopy {
namespace {

// An answer that reaches past the aligned end, its last extent starting
// there: the search for clean runs stops at the end (it once looped).
TEST(PiecePlannerTest, AnAnswerPastTheAlignedEndWithSkipCleanEnds) {
  PlanRules rules = Rules(8192 + 100, 4096);
  rules.skip_clean = true;
  const std::vector<Extent> extents = {{0, 4096, false, false}, {4096, 100, false, true}};
  std::vector<Extent> pieces;
  EXPECT_EQ(PlanPieces(0, extents, rules, &pieces), 4096u);
  EXPECT_EQ(pieces, (std::vector<Extent>{{0, 4096, false, false}}));
}

}  // namespace
}  // namespace nbdcopy
