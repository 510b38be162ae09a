#include "plan/range_list.h"

#include <nlohmann/json.hpp>

#include "base/size_text.h"
#include "base/text_lexer.h"

namespace nbdcopy {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Checks [offset, offset + length) against the image and adds it to *set
// (a zero length adds nothing).
Status AddRange(uint64_t offset, uint64_t length, uint64_t image_size, RangeSet* set) {
  const std::string both =
      "offset " + std::to_string(offset) + " + length " + std::to_string(length);
  if (length > UINT64_MAX - offset) return Status::Error(both + " overflows 64 bits");
  if (offset + length > image_size) {
    return Status::Error(both + " = " + std::to_string(offset + length) +
                         " is past the end of the image (" + std::to_string(image_size) +
                         " bytes)");
  }
  set->Add(offset, length);
  return Status::Ok();
}

// ---- text: "OFFSET LENGTH" lines ----

// The blanks of a text list (base/text_lexer.h).
constexpr std::string_view kBlanks = kLineBlanks;

constexpr size_t kMaxQuoted = 40;  // what a message quotes of the list

// text for a message: printable ASCII (anything else as "?"), cut to max
// characters and "...".
std::string Printable(std::string_view text, size_t max) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (text.size() > max) out += "...";
  return out;
}

// What a message quotes of a line.
std::string Excerpt(std::string_view text) { return QuotedText(Printable(text, kMaxQuoted)); }

// "0x1F" (no suffix), else a size as the command line writes it.
Result<uint64_t> ParseTextNumber(std::string_view field) {
  if (field.size() > kMaxQuoted) return Status::Error("too long for a size: " + Excerpt(field));
  if (!HasHexPrefix(field)) return ParseSizeText(field);
  const std::string_view digits = field.substr(2);
  // A bad digit anywhere is "not hexadecimal", even after too many digits.
  const DigitRun run = ScanDigits(digits, 16);
  if (digits.empty() || run.length != digits.size()) {
    return Status::Error("not a hexadecimal number: " + Excerpt(field));
  }
  if (run.overflow) return Status::Error("number too large: " + Excerpt(field));
  return run.value;
}

struct TextFields {
  std::string_view offset;
  std::string_view length;
};

// Splits a line without its comment into "OFFSET[ ,]LENGTH".
Result<TextFields> SplitFields(std::string_view line) {
  FieldScanner scanner(line, kBlanks);
  TextFields fields;
  scanner.SkipBlanks();
  fields.offset = scanner.TakeWord(",");
  scanner.SkipBlanks();
  if (scanner.Take(',')) scanner.SkipBlanks();
  fields.length = scanner.TakeWord(",");
  scanner.SkipBlanks();
  if (fields.offset.empty() || fields.length.empty() || !scanner.AtEnd()) {
    return Status::Error("expected \"OFFSET LENGTH\" (two sizes), not " +
                         Excerpt(TrimBlanks(line, kBlanks)));
  }
  return fields;
}

Status ParseTextLine(std::string_view line, uint64_t image_size, RangeSet* set) {
  line = BeforeComment(line, CommentStart::kAnywhere, kBlanks);
  if (TrimBlanks(line, kBlanks).empty()) return Status::Ok();  // blank or only a comment
  Result<TextFields> fields = SplitFields(line);
  if (!fields.ok()) return fields.status();
  Result<uint64_t> offset = ParseTextNumber(fields->offset);
  if (!offset.ok()) return offset.status().WithPrefix("offset");
  Result<uint64_t> length = ParseTextNumber(fields->length);
  if (!length.ok()) return length.status().WithPrefix("length");
  return AddRange(*offset, *length, image_size, set);
}

Result<RangeSet> ParseText(std::string_view text, uint64_t image_size,
                           std::optional<int64_t> type_filter) {
  if (type_filter) {
    return Status::Error("--ranges-type=" + std::to_string(*type_filter) +
                         " selects rows of a JSON list by their \"type\", but this list is text");
  }
  RangeSet set;
  TextLines lines(text);
  for (std::string_view line; lines.Next(&line);) {
    Status status = ParseTextLine(line, image_size, &set);
    if (!status.ok()) return status.WithPrefix("line " + std::to_string(lines.number()));
  }
  return set;
}

// ---- JSON: an array of objects ----

// "an object", "a string", "null": what a value is, for messages.
std::string Describe(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_number_float()) return "the number " + value.dump();
  std::string type = value.type_name();
  bool vowel = type[0] == 'a' || type[0] == 'o';
  return (vowel ? "an " : "a ") + type;
}

// A field that must be a JSON integer in [0, 2^64 - 1].
Result<uint64_t> JsonCount(const Json& row, const char* key) {
  const std::string quoted = std::string("\"") + key + "\"";
  auto field = row.find(key);
  if (field == row.end()) return Status::Error("no " + quoted);
  if (field->is_number_unsigned()) return field->get<uint64_t>();
  if (field->is_number_integer()) {
    int64_t value = field->get<int64_t>();  // parsed with a minus sign: "-0" is 0
    if (value >= 0) return static_cast<uint64_t>(value);
    return Status::Error(quoted + " must not be negative: " + field->dump());
  }
  return Status::Error(quoted + " must be a JSON integer from 0 to " + std::to_string(UINT64_MAX) +
                       ", not " + Describe(*field));
}

