// DiskImageFormat against the first bytes of each format, as qemu-img
// 7.2 writes them (the magic numbers), and the hint's words.
#include "job/format_hint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nbdcopy {
namespace {

// kImageHeadSize bytes of zeroes with `magic` at `offset`.
std::vector<std::byte> Head(const std::string& magic, size_t offset = 0) {
  std::vector<std::byte> head(kImageHeadSize);
  for (size_t i = 0; i < magic.size(); ++i) head[offset + i] = std::byte(magic[i]);
  return head;
}

std::string Format(const std::vector<std::byte>& head) {
  return std::string(DiskImageFormat(head).value_or("(none)"));
}

TEST(FormatHintTest, Qcow2ByItsMagicAndVersion) {
  EXPECT_EQ(Format(Head(std::string("QFI\xfb\0\0\0\3", 8))), "qcow2");
  EXPECT_EQ(Format(Head(std::string("QFI\xfb\0\0\0\2", 8))), "qcow2");
  EXPECT_EQ(Format(Head(std::string("QFI\xfb\0\0\0\1", 8))), "qcow");
}

TEST(FormatHintTest, VmdkSparseExtentsAndTheTextDescriptor) {
  EXPECT_EQ(Format(Head("KDMV\1\0\0\0")), "vmdk");
  EXPECT_EQ(Format(Head("COWD")), "vmdk");
  EXPECT_EQ(Format(Head("# Disk DescriptorFile\nversion=1\n")), "vmdk");
  EXPECT_EQ(Format(Head("# Disk Descriptor")), "(none)");
}

TEST(FormatHintTest, Vhdx) { EXPECT_EQ(Format(Head("vhdxfile")), "vhdx"); }

TEST(FormatHintTest, VdiBySignatureAtOffset0x40) {
  std::vector<std::byte> head = Head("<<< QEMU VM Virtual Disk Image >>>\n");
  EXPECT_EQ(Format(head), "(none)");
  head = Head("\x7f\x10\xda\xbe", 0x40);
  EXPECT_EQ(Format(head), "vdi");
  EXPECT_EQ(Format(Head("\x7f\x10\xda\xbe")), "(none)");  // at 0: not the signature
}

TEST(FormatHintTest, VpcByTheFootersCopyAtTheStart) { EXPECT_EQ(Format(Head("conectix")), "vpc"); }

TEST(FormatHintTest, Qed) {
  EXPECT_EQ(Format(Head(std::string("QED\0", 4))), "qed");
  EXPECT_EQ(Format(Head("QEDX")), "(none)");
}

TEST(FormatHintTest, RawDataShortHeadsAndNearMissesAreNoFormat) {
  EXPECT_EQ(Format(Head("")), "(none)");
  EXPECT_EQ(Format(Head("\xeb\x63\x90")), "(none)");  // a boot sector
  EXPECT_EQ(Format(Head("QFI")), "(none)");
  EXPECT_EQ(Format(Head("vhdxfil")), "(none)");
  EXPECT_EQ(Format({}), "(none)");
  const std::string qcow2("QFI\xfb", 4);
  std::vector<std::byte> short_head(qcow2.size());
  for (size_t i = 0; i < qcow2.size(); ++i) short_head[i] = std::byte(qcow2[i]);
  EXPECT_EQ(Format(short_head), "qcow2");
  short_head.pop_back();
  EXPECT_EQ(Format(short_head), "(none)");
  // The vdi signature needs 0x44 bytes.
  std::vector<std::byte> vdi = Head("\x7f\x10\xda\xbe", 0x40);
  vdi.resize(0x43);
  EXPECT_EQ(Format(vdi), "(none)");
}

TEST(FormatHintTest, TheLineSaysWhatIsCopiedAndTheCommandForTheDiskInside) {
  EXPECT_EQ(FormatHintLine("qcow2", "disk.qcow2", "out.raw"),
            "nbdcopy: hint: disk.qcow2 is a qcow2 image, copied byte for byte as a file; to copy "
            "the disk inside it instead: nbdcopy -- [ qemu-nbd -r -f qcow2 disk.qcow2 ] out.raw");
  EXPECT_EQ(FormatHintLine("vdi", "my disk's.vdi", "'nbd://h/x?a&b'"),
            "nbdcopy: hint: 'my disk'\\''s.vdi' is a vdi image, copied byte for byte as a file; "
            "to copy the disk inside it instead: nbdcopy -- [ qemu-nbd -r -f vdi 'my "
            "disk'\\''s.vdi' ] 'nbd://h/x?a&b'");
}

TEST(FormatHintTest, OnlyALocalPathIsLookedAt) {
  const EndpointSpec destination{EndpointKind::kLocalPath, "out.raw", {}, {}};
  EXPECT_FALSE(FormatHint({EndpointKind::kNbdUri, "nbd://h/x", {}, {}}, destination));
  EXPECT_FALSE(FormatHint({EndpointKind::kStdio, "-", {}, {}}, destination));
  EXPECT_FALSE(FormatHint({EndpointKind::kLocalPath, "/nonexistent/x.qcow2", {}, {}}, destination));
  EXPECT_FALSE(FormatHint({EndpointKind::kLocalPath, "/dev/null", {}, {}}, destination));
}

}  // namespace
}  // namespace nbdcopy
