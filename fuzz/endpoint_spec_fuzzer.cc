// Endpoint classification and URI handling. The first input byte picks:
// 0: operand words (split at NUL) through ClassifyEndpoint in both roles:
//    the kind follows from the words alone, as endpoint_spec.h says, and
//    DisplayName never fails;
// 1: a URI "scheme://user:PASSWORD@host/path?query" built from the input,
//    alone and inside a message (libnbd's debug lines quote URIs): neither
//    RedactPasswords nor DisplayName lets the password through, and
//    WithoutPassword removes exactly ":PASSWORD";
// 2: arbitrary text through RedactPasswords: no crash, and redacting twice
//    changes nothing;
// 3: an NBD URI's TLS settings (ParseUriTls): a result that agrees with
//    the scheme and never asks for a check libnbd cannot make; explaining
//    a failure with it never crashes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "endpoints/endpoint_spec.h"
#include "endpoints/nbd/nbd_tls.h"

namespace {

using namespace nbdcopy;

std::vector<std::string> SplitWords(std::string_view text) {
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t nul; (nul = text.find('\0', start)) != std::string_view::npos; start = nul + 1) {
    words.emplace_back(text.substr(start, nul - start));
  }
  words.emplace_back(text.substr(start));
  return words;
}

void CheckClassify(const std::vector<std::string>& words, Role role) {
  Result<EndpointSpec> spec = ClassifyEndpoint(words, role);
  if (!spec.ok()) {
    FUZZ_CHECK(!spec.status().message().empty(), "empty message");
    return;
  }
  const std::string display = DisplayName(*spec);
  if (words.front() == "[") {
    FUZZ_CHECK(spec->kind == EndpointKind::kCommand && words.size() >= 3 && words.back() == "]",
               "bad command operand accepted");
    FUZZ_CHECK(spec->argv.size() == words.size() - 2, "argv size");
    FUZZ_CHECK(display.starts_with("[ ") && display.ends_with(" ]"), "display %s", display.c_str());
    return;
  }
  FUZZ_CHECK(words.size() == 1 && spec->text == words[0] && !words[0].empty(),
             "operand text differs from its word");
  const std::string& text = spec->text;
  EndpointKind expected = text == "-"                 ? EndpointKind::kStdio
                          : text == "null:"           ? EndpointKind::kNull
                          : LooksLikeNbdUri(text)     ? EndpointKind::kNbdUri
                                                      : EndpointKind::kLocalPath;
  FUZZ_CHECK(spec->kind == expected, "'%s' classified as %d", text.c_str(),
             static_cast<int>(spec->kind));
  FUZZ_CHECK(!(role == Role::kSource && spec->kind == EndpointKind::kNull), "null: as source");
  if (spec->kind == EndpointKind::kLocalPath || spec->kind == EndpointKind::kStdio) {
    FUZZ_CHECK(display == text, "a path displayed as %s", display.c_str());
  }
}

// Characters a URI's userinfo may hold unencoded (RFC 3986), bar ':' and
// '%' which keep their meaning; a password is made of these.
char PasswordChar(uint8_t byte) {
  static constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:%";
  return kChars[byte % kChars.size()];
}

