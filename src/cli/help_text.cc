// --help, --long-options and --short-options, all drawn from the option table.
#include <algorithm>
#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/option_table.h"
#include "nbdcopy/options.h"

namespace nbdcopy {
namespace {

using enum ArgKind;

constexpr std::string_view kHeader = R"(Usage: nbdcopy [OPTION...] SOURCE DESTINATION
Copy a disk image between NBD servers, files, block devices and pipes.
  SOURCE, DESTINATION := - | FILE | DEVICE | NBD-URI | [ CMD ARGS ... ]
  DESTINATION += null:      (put "--" before a "[ CMD ARGS ... ]" operand)

)";
constexpr std::string_view kFooter =
    "\nSizes take K, M, G or T (powers of 1024). More, and examples: man nbdcopy\n";

constexpr std::string_view kIndent = "  ";
constexpr size_t kUsageWidth = 25;  // descriptions start in column 2 + 25
constexpr size_t kMinGap = 2;       // spaces at least between usage and description

constexpr std::array<std::pair<HelpGroup, std::string_view>, 4> kGroupTitles = {{
    {HelpGroup::kCopy, "Copy:"},
    {HelpGroup::kPerformance, "Performance:"},
    {HelpGroup::kChecksums, "Checksums:"},
    {HelpGroup::kOutput, "Output:"},
}};

// The option's forms as --help lists them: "-S N, --sparse=N". An optional
// value with a short form gets a line per form, as the short form (-p) is a
// plain flag.
std::vector<std::string> UsageLines(const OptionSpec& spec) {
  const std::string long_form = LongName(spec);
  const std::string value(spec.value_name);
  std::string short_form;
  if (spec.short_name != '\0') short_form = std::string{'-', spec.short_name};
  std::vector<std::string> lines;
  if (spec.arg == kNone) {
    lines = {(short_form.empty() ? "" : short_form + ", ") + long_form};
  } else if (spec.arg == kRequired) {
    lines = {(short_form.empty() ? "" : short_form + " " + value + ", ") + long_form + "=" + value};
  } else if (short_form.empty()) {
    lines = {long_form + "[=" + value + "]"};
  } else {
    lines = {short_form + ", " + long_form, long_form + "=" + value};
  }
  if (!spec.alias.empty()) lines.front() += ", --" + std::string(spec.alias);
  return lines;
}

// The description's lines, with the default filled in.
std::vector<std::string> DescriptionLines(const OptionSpec& spec) {
  std::string text(spec.help);
  if (spec.shown_default != nullptr) {
    text.replace(text.find("{}"), 2, spec.shown_default(Options()));
  }
  std::vector<std::string> lines;
  for (size_t start = 0; start <= text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Usage lines beside description lines; a usage too wide for its column
// gets a line of its own and pushes the description down.
void AppendOption(const OptionSpec& spec, std::string* text) {
  const std::vector<std::string> description = DescriptionLines(spec);
  size_t next = 0;
  for (const std::string& usage : UsageLines(spec)) {
    *text += std::string(kIndent) + usage;
    if (usage.size() + kMinGap > kUsageWidth) {
      *text += "\n";
      continue;
    }
    *text += std::string(kUsageWidth - usage.size(), ' ');
    *text += (next < description.size() ? description[next++] : "") + "\n";
  }
  for (; next < description.size(); ++next) {
    *text += std::string(kIndent.size() + kUsageWidth, ' ') + description[next] + "\n";
  }
}

}  // namespace

std::string HelpText() {
  std::string text(kHeader);
  for (const auto& [group, title] : kGroupTitles) {
    text += std::string(title) + "\n";
    for (const OptionSpec& spec : OptionTable()) {
      if (spec.group == group) AppendOption(spec, &text);
    }
  }
  // The actions have nothing to explain: one line names them all.
  std::string actions;
  for (const OptionSpec& spec : OptionTable()) {
    if (spec.group != HelpGroup::kActions) continue;
    actions += (actions.empty() ? "" : ", ") + UsageLines(spec).front();
  }
  text += std::string(kIndent) + actions + "\n";
  return text + std::string(kFooter);
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
