#include "endpoints/endpoint_spec.h"

#include <array>
#include <string_view>
#include <utility>

namespace nbdcopy {

bool LooksLikeNbdUri(const std::string& text) {
  static constexpr std::array<std::string_view, 8> kSchemes = {
      "nbd:",       "nbds:",       "nbd+unix:", "nbds+unix:",
      "nbd+vsock:", "nbds+vsock:", "nbd+ssh:",  "nbds+ssh:"};
  for (std::string_view scheme : kSchemes) {
    if (text.starts_with(scheme)) return true;
  }
  return false;
}

Result<EndpointSpec> ClassifyEndpoint(const std::vector<std::string>& words, Role role) {
  const char* role_name = role == Role::kSource ? "source" : "destination";
  if (words.empty()) return Status::Error(std::string("missing ") + role_name);
  EndpointSpec spec;
  if (words.front() == "[") {
    if (words.size() < 3 || words.back() != "]") {
      return Status::Error(std::string(role_name) + ": expected '[ CMD ARGS ... ]'");
    }
    spec.kind = EndpointKind::kCommand;
    spec.argv.assign(words.begin() + 1, words.end() - 1);
    spec.text = DisplayName(spec);
    return spec;
  }
  if (words.size() != 1) {
    return Status::Error(std::string(role_name) + ": expected one operand");
  }
  spec.text = words.front();
  if (spec.text.empty()) {
    return Status::Error(std::string(role_name) + ": empty file name");
  }
  if (spec.text == "-") {
    spec.kind = EndpointKind::kStdio;
  } else if (spec.text == "null:") {
    if (role == Role::kSource) {
      return Status::Error("null:: can only be used as the destination");
    }
    spec.kind = EndpointKind::kNull;
  } else if (LooksLikeNbdUri(spec.text)) {
    spec.kind = EndpointKind::kNbdUri;
    if (IsSshUri(spec.text)) {
      Result<SshUri> ssh = ParseSshUri(spec.text);
      if (!ssh.ok()) return ssh.status().WithPrefix(DisplayName(spec));
      spec.ssh = std::move(ssh).value();
    }
  } else {
    spec.kind = EndpointKind::kLocalPath;
  }
  return spec;
}

namespace {

// Replaces ":password" in every "scheme://user:password@host" of text.
std::string ReplacePasswords(const std::string& text, const std::string& replacement) {
  std::string result;
  size_t copied = 0;
  for (size_t scheme = text.find("://"); scheme != std::string::npos;
       scheme = text.find("://", scheme + 3)) {
    size_t authority = scheme + 3;
    size_t end = text.find_first_of("/?#\" \t\n", authority);
    if (end == std::string::npos) end = text.size();
    size_t at = text.rfind('@', end);
    if (at == std::string::npos || at < authority) continue;
    size_t colon = text.find(':', authority);
    if (colon == std::string::npos || colon > at) continue;
    result += text.substr(copied, colon - copied) + replacement;
    copied = at;
  }
  return result + text.substr(copied);
}

}  // namespace

std::string RedactPasswords(const std::string& text) { return ReplacePasswords(text, ":***"); }

std::string WithoutPassword(const std::string& uri) { return ReplacePasswords(uri, ""); }

std::string DisplayName(const EndpointSpec& spec) {
  switch (spec.kind) {
    case EndpointKind::kCommand: {
      std::string joined = "[";
      for (const std::string& word : spec.argv) joined += " " + word;
      return joined + " ]";
    }
    case EndpointKind::kNbdUri:
      return RedactPasswords(spec.text);
    default:
      return spec.text;
  }
}

}  // namespace nbdcopy
