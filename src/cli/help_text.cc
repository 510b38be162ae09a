// --help through CLI11's formatter; --long-options and --short-options
// from the option table.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/cli_app.h"
#include "cli/option_table.h"
#include "nbdcopy/options.h"

namespace nbdcopy {
namespace {

// CLI11 ends the description and the footer with a newline of its own.
constexpr std::string_view kHeader = R"(Usage: nbdcopy [OPTION...] SOURCE DESTINATION
Copy a disk image between NBD servers, files, block devices and pipes.
  SOURCE, DESTINATION := - | FILE | DEVICE | NBD-URI | [ CMD ARGS ... ]
  DESTINATION += null:      (put "--" before a "[ CMD ARGS ... ]" operand)
)";
constexpr std::string_view kFooter =
    "Sizes take K, M, G or T (powers of 1024). More, and examples: man nbdcopy";

constexpr size_t kUsageColumn = 2 + 25;  // descriptions start in column 27

// The option's forms as --help lists them: "-S N, --sparse=N". An optional
// value with a short form gets a line per form, as the short form (-p) is a
// plain flag.
std::vector<std::string> UsageLines(const CLI::Option& option) {
  const std::vector<std::string>& long_names = option.get_lnames();
  const std::string long_form = "--" + long_names.front();
  const std::string value = option.get_option_text();
  std::string short_form;
  if (!option.get_snames().empty()) short_form = "-" + option.get_snames().front();
  std::vector<std::string> lines;
  if (value.empty()) {
    lines = {(short_form.empty() ? "" : short_form + ", ") + long_form};
  } else if (option.get_expected_max() > 0) {
    lines = {(short_form.empty() ? "" : short_form + " " + value + ", ") + long_form + "=" + value};
  } else if (short_form.empty()) {
    lines = {long_form + "[=" + value + "]"};
  } else {
    lines = {short_form + ", " + long_form, long_form + "=" + value};
  }
  for (size_t i = 1; i < long_names.size(); ++i) lines.front() += ", --" + long_names[i];
  return lines;
}

// CLI11's layout of an option (usage, then the description from column
// 27, below a usage too wide for that), in upstream's order: the usage
// line first, sections without blank lines between them, and the actions
// named together on one line.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(kUsageColumn); }

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string text = make_description(app);
    for (const std::string& group : app->get_groups()) {
      if (group.empty()) continue;
      text += make_group(group, false, app->get_options([&group](const CLI::Option* option) {
        return option->get_group() == group;
      }));
    }
    std::string actions;
    for (const CLI::Option* option :
         app->get_options([](const CLI::Option* option) { return option->get_group().empty(); })) {
      actions += (actions.empty() ? "" : ", ") + UsageLines(*option).front();
    }
    return text + "  " + actions + "\n\n" + make_footer(app);
  }

  std::string make_group(std::string group, bool,
                         std::vector<const CLI::Option*> options) const override {
    std::string text = group + ":\n";
    for (const CLI::Option* option : options) text += make_option(option, false);
    return text;
  }

  // Each usage line but the last takes one line of the description.
  std::string make_option(const CLI::Option* option, bool) const override {
    std::ostringstream out;
    std::string description = option->get_description();
    const std::vector<std::string> usages = UsageLines(*option);
    for (size_t i = 0; i < usages.size(); ++i) {
      const size_t end = i + 1 < usages.size() ? description.find('\n') : std::string::npos;
      CLI::detail::format_help(out, usages[i], description.substr(0, end), get_column_width());
      description = end == std::string::npos ? "" : description.substr(end + 1);
    }
    return out.str();
  }
};

}  // namespace

std::string HelpText() {
  std::unique_ptr<CLI::App> app = MakeApp({});
  app->description(std::string(kHeader));
  app->footer(std::string(kFooter));
  app->formatter(std::make_shared<HelpFormatter>());
  return app->help();
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
