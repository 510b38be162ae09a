#include "job/digest_output.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <vector>

#include "job/job_output.h"
#include "job/output_files.h"

namespace nbdcopy {

std::string ChecksumLine(const std::string& digest, const std::string& name) {
  if (name.find_first_of("\\\n\r") == std::string::npos) return digest + "  " + name;
  std::string escaped;
  for (char c : name) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\r') {
      escaped += "\\r";
    } else {
      escaped += c;
    }
  }
  return "\\" + digest + "  " + escaped;
}

std::string ChecksumName(const EndpointSpec& source, const EndpointSpec& destination) {
  struct stat st;
  if (destination.kind == EndpointKind::kLocalPath && stat(destination.text.c_str(), &st) == 0 &&
      S_ISREG(st.st_mode)) {
    return destination.text;
  }
  return DisplayName(source);
}

Status CheckExpectedChecksum(const ChecksumSpec& spec, const std::string& actual,
                             const std::string& source) {
  if (!spec.expected || *spec.expected == actual) return Status::Ok();
  return Status::DigestMismatch(
      fmt::format("--checksum: {}: {} mismatch: expected {}, got {}", source, spec.algorithm,
                  *spec.expected, actual));
}

Status WriteDigests(const Options& options, const JobReport& report, FileSystem& files) {
  // --json=/dev/stdout is the report on stdout too: the digests are in it.
  const bool json_on_stdout =
      options.json && (!options.json_file || NamesStandardOutput(*options.json_file));
  const bool stdout_is_data = options.destination == std::vector<std::string>{"-"};
  if (options.blkhash && report.digest && (options.blkhash_file || !json_on_stdout)) {
    Status status = WriteLine(options.blkhash_file ? "--blkhash-file" : "--blkhash",
                              options.blkhash_file, *report.digest, files);
    if (!status.ok()) return status;
  }
  if (options.checksum && report.checksum_digest &&
      (options.checksum_file || (!json_on_stdout && !stdout_is_data))) {
    return WriteLine(options.checksum_file ? "--checksum-file" : "--checksum",
                     options.checksum_file,
                     ChecksumLine(*report.checksum_digest, report.checksum_name), files);
  }
  return Status::Ok();
}

}  // namespace nbdcopy
