#include "nbdcopy/work_map.h"

#include <gtest/gtest.h>

#include "memory_endpoint.h"

namespace nbdcopy {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

// Describes a huge image without holding it: clean everywhere except
// [dirty_offset, dirty_offset + dirty_length).
class CleanImage : public Endpoint {
 public:
  CleanImage(uint64_t size, uint64_t dirty_offset, uint64_t dirty_length)
      : dirty_offset_(dirty_offset), dirty_length_(dirty_length) {
    info_.size = size;
    info_.can_extents = true;
  }
  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  Result<size_t> Read(uint64_t, std::span<std::byte>) override { return Status::Error("no"); }
  Status Write(uint64_t, std::span<const std::byte>) override { return Status::Error("no"); }
  Status Zero(uint64_t, uint64_t, bool) override { return Status::Error("no"); }
  Status Flush() override { return Status::Ok(); }
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
  std::string name_ = "clean";
  EndpointInfo info_;
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
  std::deque<Extent> pieces;
  ASSERT_TRUE(map.TakeBatch(source, true, 8 * kMiB, &pieces));
  EXPECT_EQ(pieces, (std::deque<Extent>{{2 * kGiB + 3 * kMiB, kMiB, false},
                                        {2 * kGiB + 4 * kMiB, kMiB, false}}));
  pieces.clear();
  EXPECT_FALSE(map.TakeBatch(source, true, 8 * kMiB, &pieces));
  EXPECT_TRUE(pieces.empty());
  EXPECT_EQ(map.clean_bytes(), 4 * kGiB - 2 * kMiB);
  EXPECT_EQ(source.queries, 4);  // one per 1 GiB window
}

TEST(WorkMapTest, FailedExtentsOfADirtySourceAreCopied) {
  // No answer must never read as "clean": the range is copied.
  auto source = testing::MemoryEndpoint::Zeroes(2 * kMiB);
  source.AddCleanExtent(0, 2 * kMiB);
  source.FailOn("extents");
  WorkMap map(IncrementalRules(2 * kMiB));
  std::deque<Extent> pieces;
  ASSERT_TRUE(map.TakeBatch(source, true, 8 * kMiB, &pieces));
  EXPECT_EQ(pieces, (std::deque<Extent>{{0, kMiB, false}, {kMiB, kMiB, false}}));
  EXPECT_EQ(map.clean_bytes(), 0u);
}

}  // namespace
}  // namespace nbdcopy
