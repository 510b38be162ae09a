// Every option once: its names, what value it takes, how --help shows it
// and what it does. getopt_long's reading of the command line, CLI11's
// definitions, --help, --long-options and --short-options are all made
// from this table, so they cannot disagree, and OptionTableTest holds the
// bash completion and the man page's option list to it. The defaults
// --help shows are read from a default-constructed Options rather than
// typed in.
#ifndef NBDCOPY_CLI_OPTION_TABLE_H_
#define NBDCOPY_CLI_OPTION_TABLE_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// What the long form takes, as getopt_long says it (no_argument,
// required_argument, optional_argument). A short form takes a value only
// when the long form requires one: -p is a plain flag, --progress[=FD] not.
enum class ArgKind { kNone, kRequired, kOptional };

// The --help section an option is listed under, in --help's order.
// kActions are listed together on one line, at the end.
enum class HelpGroup { kCopy, kPerformance, kChecksums, kOutput, kActions };

// An option's value as getopt_long hands it over: unset for a flag, and
// for an optional value not given ("--progress").
using OptionValue = std::optional<std::string>;

struct OptionSpec {
  std::string_view long_name;   // without "--"
  std::string_view alias = {};  // a second long name meaning the same; empty: none
  char short_name = '\0';       // '\0': none
  ArgKind arg = ArgKind::kNone;
  // libnbd's nbdcopy (1.24) has the option too: an abbreviation it reads
  // as this option means this option here, whatever we add.
  bool upstream = false;
  std::string_view value_name = {};  // --help's name for the value: "N" in "--sparse=N"
  bool unlisted = false;             // left out of --long-options (it is for completion)
  HelpGroup group = HelpGroup::kActions;
  // --help's description; "\n" starts a continuation line, "{}" is replaced
  // by shown_default(Options()).
  std::string_view help = {};
  std::string (*shown_default)(const Options& defaults) = nullptr;
  // What the option does: checks the value (set when it is required) and
  // sets it in *command_line. Called in command-line order, so a later
  // value wins. The error says what is wrong with the value; the caller
  // puts the option's name first.
  Status (*apply)(const OptionValue& value, CommandLine* command_line) = nullptr;
};

// In --help's order.
std::span<const OptionSpec> OptionTable();

// "--connections": how messages name an option, whichever form was typed.
std::string LongName(const OptionSpec& spec);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_OPTION_TABLE_H_