void CheckPassword(std::string_view input) {
  if (input.size() < 4) return;
  static constexpr std::string_view kSchemes[] = {"nbd", "nbds", "nbd+unix", "nbds+unix",
                                                  "nbd+vsock", "nbds+vsock"};
  static constexpr std::string_view kWrappers[] = {"", "\"", "'", " ", "(", "uri="};
  const std::string_view scheme = kSchemes[static_cast<uint8_t>(input[0]) % 6];
  const std::string_view wrapper = kWrappers[static_cast<uint8_t>(input[1]) % 6];
  const size_t password_length = 1 + static_cast<uint8_t>(input[2]) % 24;
  input.remove_prefix(3);
  std::string password;
  for (size_t i = 0; i < password_length && i < input.size(); ++i) {
    password += PasswordChar(static_cast<uint8_t>(input[i]));
  }
  input.remove_prefix(password.size());
  // The rest: a user name (up to a NUL) then host, path and query, with
  // nothing that would end the userinfo early.
  std::string user, rest;
  size_t nul = input.find('\0');
  for (char c : input.substr(0, nul)) {
    if (c != '@' && c != ':' && c != '/' && c != '?' && c != '#' && c != '[' && c != ']') user += c;
  }
  if (nul != std::string_view::npos) rest = std::string(input.substr(nul + 1));
  if (!rest.empty() && rest[0] != '/' && rest[0] != '?') rest.insert(0, "/");
  for (char& c : rest) {
    if (c == ':') c = '_';  // no second "scheme://" in the same text
  }
  for (char& c : user) {
    if (c == ' ' || c == '"' || c == '\t' || c == '\n') c = 'u';
  }
  auto make_uri = [&](const std::string& secret) {
    return std::string(scheme) + "://" + user + ":" + secret + "@localhost" + rest;
  };
  auto make_message = [&](const std::string& secret) {
    return "connect: " + std::string(wrapper) + make_uri(secret) + std::string(wrapper) + ": failed";
  };
  // A password that also occurs elsewhere, or beside the "***" put in its
  // place, cannot be looked for.
  if (password.size() < 3 || make_message("").find(password) != std::string::npos ||
      make_message("***").find(password) != std::string::npos) {
    return;
  }
  const std::string uri = make_uri(password);
  for (const std::string& text : {uri, make_message(password)}) {
    const std::string redacted = RedactPasswords(text);
    FUZZ_CHECK(redacted.find(password) == std::string::npos, "password '%s' survives in '%s'",
               password.c_str(), redacted.c_str());
  }
  const std::string stripped = WithoutPassword(uri);
  FUZZ_CHECK(stripped == std::string(scheme) + "://" + user + "@localhost" + rest,
             "WithoutPassword('%s') = '%s'", uri.c_str(), stripped.c_str());
  Result<EndpointSpec> spec = ClassifyEndpoint({uri}, Role::kSource);
  FUZZ_CHECK(spec.ok() && spec->kind == EndpointKind::kNbdUri, "not a URI: %s", uri.c_str());
  const std::string display = DisplayName(*spec);
  FUZZ_CHECK(display.find(password) == std::string::npos, "password '%s' displayed in '%s'",
             password.c_str(), display.c_str());
}

void CheckUriTls(std::string_view input) {
  // "scheme:" from a short list, so most inputs reach the query parsing.
  static constexpr std::string_view kSchemes[] = {"nbd://", "nbds://", "nbds+unix://",
                                                  "nbds+vsock://", "nbd+unix://", "nbds:"};
  if (input.empty()) return;
  const std::string uri =
      std::string(kSchemes[static_cast<uint8_t>(input[0]) % 6]) + std::string(input.substr(1));
  Result<UriTls> tls = ParseUriTls(uri);
  if (!tls.ok()) {
    FUZZ_CHECK(!tls.status().message().empty(), "empty message");
    return;
  }
  FUZZ_CHECK(tls->tls == uri.starts_with("nbds"), "tls=%d for %s", tls->tls, uri.c_str());
  FUZZ_CHECK(tls->has_host == (uri.starts_with("nbd:") || uri.starts_with("nbds:")),
             "has_host=%d for %s", tls->has_host, uri.c_str());
  FUZZ_CHECK(tls->tls || (!tls->psk_file && !tls->certificates && !tls->verify_peer),
             "TLS settings accepted on a plain URI: %s", uri.c_str());
  FUZZ_CHECK(tls->verify_peer != true || (tls->has_host && !tls->psk_file),
             "a peer check libnbd cannot make accepted: %s", uri.c_str());
  FUZZ_CHECK(tls->host.find_first_of("/?#@") == std::string::npos, "host '%s' from %s",
             tls->host.c_str(), uri.c_str());
  const std::string explained = ExplainConnectFailure(*tls, uri);
  FUZZ_CHECK(explained.find(uri) != std::string::npos, "libnbd's message dropped");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      const std::vector<std::string> words = SplitWords(input);
      CheckClassify(words, Role::kSource);
      CheckClassify(words, Role::kDestination);
      break;
    }
    case 1:
      CheckPassword(input);
      break;
    case 3:
      CheckUriTls(input);
      break;
    default: {
      const std::string once = RedactPasswords(std::string(input));
      FUZZ_CHECK(RedactPasswords(once) == once, "redacting twice changes '%s'", once.c_str());
    }
  }
  return 0;
}