Result<uint64_t> RowOffset(const Json& row) {
  const bool has_offset = row.contains("offset"), has_start = row.contains("start");
  if (has_offset && has_start) return Status::Error("has both \"offset\" and \"start\" (give one)");
  if (!has_offset && !has_start) return Status::Error("no \"offset\" (or \"start\")");
  return JsonCount(row, has_offset ? "offset" : "start");
}

// Whether the row's "type" equals the filter.
Result<bool> TypeMatches(const Json& row, int64_t filter) {
  auto type = row.find("type");
  if (type == row.end()) {
    return Status::Error("no \"type\" to match --ranges-type=" + std::to_string(filter) +
                         " against");
  }
  if (type->is_number_unsigned()) {
    return filter >= 0 && type->get<uint64_t>() == static_cast<uint64_t>(filter);
  }
  if (type->is_number_integer()) return type->get<int64_t>() == filter;
  return Status::Error("\"type\" must be a JSON integer, not " + Describe(*type));
}

// Checks one row; adds its range if it is chosen (*chosen counts those).
Status AddJsonRow(const Json& row, uint64_t image_size, std::optional<int64_t> type_filter,
                  RangeSet* set, size_t* chosen) {
  if (!row.is_object()) return Status::Error("not an object but " + Describe(row));
  bool wanted = true;
  if (type_filter) {
    Result<bool> match = TypeMatches(row, *type_filter);
    if (!match.ok()) return match.status();
    wanted = *match;
  }
  Result<uint64_t> offset = RowOffset(row);
  if (!offset.ok()) return offset.status();
  Result<uint64_t> length = JsonCount(row, "length");
  if (!length.ok()) return length.status();
  RangeSet unused;
  Status status = AddRange(*offset, *length, image_size, wanted ? set : &unused);
  if (status.ok() && wanted) ++*chosen;
  return status;
}

// The parser's own message, without its "[json.exception...] " tag, with
// what it quotes of the list printable and cut short.
std::string ParserMessage(const Json::exception& error) {
  std::string_view what = error.what();
  size_t tag_end = what.find("] ");
  if (!what.empty() && what[0] == '[' && tag_end != std::string_view::npos) {
    what.remove_prefix(tag_end + 2);
  }
  return Printable(what, 4 * kMaxQuoted);
}

Result<RangeSet> ParseJson(std::string_view text, uint64_t image_size,
                           std::optional<int64_t> type_filter) {
  Json list;
  try {
    list = Json::parse(text);
  } catch (const Json::exception& error) {
    return Status::Error("invalid JSON: " + ParserMessage(error));
  }
  if (!list.is_array()) {
    return Status::Error("not a JSON array of objects (the top level is " + Describe(list) + ")");
  }
  bool typed = false;
  for (const Json& row : list) typed = typed || (row.is_object() && row.contains("type"));
  if (typed && !type_filter) {
    return Status::Error(
        "the rows have a \"type\", as an nbdinfo --map lists every kind of range of the image; "
        "choose the rows to copy with --ranges-type=N");
  }
  RangeSet set;
  size_t chosen = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    Status status = AddJsonRow(list[i], image_size, type_filter, &set, &chosen);
    if (!status.ok()) return status.WithPrefix("element [" + std::to_string(i) + "]");
  }
  if (type_filter && chosen == 0 && !list.empty()) {
    return Status::Error("no row has \"type\" " + std::to_string(*type_filter) +
                         ": the list names no ranges to copy");
  }
  return set;
}

// Control characters the list (or its name) brought into a message, as "?":
// a message is one printable line.
std::string OneLine(std::string message) {
  for (char& c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return message;
}

bool LooksLikeJson(std::string_view text) {
  const std::string_view start = TrimBlanks(text, " \t\r\n\v\f");  // any whitespace
  return !start.empty() && (start.front() == '[' || start.front() == '{');
}

}  // namespace

Result<RangeSet> ParseRangeList(std::string_view text, uint64_t image_size,
                                std::optional<int64_t> type_filter, const std::string& name) {
  const std::string prefix = "--ranges=" + name;
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
    text.remove_prefix(kByteOrderMark.size());
  }
  Result<RangeSet> set = LooksLikeJson(text) ? ParseJson(text, image_size, type_filter)
                                             : ParseText(text, image_size, type_filter);
  if (!set.ok()) return Status::Error(OneLine(set.status().WithPrefix(prefix).message()));
  if (set->empty()) {
    return Status::Error(OneLine(prefix) + ": the list names no ranges to copy (" +
                         (LooksLikeJson(text) ? "an empty array or only zero lengths"
                                              : "no lines, or only comments and zero lengths") +
                         ")");
  }
  return set;
}

}  // namespace nbdcopy
