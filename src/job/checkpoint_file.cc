#include "job/checkpoint_file.h"

#include <errno.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/text_lexer.h"
#include "nbdcopy_version.h"

namespace nbdcopy {

namespace {

// The identity lines, "# nbdcopy-KEY: VALUE", in the order they are written.
enum Key {
  kSource,
  kSourceFile,
  kDestination,
  kDestinationFile,
  kSize,
  kSettings,
  kFingerprint,
  kKeyCount
};
constexpr std::array<std::string_view, kKeyCount> kKeyNames = {
    "source", "source-file", "destination", "destination-file", "size", "settings", "fingerprint"};
// Written only for local paths, and missing from older files.
bool Optional(size_t key) { return key == kSourceFile || key == kDestinationFile; }
constexpr std::string_view kKeyPrefix = "nbdcopy-";
constexpr std::string_view kStatusLineStatuses = "?*/-FG+";  // ddrescue's current_status
constexpr std::string_view kBlockStatuses = "?*/-+";
// The blocks ddrescue tried and could not read (whole or not yet narrowed).
constexpr std::string_view kBadStatuses = "*/-";

// The blanks, as ddrescuelog reads a mapfile (base/text_lexer.h).
constexpr std::string_view kBlanks = kAllLineBlanks;

std::string_view Trim(std::string_view text) { return TrimBlanks(text, kBlanks); }

// The bytes written as a backslash and a letter, and their letters.
constexpr std::string_view kNamedBytes = "\\\n\r\t";
constexpr std::string_view kNamedLetters = "\\nrt";

std::string Escape(std::string_view value) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    const size_t named = kNamedBytes.find(static_cast<char>(c));
    if (named != std::string_view::npos) {
      out += {'\\', kNamedLetters[named]};
    } else if (c < 0x20 || c == 0x7f || (c == ' ' && (i == 0 || i + 1 == value.size()))) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Undoes Escape; nullopt on a backslash that starts no escape Escape writes.
std::optional<std::string> Unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    const std::string_view rest = text.substr(i + 1);
    const size_t named = rest.empty() ? std::string_view::npos : kNamedLetters.find(rest[0]);
    if (named != std::string_view::npos) {
      out += kNamedBytes[named];
      i += 1;
    } else if (rest.size() >= 3 && rest[0] == 'x' && HexDigitValue(rest[1]) >= 0 &&
               HexDigitValue(rest[2]) >= 0) {
      out += static_cast<char>(HexDigitValue(rest[1]) * 16 + HexDigitValue(rest[2]));
      i += 3;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// An unsigned integer in C++ syntax, as ddrescuelog reads mapfiles:
// decimal, 0x/0X hexadecimal or 0 octal; no sign, no suffix.
Result<uint64_t> ParseNumber(std::string_view text) {
  uint64_t value = 0;
  switch (ParseUnsignedNumber(text, /*octal=*/true, &value)) {
    case NumberStatus::kOk:
      return value;
    case NumberStatus::kTooLarge:
      return Status::Error(fmt::format("'{}' is too large", Escape(text)));
    case NumberStatus::kNotANumber:
      break;
  }
  return Status::Error(fmt::format("'{}' is not a number", Escape(text)));
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%08" PRIX64, value);
  return text;
}

// The words of a data line, up to its comment ('#' first or after a blank).
std::vector<std::string_view> Words(std::string_view line) {
  return SplitWords(BeforeComment(line, CommentStart::kAfterBlank, kBlanks), kBlanks);
}

// One character of `allowed`, or 0.
char StatusChar(std::string_view word, std::string_view allowed) {
  if (word.size() != 1 || allowed.find(word[0]) == std::string_view::npos) return 0;
  return word[0];
}

// Reads a file line by line; keeps the first error, but still looks at
// every comment line, so that a file with no identity at all is "not a
// checkpoint" rather than garbage at some line.
class Parser {
 public:
  explicit Parser(const std::string& path) : path_(path) {}

  void Line(size_t number, std::string_view line) {
    std::string_view text = Trim(line);
    Status status;
    if (!text.empty() && text.front() == '#') {
      status = Comment(number, text.substr(1));
    } else if (error_.ok()) {
      status = Data(number, Words(text));
    }
    if (error_.ok() && !status.ok()) error_ = status;
  }

  Result<CheckpointState> Finish(size_t last_line);

 private:
  Status LineError(size_t number, const std::string& why) const {
    return Status::Error(path_ + ": line " + std::to_string(number) + ": " + why);
  }
  Status Comment(size_t number, std::string_view text);
  Status Data(size_t number, const std::vector<std::string_view>& words);
  Status StatusLine(size_t number, const std::vector<std::string_view>& words);
  Status Block(size_t number, const std::vector<std::string_view>& words);

  const std::string& path_;
  CheckpointIdentity identity_;
  std::array<size_t, kKeyCount> key_lines_{};  // where each identity line is; 0: none yet
  Status error_;
  size_t status_line_ = 0;  // 0: none yet
  size_t last_block_line_ = 0;
  uint64_t end_ = 0;                                     // where the blocks so far end
  std::vector<std::pair<uint64_t, size_t>> block_ends_;  // (end, line), to check the size
  RangeSet done_;
  RangeSet bad_;
};

Status Parser::Comment(size_t number, std::string_view text) {
  text = Trim(text);
  if (!text.starts_with(kKeyPrefix)) return Status::Ok();
  text.remove_prefix(kKeyPrefix.size());
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return Status::Ok();
  size_t key = 0;
  while (key < kKeyCount && kKeyNames[key] != text.substr(0, colon)) ++key;
  if (key == kKeyCount) return Status::Ok();  // another key: a comment
  const std::string name = std::string(kKeyPrefix) + std::string(kKeyNames[key]);
  if (key_lines_[key] != 0) {
    return LineError(number, "a second " + name + " line (the first is line " +
                                 std::to_string(key_lines_[key]) + ")");
  }
  key_lines_[key] = number;
  const std::string_view value = Trim(text.substr(colon + 1));
  if (key == kSize) {
    Result<uint64_t> size = ParseNumber(value);
    if (!size.ok()) return LineError(number, name + ": " + size.status().message());
    identity_.source_size = *size;
    return Status::Ok();
  }
  std::optional<std::string> unescaped = Unescape(value);
  if (!unescaped) {
    return LineError(number, name + ": a backslash that starts no escape (\\\\ \\n \\r \\t \\xHH)");
  }
  std::string* fields[] = {&identity_.source,
                           &identity_.source_file,
                           &identity_.destination,
                           &identity_.destination_file,
                           nullptr,
                           &identity_.settings,
                           &identity_.fingerprint};
  *fields[key] = std::move(*unescaped);
  return Status::Ok();
}

Status Parser::Data(size_t number, const std::vector<std::string_view>& words) {
  if (words.empty()) return Status::Ok();  // a blank line
  return status_line_ == 0 ? StatusLine(number, words) : Block(number, words);
}

Status Parser::StatusLine(size_t number, const std::vector<std::string_view>& words) {
  const std::string expected = " (expected: current_pos current_status [current_pass])";
  if (words.size() > 3) return LineError(number, "a status line with extra words" + expected);
  if (words.size() < 2) return LineError(number, "a status line without a status" + expected);
  Result<uint64_t> position = ParseNumber(words[0]);
  if (!position.ok()) return LineError(number, "current_pos: " + position.status().message());
  if (!StatusChar(words[1], kStatusLineStatuses)) {
    return LineError(number, fmt::format("'{}' is not a current_status (one of {})",
                                         Escape(words[1]), kStatusLineStatuses));
  }
  if (words.size() == 3) {
    const std::string_view pass = words[2];
    // At most 10 decimal digits, as many as INT_MAX has.
    const DigitRun digits = ScanDigits(pass, 10);
    const bool decimal = pass.size() <= 10 && digits.length == pass.size();
    if (!decimal || digits.value == 0 || digits.value > INT_MAX) {
      return LineError(number, "current_pass '" + Escape(pass) + "' is not a positive decimal");
    }
  }
  status_line_ = number;
  return Status::Ok();
}

Status Parser::Block(size_t number, const std::vector<std::string_view>& words) {
  if (words.size() != 3) {
    return LineError(number, "a block line needs 3 words (pos size status), not " +
                                 std::to_string(words.size()));
  }
  Result<uint64_t> offset = ParseNumber(words[0]);
  if (!offset.ok()) return LineError(number, "pos: " + offset.status().message());
  Result<uint64_t> length = ParseNumber(words[1]);
  if (!length.ok()) return LineError(number, "size: " + length.status().message());
  const char status = StatusChar(words[2], kBlockStatuses);
  if (!status) {
    return LineError(number, fmt::format("'{}' is not a block status (one of {})", Escape(words[2]),
                                         kBlockStatuses));
  }
  if (*length == 0) return LineError(number, "an empty block at " + Hex(*offset));
  if (*offset != end_) {
    std::string why = last_block_line_ == 0
                          ? "the first block starts at " + Hex(*offset) + ", not at 0"
                      : *offset < end_ ? "the block at " + Hex(*offset) +
                                             " overlaps the one before, which ends at " + Hex(end_)
                                       : "a gap between " + Hex(end_) + " and " + Hex(*offset);
    return LineError(number, why + " (blocks must be sorted and contiguous)");
  }
  if (*length > UINT64_MAX - *offset) {
    return LineError(number, "the block at " + Hex(*offset) + " ends past 2^64");
  }
  if (status == '+') done_.Add(*offset, *length);
  if (kBadStatuses.find(status) != std::string_view::npos) bad_.Add(*offset, *length);
  end_ = *offset + *length;
  last_block_line_ = number;
  block_ends_.emplace_back(end_, number);
  return Status::Ok();
}

Result<CheckpointState> Parser::Finish(size_t last_line) {
  const std::string not_ours = path_ + ": not a checkpoint written by nbdcopy";
  bool any = false;
  for (size_t line : key_lines_) any = any || line != 0;
  if (!any) return Status::Error(not_ours);
  if (!error_.ok()) return error_;
  for (size_t key = 0; key < kKeyCount; ++key) {
    if (key_lines_[key] == 0 && !Optional(key)) {
      return Status::Error(not_ours + " (it has no nbdcopy-" + std::string(kKeyNames[key]) +
                           " line)");
    }
  }
  if (status_line_ == 0) return LineError(last_line, "the file ends before the status line");
  const uint64_t size = identity_.source_size;
  const std::string size_text = " nbdcopy-size " + std::to_string(size) + " (" + Hex(size) + ")";
  for (const auto& [end, line] : block_ends_) {
    if (end > size) return LineError(line, "the block ends at " + Hex(end) + ", past" + size_text);
  }
  if (end_ < size) {
    const size_t line = last_block_line_ ? last_block_line_ : status_line_;
    return LineError(line, "the blocks end at " + Hex(end_) + ", before" + size_text);
  }
  return CheckpointState{std::move(identity_), std::move(done_), std::move(bad_)};
}

// "--checkpoint=PATH: <what failed>: <strerror>" (or the step's words).
Status FileStatus(const std::string& path, const FileError& error) {
  const std::string prefix = "--checkpoint=" + path + ": ";
  switch (error.step) {
    case FileError::Step::kNone:
      return Status::Ok();
    case FileError::Step::kNotRegular:
      return Status::Error(prefix + "not a regular file");
    case FileError::Step::kOpen:  // reading opens path, writing creates path.tmp
      return Status::FromErrno(
          prefix + (error.path == path ? "cannot open it" : "cannot create " + error.path),
          error.error);
    case FileError::Step::kStat:
      return Status::FromErrno(prefix + "cannot stat it", error.error);
    case FileError::Step::kRead:
      return Status::FromErrno(prefix + "cannot read it", error.error);
    case FileError::Step::kWrite:
      return Status::FromErrno(prefix + "cannot write " + error.path, error.error);
    case FileError::Step::kSync:
      return Status::FromErrno(prefix + "cannot sync " + error.path, error.error);
    case FileError::Step::kRename:
      return Status::FromErrno(prefix + "cannot rename " + error.path + " to " + path, error.error);
    case FileError::Step::kOpenDirectory:
      return Status::FromErrno(prefix + "cannot open the directory " + error.path, error.error);
    case FileError::Step::kSyncDirectory:
      return Status::FromErrno(prefix + "cannot sync the directory " + error.path, error.error);
  }
  return Status::Error(prefix + "unknown failure");
}

}  // namespace

Status WriteCheckpointFile(const std::string& path, const std::string& text, FileSystem& files) {
  return FileStatus(path, files.ReplaceAtomically(path, text));
}

Result<std::optional<std::string>> ReadCheckpointFile(const std::string& path, FileSystem& files) {
  std::string text;
  const FileError error = files.ReadWhole(path, /*regular_only=*/true, &text);
  if (error.step == FileError::Step::kOpen && error.error == ENOENT) {
    return std::optional<std::string>();
  }
  if (error.failed()) return FileStatus(path, error);
  return std::optional<std::string>(std::move(text));
}

std::string EscapeCheckpointValue(std::string_view value) { return Escape(value); }

std::string RenderCheckpoint(const CheckpointIdentity& identity, const RangeSet& done,
                             const RangeSet& bad) {
  const uint64_t size = identity.source_size;
  std::string blocks;
  std::optional<uint64_t> first_gap;
  auto block = [&](uint64_t offset, uint64_t end, char status) {
    blocks += Hex(offset) + "  " + Hex(end - offset) + "  " + status + "\n";
    if (status == '?' && !first_gap) first_gap = offset;
  };
  // Done and bad runs in order ('-' wins where both say), gaps '?'.
  RangeSet finished = done;
  finished.Remove(bad);
  std::vector<std::pair<RangeSet::Range, char>> runs;
  for (const RangeSet::Range& run : finished.Runs()) runs.emplace_back(run, '+');
  for (const RangeSet::Range& run : bad.Runs()) runs.emplace_back(run, '-');
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.first.offset < b.first.offset; });
  uint64_t position = 0;
  for (const auto& [run, status] : runs) {
    if (run.offset >= size) break;
    if (run.offset > position) block(position, run.offset, '?');
    position = std::min(run.end(), size);
    block(run.offset, position, status);
  }
  if (position < size) block(position, size, '?');

