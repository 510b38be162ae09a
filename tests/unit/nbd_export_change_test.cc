#include "endpoints/nbd/nbd_export_change.h"

#include <gtest/gtest.h>

namespace nbdcopy {
namespace {

EndpointInfo PlannedExport() {
  EndpointInfo info;
  info.size = 671088640;
  info.can_flush = true;
  info.can_multi_conn = true;
  info.can_extents = true;
  info.efficient_zero = true;
  info.min_block_size = 512;
  info.max_block_size = 33554432;
  return info;
}

TEST(NbdExportChangeTest, TheSameExportIsNoChange) {
  EXPECT_EQ(ExportChange(PlannedExport(), PlannedExport()), "");
}

TEST(NbdExportChangeTest, ThePreferredBlockSizeIsAdviceNotAChange) {
  EndpointInfo now = PlannedExport();
  now.preferred_block_size = 65536;
  EXPECT_EQ(ExportChange(PlannedExport(), now), "");
}

TEST(NbdExportChangeTest, ASizeChangeNamesBothSizes) {
  EndpointInfo now = PlannedExport();
  now.size = 34603008;
  EXPECT_EQ(ExportChange(PlannedExport(), now), "size 34603008, was 671088640");
}

// What a connection that had never read its export compared against
// before the fix: an empty EndpointInfo. Its report names every property.
TEST(NbdExportChangeTest, AnEmptyReferenceDiffersInEveryPlannedProperty) {
  EXPECT_EQ(ExportChange(EndpointInfo{}, PlannedExport()),
            "size 671088640, was unknown; flush yes, was no; multi-conn yes, was no; "
            "block status yes, was no; zero yes, was no; minimum block size 512, was 1; "
            "maximum block size 33554432, was 0");
}

TEST(NbdExportChangeTest, EachFlagIsNamedWithBothValues) {
  struct Case {
    void (*change)(EndpointInfo&);
    const char* want;
  };
  const Case cases[] = {
      {[](EndpointInfo& i) { i.read_only = true; }, "read-only yes, was no"},
      {[](EndpointInfo& i) { i.can_flush = false; }, "flush no, was yes"},
      {[](EndpointInfo& i) { i.can_multi_conn = false; }, "multi-conn no, was yes"},
      {[](EndpointInfo& i) { i.can_extents = false; }, "block status no, was yes"},
      {[](EndpointInfo& i) { i.efficient_zero = false; }, "zero no, was yes"},
      {[](EndpointInfo& i) { i.min_block_size = 4096; }, "minimum block size 4096, was 512"},
      {[](EndpointInfo& i) { i.max_block_size = 65536; }, "maximum block size 65536, was 33554432"},
  };
  for (const Case& c : cases) {
    EndpointInfo now = PlannedExport();
    c.change(now);
    EXPECT_EQ(ExportChange(PlannedExport(), now), c.want);
  }
}

TEST(NbdExportChangeTest, SeveralChangesAreAllNamedInOrder) {
  EndpointInfo now = PlannedExport();
  now.size = 1048576;
  now.can_multi_conn = false;
  EXPECT_EQ(ExportChange(PlannedExport(), now),
            "size 1048576, was 671088640; multi-conn no, was yes");
}

}  // namespace
}  // namespace nbdcopy
