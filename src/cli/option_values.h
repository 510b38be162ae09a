// What each option's value means: the functions the option table's apply
// column points at. Each checks the value and sets it in the CommandLine;
// an error says what is wrong ("must be at least 1"), and the caller puts
// the option's name first ("--connections: must be at least 1").
#ifndef NBDCOPY_CLI_OPTION_VALUES_H_
#define NBDCOPY_CLI_OPTION_VALUES_H_

#include <cstdint>
#include <string>

#include "cli/option_numbers.h"
#include "cli/option_table.h"
#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// A flag: sets a member of Options (--flush: flush = true).
template <auto member, auto to>
Status SetFlag(const OptionValue&, CommandLine* command_line) {
  command_line->options.*member = to;
  return Status::Ok();
}

// --help and the other actions: the caller stops applying options there,
// as upstream exits there.
template <Action action>
Status SetAction(const OptionValue&, CommandLine* command_line) {
  command_line->action = action;
  return Status::Ok();
}

// A plain decimal number from min to max into an unsigned member.
template <unsigned Options::*member, uint64_t min, uint64_t max>
Status SetNumber(const OptionValue& value, CommandLine* command_line) {
  Result<uint64_t> number = ParseNumber(*value, max);
  if (!number.ok()) return number.status();
  if constexpr (min > 0) {  // (an unsigned "< 0" would not compile with -Werror)
    if (*number < min) return Status::Error("must be at least " + std::to_string(min));
  }
  command_line->options.*member = static_cast<unsigned>(*number);
  return Status::Ok();
}

// Text into an optional member (--dirty-bitmap=NAME); a file name
// (--checkpoint=FILE) must not be empty.
template <std::optional<std::string> Options::*member, bool file_name = false>
Status SetText(const OptionValue& value, CommandLine* command_line) {
  if (file_name && value->empty()) return Status::Error("needs a file name");
  command_line->options.*member = *value;
  return Status::Ok();
}

Status ApplyRanges(const OptionValue& value, CommandLine* command_line);
Status ApplyRangesType(const OptionValue& value, CommandLine* command_line);
Status ApplyRequestSize(const OptionValue& value, CommandLine* command_line);
Status ApplyQueueSize(const OptionValue& value, CommandLine* command_line);
Status ApplyRate(const OptionValue& value, CommandLine* command_line);
Status ApplySparse(const OptionValue& value, CommandLine* command_line);
Status ApplyBlkhash(const OptionValue& value, CommandLine* command_line);
Status ApplyChecksum(const OptionValue& value, CommandLine* command_line);
Status ApplyProgress(const OptionValue& value, CommandLine* command_line);
Status ApplyJson(const OptionValue& value, CommandLine* command_line);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_OPTION_VALUES_H_
