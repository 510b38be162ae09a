// What a run does with its source's digests once the copy is done: the
// plain checksum checked against the one expected (--checksum=ALGO:HEX),
// and the lines written: --blkhash's as libnbd's nbdcopy prints it
// ("HEX"), then --checksum's as sha256sum prints it ("HEX  NAME"), each to
// stdout or to its file.
// Thread safety: functions.
#ifndef NBDCOPY_JOB_DIGEST_OUTPUT_H_
#define NBDCOPY_JOB_DIGEST_OUTPUT_H_

#include <string>

#include "base/file_system.h"
#include "endpoints/endpoint_spec.h"
#include "job/report.h"
#include "nbdcopy/checksum_spec.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

// "HEX  NAME", the line sha256sum (md5sum, ...) prints and `sha256sum -c`
// reads; a name with a backslash or a line break is escaped as they escape
// it (the line then starts with a backslash).
std::string ChecksumLine(const std::string& digest, const std::string& name);

// The name for the line: the destination when it names a regular file
// (`sha256sum -c` then checks the copy), else the source as messages show
// it. REQUIRES the destination is opened (a new file exists).
std::string ChecksumName(const EndpointSpec& source, const EndpointSpec& destination);

// A Status::DigestMismatch naming the expected and the actual digest when
// spec expects another one than `actual`; OK otherwise. source: the source
// as messages show it.
Status CheckExpectedChecksum(const ChecksumSpec& spec, const std::string& actual,
                             const std::string& source);

// The digests in *report written where the options say (not with the JSON
// report on stdout, which carries them; not --checksum's on stdout when
// stdout is the data, where an expected digest was the check asked for).
[[nodiscard]] Status WriteDigests(const Options& options, const JobReport& report,
                                  FileSystem& files = RealFileSystem());

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_DIGEST_OUTPUT_H_
