#include "nbdcopy/endpoint_spec.h"

#include <array>
#include <string_view>

namespace nbdcopy {

bool LooksLikeNbdUri(const std::string& text) {
  static constexpr std::array<std::string_view, 6> kSchemes = {
      "nbd:", "nbds:", "nbd+unix:", "nbds+unix:", "nbd+vsock:", "nbds+vsock:"};
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
  } else {
    spec.kind = EndpointKind::kLocalPath;
  }
  return spec;
}

namespace {

// Removes the password from "scheme://user:password@host/...".
std::string WithoutPassword(const std::string& uri) {
  size_t authority = uri.find("://");
  if (authority == std::string::npos) return uri;
  authority += 3;
  size_t end = uri.find_first_of("/?#", authority);
  if (end == std::string::npos) end = uri.size();
  size_t at = uri.rfind('@', end);
  if (at == std::string::npos || at < authority) return uri;
  size_t colon = uri.find(':', authority);
  if (colon == std::string::npos || colon > at) return uri;
  return uri.substr(0, colon) + ":***" + uri.substr(at);
}

}  // namespace

std::string DisplayName(const EndpointSpec& spec) {
  switch (spec.kind) {
    case EndpointKind::kCommand: {
      std::string joined = "[";
      for (const std::string& word : spec.argv) joined += " " + word;
      return joined + " ]";
    }
    case EndpointKind::kNbdUri:
      return WithoutPassword(spec.text);
    default:
      return spec.text;
  }
}

}  // namespace nbdcopy
