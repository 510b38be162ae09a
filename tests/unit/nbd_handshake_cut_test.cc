#include "endpoints/nbd/nbd_handshake_cut.h"

#include <gtest/gtest.h>

namespace nbdcopy {
namespace {

TEST(NbdHandshakeCutTest, AnEndOfStreamOrAResetIsACut) {
  EXPECT_TRUE(IsHandshakeCut(true, "nbd_aio_notify_read: recv: server disconnected unexpectedly"));
  EXPECT_TRUE(IsHandshakeCut(true, "nbd_aio_notify_read: recv: Connection reset by peer"));
  EXPECT_TRUE(IsHandshakeCut(true, "nbd_aio_notify_write: send: Broken pipe"));
  EXPECT_TRUE(IsHandshakeCut(true, "the server closed the connection"));
  EXPECT_TRUE(
      IsHandshakeCut(true,
                     "nbd_aio_notify_read: gnutls_record_recv: The TLS connection was non-properly "
                     "terminated."));
  EXPECT_TRUE(IsHandshakeCut(true,
                             "nbd_aio_notify_read: gnutls_handshake: Error in the pull "
                             "function. (-1/1)"));
}

TEST(NbdHandshakeCutTest, AnEndOfStreamMetWithinTheConnectingCallIsACutToo) {
  EXPECT_TRUE(
      IsHandshakeCut(false, "nbd_aio_notify_write: recv: server disconnected unexpectedly"));
}

TEST(NbdHandshakeCutTest, SilenceIsACutOnlyOnceTheServerAccepted) {
  const std::string silence = "the server sent nothing for 2 seconds (see --timeout)";
  EXPECT_TRUE(IsHandshakeCut(true, silence));
  EXPECT_FALSE(IsHandshakeCut(false, silence));  // unreachable
}

TEST(NbdHandshakeCutTest, RefusedUnknownOrMissingIsNoCut) {
  EXPECT_FALSE(IsHandshakeCut(false,
                              "nbd_aio_connect_uri: connect: 127.0.0.1:1: could not "
                              "connect to remote host: Connection refused"));
  EXPECT_FALSE(IsHandshakeCut(false, "nbd_aio_connect_uri: connect: No such file or directory"));
  EXPECT_FALSE(IsHandshakeCut(false,
                              "nbd_aio_connect_uri: getaddrinfo: hostname \"x.invalid\" "
                              "port \"10809\": Name or service not known"));
}

// A RST after TCP's own handshake, before libnbd saw the connection open:
// connect() reports it (the soak's proxy reset a connection 18 bytes in).
TEST(NbdHandshakeCutTest, AResetMetByConnectIsACut) {
  EXPECT_TRUE(IsHandshakeCut(false,
                             "nbd_aio_connect_uri: connect: 127.0.0.1:41507: could not "
                             "connect to remote host: Connection reset by peer"));
}

// gnutls gave up on a silent server in its handshake (the soak: a proxy
// that fell silent 300 bytes into a TLS connection).
TEST(NbdHandshakeCutTest, SilenceInTheTlsHandshakeIsACut) {
  EXPECT_TRUE(IsHandshakeCut(
      true, "nbd_aio_notify_read: gnutls_handshake: The operation timed out (-1/1)"));
}

TEST(NbdHandshakeCutTest, TheServersAnswersAreNoCut) {
  EXPECT_FALSE(IsHandshakeCut(true,
                              "nbd_aio_notify_read: handshake: server did not send "
                              "expected NBD magic"));
  EXPECT_FALSE(
      IsHandshakeCut(true, "nbd_aio_notify_read: handshake: server policy prevents NBD_OPT_GO"));
  EXPECT_FALSE(IsHandshakeCut(true, "server refused TLS"));
  EXPECT_FALSE(IsHandshakeCut(true,
                              "nbd_aio_notify_read: gnutls_handshake: The TLS connection "
                              "was non-properly terminated. (-1/1)"));  // the key
}

}  // namespace
}  // namespace nbdcopy
