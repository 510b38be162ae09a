#include "endpoints/ssh_uri.h"

#include <fmt/format.h>
#include <strings.h>

#include <charconv>
#include <string_view>

#include "base/percent_encoding.h"
#include "base/shell_word.h"

namespace nbdcopy {

namespace {

// The URI's parts before decoding.
struct RawParts {
  std::string_view scheme, userinfo, host, port, path, query;
  bool has_userinfo = false, has_port = false;
};

Result<RawParts> SplitUri(std::string_view uri) {
  RawParts raw;
  raw.scheme = uri.substr(0, uri.find(':'));
  if (uri.substr(raw.scheme.size(), 3) != "://") {
    return Status::Error(
        fmt::format("expected {}://HOST[:PORT]/[EXPORT][?socket=PATH]", raw.scheme));
  }
  std::string_view rest = uri.substr(raw.scheme.size() + 3);
  rest = rest.substr(0, rest.find('#'));
  if (size_t question = rest.find('?'); question != std::string_view::npos) {
    raw.query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  raw.path = rest.substr(authority.size());
  if (size_t at = authority.find('@'); at != std::string_view::npos) {
    raw.userinfo = authority.substr(0, at);
    raw.has_userinfo = true;
    authority.remove_prefix(at + 1);
    if (authority.find('@') != std::string_view::npos) {
      return Status::Error("more than one '@' in the authority (USER@HOST:PORT)");
    }
  }
  size_t host_end = 0;
  if (authority.starts_with('[')) {
    host_end = authority.find(']');
    if (host_end == std::string_view::npos) return Status::Error("an IPv6 address without its ']'");
    ++host_end;
  } else {
    host_end = std::min(authority.size(), authority.find(':'));
  }
  raw.host = authority.substr(0, host_end);
  std::string_view after_host = authority.substr(host_end);
  if (!after_host.empty() && after_host.front() != ':') {
    return Status::Error(fmt::format("\"{}\" after the host", after_host));
  }
  raw.has_port = !after_host.empty();
  if (raw.has_port) raw.port = after_host.substr(1);
  return raw;
}

// Whether ssh takes host for a host name and nothing else.
bool IsHostName(const std::string& host) {
  if (host.starts_with('[')) {
    return host.size() > 2 && host.ends_with(']') &&
           host.find_first_not_of("0123456789abcdefABCDEF:.", 1) == host.size() - 1;
  }
  return host.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
         std::string::npos;
}

Status CheckHostAndUser(const SshUri& ssh) {
  if (ssh.host.empty()) return Status::Error("no ssh host: nbd+ssh://HOST/ needs one");
  if (ssh.host.starts_with('-')) {
    return Status::Error(fmt::format(
        "the ssh host \"{}\" starts with '-': ssh would take it for an option", ssh.host));
  }
  if (!IsHostName(ssh.host)) {
    return Status::Error(
        fmt::format("the ssh host \"{}\" is not a host name (letters, digits, '.', '-', '_'; "
                    "or an IPv6 address in brackets)",
                    ssh.host));
  }
  if (ssh.tls_user.starts_with('-')) {
    return Status::Error(fmt::format(
        "the user \"{}\" starts with '-' (the user of an nbd+ssh URI is the TLS user name, "
        "never ssh's, but no part of the URI may look like an option)",
        ssh.tls_user));
  }
  return Status::Ok();
}

Result<unsigned> ParsePort(std::string_view text) {
  if (text.empty()) return 22u;  // "host:" is the default port, as in libnbd
  unsigned port = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
  // (from_chars takes digits only: no sign, no blank.)
  if (error != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) {
    return Status::Error(fmt::format("the ssh port \"{}\" is not a number from 1 to 65535", text));
  }
  return port;
}

// The query's name=value pairs ('&' or ';' between them), decoded: socket=
// taken out (the last one wins, its name in any case, as in libnbd).
Status ReadQuery(std::string_view query, SshUri* ssh) {
  while (!query.empty()) {
    std::string_view pair = query.substr(0, query.find_first_of("&;"));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.empty() || pair.starts_with('=')) continue;
    size_t equals = pair.find('=');
    std::string name = PercentDecode(pair.substr(0, equals));
    std::string value =
        equals == std::string_view::npos ? std::string() : PercentDecode(pair.substr(equals + 1));
    if (strcasecmp(name.c_str(), "socket") == 0) {
      if (value.empty()) return Status::Error("socket= is empty: give the remote socket's path");
      ssh->socket = value;
    } else {
      ssh->parameters.emplace_back(std::move(name), std::move(value));
    }
  }
  return Status::Ok();
}

bool HasNul(const SshUri& ssh) {
  auto nul = [](const std::string& text) { return text.find('\0') != std::string::npos; };
  bool found = nul(ssh.host) || nul(ssh.tls_user) || nul(ssh.export_name) ||
               (ssh.socket && nul(*ssh.socket));
  for (const auto& [name, value] : ssh.parameters) found = found || nul(name) || nul(value);
  return found;
}

}  // namespace

bool IsSshUri(const std::string& text) {
  return text.starts_with("nbd+ssh:") || text.starts_with("nbds+ssh:");
}

Result<SshUri> ParseSshUri(const std::string& uri) {
  Result<RawParts> raw = SplitUri(uri);
  if (!raw.ok()) return raw.status();
  SshUri ssh;
  ssh.tls = raw->scheme.starts_with("nbds");
  ssh.host = PercentDecode(raw->host);
  // "user:password": NBD has no passwords, libnbd would take both for the name.
  ssh.tls_user = PercentDecode(raw->userinfo.substr(0, raw->userinfo.find(':')));
  if (Status status = CheckHostAndUser(ssh); !status.ok()) return status;
  Result<unsigned> port = ParsePort(raw->port);
  if (!port.ok()) return port.status();
  ssh.port = *port;
  if (!raw->path.empty()) ssh.export_name = PercentDecode(raw->path.substr(1));
  if (Status status = ReadQuery(raw->query, &ssh); !status.ok()) return status;
  if (HasNul(ssh)) return Status::Error("%00 (a NUL byte) cannot be passed on");
  return ssh;
}

std::vector<std::string> SshCommand(const SshUri& ssh) {
  std::vector<std::string> argv = {"ssh", "-p", std::to_string(ssh.port), ssh.host, "nc"};
  if (ssh.socket) {
    argv.insert(argv.end(), {"-U", ShellWord(*ssh.socket)});
  } else {
    argv.insert(argv.end(), {"localhost", "10809"});
  }
  return argv;
}

std::string LibnbdSshUri(const SshUri& ssh) {
  std::string uri = ssh.tls ? "nbds+ssh://" : "nbd+ssh://";
  if (!ssh.tls_user.empty()) uri += PercentEncode(ssh.tls_user) + "@";
  uri += fmt::format("{}:{}/{}", ssh.host, ssh.port, PercentEncode(ssh.export_name, "/"));
  std::vector<std::string> pairs;
  // (libnbd hands the value to ssh as one word: quoted here, once.)
  if (ssh.socket) pairs.push_back("socket=" + PercentEncode(ShellWord(*ssh.socket)));
  for (const auto& [name, value] : ssh.parameters) {
    pairs.push_back(PercentEncode(name) + "=" + PercentEncode(value));
  }
  for (size_t i = 0; i < pairs.size(); ++i) uri += (i == 0 ? "?" : "&") + pairs[i];
  return uri;
}

}  // namespace nbdcopy
