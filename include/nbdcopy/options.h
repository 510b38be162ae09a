// The command line as a plain struct, and the parser that fills it.
// Parsing never touches the OS beyond reading argv: checks that need the
// endpoints (sizes, block sizes) happen later, in the copy set-up.
#ifndef NBDCOPY_OPTIONS_H_
#define NBDCOPY_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nbdcopy/blkhash_spec.h"
#include "nbdcopy/checksum_spec.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

inline constexpr uint64_t kMinRequestSize = 4096;
inline constexpr uint64_t kMaxRequestSize = 32 * 1024 * 1024;
inline constexpr uint64_t kMinSparseSize = 512;
inline constexpr uint64_t kMaxTimeout = 24 * 60 * 60;
inline constexpr uint64_t kMaxRetry = 1000;

enum class ProgressMode { kNone, kBar, kFd };

struct Options {
  bool allocated = false;
  unsigned connections = 4;
  bool destination_is_zero = false;
  bool flush = false;
  bool extents = true;  // false with --no-extents
  ProgressMode progress = ProgressMode::kNone;
  int progress_fd = -1;                 // REQUIRES progress == kFd
  uint64_t request_size = 1024 * 1024;  // nbdcopy: 256K; 1M measured faster (docs/performance.md)
  bool request_size_set = false;        // given on the command line (not the default)
  uint64_t queue_size = 14 * 1024 * 1024;  // nbdcopy: 16M; 14M keeps peak RSS under 40 MiB
  unsigned requests = 64;
  uint64_t sparse_size = 4096;  // 0 disables zero detection
  bool synchronous = false;
  unsigned threads = 0;  // 0: number of online CPUs
  bool verbose = false;
  std::optional<BlkhashSpec> blkhash;
  std::optional<std::string> blkhash_file;
  // --checksum[=ALGO[:HEX]]: the plain digest of the source (sha256sum's),
  // and the one it must have; --checksum-file=FILE: where it is written.
  std::optional<ChecksumSpec> checksum;
  std::optional<std::string> checksum_file;
  bool verify = false;                   // read the destination back and compare its digests
  bool json = false;                     // --json[=FILE]: a JSON report of the run at the end
  std::optional<std::string> json_file;  // where it goes; unset: stdout
  // --dirty-bitmap=NAME: incremental copy of the ranges the source's
  // "qemu:dirty-bitmap:NAME" meta context marks dirty.
  std::optional<std::string> dirty_bitmap;
  // --ranges=FILE ("-": stdin): incremental copy of the byte ranges FILE
  // lists; --ranges-type=N picks the rows of one type of an nbdinfo --map.
  std::optional<std::string> ranges;
  std::optional<int64_t> ranges_type;
  // An incremental copy (--dirty-bitmap or --ranges): the destination holds
  // an earlier copy, and only what changed is written.
  bool incremental() const { return dirty_bitmap.has_value() || ranges.has_value(); }
  // Seconds an NBD server may stay silent while requests wait for it (the
  // handshake included) before the copy fails; 0 waits forever.
  unsigned timeout = 300;
  // --rate: bytes read from the source per second, all workers together;
  // 0: no cap.
  uint64_t rate = 0;
  // --checkpoint=FILE: the ranges known durable on the destination are
  // recorded in FILE (a GNU ddrescue mapfile); a rerun resumes from it.
  std::optional<std::string> checkpoint;
  // --retry=N: an NBD connection given by URI that dies is re-established
  // up to N times for each loss; 0 keeps a dropped connection fatal.
  unsigned retry = 0;
  // --salvage: a read the source fails as unreadable (EIO...) is narrowed
  // to the sectors that fail, written as zeroes and reported; the job
  // then ends with its own exit status (engine/salvage.h).
  bool salvage = false;

  // Each operand is its words: one word, or "[", CMD, ARGS..., "]".
  std::vector<std::string> source;
  std::vector<std::string> destination;
};

// The blkhash the copy must compute: --blkhash's, or the default one when
// --verify has no other digest to compare (no --checksum); nullopt: none.
inline std::optional<BlkhashSpec> BlkhashToCompute(const Options& options) {
  if (options.blkhash || !options.verify || options.checksum) return options.blkhash;
  return BlkhashSpec();
}

// The copy reads and hashes every byte of the source (a digest asked for,
// or --verify's).
inline bool HashesSource(const Options& options) {
  return BlkhashToCompute(options).has_value() || options.checksum.has_value();
}

enum class Action { kCopy, kHelp, kVersion, kLongOptions, kShortOptions };

struct CommandLine {
  Action action = Action::kCopy;
  Options options;
};

// Parses argv[1..argc) with the meanings upstream nbdcopy's getopt_long
// gives it (docs/compatibility.md lists the differences), through CLI11.
// Errors are one line without the "nbdcopy: " prefix.
[[nodiscard]] Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// Text for --help; mentions every option, with the defaults of Options().
std::string HelpText();
// One option per line, as --long-options / --short-options print them.
std::string LongOptionsText();
std::string ShortOptionsText();

}  // namespace nbdcopy

#endif  // NBDCOPY_OPTIONS_H_
