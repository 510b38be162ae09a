#include "cli/getopt_scan.h"

#include <getopt.h>

#include <algorithm>

namespace nbdcopy {
namespace {

static_assert(static_cast<int>(ArgKind::kNone) == no_argument &&
              static_cast<int>(ArgKind::kRequired) == required_argument &&
              static_cast<int>(ArgKind::kOptional) == optional_argument);

// getopt_long's code for an option: its short name, or one past any char.
int OptionCode(const OptionSpec& spec) {
  if (spec.short_name != '\0') return spec.short_name;
  return 256 + static_cast<int>(&spec - OptionTable().data());
}

const OptionSpec* FindByCode(int code) {
  for (const OptionSpec& spec : OptionTable()) {
    if (OptionCode(spec) == code) return &spec;
  }
  return nullptr;
}

// getopt_long's view of the option table.
struct GetoptTables {
  // "-": operands come back in order as code 1, so nothing is permuted and
  // POSIXLY_CORRECT does not matter. ":": a missing value returns ':',
  // and getopt_long prints nothing.
  std::string short_options = "-:";
  std::vector<option> long_options;

  GetoptTables() {
    for (const OptionSpec& spec : OptionTable()) {
      for (std::string_view name : {spec.long_name, spec.alias}) {
        if (name.empty()) continue;
        long_options.push_back(
            {name.data(), static_cast<int>(spec.arg), nullptr, OptionCode(spec)});
      }
      if (spec.short_name == '\0') continue;
      short_options += spec.short_name;
      if (spec.arg == ArgKind::kRequired) short_options += ':';
    }
    long_options.push_back({});
  }
};

bool IsNamed(const OptionSpec& spec, std::string_view name) {
  return name == spec.long_name || (!spec.alias.empty() && name == spec.alias);
}

// What getopt_long returned for one option word, checked. getopt_long
// accepts unambiguous abbreviations ("--conn"); this parser does not, so
// that a new option never changes what a script's abbreviation meant.
Result<OptionOccurrence> CheckOption(int result, const std::string& word) {
  const bool failed = result == '?' || result == ':';
  const OptionSpec* spec = FindByCode(failed ? optopt : result);
  std::string name;
  if (word.starts_with("--")) {
    const size_t equals = word.find('=');
    name = word.substr(0, equals);
    if (spec == nullptr || !IsNamed(*spec, std::string_view(name).substr(2))) {
      return Status::Error(name + ": unknown option");
    }
    if (!failed && equals + 1 == word.size()) {
      return Status::Error(name + ": missing value after '='");
    }
  } else {
    if (spec == nullptr) {
      return Status::Error(std::string{'-', static_cast<char>(optopt)} + ": unknown option");
    }
    name = LongName(*spec);
  }
  if (result == ':') return Status::Error(name + ": requires a value");
  // A known option fails with '?' only when given a value it does not take.
  if (result == '?') return Status::Error(name + ": does not take a value");
  OptionOccurrence occurrence{spec, std::nullopt};
  if (optarg != nullptr) occurrence.value = optarg;
  return occurrence;
}

}  // namespace

Result<ScannedArgs> ScanArgs(const std::vector<std::string>& args) {
  static const GetoptTables tables;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>("nbdcopy"));
  // getopt_long reorders argv's pointers (not here: see short_options),
  // never the strings they point at.
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const int argc = static_cast<int>(argv.size()) - 1;

  ScannedArgs scanned;
  optind = 0;  // starts a new scan, forgetting a cluster a failed one left
  for (;;) {
    // The word this call reads: optind's (0 means 1 before the first call).
    const size_t word = static_cast<size_t>(std::max(optind, 1));
    const int result = getopt_long(argc, argv.data(), tables.short_options.c_str(),
                                   tables.long_options.data(), nullptr);
    if (result == -1) break;
    if (result == 1) {
      scanned.operands.emplace_back(optarg);
      continue;
    }
    Result<OptionOccurrence> occurrence = CheckOption(result, args[word - 1]);
    if (!occurrence.ok()) return occurrence.status();
    scanned.options.push_back(std::move(*occurrence));
  }
  // Past "--", getopt_long stops at the first operand and leaves the rest.
  for (int i = optind; i < argc; ++i) scanned.operands.emplace_back(argv[i]);
  return scanned;
}

}  // namespace nbdcopy
