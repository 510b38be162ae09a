#include "job/format_hint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/shell_word.h"
#include "base/unique_fd.h"

namespace nbdcopy {

namespace {

// A magic number: these bytes at this offset (qemu's block drivers probe
// the same ones).
struct Magic {
  std::string_view format;
  size_t offset;
  std::string_view bytes;
};

using namespace std::string_view_literals;

constexpr Magic kMagics[] = {
    {"qcow2", 0, "QFI\xfb"sv},               // qcow2 and qcow (version 1): told apart below
    {"vmdk", 0, "KDMV"sv},                   // VMDK 4 sparse extent
    {"vmdk", 0, "COWD"sv},                   // VMDK 3 (ESX) sparse extent
    {"vmdk", 0, "# Disk DescriptorFile"sv},  // the text descriptor of a vmdk
    {"vhdx", 0, "vhdxfile"sv},
    {"vdi", 0x40, "\x7f\x10\xda\xbe"sv},  // 0xbeda107f, little-endian
    {"vpc", 0, "conectix"sv},             // the footer's copy at 0 (dynamic VHD)
    {"qed", 0, "QED\0"sv},
};

bool HasAt(std::span<const std::byte> head, size_t offset, std::string_view bytes) {
  return head.size() >= offset + bytes.size() &&
         std::memcmp(head.data() + offset, bytes.data(), bytes.size()) == 0;
}

}  // namespace

std::optional<std::string_view> DiskImageFormat(std::span<const std::byte> head) {
  for (const Magic& magic : kMagics) {
    if (!HasAt(head, magic.offset, magic.bytes)) continue;
    // qcow's version, big-endian at offset 4: 1 is the original qcow.
    if (magic.format == "qcow2" && HasAt(head, 4, "\0\0\0\1"sv)) return "qcow";
    return magic.format;
  }
  return std::nullopt;
}

std::string FormatHintLine(std::string_view format, const std::string& source_path,
                           const std::string& destination) {
  const std::string source = ShellWord(source_path);
  const std::string name(format);
  return "nbdcopy: hint: " + source + " is a " + name +
         " image, copied byte for byte as a file; to copy the disk inside it instead: "
         "nbdcopy -- [ qemu-nbd -r -f " +
         name + " " + source + " ] " + destination;
}

std::optional<std::string> FormatHint(const EndpointSpec& source, const EndpointSpec& destination) {
  if (source.kind != EndpointKind::kLocalPath) return std::nullopt;
  // Non-blocking: a FIFO is never waited for (it is no regular file).
  UniqueFd fd(::open(source.text.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  struct stat info;
  if (!fd.valid() || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  std::byte head[kImageHeadSize];
  ssize_t got;
  do {
    got = ::pread(fd.get(), head, sizeof head, 0);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return std::nullopt;
  std::optional<std::string_view> format =
      DiskImageFormat(std::span<const std::byte>(head, static_cast<size_t>(got)));
  if (!format) return std::nullopt;
  const std::string shown = DisplayName(destination);
  return FormatHintLine(*format, source.text,
                        destination.kind == EndpointKind::kCommand ? shown : ShellWord(shown));
}

}  // namespace nbdcopy
