#include "cli/option_values.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <climits>
#include <string_view>

#include "cli/option_numbers.h"

namespace nbdcopy {
namespace {

// Options that take no value: a flag, or an action.
void ApplyFlag(OptionId id, CommandLine* command_line) {
  Options& options = command_line->options;
  switch (id) {
    case OptionId::kHelp:
      command_line->action = Action::kHelp;
      break;
    case OptionId::kVersion:
      command_line->action = Action::kVersion;
      break;
    case OptionId::kLongOptions:
      command_line->action = Action::kLongOptions;
      break;
    case OptionId::kShortOptions:
      command_line->action = Action::kShortOptions;
      break;
    case OptionId::kAllocated:
      options.allocated = true;
      break;
    case OptionId::kDestinationIsZero:
      options.destination_is_zero = true;
      break;
    case OptionId::kFlush:
      options.flush = true;
      break;
    case OptionId::kNoExtents:
      options.extents = false;
      break;
    case OptionId::kSynchronous:
      options.synchronous = true;
      break;
    case OptionId::kVerbose:
      options.verbose = true;
      break;
    case OptionId::kVerify:
      options.verify = true;
      break;
    default:  // an option with a value: not a flag
      break;
  }
}

Status ParseCount(const OptionSpec& spec, const std::string& text, unsigned min, unsigned* count) {
  Result<uint64_t> value = ParseNumber(text, UINT_MAX);
  if (!value.ok()) return value.status().WithPrefix(LongName(spec));
  if (*value < min) {
    return Status::Error(LongName(spec) + ": must be at least " + std::to_string(min));
  }
  *count = static_cast<unsigned>(*value);
  return Status::Ok();
}

Result<BlkhashSpec> ParseBlkhash(const std::string& text) {
  BlkhashSpec spec;
  size_t slash = text.find('/');
  spec.algorithm = text.substr(0, slash);
  if (!IsBlkhashAlgorithm(spec.algorithm)) {
    return Status::Error("--blkhash: unknown algorithm " + Quoted(spec.algorithm) +
                         " (expected md5, sha1, sha256 or sha512)");
  }
  if (slash == std::string::npos) return spec;
  std::string size_text = text.substr(slash + 1);
  Result<uint64_t> size = ParseSize(size_text);
  if (!size.ok()) return size.status().WithPrefix("--blkhash");
  if (!std::has_single_bit(*size)) {
    return Status::Error("--blkhash: block size must be a power of 2: " + Quoted(size_text));
  }
  if (*size > kMaxRequestSize) {
    return Status::Error("--blkhash: block size must be at most 32M: " + Quoted(size_text));
  }
  spec.block_size = *size;
  return spec;
}

// ALGO or ALGO:HEX (KubeVirt CDI's form), either case; the digest kept lowercase.
Result<ChecksumSpec> ParseChecksum(const std::string& text) {
  auto lower = [](std::string word) {
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return word;
  };
  ChecksumSpec spec;
  const size_t colon = text.find(':');
  spec.algorithm = lower(text.substr(0, colon));
  if (!IsChecksumAlgorithm(spec.algorithm)) {
    return Status::Error("--checksum: unknown algorithm " + Quoted(text.substr(0, colon)) +
                         " (expected md5, sha1, sha256 or sha512)");
  }
  if (colon == std::string::npos) return spec;
  const std::string hex = text.substr(colon + 1);
  const size_t digits = ChecksumHexLength(spec.algorithm);
  if (hex.size() != digits || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return Status::Error(fmt::format("--checksum: {} digests are {} hex digits, not {}",
                                     spec.algorithm, digits, Quoted(hex)));
  }
  spec.expected = lower(hex);
  return spec;
}

Status ApplyProgress(const OptionSpec& spec, const std::optional<std::string>& value,
                     Options* options) {
  // As upstream: a later bare -p/--progress keeps an FD given earlier.
  if (!value) {
    if (options->progress == ProgressMode::kNone) options->progress = ProgressMode::kBar;
    return Status::Ok();
  }
  Result<uint64_t> fd = ParseNumber(*value, INT_MAX);
  if (!fd.ok()) return fd.status().WithPrefix(LongName(spec));
  options->progress = ProgressMode::kFd;
  options->progress_fd = static_cast<int>(*fd);
  return Status::Ok();
}

// --request-size, --queue-size, --rate and --sparse.
Status ApplySize(const OptionSpec& spec, const std::string& text, Options* options) {
  Result<uint64_t> size = ParseSize(text);
  if (!size.ok()) return size.status().WithPrefix(LongName(spec));
  if (spec.id == OptionId::kRequestSize) {
    if (!std::has_single_bit(*size) || *size < kMinRequestSize || *size > kMaxRequestSize) {
      return Status::Error("--request-size: must be a power of 2 from " +
                           std::to_string(kMinRequestSize) + " to " +
                           std::to_string(kMaxRequestSize));
    }
    options->request_size = *size;
    options->request_size_set = true;
  } else if (spec.id == OptionId::kQueueSize) {
    if (*size == 0) return Status::Error("--queue-size: must be at least 1");
    options->queue_size = *size;
  } else if (spec.id == OptionId::kRate) {
    if (*size == 0) return Status::Error("--rate: must be at least 1 byte a second");
    options->rate = *size;
  } else {
    if (*size != 0 && (!std::has_single_bit(*size) || *size < kMinSparseSize)) {
      return Status::Error("--sparse: must be 0 or a power of 2 >= " +
                           std::to_string(kMinSparseSize));
    }
    options->sparse_size = *size;
  }
  return Status::Ok();
}

// --ranges, --ranges-type, --checkpoint and --retry.
Status ApplyLongCopyOption(const OptionSpec& spec, const std::string& value, Options* options) {
  switch (spec.id) {
    case OptionId::kRanges:
      if (value.empty()) return Status::Error("--ranges: needs a file name (or - for stdin)");
      options->ranges = value;
      return Status::Ok();
    case OptionId::kRangesType: {
      Result<uint64_t> type = ParseNumber(value, INT64_MAX);
      if (!type.ok()) return type.status().WithPrefix(LongName(spec));
      options->ranges_type = static_cast<int64_t>(*type);
      return Status::Ok();
    }
    case OptionId::kCheckpoint:
      if (value.empty()) return Status::Error("--checkpoint: needs a file name");
      options->checkpoint = value;
      return Status::Ok();
    case OptionId::kRetry: {
      Result<uint64_t> attempts = ParseNumber(value, kMaxRetry);
      if (!attempts.ok()) return attempts.status().WithPrefix(LongName(spec));
      options->retry = static_cast<unsigned>(*attempts);
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

}  // namespace

Status ApplyOption(const OptionSpec& spec, const std::optional<std::string>& given,
                   CommandLine* command_line) {
  Options& options = command_line->options;
  // Set for every option with a required value.
  const std::string value = given.value_or("");
  switch (spec.id) {
    case OptionId::kBlkhashFile:
      options.blkhash_file = value;
      return Status::Ok();
    case OptionId::kChecksum: {
      Result<ChecksumSpec> checksum = given ? ParseChecksum(value) : ChecksumSpec();
      if (!checksum.ok()) return checksum.status();
      options.checksum = *checksum;
      return Status::Ok();
    }
    case OptionId::kChecksumFile:
      if (value.empty()) return Status::Error("--checksum-file: needs a file name");
      options.checksum_file = value;
      return Status::Ok();
    case OptionId::kDirtyBitmap:
      options.dirty_bitmap = value;
      return Status::Ok();
    case OptionId::kRanges:
    case OptionId::kRangesType:
    case OptionId::kCheckpoint:
    case OptionId::kRetry:
      return ApplyLongCopyOption(spec, value, &options);
    case OptionId::kJson:
      options.json = true;
      options.json_file = given;  // a bare --json means stdout
      return Status::Ok();
    case OptionId::kBlkhash: {
      if (!given) {
        options.blkhash = BlkhashSpec();
        return Status::Ok();
      }
      Result<BlkhashSpec> blkhash = ParseBlkhash(value);
      if (!blkhash.ok()) return blkhash.status();
      options.blkhash = *blkhash;
      return Status::Ok();
    }
    case OptionId::kProgress:
      return ApplyProgress(spec, given, &options);
    case OptionId::kConnections:
      return ParseCount(spec, value, 1, &options.connections);
    case OptionId::kRequests:
      return ParseCount(spec, value, 1, &options.requests);
    case OptionId::kThreads:
      return ParseCount(spec, value, 0, &options.threads);
    case OptionId::kTimeout: {
      Result<uint64_t> seconds = ParseNumber(value, kMaxTimeout);
      if (!seconds.ok()) return seconds.status().WithPrefix(LongName(spec));
      options.timeout = static_cast<unsigned>(*seconds);
      return Status::Ok();
    }
    case OptionId::kRequestSize:
    case OptionId::kQueueSize:
    case OptionId::kRate:
    case OptionId::kSparse:
      return ApplySize(spec, value, &options);
    case OptionId::kAllocated:
    case OptionId::kDestinationIsZero:
    case OptionId::kFlush:
    case OptionId::kNoExtents:
    case OptionId::kSynchronous:
    case OptionId::kVerbose:
    case OptionId::kVerify:
    case OptionId::kHelp:
    case OptionId::kVersion:
    case OptionId::kLongOptions:
    case OptionId::kShortOptions:
      // CLI11's disable_flag_override lets a flag's own value through ("--flush=true").
      if (given) return Status::Error(LongName(spec) + ": does not take a value");
      ApplyFlag(spec.id, command_line);
      return Status::Ok();
  }
  return Status::Ok();  // not reached: the switch names every option
}

}  // namespace nbdcopy
