#include "endpoints/endpoint_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nbdcopy {
namespace {

using Words = std::vector<std::string>;

EndpointSpec ClassifyOk(const Words& words, Role role) {
  Result<EndpointSpec> spec = ClassifyEndpoint(words, role);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? *spec : EndpointSpec();
}

std::string ClassifyError(const Words& words, Role role) {
  Result<EndpointSpec> spec = ClassifyEndpoint(words, role);
  EXPECT_FALSE(spec.ok());
  return spec.ok() ? std::string("(classified)") : spec.status().message();
}

TEST(EndpointSpecTest, StdioBothWays) {
  for (Role role : {Role::kSource, Role::kDestination}) {
    EndpointSpec spec = ClassifyOk({"-"}, role);
    EXPECT_EQ(spec.kind, EndpointKind::kStdio);
    EXPECT_EQ(spec.text, "-");
    EXPECT_TRUE(spec.argv.empty());
    EXPECT_EQ(DisplayName(spec), "-");
  }
}

TEST(EndpointSpecTest, NullOnlyAsDestination) {
  EndpointSpec spec = ClassifyOk({"null:"}, Role::kDestination);
  EXPECT_EQ(spec.kind, EndpointKind::kNull);
  EXPECT_EQ(spec.text, "null:");
  EXPECT_EQ(DisplayName(spec), "null:");

  std::string message = ClassifyError({"null:"}, Role::kSource);
  EXPECT_NE(message.find("null:"), std::string::npos) << message;
  EXPECT_NE(message.find("destination"), std::string::npos) << message;
}

TEST(EndpointSpecTest, EveryNbdUriScheme) {
  const Words uris = {
      "nbd://example.com/export",
      "nbd://example.com:10810",
      "nbds://example.com/export",
      "nbd+unix:///export?socket=/tmp/nbd.sock",
      "nbds+unix:///?socket=/tmp/nbd.sock",
      "nbd+vsock://2:10809/export",
      "nbds+vsock://2",
      "nbd+ssh://host/?socket=/run/nbd.sock",
      "nbds+ssh://user@host:2222/export",
      "nbd:",  // malformed, but a URI: libnbd will say what is wrong with it
  };
  for (const std::string& uri : uris) {
    EXPECT_TRUE(LooksLikeNbdUri(uri)) << uri;
    for (Role role : {Role::kSource, Role::kDestination}) {
      EndpointSpec spec = ClassifyOk({uri}, role);
      EXPECT_EQ(spec.kind, EndpointKind::kNbdUri) << uri;
      EXPECT_EQ(spec.text, uri);
      EXPECT_EQ(DisplayName(spec), uri) << "no password to hide";
    }
  }
}

TEST(EndpointSpecTest, SshUriReadAndCheckedUpFront) {
  EndpointSpec spec = ClassifyOk({"nbd+ssh://u:pw@host/e?socket=/s"}, Role::kSource);
  EXPECT_EQ(spec.kind, EndpointKind::kNbdUri);
  ASSERT_TRUE(spec.ssh);
  EXPECT_EQ(spec.ssh->host, "host");
  EXPECT_EQ(DisplayName(spec), "nbd+ssh://u:***@host/e?socket=/s");
  EXPECT_FALSE(ClassifyOk({"nbd+unix:///?socket=/s"}, Role::kSource).ssh);
  // Refused with the URI (password hidden) and why, before anything runs.
  std::string message = ClassifyError({"nbd+ssh://u:pw@-oProxyCommand=x/"}, Role::kDestination);
  EXPECT_EQ(message.rfind("nbd+ssh://u:***@-oProxyCommand=x/: the ssh host", 0), 0u) << message;
}

TEST(EndpointSpecTest, NotNbdUris) {
  // Other schemes, case differences and near misses are local paths.
  for (const std::string text :
       {"http://example.com/disk", "NBD://example.com", "nbdx://host", "nbd", "nbd+tcp://host",
        "./nbd://host", "/dev/nbd0", "file:disk.img", "null:x", "null", "--"}) {
    EXPECT_FALSE(LooksLikeNbdUri(text)) << text;
    EndpointSpec spec = ClassifyOk({text}, Role::kSource);
    EXPECT_EQ(spec.kind, EndpointKind::kLocalPath) << text;
    EXPECT_EQ(spec.text, text);
  }
}

TEST(EndpointSpecTest, RelativePathStartingWithNbdIsAUri) {
  // As upstream: anything starting "nbd:" is a URI; write "./nbd:x" for a file.
  EXPECT_EQ(ClassifyOk({"nbd:x"}, Role::kSource).kind, EndpointKind::kNbdUri);
  EXPECT_EQ(ClassifyOk({"./nbd:x"}, Role::kSource).kind, EndpointKind::kLocalPath);
}

TEST(EndpointSpecTest, LocalPaths) {
  for (const std::string path :
       {"disk.img", "/dev/sda", "./relative/path", "-x", "]", "with space.img", "/tmp/a:b"}) {
    for (Role role : {Role::kSource, Role::kDestination}) {
      EndpointSpec spec = ClassifyOk({path}, role);
      EXPECT_EQ(spec.kind, EndpointKind::kLocalPath) << path;
      EXPECT_EQ(spec.text, path);
      EXPECT_TRUE(spec.argv.empty());
      EXPECT_EQ(DisplayName(spec), path);
    }
  }
}

TEST(EndpointSpecTest, Command) {
  for (Role role : {Role::kSource, Role::kDestination}) {
    EndpointSpec spec = ClassifyOk({"[", "qemu-nbd", "-f", "qcow2", "x", "]"}, role);
    EXPECT_EQ(spec.kind, EndpointKind::kCommand);
    EXPECT_EQ(spec.argv, (Words{"qemu-nbd", "-f", "qcow2", "x"}));
    EXPECT_EQ(DisplayName(spec), "[ qemu-nbd -f qcow2 x ]");
    EXPECT_EQ(spec.text, "[ qemu-nbd -f qcow2 x ]");
  }
  EndpointSpec single = ClassifyOk({"[", "nbdkit", "]"}, Role::kSource);
  EXPECT_EQ(single.argv, Words{"nbdkit"});
  EXPECT_EQ(DisplayName(single), "[ nbdkit ]");
}

TEST(EndpointSpecTest, MalformedBrackets) {
  const std::vector<Words> bad = {
      {"[", "]"},                 // no command
      {"[", "cmd"},               // unterminated
      {"[", "cmd", "arg"},        // unterminated, longer
      {"[", "cmd", "]", "more"},  // junk after "]"
  };
  for (const Words& words : bad) {
    for (Role role : {Role::kSource, Role::kDestination}) {
      std::string message = ClassifyError(words, role);
      EXPECT_NE(message.find("[ CMD ARGS ... ]"), std::string::npos) << message;
      EXPECT_NE(message.find(role == Role::kSource ? "source" : "destination"), std::string::npos)
          << message;
    }
  }
  // Several words without brackets are not one operand.
  EXPECT_EQ(ClassifyError({"a", "b"}, Role::kSource), "source: expected one operand");
}

TEST(EndpointSpecTest, Empty) {
  EXPECT_EQ(ClassifyError({}, Role::kSource), "missing source");
  EXPECT_EQ(ClassifyError({}, Role::kDestination), "missing destination");
  EXPECT_EQ(ClassifyError({""}, Role::kSource), "source: empty file name");
  EXPECT_EQ(ClassifyError({""}, Role::kDestination), "destination: empty file name");
}

TEST(EndpointSpecTest, DisplayNameHidesPasswords) {
  struct Case {
    std::string uri;
    std::string shown;
  };
  const std::vector<Case> cases = {
      {"nbd://user:secret@host/", "nbd://user:***@host/"},
      {"nbds://user:secret@host:10809/export", "nbds://user:***@host:10809/export"},
      {"nbd://user:secret@host", "nbd://user:***@host"},
      {"nbds+unix://alice:secret@/?socket=/tmp/s", "nbds+unix://alice:***@/?socket=/tmp/s"},
      // No password: unchanged.
      {"nbd://user@host/", "nbd://user@host/"},
      {"nbd://host:10809/", "nbd://host:10809/"},
      // An "@" in the path or query is not user information.
      {"nbd://host/exp:ort@x", "nbd://host/exp:ort@x"},
      {"nbd+unix:///?socket=/tmp/a:b@c", "nbd+unix:///?socket=/tmp/a:b@c"},
  };
  for (const Case& c : cases) {
    EndpointSpec spec = ClassifyOk({c.uri}, Role::kSource);
    std::string shown = DisplayName(spec);
    EXPECT_EQ(shown, c.shown) << c.uri;
    if (c.uri.find("secret") != std::string::npos) {
      EXPECT_EQ(shown.find("secret"), std::string::npos) << shown;
    }
  }
}

}  // namespace
}  // namespace nbdcopy

