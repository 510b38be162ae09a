// Abbreviated long options, read as getopt_long reads them: any prefix of
// a long name that names one option is that option ("--conn=2" is
// "--connections=2"). The words are spelled out before CLI11 sees them,
// so CLI11 only ever meets full names.
//
// Which option a prefix means:
// - an exact name always wins ("--blkhash", though "--blkhash-file" too
//   starts so);
// - a prefix that libnbd's nbdcopy reads as one option means that option
//   here, so that scripts written for it keep their meaning although our
//   own options share the prefix ("--c" is "--connections", not
//   "--checkpoint"; "--d" is "--destination-is-zero");
// - any other prefix of exactly one of our options is that option;
// - a prefix of several is refused, naming them all, in getopt's words.
// As in getopt, two names of the same option (an alias) are one option.
#ifndef NBDCOPY_CLI_LONG_OPTION_NAMES_H_
#define NBDCOPY_CLI_LONG_OPTION_NAMES_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/option_table.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// The long names of libnbd's nbdcopy (1.24, with --blkhash and
// --blkhash-file), without "--": each is one of ours too.
std::span<const std::string_view> UpstreamLongNames();

struct LongNameMatch {
  const OptionSpec* spec = nullptr;  // null: unknown or ambiguous
  std::string_view name;             // the full name meant (maybe an alias)
  // When ambiguous: the full names the prefix starts, one per option, sorted.
  std::vector<std::string_view> candidates;
};

// What the name of "--NAME" means in table (NAME without "--" and "=").
LongNameMatch MatchLongName(std::span<const OptionSpec> table, std::string_view name);

// "option '--re=8' is ambiguous; possibilities: '--request-size' '--requests'"
// (glibc's words; word is the argv word as typed).
std::string AmbiguousMessage(std::string_view word, const LongNameMatch& match);

struct SpelledOutWords {
  std::vector<std::string> words;  // the argv words, long options in full
  // The first ambiguous option word, or words.size() when there is none.
  size_t refused_at = 0;
  Status refusal;
  // Words that look like options inside a "[ CMD ARGS ]" before "--":
  // the command's own options, which need "--" before the operands.
  std::vector<std::string> bracketed_options;
  // The same line with "--" before the operands: options and their
  // values first, then "--", then the operands.
  std::vector<std::string> with_end_marker;
};

// Spells out the abbreviated long options of args that getopt_long would
// read as options: before "--", not the value of the option before them
// ("--blkhash-file --fl"), not inside "[ CMD ARGS ]".
SpelledOutWords SpellOutLongOptions(std::span<const OptionSpec> table,
                                    const std::vector<std::string>& args);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_LONG_OPTION_NAMES_H_
