// The command line read as glibc's getopt_long reads it for libnbd's
// nbdcopy: the one place for its rules, so that a script written for
// libnbd's nbdcopy means the same here.
// - Options and operands mix (GNU permutation); "--" ends the options.
// - Short options cluster: "-vp", "-vC3", "-vC 3". A letter that takes a
//   value takes the rest of the word, or else the next word.
// - "--name=value" or "--name value" for a required value, taken whatever
//   it looks like ("--blkhash-file --flush"); an optional value only after
//   "=" ("--progress 3" is a bar and the operand 3).
// - A long name may be abbreviated (MatchLongName).
// Ours, beyond getopt_long:
// - "[ CMD ARGS ]" written before "--" holds a command's own options: there
//   only our exact long names are options, and an unknown option gets a
//   second line, the command line with the "--" it needs.
// - "--name=" with nothing after "=" is refused (getopt_long passes the
//   empty value on), and "{}" after "=" is no value, as CLI11 reads it
//   ("--flush={}" is "--flush").
#ifndef NBDCOPY_CLI_GETOPT_READING_H_
#define NBDCOPY_CLI_GETOPT_READING_H_

#include <string>
#include <string_view>
#include <vector>

#include "cli/option_table.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

struct LongNameMatch {
  const OptionSpec* spec = nullptr;  // null: unknown or ambiguous
  std::string_view name;             // the full name meant (maybe an alias)
  // When ambiguous: the full names the prefix starts, one per option, sorted.
  std::vector<std::string_view> candidates;
};

// What "--NAME" means (NAME without "--" and "="): an exact name always
// wins ("--blkhash", though "--blkhash-file" too starts so); then a prefix
// libnbd's nbdcopy reads as one option means that option ("--c" is
// "--connections", not "--checkpoint"), so that a script's abbreviation
// keeps its meaning whatever we add; then a prefix of one of our options
// is that option; a prefix of several is ambiguous. As in getopt, two
// names of one option (an alias) are one option.
LongNameMatch MatchLongName(std::string_view name);

// The command line as getopt_long leaves argv (it permutes it): the option
// words first, each followed by its separate value if it has one, long
// names in full ("--conn=2" is "--connections=2"); then "--"; then the
// operands, in order. Fails at the first word getopt_long would refuse,
// in command-line order: an unknown option ("--bogus: unknown option"),
// an ambiguous one (in glibc's words: "option '--re' is ambiguous;
// possibilities: '--request-size' '--requests' '--retry'"), a value
// missing or given where none is taken ("--flush: does not take a
// value"). Values are not looked at.
[[nodiscard]] Result<std::vector<std::string>> ReadAsGetoptLong(
    const std::vector<std::string>& args);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_GETOPT_READING_H_
