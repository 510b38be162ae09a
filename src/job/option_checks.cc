#include "job/option_checks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "job/output_files.h"

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

// Copying a file onto itself would destroy it when the destination is
// truncated, before a single byte is read.
Status CheckNotSameFile(const EndpointSpec& source, const EndpointSpec& destination) {
  if (source.kind != EndpointKind::kLocalPath || destination.kind != EndpointKind::kLocalPath) {
    return Status::Ok();
  }
  if (SameRegularFile(source.text, destination.text)) {
    return Status::Error(destination.text + ": source and destination are the same file");
  }
  return Status::Ok();
}

// What needs no operand looked at, or only its kind.
Status CheckPlainOptions(const Options& options, const EndpointSpec& destination) {
  if (options.progress == ProgressMode::kFd && fcntl(options.progress_fd, F_GETFD) == -1) {
    return Status::Error(
        fmt::format("--progress={}: not an open file descriptor", options.progress_fd));
  }
  if (options.ranges_type && !options.ranges) {
    return Status::Error("--ranges-type: needs --ranges");
  }
  bool hashing = options.blkhash.has_value();
  if (options.blkhash_file && !hashing) {
    return Status::Error("--blkhash-file: needs --blkhash");
  }
  if (options.json && !options.json_file && destination.kind == EndpointKind::kStdio) {
    return Status::Error(
        "--json: the report would be mixed into the data on stdout; "
        "use --json=FILE");
  }
  if (hashing && !options.blkhash_file && destination.kind == EndpointKind::kStdio) {
    return Status::Error(
        "--blkhash: the digest would be mixed into the data on stdout; "
        "use --blkhash-file");
  }
  if (options.checksum_file && !options.checksum) {
    return Status::Error("--checksum-file: needs --checksum");
  }
  // With an expected digest, the check is the answer: nothing to print.
  if (options.checksum && !options.checksum->expected && !options.checksum_file &&
      destination.kind == EndpointKind::kStdio) {
    return Status::Error(
        "--checksum: the digest would be mixed into the data on stdout; "
        "use --checksum-file, or --checksum=ALGO:HEX to check it");
  }
  if (options.verify &&
      (destination.kind == EndpointKind::kNull || destination.kind == EndpointKind::kStdio)) {
    return Status::Error("--verify: " + destination.text + " cannot be read back");
  }
  return Status::Ok();
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
  if (NamesStream(source)) {
    return Status::Error(
        fmt::format("{}: {}: the source must be an image read at offsets, not a stream",
                    Label(options), source.text));
  }
  return Status::Ok();
}

}  // namespace

bool NamesStream(const EndpointSpec& operand) {
  if (operand.kind == EndpointKind::kStdio) return true;
  if (operand.kind != EndpointKind::kLocalPath) return false;
  struct stat st;
  if (stat(operand.text.c_str(), &st) == -1) return false;  // opening it will say why
  return S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode);
}

bool IsStream(const Endpoint& endpoint) { return endpoint.info().sequential; }

Status CheckOptions(const Options& options, const EndpointSpec& source,
                    const EndpointSpec& destination) {
  if (Status status = CheckPlainOptions(options, destination); !status.ok()) return status;
  if (Status status = CheckNotSameFile(source, destination); !status.ok()) return status;
  if (Status status = CheckOutputFiles(options, source, destination); !status.ok()) return status;
  if (options.salvage && NamesStream(source)) {
    // (Narrowing reads the failed range again, smaller: a stream cannot.)
    return Status::Error(fmt::format(
        "--salvage: {}: a stream source cannot be read again around an unreadable range",
        source.text));
  }
  if (options.dirty_bitmap || options.ranges) {
    Status status = CheckIncrementalOptions(options, source, destination);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

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
  if (options.checksum) {
    return Status::Error(fmt::format(
        "--checksum: cannot be used with {} (the digest covers the whole source, an incremental "
        "copy reads only the {} ranges; use --verify to check the result, or nbdcopy --checksum "
        "SOURCE null: for the source's digest)",
        Plain(options), options.dirty_bitmap ? "dirty" : "listed"));
  }
  if (NamesStream(destination)) return StreamDestination(options, destination.text);
  struct stat st;
  if (destination.kind == EndpointKind::kLocalPath && stat(destination.text.c_str(), &st) == -1) {
    return Status::Error(fmt::format("{}: {}: the destination must already exist: {}",
                                     Label(options), destination.text, std::strerror(errno)));
  }
  return Status::Ok();
}

Status CheckCheckpointOperands(const Options& options, const EndpointSpec& source,
                               const EndpointSpec& destination) {
  const std::string option = "--checkpoint=" + *options.checkpoint;
  const bool null = destination.kind == EndpointKind::kNull;
  if (null || NamesStream(destination)) {
    return Status::Error(
        fmt::format("{}: {}: a resumable copy needs a destination written at offsets, not {}",
                    option, destination.text, null ? "null:" : "a stream"));
  }
  if (NamesStream(source)) {
    return Status::Error(
        fmt::format("{}: {}: a stream source cannot be resumed", option, source.text));
  }
  return Status::Ok();
}

Status CheckOpenedDestination(const Options& options, const Endpoint& destination) {
  if (options.verify && IsStream(destination)) {
    return Status::Error("--verify: " + destination.name() + " cannot be read back");
  }
  if ((options.dirty_bitmap || options.ranges) && IsStream(destination)) {
    return StreamDestination(options, destination.name());
  }
  return Status::Ok();
}

}  // namespace nbdcopy
