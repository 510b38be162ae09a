// What an operand names, decided from its words alone (no OS access):
// "-", "null:", an NBD URI, "[ CMD ARGS ... ]", or a local path (file,
// block device, or a FIFO/character device found when it is opened).
#ifndef NBDCOPY_ENDPOINT_SPEC_H_
#define NBDCOPY_ENDPOINT_SPEC_H_

#include <optional>
#include <string>
#include <vector>

#include "endpoints/ssh_uri.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

enum class EndpointKind { kStdio, kNull, kNbdUri, kCommand, kLocalPath };
enum class Role { kSource, kDestination };

struct EndpointSpec {
  EndpointKind kind = EndpointKind::kLocalPath;
  std::string text;               // the operand as typed (URI, path, "-", "null:")
  std::vector<std::string> argv;  // kCommand only: CMD ARGS without brackets
  std::optional<SshUri> ssh;      // an nbd+ssh:// or nbds+ssh:// URI (kNbdUri), read and checked
};

// True for nbd:, nbds:, nbd+unix:, nbds+unix:, nbd+vsock:, nbds+vsock:,
// nbd+ssh:, nbds+ssh: URIs.
bool LooksLikeNbdUri(const std::string& text);

// An ssh URI is read and checked here (ParseSshUri), so that one ssh would
// misread is refused before anything runs: "URI: why".
// REQUIRES words is one operand as produced by ParseCommandLine.
Result<EndpointSpec> ClassifyEndpoint(const std::vector<std::string>& words, Role role);

// Replaces the password of every "scheme://user:password@host" in text
// with "***".
std::string RedactPasswords(const std::string& text);

// The URI with the ":password" of its user information removed: NBD has no
// passwords, and libnbd would take "user:password" as the TLS user name and
// quote it in its messages.
std::string WithoutPassword(const std::string& uri);

// The operand for messages: URIs with any password removed, commands joined
// with spaces inside brackets.
std::string DisplayName(const EndpointSpec& spec);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENDPOINT_SPEC_H_
