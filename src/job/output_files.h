// The files a job writes besides the destination: --blkhash-file,
// --checksum-file, --json=FILE (and --checkpoint=FILE, written by its own
// code). Each is refused before anything is opened when it is the source,
// the destination or another of them (the later write would destroy the
// earlier), when it is standard output while that carries the data, or
// when it cannot be written (a directory, a missing or read-only folder):
// a copy of hundreds of GiB must not end without its digest.
// Thread safety: functions; they only stat() and access() the paths.
#ifndef NBDCOPY_JOB_OUTPUT_FILES_H_
#define NBDCOPY_JOB_OUTPUT_FILES_H_

#include "endpoints/endpoint_spec.h"
#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

[[nodiscard]] Status CheckOutputFiles(const Options& options, const EndpointSpec& source,
                                      const EndpointSpec& destination);

// Whether two paths name one existing regular file (two spellings, a link).
bool SameRegularFile(const std::string& a, const std::string& b);

// Whether path names this process's standard output (/dev/stdout, or the
// file or pipe it is redirected to).
bool NamesStandardOutput(const std::string& path);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_OUTPUT_FILES_H_
