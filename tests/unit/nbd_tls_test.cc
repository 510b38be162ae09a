#include "endpoints/nbd/nbd_tls.h"

#include <gtest/gtest.h>

#include <string>

namespace nbdcopy {
namespace {

UriTls ParseOk(const std::string& uri) {
  Result<UriTls> tls = ParseUriTls(uri);
  EXPECT_TRUE(tls.ok()) << uri << ": " << tls.status().message();
  return tls.ok() ? *tls : UriTls();
}

std::string ParseError(const std::string& uri) {
  Result<UriTls> tls = ParseUriTls(uri);
  EXPECT_FALSE(tls.ok()) << uri;
  return tls.ok() ? std::string("(parsed)") : tls.status().message();
}

TEST(NbdTlsTest, SchemesSayTlsAndWhetherThereIsAHost) {
  UriTls plain = ParseOk("nbd://example.com:10809/disk");
  EXPECT_FALSE(plain.tls);
  EXPECT_TRUE(plain.has_host);
  EXPECT_EQ(plain.host, "example.com");
  UriTls tcp = ParseOk("nbds://alice:pw@[::1]:10809/disk");
  EXPECT_TRUE(tcp.tls);
  EXPECT_EQ(tcp.host, "[::1]");
  UriTls unix_socket = ParseOk("nbds+unix:///?socket=/tmp/s");
  EXPECT_TRUE(unix_socket.tls);
  EXPECT_FALSE(unix_socket.has_host);
  EXPECT_FALSE(ParseOk("nbds+vsock://2").has_host);
}

TEST(NbdTlsTest, QueryParametersAreDecodedAndTheLastWins) {
  UriTls tls = ParseOk(
      "nbds://h/?tls-certificates=/a&tls-certificates=/my%20certs&tls-verify-peer=Off#frag");
  EXPECT_EQ(tls.certificates, "/my certs");
  EXPECT_EQ(tls.verify_peer, false);
  EXPECT_FALSE(tls.psk_file.has_value());
  EXPECT_EQ(ParseOk("nbds+unix://alice@/?socket=/s&tls-psk-file=keys.psk").psk_file, "keys.psk");
  for (const char* yes : {"true", "1", "yes", "ON"}) {
    EXPECT_EQ(ParseOk(std::string("nbds://h/?tls-verify-peer=") + yes).verify_peer, true) << yes;
  }
}

TEST(NbdTlsTest, SettingsThatCannotApplyAreRefused) {
  EXPECT_EQ(ParseError("nbds://h/?tls-verify-peer=maybe"),
            "tls-verify-peer=maybe: expected true or false");
  EXPECT_EQ(ParseError("nbd+unix:///?socket=/s&tls-psk-file=k"),
            "TLS parameters need an nbds:// URI (nbds:, nbds+unix:, nbds+vsock:)");
  EXPECT_NE(ParseError("nbds+unix:///?socket=/s&tls-verify-peer=true").find("has none"),
            std::string::npos);
  EXPECT_NE(ParseError("nbds://h/?tls-psk-file=k&tls-verify-peer=1").find("PSK"),
            std::string::npos);
  // Turning the check off is always possible.
  EXPECT_EQ(ParseOk("nbds+unix:///?socket=/s&tls-verify-peer=false").verify_peer, false);
}

TEST(NbdTlsTest, MissingCaCertificateIsAnError) {
  UriTls tls = ParseOk("nbds://h/?tls-certificates=/nonexistent");
  Status status = CheckTlsFiles(tls);
  EXPECT_EQ(status.message(),
            "tls-certificates=/nonexistent: cannot read /nonexistent/ca-cert.pem: "
            "No such file or directory");
  EXPECT_TRUE(CheckTlsFiles(ParseOk("nbds://h/")).ok());
}

TEST(NbdTlsTest, TlsFailuresAreExplained) {
  UriTls certificates = ParseOk("nbds://server.example/?tls-certificates=/pki");
  EXPECT_EQ(ExplainConnectFailure(certificates,
                                  "nbd_connect_uri: gnutls_handshake: Error in the certificate "
                                  "verification. (15/1)"),
            "TLS: the server's certificate is not trusted: it is not signed by the CA in "
            "tls-certificates=/pki, or not issued for server.example (nbd_connect_uri: "
            "gnutls_handshake: Error in the certificate verification. (15/1))");
  EXPECT_EQ(ExplainConnectFailure(ParseOk("nbd://h/"),
                                  "nbd_connect_uri: handshake: server requires TLS encryption "
                                  "first: Operation not supported"),
            "the server requires TLS: use an nbds:// URI with tls-psk-file= or "
            "tls-certificates= (nbd_connect_uri: handshake: server requires TLS encryption "
            "first: Operation not supported)");
  EXPECT_EQ(ExplainConnectFailure(ParseOk("nbd://h/"), "connect: Connection refused"),
            "connect: Connection refused");
}

// What the client sees when the server hangs up mid-handshake is the same
// for a key the server does not have and for a connection cut just then.
TEST(NbdTlsTest, AHandshakeTheServerEndedIsAKeyOrACut) {
  UriTls psk = ParseOk("nbds://alice@h/?tls-psk-file=/k.psk");
  const std::string ended =
      "nbd_aio_notify_read: gnutls_handshake: The TLS connection was non-properly terminated. "
      "(-1/1)";
  EXPECT_EQ(ExplainConnectFailure(psk, ended),
            "TLS failed: the server hung up during the handshake: does the server have the same "
            "key for this user as /k.psk? (or the connection was cut just then) (" +
                ended + ")");
  // Once the key worked (a later connection), only the cut is left.
  EXPECT_EQ(ExplainConnectFailure(psk, ended, true), ended);
  const std::string decrypt = "nbd_connect_uri: gnutls_handshake: Decryption has failed. (-24/1)";
  EXPECT_EQ(
      ExplainConnectFailure(psk, decrypt),
      "TLS failed: does the server have the same key for this user as /k.psk? (" + decrypt + ")");
}

// A server silent in the TLS handshake lacks nothing: no guess at the key.
TEST(NbdTlsTest, ASilentHandshakeIsNoKeyProblem) {
  UriTls psk = ParseOk("nbds://alice@h/?tls-psk-file=/k.psk");
  const std::string silent =
      "nbd_aio_notify_read: gnutls_handshake: The operation timed out (-1/1)";
  EXPECT_EQ(ExplainConnectFailure(psk, silent), silent);
}

}  // namespace
}  // namespace nbdcopy
