#include "base/text_lexer.h"

namespace nbdcopy {

namespace {

bool IsIn(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }

}  // namespace

bool TextLines::Next(std::string_view* line) {
  if (rest_.empty()) return false;
  const size_t newline = rest_.find('\n');
  *line = rest_.substr(0, newline);
  rest_.remove_prefix(newline == std::string_view::npos ? rest_.size() : newline + 1);
  ++number_;
  return true;
}

std::string_view TrimBlanks(std::string_view text, std::string_view blanks) {
  while (!text.empty() && IsIn(text.front(), blanks)) text.remove_prefix(1);
  while (!text.empty() && IsIn(text.back(), blanks)) text.remove_suffix(1);
  return text;
}

std::string_view BeforeComment(std::string_view line, CommentStart start, std::string_view blanks) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '#') continue;
    if (start == CommentStart::kAnywhere || i == 0 || IsIn(line[i - 1], blanks)) {
      return line.substr(0, i);
    }
  }
  return line;
}

void FieldScanner::SkipBlanks() {
  while (position_ < line_.size() && IsIn(line_[position_], blanks_)) ++position_;
}

std::string_view FieldScanner::TakeWord(std::string_view stops) {
  const size_t start = position_;
  while (position_ < line_.size() && !IsIn(line_[position_], blanks_) &&
         !IsIn(line_[position_], stops)) {
    ++position_;
  }
  return line_.substr(start, position_ - start);
}

bool FieldScanner::Take(char c) {
  if (position_ == line_.size() || line_[position_] != c) return false;
  ++position_;
  return true;
}

std::vector<std::string_view> SplitWords(std::string_view text, std::string_view blanks) {
  std::vector<std::string_view> words;
  FieldScanner scanner(text, blanks);
  for (scanner.SkipBlanks(); !scanner.AtEnd(); scanner.SkipBlanks()) {
    words.push_back(scanner.TakeWord());
  }
  return words;
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool HasHexPrefix(std::string_view text) {
  return text.starts_with("0x") || text.starts_with("0X");
}

DigitRun ScanDigits(std::string_view text, unsigned base) {
  DigitRun run;
  for (char c : text) {
    const int digit = HexDigitValue(c);
    if (digit < 0 || static_cast<unsigned>(digit) >= base) break;
    ++run.length;
    if (run.overflow) continue;
    if (run.value > (UINT64_MAX - static_cast<unsigned>(digit)) / base) {
      run.overflow = true;
      continue;
    }
    run.value = run.value * base + static_cast<unsigned>(digit);
  }
  return run;
}

NumberStatus ParseUnsignedNumber(std::string_view text, bool octal, uint64_t* value) {
  const bool hex = HasHexPrefix(text);
  const bool is_octal = octal && !hex && text.size() > 1 && text[0] == '0';
  const std::string_view digits = text.substr(hex ? 2 : is_octal ? 1 : 0);
  const DigitRun run = ScanDigits(digits, hex ? 16 : is_octal ? 8 : 10);
  // The overflow, if any, came before the first bad character.
  if (run.overflow) return NumberStatus::kTooLarge;
  if (digits.empty() || run.length != digits.size()) return NumberStatus::kNotANumber;
  *value = run.value;
  return NumberStatus::kOk;
}

}  // namespace nbdcopy
