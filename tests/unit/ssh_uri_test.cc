#include "endpoints/ssh_uri.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nbdcopy {
namespace {

using Words = std::vector<std::string>;

SshUri ParseOk(const std::string& uri) {
  Result<SshUri> ssh = ParseSshUri(uri);
  EXPECT_TRUE(ssh.ok()) << uri << ": " << ssh.status().message();
  return ssh.ok() ? *ssh : SshUri();
}

std::string ParseError(const std::string& uri) {
  Result<SshUri> ssh = ParseSshUri(uri);
  EXPECT_FALSE(ssh.ok()) << uri;
  return ssh.ok() ? std::string("(parsed)") : ssh.status().message();
}

TEST(SshUriTest, SchemesAndDefaults) {
  EXPECT_TRUE(IsSshUri("nbd+ssh://host/"));
  EXPECT_TRUE(IsSshUri("nbds+ssh://host/"));
  EXPECT_FALSE(IsSshUri("nbd+unix:///?socket=/s"));
  SshUri ssh = ParseOk("nbd+ssh://server");
  EXPECT_FALSE(ssh.tls);
  EXPECT_EQ(ssh.host, "server");
  EXPECT_EQ(ssh.port, 22u);
  EXPECT_EQ(ssh.export_name, "");
  EXPECT_FALSE(ssh.socket);
  EXPECT_EQ(SshCommand(ssh), (Words{"ssh", "-p", "22", "server", "nc", "localhost", "10809"}));
  EXPECT_TRUE(ParseOk("nbds+ssh://server:2222/").tls);
}

TEST(SshUriTest, EveryPartRead) {
  SshUri ssh = ParseOk(
      "nbds+ssh://alice:secret@host.example:2222/disk%20one?socket=/run/nbd.sock"
      "&tls-psk-file=/k%2Bpsk#frag");
  EXPECT_TRUE(ssh.tls);
  EXPECT_EQ(ssh.tls_user, "alice") << "the password is dropped";
  EXPECT_EQ(ssh.host, "host.example");
  EXPECT_EQ(ssh.port, 2222u);
  EXPECT_EQ(ssh.export_name, "disk one");
  ASSERT_TRUE(ssh.socket);
  EXPECT_EQ(*ssh.socket, "/run/nbd.sock");
  ASSERT_EQ(ssh.parameters.size(), 1u);
  EXPECT_EQ(ssh.parameters[0].first, "tls-psk-file");
  EXPECT_EQ(ssh.parameters[0].second, "/k+psk");
  // libnbd 1.22's command line, word for word; the user is not ssh's.
  EXPECT_EQ(SshCommand(ssh),
            (Words{"ssh", "-p", "2222", "host.example", "nc", "-U", "/run/nbd.sock"}));
}

TEST(SshUriTest, SocketQuotedForTheRemoteShell) {
  SshUri ssh = ParseOk("nbd+ssh://h/?socket=/tmp/a%20b;touch%20x%27$(id)");
  // (';' separates parameters, as in libnbd: "touch x'$(id)" is another.)
  EXPECT_EQ(*ssh.socket, "/tmp/a b");
  ssh = ParseOk("nbd+ssh://h/?socket=/tmp/a%20b%3Btouch%20x%27%24(id)");
  EXPECT_EQ(*ssh.socket, "/tmp/a b;touch x'$(id)");
  EXPECT_EQ(SshCommand(ssh).back(), "'/tmp/a b;touch x'\\''$(id)'");
  EXPECT_EQ(ParseOk("nbd+ssh://h/?SOCKET=/a&socket=/b").socket, "/b") << "the last one, any case";
}

TEST(SshUriTest, OptionsAndShellWordsRefused) {
  std::string message = ParseError("nbd+ssh://-oProxyCommand=touch%20x/");
  EXPECT_NE(message.find("\"-oProxyCommand=touch x\" starts with '-'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("option"), std::string::npos) << message;
  message = ParseError("nbd+ssh://%2DoProxyCommand=x/");
  EXPECT_NE(message.find("starts with '-'"), std::string::npos) << "decoded first: " << message;
  message = ParseError("nbd+ssh://-oProxyCommand=x@host/");
  EXPECT_NE(message.find("the user \"-oProxyCommand=x\" starts with '-'"), std::string::npos)
      << message;
  message = ParseError("nbd+ssh://h%24(id)/");
  EXPECT_NE(message.find("\"h$(id)\" is not a host name"), std::string::npos) << message;
  message = ParseError("nbd+ssh://a@b@host/");
  EXPECT_NE(message.find("more than one '@'"), std::string::npos) << message;
  message = ParseError("nbd+ssh:///?socket=/s");
  EXPECT_NE(message.find("no ssh host"), std::string::npos) << message;
  for (const char* port : {"-1", "x", "0", "65536", "22x", "99999999999"}) {
    message = ParseError(std::string("nbd+ssh://h:") + port + "/");
    EXPECT_NE(message.find("port \"" + std::string(port) + "\" is not a number"), std::string::npos)
        << message;
  }
  EXPECT_NE(ParseError("nbd+ssh://h/a%00b").find("NUL"), std::string::npos);
  EXPECT_NE(ParseError("nbd+ssh://h/?socket=").find("socket= is empty"), std::string::npos);
  EXPECT_NE(ParseError("nbd+ssh:h").find("nbd+ssh://HOST"), std::string::npos);
}

TEST(SshUriTest, HostsAccepted) {
  for (const char* host : {"localhost", "127.0.0.1", "my_host-1.example", "[::1]", "[fe80::1]"}) {
    SshUri ssh = ParseOk(std::string("nbd+ssh://") + host + ":2200/e");
    EXPECT_EQ(ssh.host, host);
    EXPECT_EQ(ssh.port, 2200u);
  }
  EXPECT_EQ(ParseOk("nbd+ssh://h:/").port, 22u) << "an empty port is the default";
  // The export name goes over NBD, never through a shell: anything goes.
  EXPECT_EQ(ParseOk("nbd+ssh://h/$(touch%20x);`id`").export_name, "$(touch x);`id`");
}

TEST(SshUriTest, LibnbdUriCarriesTheSameParts) {
  SshUri ssh =
      ParseOk("nbds+ssh://al%20ice:pw@h:2222/d%26x/y?socket=/a%20b&tls-psk-file=/k&x=1%3B2");
  EXPECT_EQ(LibnbdSshUri(ssh),
            "nbds+ssh://al%20ice@h:2222/d%26x/y?socket=%27%2Fa%20b%27&tls-psk-file=%2Fk&x=1%3B2");
  // Read back, it is the same connection, the socket quoted once.
  SshUri again = ParseOk(LibnbdSshUri(ssh));
  EXPECT_EQ(again.tls_user, ssh.tls_user);
  EXPECT_EQ(again.host, ssh.host);
  EXPECT_EQ(again.port, ssh.port);
  EXPECT_EQ(again.export_name, ssh.export_name);
  EXPECT_EQ(*again.socket, "'/a b'");
  EXPECT_EQ(again.parameters, ssh.parameters);
  EXPECT_EQ(LibnbdSshUri(ParseOk("nbd+ssh://h")), "nbd+ssh://h:22/");
}

}  // namespace
}  // namespace nbdcopy
