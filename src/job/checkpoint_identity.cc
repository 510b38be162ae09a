// Whether a checkpoint file is this copy's: CompareIdentity
// (checkpoint_file.h) and its messages. The text format and the file's
// reading and writing are in checkpoint_file.cc.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/text_lexer.h"
#include "job/checkpoint_file.h"

namespace nbdcopy {

namespace {

std::string Shown(const std::string& value) {
  return value.empty() ? "(none)" : fmt::format("'{}'", EscapeCheckpointValue(value));
}

// An operand's words, and the file they name when that says more.
std::string ShownOperand(const std::string& words, const std::string& file) {
  return file.empty() || file == words ? Shown(words) : Shown(words) + " (" + Shown(file) + ")";
}

// "(A then, B now)" for the first word that differs, or the whole strings.
std::string SettingsDifference(const std::string& recorded, const std::string& now) {
  // The settings are words between spaces (CheckpointSettings).
  const std::vector<std::string_view> a = SplitWords(recorded, " "), b = SplitWords(now, " ");
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string word_a(i < a.size() ? a[i] : ""), word_b(i < b.size() ? b[i] : "");
    if (word_a != word_b) return fmt::format("({} then, {} now)", Shown(word_a), Shown(word_b));
  }
  return fmt::format("({} then, {} now)", Shown(recorded), Shown(now));
}

}  // namespace

Status CompareIdentity(const CheckpointIdentity& recorded, const CheckpointIdentity& now,
                       const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return Status::Error("--checkpoint=" + path + ": " + why + "; remove " + path +
                         " to copy from the start");
  };
  auto unknown = [&](const std::string& what, const std::string& a, const std::string& b) {
    return refuse("cannot check " + what + " (the checkpoint records " + Shown(a) +
                  ", this run has " + Shown(b) + ")");
  };
  if (recorded.source_size != now.source_size) {
    return refuse("the source's size differs (the checkpoint was made for " +
                  std::to_string(recorded.source_size) + " bytes, the source has " +
                  std::to_string(now.source_size) + ")");
  }
  const std::string& fa = recorded.fingerprint;
  const std::string& fb = now.fingerprint;
  if (fa.empty() || fb.empty()) return unknown("the source's content fingerprint", fa, fb);
  if (!FingerprintsMatch(fa, fb)) {
    return refuse("the source's content differs from when the checkpoint was made (fingerprint " +
                  Shown(fa) + " then, " + Shown(fb) + " now)");
  }
  using Field = const std::string CheckpointIdentity::*;
  const std::tuple<const char*, Field, Field> operands[] = {
      {"source", &CheckpointIdentity::source, &CheckpointIdentity::source_file},
      {"destination", &CheckpointIdentity::destination, &CheckpointIdentity::destination_file}};
  for (const auto& [name, words, file] : operands) {
    const std::string &a = recorded.*words, &b = now.*words;
    const std::string &file_a = recorded.*file, &file_b = now.*file;
    if (a.empty() || b.empty()) return unknown(std::string("the ") + name, a, b);
    // The same words, or another spelling of the same file.
    if (a != b && (file_a.empty() || file_a != file_b)) {
      return refuse("it was made for " + std::string(name) + " " + ShownOperand(a, file_a) +
                    ", not " + ShownOperand(b, file_b));
    }
  }
  if (recorded.settings.empty() || now.settings.empty()) {
    return unknown("the settings", recorded.settings, now.settings);
  }
  if (recorded.settings != now.settings) {
    return refuse("it was made with other settings " +
                  SettingsDifference(recorded.settings, now.settings));
  }
  return Status::Ok();
}

bool FingerprintsMatch(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const size_t colon = a.find("/each:");
  if (colon == std::string::npos || a.compare(0, colon + 6, b, 0, colon + 6) != 0) return false;
  std::istringstream left(a.substr(colon + 6)), right(b.substr(colon + 6));
  std::string x, y;
  while (std::getline(left, x, ',')) {
    if (!std::getline(right, y, ',')) return false;
    if (x != "-" && y != "-" && x != y) return false;
  }
  return !std::getline(right, y, ',');
}

}  // namespace nbdcopy
