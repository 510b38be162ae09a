#include "endpoints/nbd/nbd_ssh.h"

#include <strings.h>

#include <string>
#include <vector>

namespace nbdcopy {

namespace {

// (libnbd reads parameter names in any case.)
[[maybe_unused]] bool Named(const std::string& name, const char* parameter) {
  return strcasecmp(name.c_str(), parameter) == 0;
}

// What nbd_connect_uri does beside connecting, for a libnbd that cannot.
[[maybe_unused]] int ApplyUriSettings(nbd_handle* h, const SshUri& ssh) {
  if (nbd_set_export_name(h, ssh.export_name.c_str()) == -1) return -1;
  if (ssh.tls && nbd_set_tls(h, LIBNBD_TLS_REQUIRE) == -1) return -1;
  for (const auto& [name, value] : ssh.parameters) {
    // (tls-verify-peer= is applied for every kind of URI: ApplyUriTls.)
    int result = 0;
    if (Named(name, "tls-psk-file")) result = nbd_set_tls_psk_file(h, value.c_str());
    if (Named(name, "tls-certificates")) result = nbd_set_tls_certificates(h, value.c_str());
#ifdef LIBNBD_HAVE_NBD_SET_TLS_HOSTNAME  // (1.22; older ones ignore it in any URI)
    if (Named(name, "tls-hostname")) result = nbd_set_tls_hostname(h, value.c_str());
#endif
    if (result == -1) return -1;
  }
  if (!ssh.tls_user.empty() && nbd_set_tls_username(h, ssh.tls_user.c_str()) == -1) return -1;
  return 0;
}

}  // namespace

int StartSshConnecting(nbd_handle* h, const SshUri& ssh) {
#ifdef LIBNBD_ALLOW_TRANSPORT_SSH
  return nbd_aio_connect_uri(h, LibnbdSshUri(ssh).c_str());
#else
  if (ApplyUriSettings(h, ssh) == -1) return -1;
  std::vector<std::string> words = SshCommand(ssh);
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  return nbd_aio_connect_command(h, argv.data());
#endif
}

}  // namespace nbdcopy
