// --help, --long-options and --short-options, from the option table.
#include <CLI/StringTools.hpp>
#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/option_table.h"
#include "nbdcopy/options.h"

namespace nbdcopy {
namespace {

constexpr std::string_view kHeader = R"(Usage: nbdcopy [OPTION...] SOURCE DESTINATION
Copy a disk image between NBD servers, files, block devices and pipes.
  SOURCE, DESTINATION := - | FILE | DEVICE | NBD-URI | [ CMD ARGS ... ]
  DESTINATION += null:      (put "--" before a "[ CMD ARGS ... ]" operand)
)";
constexpr std::string_view kFooter =
    "\nSizes take K, M, G or T (powers of 1024). More, and examples: man nbdcopy\n";

// The sections' titles, in HelpGroup's order; the actions have none.
constexpr std::array<std::string_view, 4> kGroupTitles = {
    "Copy", "Performance", "Checksums (ALGO: md5, sha1, sha256 or sha512)", "Output"};

constexpr size_t kUsageColumn = 2 + 25;  // descriptions start in column 27

// The option's forms as --help lists them: "-S N, --sparse=N". An optional
// value with a short form gets a line per form, as the short form (-p) is a
// plain flag.
std::vector<std::string> UsageLines(const OptionSpec& spec) {
  const std::string long_form = LongName(spec);
  const std::string value(spec.value_name);
  const std::string short_form = spec.short_name == '\0' ? "" : std::string{'-', spec.short_name};
  std::vector<std::string> lines;
  if (value.empty()) {
    lines = {(short_form.empty() ? "" : short_form + ", ") + long_form};
  } else if (spec.arg == ArgKind::kRequired) {
    lines = {(short_form.empty() ? "" : short_form + " " + value + ", ") + long_form + "=" + value};
  } else if (short_form.empty()) {
    lines = {long_form + "[=" + value + "]"};
  } else {
    lines = {short_form + ", " + long_form, long_form + "=" + value};
  }
  if (!spec.alias.empty()) lines.front() += ", --" + std::string(spec.alias);
  return lines;
}

// The usage, then the description from column 27 (below a usage too wide
// for that), as CLI11 lays out an option. Each usage line but the last
// takes one line of the description; "{}" in it is the default.
void AddOption(const OptionSpec& spec, std::ostringstream* out) {
  std::string description(spec.help);
  if (spec.shown_default != nullptr) {
    description.replace(description.find("{}"), 2, spec.shown_default(Options()));
  }
  const std::vector<std::string> usages = UsageLines(spec);
  for (size_t i = 0; i < usages.size(); ++i) {
    const size_t end = i + 1 < usages.size() ? description.find('\n') : std::string::npos;
    CLI::detail::format_help(*out, usages[i], description.substr(0, end), kUsageColumn);
    description = end == std::string::npos ? "" : description.substr(end + 1);
  }
}

}  // namespace

// In upstream's shape: the usage line first, sections without blank lines
// between them, and the actions named together on one line.
std::string HelpText() {
  std::ostringstream out;
  out << kHeader;
  for (size_t group = 0; group < kGroupTitles.size(); ++group) {
    out << kGroupTitles[group] << ":\n";
    for (const OptionSpec& spec : OptionTable()) {
      if (spec.group == static_cast<HelpGroup>(group)) AddOption(spec, &out);
    }
  }
  std::string actions;
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.group == HelpGroup::kActions) {
      actions += (actions.empty() ? "" : ", ") + UsageLines(spec).front();
    }
  }
  out << "  " << actions << "\n" << kFooter;
  return out.str();
}

// --help first, as upstream; then alphabetically, as bash completion lists them.
std::string LongOptionsText() {
  std::vector<std::string_view> names;
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.unlisted) continue;
    names.push_back(spec.long_name);
    if (!spec.alias.empty()) names.push_back(spec.alias);
  }
  std::ranges::sort(names, {},
                    [](std::string_view name) { return std::pair(name != "help", name); });
  std::string text;
  for (std::string_view name : names) text += "--" + std::string(name) + "\n";
  return text;
}

// In the order of their long names.
std::string ShortOptionsText() {
  std::vector<const OptionSpec*> specs;
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.short_name != '\0') specs.push_back(&spec);
  }
  std::ranges::sort(specs, {}, &OptionSpec::long_name);
  std::string text;
  for (const OptionSpec* spec : specs) text += std::string{'-', spec->short_name, '\n'};
  return text;
}

}  // namespace nbdcopy
