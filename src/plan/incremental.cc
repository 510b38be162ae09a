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

// How messages name the incremental option: "--dirty-bitmap=NAME" or
// "--ranges=FILE".
std::string Label(const Options& options) {
  return options.dirty_bitmap ? "--dirty-bitmap=" + *options.dirty_bitmap
                              : "--ranges=" + options.ranges.value_or("");
}

// The option's plain name, for "cannot be used with ...".
const char* Plain(const Options& options) {
  return options.dirty_bitmap ? "--dirty-bitmap" : "--ranges";
}

Status StreamDestination(const Options& options, const std::string& name) {
  return Status::Error(
      fmt::format("{}: {}: an incremental copy writes onto an existing image, not a stream",
                  Label(options), name));
}

// What only --dirty-bitmap or only --ranges refuses.
Status CheckIncrementalSource(const Options& options, const EndpointSpec& source) {
  if (options.dirty_bitmap) {
    if (options.ranges) {
      return Status::Error(
          "--ranges: cannot be used with --dirty-bitmap (choose one list of changes)");
    }
    const std::string& bitmap = *options.dirty_bitmap;
    if (source.kind != EndpointKind::kNbdUri && source.kind != EndpointKind::kCommand) {
      return Status::Error(fmt::format(
          "--dirty-bitmap={}: {}: the source must be an NBD server offering the meta context "
          "qemu:dirty-bitmap:{}",
          bitmap, DisplayName(source), bitmap));
    }
    return Status::Ok();
  }
  if (source.kind == EndpointKind::kStdio) {
    return Status::Error(fmt::format(
        "{}: -: the source must be an image read at offsets, not a stream", Label(options)));
  }
  return Status::Ok();
}

}  // namespace

Status CheckIncrementalOptions(const Options& options, const EndpointSpec& source,
                               const EndpointSpec& destination) {
  if (Status status = CheckIncrementalSource(options, source); !status.ok()) return status;
  if (options.destination_is_zero) {
    return Status::Error(
        fmt::format("--destination-is-zero: cannot be used with {} (the destination holds the "
                    "previous copy, and zeroes inside {} ranges must be written)",
                    Plain(options), options.dirty_bitmap ? "dirty" : "listed"));
  }
  if (options.blkhash) {
    return Status::Error(
        fmt::format("--blkhash: cannot be used with {} (the digest covers the whole source, an "
                    "incremental copy reads only the {} ranges; use --verify to check the result)",
                    Plain(options), options.dirty_bitmap ? "dirty" : "listed"));
  }
  if (destination.kind == EndpointKind::kStdio) return StreamDestination(options, destination.text);
  if (destination.kind == EndpointKind::kLocalPath) {
    struct stat st;
    if (stat(destination.text.c_str(), &st) == -1) {
      return Status::Error(fmt::format("{}: {}: the destination must already exist: {}",
                                       Label(options), destination.text, std::strerror(errno)));
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
  // Done ranges handed out as hashed (never skipped), so that they count.
  Coverage counted = plan.coverage != nullptr ? *plan.coverage : Coverage();
  counted.hash_done = true;
  WorkMap map(RulesFor(plan, size), false, &counted);
  DirtySummary summary;
  std::deque<Piece> pieces;
  uint64_t previous_end = UINT64_MAX;  // where the last piece ended
  while (map.TakeBatch(source, plan.use_extents, 1ULL << 30, &pieces)) {
    if (CancelRequested()) return CancelledStatus();
    for (const Piece& piece : pieces) {
      if (piece.offset != previous_end) ++summary.ranges;
      summary.dirty_bytes += piece.length;
      if (piece.kind == PieceKind::kHashOnly || piece.kind == PieceKind::kHashAsZero) {
        summary.done_bytes += piece.length;
      }
      previous_end = piece.end();
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