  std::string text = "# Mapfile. Created by nbdcopy " NBDCOPY_VERSION " (--checkpoint)\n";
  auto identity_line = [&](Key key, const std::string& value) {
    text += "# " + std::string(kKeyPrefix) + std::string(kKeyNames[key]) + ":";
    text += value.empty() ? "\n" : " " + value + "\n";
  };
  identity_line(kSource, Escape(identity.source));
  if (!identity.source_file.empty()) identity_line(kSourceFile, Escape(identity.source_file));
  identity_line(kDestination, Escape(identity.destination));
  if (!identity.destination_file.empty()) {
    identity_line(kDestinationFile, Escape(identity.destination_file));
  }
  identity_line(kSize, std::to_string(size));
  identity_line(kSettings, Escape(identity.settings));
  identity_line(kFingerprint, Escape(identity.fingerprint));
  text += "# current_pos  current_status  current_pass\n";
  text += Hex(first_gap.value_or(size)) + "     " + (first_gap ? '?' : '+') + "               1\n";
  text += "#      pos        size  status\n";
  return text + blocks;
}

Result<CheckpointState> ParseCheckpoint(std::string_view text, const std::string& path) {
  Parser parser(path);
  TextLines lines(text);
  for (std::string_view line; lines.Next(&line);) parser.Line(lines.number(), line);
  return parser.Finish(lines.number());
}

}  // namespace nbdcopy