namespace nbdcopy {
namespace {

TEST(EndpointSpecRedactPasswordsTest, HidesEveryPasswordInFreeText) {
  EXPECT_EQ(RedactPasswords("uri=\"nbd://alice:s3cret@host/x\" and nbds://bob:pw@h2:10809/"),
            "uri=\"nbd://alice:***@host/x\" and nbds://bob:***@h2:10809/");
  EXPECT_EQ(RedactPasswords("nbd+unix://alice@/?socket=/tmp/s"),
            "nbd+unix://alice@/?socket=/tmp/s");
  EXPECT_EQ(RedactPasswords("no uri here: a@b"), "no uri here: a@b");
}

TEST(EndpointSpecWithoutPasswordTest, KeepsTheUserDropsThePassword) {
  EXPECT_EQ(WithoutPassword("nbds+unix://alice:s3cret@/?socket=/s&tls-psk-file=k"),
            "nbds+unix://alice@/?socket=/s&tls-psk-file=k");
  EXPECT_EQ(WithoutPassword("nbd://:pw@host:10809/e"), "nbd://@host:10809/e");
  EXPECT_EQ(WithoutPassword("nbd://alice@host/"), "nbd://alice@host/");
  EXPECT_EQ(WithoutPassword("nbd://host:10809/"), "nbd://host:10809/");
}

}  // namespace
}  // namespace nbdcopy
