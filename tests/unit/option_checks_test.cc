// The one rule for streams, and the refusals that name their option.
#include "job/option_checks.h"

#include <gtest/gtest.h>

namespace nbdcopy {
namespace {

EndpointSpec Local(const std::string& path) { return {EndpointKind::kLocalPath, path, {}, {}}; }

TEST(OptionChecksTest, StreamsAreStdioFifosSocketsAndCharacterDevices) {
  EXPECT_TRUE(NamesStream({EndpointKind::kStdio, "-", {}, {}}));
  EXPECT_TRUE(NamesStream(Local("/dev/null")));
  EXPECT_TRUE(NamesStream(Local("/dev/zero")));
  EXPECT_FALSE(NamesStream(Local("/nonexistent/file")));  // opening says why
  EXPECT_FALSE(NamesStream(Local("/")));
  EXPECT_FALSE(NamesStream({EndpointKind::kNull, "null:", {}, {}}));
  EXPECT_FALSE(NamesStream({EndpointKind::kNbdUri, "nbd://x", {}, {}}));
}

TEST(OptionChecksTest, EveryFeatureRefusesACharacterDeviceInItsOwnWords) {
  Options options;
  options.ranges = "list";
  const EndpointSpec nbd{EndpointKind::kNbdUri, "nbd://x", {}, {}};
  EXPECT_EQ(CheckIncrementalOptions(options, nbd, Local("/dev/null")).message(),
            "--ranges=list: /dev/null: an incremental copy writes onto an existing image, not a "
            "stream");
  EXPECT_EQ(CheckIncrementalOptions(options, Local("/dev/zero"), nbd).message(),
            "--ranges=list: /dev/zero: the source must be an image read at offsets, not a stream");
  options.ranges.reset();
  options.dirty_bitmap = "b0";
  EXPECT_EQ(CheckIncrementalOptions(options, nbd, Local("/dev/null")).message(),
            "--dirty-bitmap=b0: /dev/null: an incremental copy writes onto an existing image, "
            "not a stream");
  EXPECT_TRUE(CheckIncrementalOptions(options, nbd, {EndpointKind::kNull, "null:", {}, {}}).ok());
  options.dirty_bitmap.reset();
  options.checkpoint = "ck.map";
  EXPECT_EQ(CheckCheckpointOperands(options, nbd, Local("/dev/null")).message(),
            "--checkpoint=ck.map: /dev/null: a resumable copy needs a destination written at "
            "offsets, not a stream");
  EXPECT_EQ(CheckCheckpointOperands(options, Local("/dev/zero"), nbd).message(),
            "--checkpoint=ck.map: /dev/zero: a stream source cannot be resumed");
  EXPECT_TRUE(CheckCheckpointOperands(options, nbd, nbd).ok());
}

}  // namespace
}  // namespace nbdcopy
