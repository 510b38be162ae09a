// The hint for a file source that is another disk-image format (qcow2,
// vmdk, ...): it is copied byte for byte, as always (scripts copy image
// files on purpose), and one line on stderr says so and how to copy the
// disk it holds instead. The hint never changes what is copied or the exit
// status, and is printed before the first progress frame.
// Thread safety: functions of values, and one read of the source's head.
#ifndef NBDCOPY_JOB_FORMAT_HINT_H_
#define NBDCOPY_JOB_FORMAT_HINT_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "endpoints/endpoint_spec.h"

namespace nbdcopy {

// How many of a file's first bytes DiskImageFormat needs.
inline constexpr size_t kImageHeadSize = 512;

// The qemu format name ("qcow2", "qcow", "vmdk", "vhdx", "vdi", "vpc",
// "qed") of an image whose first bytes are `head`, by its magic number;
// nullopt for anything else (raw data, or fewer bytes than the magic).
// A fixed vpc image (its only footer at the end) is not recognised.
std::optional<std::string_view> DiskImageFormat(std::span<const std::byte> head);

// "nbdcopy: hint: SOURCE is a FORMAT image, ..." (one line, no newline):
// the words of the hint, with the command that copies the disk inside.
std::string FormatHintLine(std::string_view format, const std::string& source_path,
                           const std::string& destination);

// The hint for this copy, when the source is a regular file holding
// another image format; nullopt otherwise (and when the file cannot be
// read: the copy will say why).
std::optional<std::string> FormatHint(const EndpointSpec& source, const EndpointSpec& destination);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_FORMAT_HINT_H_
