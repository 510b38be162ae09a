// The lexer of nbdcopy's two small line formats, the --checkpoint mapfile
// (job/checkpoint_file) and --ranges text lists (plan/range_list): lines
// with their numbers, blanks, words and fields, comments, and unsigned
// numbers in decimal or 0x hexadecimal (octal on request). What a format
// makes of them (its grammar, its messages) stays with the format; size
// suffixes ("64K") are base/size_text's.
// Thread safety: pure functions and values over the caller's text.
#ifndef NBDCOPY_BASE_TEXT_LEXER_H_
#define NBDCOPY_BASE_TEXT_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace nbdcopy {

// The blank sets of the formats: a --ranges list takes spaces, tabs and the
// '\r' of a CRLF; a mapfile (as ddrescuelog reads it) also \v and \f.
inline constexpr std::string_view kLineBlanks = " \t\r";
inline constexpr std::string_view kAllLineBlanks = " \t\r\v\f";

// The lines of a text, split at '\n', numbered from 1. A last line without
// '\n' is a line; the '\n' ending the text starts none.
class TextLines {
 public:
  explicit TextLines(std::string_view text) : rest_(text) {}
  // The next line into *line; false when there is none.
  bool Next(std::string_view* line);
  // The number of the line Next gave last (0 before the first).
  size_t number() const { return number_; }

 private:
  std::string_view rest_;
  size_t number_ = 0;
};

// text without the `blanks` at either end.
std::string_view TrimBlanks(std::string_view text, std::string_view blanks);

// Where a comment starts in a line: anywhere at a '#' (a --ranges list), or
// only at a '#' that starts the line or follows a blank (a mapfile, where
// ddrescuelog reads "12#" as a word).
enum class CommentStart { kAnywhere, kAfterBlank };
// The line up to its comment (all of it when there is none).
std::string_view BeforeComment(std::string_view line, CommentStart start, std::string_view blanks);

// Reads a line left to right: blanks skipped, words taken.
class FieldScanner {
 public:
  FieldScanner(std::string_view line, std::string_view blanks) : line_(line), blanks_(blanks) {}
  void SkipBlanks();
  // The characters up to the next blank, one of `stops` or the end; empty
  // when the scanner is at one of those.
  std::string_view TakeWord(std::string_view stops = {});
  // Takes c if it is next.
  bool Take(char c);
  bool AtEnd() const { return position_ == line_.size(); }

 private:
  std::string_view line_;
  std::string_view blanks_;
  size_t position_ = 0;
};

// The words of text, split at blanks.
std::vector<std::string_view> SplitWords(std::string_view text, std::string_view blanks);

// The value of a hexadecimal digit (either case), or -1.
int HexDigitValue(char c);

// "0x..." or "0X...": the prefix of a hexadecimal number.
bool HasHexPrefix(std::string_view text);

// The run of digits of `base` (2 to 16) that text starts with.
struct DigitRun {
  uint64_t value = 0;     // their value, when it fits
  size_t length = 0;      // how many there are (counted on past an overflow)
  bool overflow = false;  // their value does not fit 64 bits
};
DigitRun ScanDigits(std::string_view text, unsigned base);

// A whole text read as an unsigned number in C++'s syntax: decimal digits,
// "0x"/"0X" then hexadecimal ones, and with `octal` a "0" then octal ones.
// Read left to right: a bad character before the value overflows is
// kNotANumber, an overflow before a bad character kTooLarge.
enum class NumberStatus { kOk, kNotANumber, kTooLarge };
NumberStatus ParseUnsignedNumber(std::string_view text, bool octal, uint64_t* value);

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_TEXT_LEXER_H_
