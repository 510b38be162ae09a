// The --json report: one JSON object describing a run, for programs
// (virt-v2v, importers, migration controllers) to parse.
// Thread safety: values only.
#ifndef NBDCOPY_REPORT_H_
#define NBDCOPY_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/copy_stats.h"
#include "nbdcopy/options.h"
#include "plan/incremental.h"

namespace nbdcopy {

struct JobReport {
  std::string source;            // as shown in messages: URI passwords replaced by "***"
  std::string destination;       // likewise
  std::optional<uint64_t> size;  // the source's; a stream's once it ended
  uint64_t bytes_copied = 0;     // reached the destination in this job (zeroed and skipped included)
  uint64_t bytes_already_done = 0;  // skipped: a resumed --checkpoint marked them done
  uint64_t checkpoints = 0;         // made durable in this job (--checkpoint, --retry)
  uint64_t reconnections = 0;       // connections re-established (--retry)
  CopyStats stats;               // the copy's, not --verify's read-back
  bool copy_started = false;     // the plan below is known
  bool synchronous = false;
  unsigned connections = 0;  // planned; stats.workers says how many ran
  uint64_t request_size = 0;
  uint64_t queue_size = 0;
  double elapsed_seconds = 0;
  std::optional<BlkhashSpec> blkhash;             // the digest settings, when hashing
  std::optional<std::string> digest;              // the source's, when computed
  std::optional<std::string> destination_digest;  // --verify's read-back
  std::optional<ChecksumSpec> checksum;            // --checksum's settings, when hashing
  std::optional<std::string> checksum_digest;      // the source's, when computed
  std::optional<std::string> destination_checksum;  // --verify's read-back
  // The name --checksum's line gives: the destination when it is a regular
  // file (`sha256sum -c` then checks the copy), else the source.
  std::string checksum_name;
  std::optional<std::string> dirty_bitmap;        // --dirty-bitmap's NAME
  std::optional<DirtySummary> dirty;              // once measured
  std::optional<std::string> ranges_file;         // --ranges's FILE
  uint64_t listed_bytes = 0;                      // what the list names, merged
  uint64_t listed_ranges = 0;
  // --salvage: what the source could not read, written as zeroes.
  struct Unreadable {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (offset, length), in order
    uint64_t bytes = 0;
    uint64_t reads = 0;  // made to narrow failed requests
  };
  std::optional<Unreadable> unreadable;
  // --checkpoint FILE had bad areas: their bytes, and how many this job read.
  std::optional<uint64_t> bad_area_bytes;
  std::optional<uint64_t> recovered_bytes;
  int exit_status = 0;
  std::string error;      // the one-line message, "" on success
  int signal_number = 0;  // the signal that interrupted the run, 0 if none
};

// One line of JSON (no trailing newline). Field names and meanings are
// documented in docs/nbdcopy.1 (JSON REPORT).
std::string RenderJson(const JobReport& report);

}  // namespace nbdcopy

#endif  // NBDCOPY_REPORT_H_
