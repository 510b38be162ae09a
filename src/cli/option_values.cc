#include "cli/option_values.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <climits>

namespace nbdcopy {
namespace {

std::string Lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// ALGO or ALGO/SIZE, the algorithm in lowercase only (libcrypto's names).
Result<BlkhashSpec> ParseBlkhash(const std::string& text) {
  BlkhashSpec spec;
  const size_t slash = text.find('/');
  spec.algorithm = text.substr(0, slash);
  if (!IsBlkhashAlgorithm(spec.algorithm)) {
    return Status::Error("unknown algorithm " + Quoted(spec.algorithm) +
                         " (expected md5, sha1, sha256 or sha512)");
  }
  if (slash == std::string::npos) return spec;
  const std::string size_text = text.substr(slash + 1);
  Result<uint64_t> size = ParseSize(size_text);
  if (!size.ok()) return size.status();
  if (!std::has_single_bit(*size)) {
    return Status::Error("block size must be a power of 2: " + Quoted(size_text));
  }
  if (*size > kMaxRequestSize) {
    return Status::Error("block size must be at most 32M: " + Quoted(size_text));
  }
  spec.block_size = *size;
  return spec;
}

// ALGO or ALGO:HEX (KubeVirt CDI's form), either case; kept lowercase.
Result<ChecksumSpec> ParseChecksum(const std::string& text) {
  ChecksumSpec spec;
  const size_t colon = text.find(':');
  spec.algorithm = Lowercase(text.substr(0, colon));
  if (!IsChecksumAlgorithm(spec.algorithm)) {
    return Status::Error("unknown algorithm " + Quoted(text.substr(0, colon)) +
                         " (expected md5, sha1, sha256 or sha512)");
  }
  if (colon == std::string::npos) return spec;
  const std::string hex = text.substr(colon + 1);
  const size_t digits = ChecksumHexLength(spec.algorithm);
  if (hex.size() != digits ||
      hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return Status::Error(
        fmt::format("{} digests are {} hex digits, not {}", spec.algorithm, digits, Quoted(hex)));
  }
  spec.expected = Lowercase(hex);
  return spec;
}

}  // namespace

Status ApplyRanges(const OptionValue& value, CommandLine* command_line) {
  if (value->empty()) return Status::Error("needs a file name (or - for stdin)");
  command_line->options.ranges = *value;
  return Status::Ok();
}

Status ApplyRangesType(const OptionValue& value, CommandLine* command_line) {
  Result<uint64_t> type = ParseNumber(*value, INT64_MAX);
  if (!type.ok()) return type.status();
  command_line->options.ranges_type = static_cast<int64_t>(*type);
  return Status::Ok();
}

Status ApplyRequestSize(const OptionValue& value, CommandLine* command_line) {
  Result<uint64_t> size = ParseSize(*value);
  if (!size.ok()) return size.status();
  if (!std::has_single_bit(*size) || *size < kMinRequestSize || *size > kMaxRequestSize) {
    return Status::Error(
        fmt::format("must be a power of 2 from {} to {}", kMinRequestSize, kMaxRequestSize));
  }
  command_line->options.request_size = *size;
  command_line->options.request_size_set = true;
  return Status::Ok();
}

Status ApplyQueueSize(const OptionValue& value, CommandLine* command_line) {
  Result<uint64_t> size = ParseSize(*value);
  if (!size.ok()) return size.status();
  if (*size == 0) return Status::Error("must be at least 1");
  command_line->options.queue_size = *size;
  return Status::Ok();
}

Status ApplyRate(const OptionValue& value, CommandLine* command_line) {
  Result<uint64_t> size = ParseSize(*value);
  if (!size.ok()) return size.status();
  if (*size == 0) return Status::Error("must be at least 1 byte a second");
  command_line->options.rate = *size;
  return Status::Ok();
}

Status ApplySparse(const OptionValue& value, CommandLine* command_line) {
  Result<uint64_t> size = ParseSize(*value);
  if (!size.ok()) return size.status();
  if (*size != 0 && (!std::has_single_bit(*size) || *size < kMinSparseSize)) {
    return Status::Error(fmt::format("must be 0 or a power of 2 >= {}", kMinSparseSize));
  }
  command_line->options.sparse_size = *size;
  return Status::Ok();
}

Status ApplyBlkhash(const OptionValue& value, CommandLine* command_line) {
  Result<BlkhashSpec> spec = value ? ParseBlkhash(*value) : BlkhashSpec();
  if (!spec.ok()) return spec.status();
  command_line->options.blkhash = *spec;
  return Status::Ok();
}

Status ApplyChecksum(const OptionValue& value, CommandLine* command_line) {
  Result<ChecksumSpec> spec = value ? ParseChecksum(*value) : ChecksumSpec();
  if (!spec.ok()) return spec.status();
  command_line->options.checksum = *spec;
  return Status::Ok();
}

// As upstream: a later bare -p/--progress keeps an FD given earlier.
Status ApplyProgress(const OptionValue& value, CommandLine* command_line) {
  Options& options = command_line->options;
  if (!value) {
    if (options.progress == ProgressMode::kNone) options.progress = ProgressMode::kBar;
    return Status::Ok();
  }
  Result<uint64_t> fd = ParseNumber(*value, INT_MAX);
  if (!fd.ok()) return fd.status();
  options.progress = ProgressMode::kFd;
  options.progress_fd = static_cast<int>(*fd);
  return Status::Ok();
}

// A bare --json means stdout.
Status ApplyJson(const OptionValue& value, CommandLine* command_line) {
  command_line->options.json = true;
  command_line->options.json_file = value;
  return Status::Ok();
}

}  // namespace nbdcopy
