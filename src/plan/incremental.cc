#include "plan/incremental.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include "nbdcopy/cancel.h"
#include "plan/work_map.h"

namespace nbdcopy {

namespace {

Status StreamDestination(const Options& options, const std::string& name) {
  return Status::Error(fmt::format(
      "--dirty-bitmap={}: {}: an incremental copy writes onto an existing image, not a stream",
      *options.dirty_bitmap, name));
}

}  // namespace

Status CheckIncrementalOptions(const Options& options, const EndpointSpec& source,
                               const EndpointSpec& destination) {
  const std::string& bitmap = *options.dirty_bitmap;
  if (source.kind != EndpointKind::kNbdUri && source.kind != EndpointKind::kCommand) {
    return Status::Error(fmt::format(
        "--dirty-bitmap={}: {}: the source must be an NBD server offering the meta context "
        "qemu:dirty-bitmap:{}",
        bitmap, DisplayName(source), bitmap));
  }
  if (options.destination_is_zero) {
    return Status::Error(
        "--destination-is-zero: cannot be used with --dirty-bitmap (the destination holds the "
        "previous copy, and zeroes inside dirty ranges must be written)");
  }
  if (options.blkhash) {
    return Status::Error(
        "--blkhash: cannot be used with --dirty-bitmap (the digest covers the whole source, an "
        "incremental copy reads only the dirty ranges; use --verify to check the result)");
  }
  if (destination.kind == EndpointKind::kStdio) return StreamDestination(options, destination.text);
  if (destination.kind == EndpointKind::kLocalPath) {
    struct stat st;
    if (stat(destination.text.c_str(), &st) == -1) {
      return Status::Error(
          fmt::format("--dirty-bitmap={}: {}: the destination must already exist: {}", bitmap,
                      destination.text, std::strerror(errno)));
    }
    // Opening a FIFO for writing would wait for a reader first.
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)) {
      return StreamDestination(options, destination.text);
    }
  }
  return Status::Ok();
}

Status CheckIncrementalDestination(const Options& options, const Endpoint& destination) {
  if (destination.info().sequential) return StreamDestination(options, destination.name());
  return Status::Ok();
}

Result<DirtySummary> SummarizeDirty(const CopyPlan& plan, Endpoint& source) {
  const uint64_t size = *source.info().size;
  WorkMap map(RulesFor(plan, size));
  DirtySummary summary;
  std::deque<Extent> pieces;
  uint64_t previous_end = UINT64_MAX;  // where the last piece ended
  while (map.TakeBatch(source, plan.use_extents, 1ULL << 30, &pieces)) {
    if (CancelRequested()) return CancelledStatus();
    for (const Extent& piece : pieces) {
      if (piece.offset != previous_end) ++summary.ranges;
      summary.dirty_bytes += piece.length;
      previous_end = piece.offset + piece.length;
    }
    pieces.clear();
  }
  summary.clean_bytes = map.clean_bytes();
  return summary;
}

std::string DescribeDirty(const DirtySummary& summary, uint64_t size) {
  return fmt::format("dirty={} ranges={} clean={} size={}", summary.dirty_bytes, summary.ranges,
                     summary.clean_bytes, size);
}

}  // namespace nbdcopy
