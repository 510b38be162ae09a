#include "endpoints/nbd/nbd_tls.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string_view>

#include "base/percent_encoding.h"

namespace nbdcopy {

namespace {

std::optional<bool> ParseBool(std::string value) {
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "true" || value == "yes" || value == "on" || value == "1") return true;
  if (value == "false" || value == "no" || value == "off" || value == "0") return false;
  return std::nullopt;
}

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

Result<UriTls> ParseUriTls(const std::string& uri) {
  UriTls tls;
  std::string_view scheme = std::string_view(uri).substr(0, uri.find(':'));
  tls.tls = scheme.starts_with("nbds");
  tls.has_host = scheme == "nbd" || scheme == "nbds";
  if (tls.has_host && uri.compare(scheme.size(), 3, "://") == 0) {
    std::string_view authority = std::string_view(uri).substr(scheme.size() + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
      authority.remove_prefix(at + 1);
    }
    size_t end = authority.find(authority.starts_with('[') ? ']' : ':');
    if (end != std::string_view::npos && authority[end] == ']') ++end;  // keep "[::1]" whole
    tls.host = std::string(authority.substr(0, end));
  }

  std::string_view query = uri;
  size_t question = query.find('?');
  query = question == std::string_view::npos ? std::string_view() : query.substr(question + 1);
  query = query.substr(0, query.find('#'));
  std::optional<std::string> verify_text;
  while (!query.empty()) {
    std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    size_t equals = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, equals));
    std::string value =
        equals == std::string_view::npos ? std::string() : PercentDecode(pair.substr(equals + 1));
    if (key == "tls-psk-file") {
      tls.psk_file = value;
    } else if (key == "tls-certificates") {
      tls.certificates = value;
    } else if (key == "tls-verify-peer") {
      verify_text = value;
    }
  }
  if (verify_text) {
    tls.verify_peer = ParseBool(*verify_text);
    if (!tls.verify_peer) {
      return Status::Error("tls-verify-peer=" + *verify_text + ": expected true or false");
    }
  }
  if (!tls.tls && (tls.psk_file || tls.certificates || tls.verify_peer)) {
    return Status::Error("TLS parameters need an nbds:// URI (nbds:, nbds+unix:, nbds+vsock:)");
  }
  if (tls.verify_peer == true && tls.psk_file) {
    return Status::Error(
        "tls-verify-peer=true: a PSK has no certificate to verify "
        "(the key itself authenticates the server)");
  }
  if (tls.verify_peer == true && !tls.has_host) {
    return Status::Error(
        "tls-verify-peer=true: libnbd checks a certificate against a host name, "
        "and a Unix or vsock socket has none; use nbds://HOST:PORT or a PSK");
  }
  return tls;
}

Status CheckTlsFiles(const UriTls& tls) {
  if (tls.certificates && !tls.psk_file) {
    std::string ca = *tls.certificates + "/ca-cert.pem";
    if (access(ca.c_str(), R_OK) == -1) {
      return Status::FromErrno("tls-certificates=" + *tls.certificates + ": cannot read " + ca,
                               errno);
    }
  }
  return Status::Ok();
}

std::string ExplainConnectFailure(const UriTls& tls, const std::string& libnbd_message,
                                  bool credentials_worked) {
  std::string reading;
  if (Contains(libnbd_message, "server requires TLS")) {
    reading = "the server requires TLS: use an nbds:// URI with tls-psk-file= or tls-certificates=";
  } else if (Contains(libnbd_message, "server refused TLS")) {
    reading = "the server does not offer TLS, which an nbds:// URI requires";
  } else if (Contains(libnbd_message, "certificate verification")) {
    reading = "TLS: the server's certificate is not trusted: it is not signed by the CA in " +
              (tls.certificates ? "tls-certificates=" + *tls.certificates
                                : std::string("the system's trust store")) +
              ", or not issued for " + (tls.host.empty() ? std::string("this host") : tls.host);
  } else if (credentials_worked || Contains(libnbd_message, "timed out")) {
    // The same key or certificate worked, or the server fell silent: a
    // failure now is the connection's. (A reset is not so clear: a server
    // that wants a client certificate resets the connection too.)
  } else if (Contains(libnbd_message, "non-properly terminated") && tls.psk_file) {
    reading =
        "TLS failed: the server hung up during the handshake: does the server have the "
        "same key for this user as " +
        *tls.psk_file + "? (or the connection was cut just then)";
  } else if (Contains(libnbd_message, "gnutls_") && tls.psk_file) {
    reading =
        "TLS failed: does the server have the same key for this user as " + *tls.psk_file + "?";
  } else if (Contains(libnbd_message, "gnutls_")) {
    reading =
        "TLS failed: the server uses a PSK, or wants a client certificate it trusts "
        "(client-cert.pem and client-key.pem in tls-certificates=DIR)";
  }
  if (reading.empty()) return libnbd_message;
  return reading + " (" + libnbd_message + ")";
}

}  // namespace nbdcopy
